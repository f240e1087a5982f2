// `kairos migrate (--data-dir DIR | --store lmdb:DIR) [--dry-run]`: upgrades
// the embedded LMDB store's schema to this binary's (LmdbStorage::Migrate,
// prod/store/lmdb_storage.h: every step in one write transaction, all or
// nothing). Prints "from -> to" and each step; a store already at this
// binary's version is reported up to date; --dry-run prints the plan and
// writes nothing. Exit 0 on success; 2 for bad flags (a postgresql:// store
// is refused: cluster mode is not in this build); 1 when the store cannot be
// migrated (none there, a newer version, in use by a server, damaged), with
// the reason. Stop the server first: the store's directory lock is needed.
#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "prod/cli/commands.h"
#include "prod/cli/flags.h"
#include "prod/cli/server_flags.h"
#include "prod/store/lmdb_storage.h"

namespace kairos::cli {

int migrate_command(int argc, char** argv) {
  std::string data_dir;
  std::string store;
  bool dry_run = false;
  FlagTable table("kairos migrate",
                  "kairos migrate (--data-dir DIR | --store lmdb:DIR) [--dry-run]",
                  "Upgrades the store's schema to this kairos binary's, step by step in one\n"
                  "write transaction (all or nothing). Stop the server first and back up the\n"
                  "data directory. A store at this binary's schema is left as it is.");
  add_store_flags(table, &data_dir, &store);
  table.add({"dry-run", "", "off", "print the plan; write nothing", set_switch(&dry_run)});
  if (auto code = table.parse(argc, argv)) return *code;
  auto dir = store_directory(data_dir, store);
  if (!dir.ok()) return table.usage_error(std::string(dir.status().message()));

  LmdbOptions options;
  options.path = *dir;
  auto report = LmdbStorage::Migrate(options, dry_run);
  if (!report.ok()) {
    std::fprintf(stderr, "kairos migrate: %s\n", std::string(report.status().message()).c_str());
    return 1;
  }
  if (report->from == report->to) {
    std::printf("kairos migrate: store at %s: schema v%u, up to date\n", dir->c_str(),
                report->from);
    return 0;
  }
  std::printf("kairos migrate: store at %s: schema v%u -> v%u%s\n", dir->c_str(), report->from,
              report->to, dry_run ? " (dry run: nothing written)" : "");
  for (const std::string& step : report->steps) std::printf("  %s\n", step.c_str());
  return 0;
}

}  // namespace kairos::cli
