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
    "  help       show this text\n"
    "\n"
    "Run `kairos <command> --help` for a command's options.\n";

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
  std::fprintf(stderr, "kairos: unknown command '%s'\n\n%s", argv[1], kUsage);
  return 2;
}
