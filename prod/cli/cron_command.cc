// `kairos cron next|explain`: a thin adapter over core/schedule/cron_cli.h that
// supplies the real clock and prints the result.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "core/schedule/cron_cli.h"
#include "prod/cli/commands.h"

namespace kairos::cli {

int cron_command(int argc, char** argv) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  const cron::CliResult r = cron::run_cron_cli(args, absl::Now());
  std::fwrite(r.out.data(), 1, r.out.size(), stdout);
  std::fwrite(r.err.data(), 1, r.err.size(), stderr);
  return r.exit_code;
}

}  // namespace kairos::cli
