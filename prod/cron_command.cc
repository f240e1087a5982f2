#include <cstdio>
#include "prod/commands.h"
namespace kairos::cli {
int cron_command(int, char**) { std::fputs("kairos cron: not built yet\n", stderr); return 1; }
}  // namespace kairos::cli
