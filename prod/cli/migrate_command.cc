// `kairos migrate (--data-dir DIR | --store lmdb:DIR | --store POSTGRES)
// [--dry-run]`: upgrades the store's schema to this binary's: the embedded
// LMDB store (LmdbStorage::Migrate, prod/store/lmdb_storage.h) or a
// PostgreSQL database (PostgresStorage::Migrate, which also creates the
// schema in a database that has none). Every step runs in one transaction,
// all or nothing. Prints "from -> to" and each step; a store already at this
// binary's version is reported up to date; --dry-run prints the plan and
// writes nothing. Exit 0 on success; 2 for bad flags (including a malformed
// PostgreSQL connection string); 1 when the store cannot be migrated (none
// there, a newer version, in use by a server, damaged, unreachable), with
// the reason. LMDB: stop the server first, the directory lock is needed.
#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "prod/cli/commands.h"
#include "prod/cli/flags.h"
#include "prod/cli/server_flags.h"
#include "prod/store/lmdb_storage.h"
#include "prod/store/postgres_storage.h"

namespace kairos::cli {
namespace {

// Prints what a migration found and did (or would do); the exit code.
template <typename Report>
int print_report(const std::string& where, const absl::StatusOr<Report>& report, bool dry_run) {
  if (!report.ok()) {
    std::fprintf(stderr, "kairos migrate: %s\n", std::string(report.status().message()).c_str());
    return 1;
  }
  if (report->from == report->to) {
    std::printf("kairos migrate: store at %s: schema v%u, up to date\n", where.c_str(),
                report->from);
    return 0;
  }
  std::printf("kairos migrate: store at %s: schema v%u -> v%u%s\n", where.c_str(), report->from,
              report->to, dry_run ? " (dry run: nothing written)" : "");
  for (const std::string& step : report->steps) std::printf("  %s\n", step.c_str());
  return 0;
}

}  // namespace

int migrate_command(int argc, char** argv) {
  std::string data_dir;
  std::string store;
  bool dry_run = false;
  FlagTable table(
      "kairos migrate",
      "kairos migrate (--data-dir DIR | --store lmdb:DIR | --store POSTGRES) [--dry-run]",
      "Upgrades the store's schema to this kairos binary's, step by step in one\n"
      "write transaction (all or nothing). Stop the server first and back up the\n"
      "data directory. A store at this binary's schema is left as it is. A\n"
      "PostgreSQL database without a Kairos schema gets one.");
  add_store_flags(table, &data_dir, &store);
  table.add({"dry-run", "", "off", "print the plan; write nothing", set_switch(&dry_run)});
  if (auto code = table.parse(argc, argv)) return *code;
  if (is_postgres_store(store)) {
    PostgresOptions options;
    options.conninfo = store;
    return print_report(RedactConninfo(store), PostgresStorage::Migrate(options, dry_run), dry_run);
  }
  auto dir = store_directory(data_dir, store);
  if (!dir.ok()) return table.usage_error(std::string(dir.status().message()));

  LmdbOptions options;
  options.path = *dir;
  return print_report(*dir, LmdbStorage::Migrate(options, dry_run), dry_run);
}

}  // namespace kairos::cli
