// The `kairos` binary's subcommands. Each takes the arguments after its own
// name (argv[0] is the subcommand name) and returns the process exit code:
// 0 success, 1 runtime failure, 2 bad usage or bad input.
#pragma once

namespace kairos::cli {

int server_command(int argc, char** argv);
int cron_command(int argc, char** argv);
int worker_command(int argc, char** argv);

}  // namespace kairos::cli
