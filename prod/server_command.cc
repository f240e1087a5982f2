#include <cstdio>
#include "prod/commands.h"
namespace kairos::cli {
int server_command(int, char**) { std::fputs("kairos server: not built yet\n", stderr); return 1; }
}  // namespace kairos::cli
