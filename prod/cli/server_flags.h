// The flags of `kairos server`: one table (prod/cli/flags.h), so the command
// line, the --config file and --help agree. docs/OPERATIONS.md lists them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/kernel/lease_config.h"
#include "prod/api/api_service.h"
#include "prod/cli/drain.h"
#include "prod/cli/flags.h"

namespace kairos::cli {

struct ServerFlags {
  std::string data_dir;
  std::string store;  // "lmdb:DIR" or a PostgreSQL conninfo; empty: lmdb at data_dir
  std::size_t map_size = std::size_t{64} << 20;
  std::string node_id;  // empty: the host name
  std::uint32_t shards = 8;
  std::uint32_t workers = 2;
  absl::Duration lease_ttl = absl::Microseconds(lease_defaults::kLeaseTtlUs);
  std::string log_format = "text";
  bool demo = false;
  std::uint32_t demo_every = 10;
  api::ApiServiceFlags api;  // --http, --auth-token-file (checked when the API starts)
  // Remote workers: where to listen (none: no listener) and the secret
  // they must prove (read at startup; empty: none).
  std::optional<HostPort> listen = HostPort{"127.0.0.1", 7070};
  std::string worker_secret_file;
  std::string http_ca_file;  // webhook jobs: extra trusted CA certificates
  // SIGTERM/SIGINT: how long running attempts may finish (prod/cli/drain.h).
  absl::Duration drain_timeout = kDefaultDrainTimeout;

  // Derived by parse_server_flags: the LMDB directory (from --store or
  // --data-dir) and the run-lease timing for lease_ttl.
  std::string lmdb_dir;  // empty with a PostgreSQL store
  std::string postgres;  // the PostgreSQL conninfo, or empty (LMDB)
  LeaseConfig lease;
};

inline constexpr std::uint32_t kMaxLocalWorkers = 64;

// Parses argv (argv[0] is "server"): std::nullopt to go on, else the exit code
// (0 after --help; 2 after a usage error, already printed, naming the flag).
std::optional<int> parse_server_flags(int argc, char** argv, ServerFlags& flags);

// The store flags of `kairos server` and `kairos migrate`: --data-dir DIR and
// --store lmdb:DIR | POSTGRES (a libpq URI or key=value connection string,
// checked with PQconninfoParse; errors never show its password).
void add_store_flags(FlagTable& table, std::string* data_dir, std::string* store);
// True when a --store value names PostgreSQL: postgresql:// or postgres://,
// or a key=value connection string (anything with '=' that is not lmdb:).
bool is_postgres_store(std::string_view store);
// The LMDB directory the two flags name (they must agree; one is required),
// or an error message for the usage line. Not for a PostgreSQL store.
absl::StatusOr<std::string> store_directory(const std::string& data_dir, const std::string& store);

// Node ids appear in every log line and leader record: 1..200 printable
// ASCII characters without spaces, quotes, '=' or '\'.
bool valid_node_id(std::string_view id);

// "64M" -> 67108864: a positive byte count with an optional K, M or G suffix.
std::optional<std::size_t> parse_size(std::string_view text);

}  // namespace kairos::cli
