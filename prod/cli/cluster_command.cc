// `kairos cluster status`: the cluster as the server sees it (GET
// /v1/cluster): its nodes, each shard's leader, epoch and lease expiry.
// Human output prints the body's scalars and one table per array of
// objects, so new members of the response show up without a CLI change.
#include <boost/json/serialize.hpp>
#include <cstdio>
#include <string>

#include "core/base/text.h"
#include "prod/cli/api_client.h"
#include "prod/cli/commands.h"
#include "prod/cli/job_cli.h"

namespace kairos::cli {

int cluster_command(int argc, char** argv) {
  constexpr const char* kUsage =
      "usage: kairos cluster status [options]\n"
      "\n"
      "Run `kairos cluster status --help` for its options.\n";
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return kExitUsage;
  }
  const std::string_view verb = argv[1];
  if (verb == "--help" || verb == "-h" || verb == "help") {
    std::fputs(kUsage, stdout);
    return kExitOk;
  }
  if (verb != "status") {
    std::fprintf(stderr, "kairos cluster: unknown verb '%s'\n\n%s", excerpt(verb).c_str(), kUsage);
    return kExitUsage;
  }
  ClientCommand c("kairos cluster status", "kairos cluster status [options]",
                  "Shows the cluster: its nodes, and each shard's leader, epoch and\n"
                  "leader-lease expiry.");
  if (auto code = c.start(argc - 1, argv + 1, 0)) return *code;
  auto r = c.client->call("GET", "/v1/cluster");
  if (!r.ok()) return c.fail(r.status());
  const std::string out = c.client_flags.json || !r->body.is_object()
                              ? boost::json::serialize(r->body) + "\n"
                              : render_object(r->body.get_object());
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

}  // namespace kairos::cli
