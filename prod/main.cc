// kairos: the scheduler's command-line entry point.
#include <cstdio>
#include <cstring>
#include <string_view>

#include "prod/cli/commands.h"
#include "prod/runners/job_shim.h"

namespace {

constexpr const char* kUsage =
    "usage: kairos <command> [options]\n"
    "\n"
    "commands:\n"
    "  server     run a scheduler node, local workers and the embedded LMDB store\n"
    "  worker     run jobs for servers over TCP (their --listen address)\n"
    "  cron       parse and preview cron schedules (next, explain)\n"
    "  job        add, list, show, edit, cancel, pause, resume and trigger jobs;\n"
    "             their runs and occurrence ledger (over the HTTP API)\n"
    "  apply      make the server's jobs what a JSON file says (--dry-run, --prune)\n"
    "  cluster    show the cluster: nodes, shard leaders, epochs\n"
    "  migrate    upgrade the store's schema to this binary's (--dry-run)\n"
    "  help       show this text\n"
    "\n"
    "Run `kairos <command> --help` for a command's options.\n"
    "\n"
    "The API client commands (job, apply, cluster) talk to --server URL\n"
    "(else KAIROS_SERVER, else http://127.0.0.1:8080) and exit with\n"
    "0 ok, 1 error, 2 usage or bad input, 3 not found, 4 conflict or\n"
    "precondition failed, 5 unavailable or outcome unknown.\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::string_view cmd = argv[1];
  // Internal: how the process runner starts a job (not listed in the usage).
  if (cmd == kairos::kJobShimCommand) return kairos::job_shim_main(argc - 1, argv + 1);
  if (cmd == "help" || cmd == "--help" || cmd == "-h") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (cmd == "server") return kairos::cli::server_command(argc - 1, argv + 1);
  if (cmd == "worker") return kairos::cli::worker_command(argc - 1, argv + 1);
  if (cmd == "cron") return kairos::cli::cron_command(argc - 1, argv + 1);
  if (cmd == "job") return kairos::cli::job_command(argc - 1, argv + 1);
  if (cmd == "apply") return kairos::cli::apply_command(argc - 1, argv + 1);
  if (cmd == "cluster") return kairos::cli::cluster_command(argc - 1, argv + 1);
  if (cmd == "migrate") return kairos::cli::migrate_command(argc - 1, argv + 1);
  std::fprintf(stderr, "kairos: unknown command '%s'\n\n%s", argv[1], kUsage);
  return 2;
}
