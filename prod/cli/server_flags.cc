#include "prod/cli/server_flags.h"

#include <charconv>

#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "core/base/check.h"
#include "core/base/text.h"
#include "core/kernel/job_store.h"
#include "core/kernel/keyspace.h"
#include "prod/cli/flags.h"
#include "prod/store/lmdb_storage.h"
#include "prod/store/postgres_storage.h"

namespace kairos::cli {
namespace {

static_assert(kLmdbMinMapSize == std::size_t{1} << 20, "--help and the --map-size error say 1M");

constexpr const char* kSynopsis =
    "kairos server (--data-dir DIR | --store lmdb:DIR | --store POSTGRES --data-dir DIR) "
    "[options]";
constexpr const char* kDescription =
    "Runs a scheduler node with the embedded LMDB store (created if missing\n"
    "or empty; one server per directory), or on a PostgreSQL store (created\n"
    "by `kairos migrate --store ...`), and N local workers that run jobs as\n"
    "child processes. Events are logged to stderr, one line each. On SIGINT or\n"
    "SIGTERM it drains: no new work is claimed, /readyz answers 503, running\n"
    "jobs may finish within --drain-timeout (then they are stopped and retried\n"
    "later); a second signal stops at once. Exit 0 either way.";

}  // namespace

bool valid_node_id(std::string_view id) {
  return !id.empty() && id.size() <= kMaxWorkerIdSize && is_printable_ascii(id) &&
         id.find_first_of(" \"=\\") == std::string_view::npos;
}

std::optional<std::size_t> parse_size(std::string_view text) {
  std::size_t multiplier = 1;
  if (!text.empty()) {
    switch (text.back()) {
      case 'K':
      case 'k':
        multiplier = std::size_t{1} << 10;
        break;
      case 'M':
      case 'm':
        multiplier = std::size_t{1} << 20;
        break;
      case 'G':
      case 'g':
        multiplier = std::size_t{1} << 30;
        break;
      default:
        break;
    }
    if (multiplier != 1) text.remove_suffix(1);
  }
  std::size_t value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || text.empty() || value == 0)
    return std::nullopt;
  if (value > SIZE_MAX / multiplier) return std::nullopt;
  return value * multiplier;
}

void add_store_flags(FlagTable& table, std::string* data_dir, std::string* store) {
  table.add({"data-dir", "DIR", "none", "the data directory: the LMDB store and job records",
             set_string(data_dir)});
  table.add({"store", "lmdb:DIR|POSTGRES", "lmdb:DATA_DIR",
             "the store: lmdb:DIR is the embedded LMDB store in DIR;\n"
             "POSTGRES a PostgreSQL database as a libpq URI\n"
             "(postgresql://USER@HOST/DB?..., several hosts allowed) or\n"
             "key=value string ('host=/run/postgresql dbname=kairos')",
             [store](std::string_view v) {
               if (is_postgres_store(v)) {
                 if (absl::Status s = ValidatePostgresConninfo(v); !s.ok()) return s;
                 *store = std::string(v);
                 return absl::OkStatus();
               }
               if (!v.starts_with("lmdb:") || v.size() == 5)
                 return absl::InvalidArgumentError(absl::StrCat(
                     "expected lmdb:DIR, a postgresql:// URI or a key=value PostgreSQL "
                     "connection string, got '",
                     excerpt(RedactConninfo(v)), "'"));
               *store = std::string(v);
               return absl::OkStatus();
             }});
}

bool is_postgres_store(std::string_view store) {
  return store.starts_with("postgresql://") || store.starts_with("postgres://") ||
         (!store.starts_with("lmdb:") && store.find('=') != std::string_view::npos);
}

absl::StatusOr<std::string> store_directory(const std::string& data_dir, const std::string& store) {
  KAIROS_CHECK_MSG(!is_postgres_store(store), "store_directory of a PostgreSQL store");
  if (!store.empty()) {
    const std::string dir = store.substr(5);
    if (!data_dir.empty() && data_dir != dir)
      return absl::InvalidArgumentError(
          "flags --store and --data-dir name different directories; give one of them");
    return dir;
  }
  if (!data_dir.empty()) return data_dir;
  return absl::InvalidArgumentError(
      "flag --data-dir is required (or --store lmdb:DIR; see --help)");
}

std::optional<int> parse_server_flags(int argc, char** argv, ServerFlags& flags) {
  FlagTable table("kairos server", kSynopsis, kDescription);
  table.config_flag();
  add_store_flags(table, &flags.data_dir, &flags.store);
  table.add({"map-size", "BYTES", "64M",
             "initial LMDB map size, at least 1048576 = 1M; it grows on\ndemand; suffixes K, M, G",
             [&flags](std::string_view v) {
               const auto size = parse_size(v);
               if (!size || *size < kLmdbMinMapSize)
                 return absl::InvalidArgumentError(absl::StrCat(
                     "expected a byte count of at least 1M (1048576), such as 1073741824 or 1G, "
                     "got '",
                     excerpt(v), "'"));
               flags.map_size = *size;
               return absl::OkStatus();
             }});
  table.add({"node-id", "ID", "the host name", "this node's name in leader records and logs",
             [&flags](std::string_view v) {
               if (!valid_node_id(v))
                 return absl::InvalidArgumentError(
                     absl::StrCat("expected 1..200 printable ASCII characters without spaces, "
                                  "quotes, '=' or '\\', got '",
                                  excerpt(v), "'"));
               flags.node_id = std::string(v);
               return absl::OkStatus();
             }});
  table.add({"shards", "N", "8", "shard count, fixed when the store is created (1..4096)",
             set_u32(&flags.shards, 1, keys::kMaxShards)});
  table.add({"workers", "N", "2",
             "local workers, each running up to 4 jobs at once;\n0 runs no jobs here",
             set_u32(&flags.workers, 0, kMaxLocalWorkers)});
  table.add({"lease-ttl", "DURATION", "30s",
             "run lease length (1s..24h); the heartbeat, the lease margin\n"
             "and the claim wait follow from it",
             set_duration(&flags.lease_ttl, kMinLeaseTtl, kMaxLeaseTtl)});
  table.add({"drain-timeout", "DURATION", "30s",
             "on SIGTERM/SIGINT, how long running jobs may finish\n"
             "(0s..24h; 0s stops them at once); keep systemd's\n"
             "TimeoutStopSec above it",
             set_duration(&flags.drain_timeout, absl::ZeroDuration(), kMaxDrainTimeout)});
  table.add({"http", "ADDR:PORT", "127.0.0.1:8080",
             "serve the HTTP API there (port 0 picks a free one;\n"
             "docs/API.md); an address other than loopback needs\n"
             "--auth-token-file",
             set_string(&flags.api.http)});
  table.add({"auth-token-file", "FILE", "none",
             "bearer tokens for the API, one per line; required unless\n"
             "the --http address is loopback",
             set_string(&flags.api.auth_token_file)});
  table.add({"listen", "ADDR:PORT", "127.0.0.1:7070",
             "where remote `kairos worker`s connect: a numeric IP or\n"
             "localhost and a port (0: any free port, logged in\n"
             "net.listening), or none; an address other than loopback\n"
             "needs --worker-secret-file",
             [&flags](std::string_view v) {
               if (v == "none") {
                 flags.listen.reset();
                 return absl::OkStatus();
               }
               HostPort at;
               if (absl::Status s = parse_host_port(v, &at); !s.ok()) return s;
               flags.listen = at;
               return absl::OkStatus();
             }});
  table.add({"worker-secret-file", "FILE", "none",
             "a shared secret (16..4096 bytes, not readable by others)\n"
             "every remote worker must prove (HMAC challenge-response;\n"
             "the secret never crosses the network)",
             set_string(&flags.worker_secret_file)});
  table.add({"http-ca-file", "FILE", "none",
             "webhook jobs: PEM CA certificates trusted besides the\n"
             "system store",
             set_string(&flags.http_ca_file)});
  table.add({"log-format", "text|json", "text",
             "events on stderr: one text line, or one JSON object, each",
             set_choice(&flags.log_format, {"text", "json"})});
  table.add({"demo", "", "off",
             "create the demo job 'demo-hello' (every 10 s, UTC)\nif it does not exist yet",
             set_switch(&flags.demo)});
  table.add(
      {"demo-every", "SECONDS", "10",
       "the demo job's period: a divisor of 60\n(1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30); for tests",
       [&flags](std::string_view v) {
         std::uint32_t n = 0;
         const auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
         if (v.empty() || ec != std::errc() || ptr != v.data() + v.size() || n < 1 || n > 30 ||
             60 % n != 0)
           return absl::InvalidArgumentError(absl::StrCat(
               "expected a number of seconds that divides 60 (1, 2, 3, 4, 5, 6, 10, 12, 15, "
               "20, 30), got '",
               excerpt(v), "'"));
         flags.demo_every = n;
         return absl::OkStatus();
       }});
  if (auto code = table.parse(argc, argv)) return code;

  if (is_postgres_store(flags.store)) {
    // The store is shared; the job records of this node's workers are not.
    if (flags.data_dir.empty())
      return table.usage_error(
          "flag --store: a PostgreSQL store needs --data-dir DIR as well, for this node's records "
          "of running jobs");
    if (table.given("map-size"))
      return table.usage_error("flag --map-size: only meaningful with an LMDB store");
    flags.postgres = flags.store;
  } else {
    auto lmdb_dir = store_directory(flags.data_dir, flags.store);
    if (!lmdb_dir.ok()) return table.usage_error(std::string(lmdb_dir.status().message()));
    flags.lmdb_dir = *std::move(lmdb_dir);
    if (flags.data_dir.empty()) flags.data_dir = flags.lmdb_dir;
  }
  if (table.given("demo-every") && !flags.demo)
    return table.usage_error("flag --demo-every: only meaningful with --demo");
  // Every worker that connects is handed jobs to run: beyond loopback only
  // workers that prove the shared secret may.
  if (flags.listen && !is_loopback_host(flags.listen->host) && flags.worker_secret_file.empty())
    return table.usage_error(absl::StrCat(
        "flag --listen: ", flags.listen->host,
        " is reachable from other machines, and every worker that connects is handed jobs to "
        "run: pass --worker-secret-file FILE so remote workers must prove a shared secret (or "
        "listen on 127.0.0.1)"));
  auto lease = lease_config_for_ttl(flags.lease_ttl);
  if (!lease.ok())
    return table.usage_error(absl::StrCat("flag --lease-ttl: ", lease.status().message()));
  flags.lease = *lease;
  return std::nullopt;
}

}  // namespace kairos::cli
