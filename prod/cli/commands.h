// The `kairos` binary's subcommands. Each takes the arguments after its own
// name (argv[0] is the subcommand name) and returns the process exit code:
// 0 success, 1 runtime failure, 2 bad usage or bad input; the API client
// commands (job, apply, cluster) add 3 not found, 4 conflict or precondition
// failed and 5 unavailable or outcome unknown (prod/cli/api_client.h).
#pragma once

namespace kairos::cli {

int server_command(int argc, char** argv);
int cron_command(int argc, char** argv);
int worker_command(int argc, char** argv);
int job_command(int argc, char** argv);
int apply_command(int argc, char** argv);
int cluster_command(int argc, char** argv);
int migrate_command(int argc, char** argv);

}  // namespace kairos::cli
