// `kairos server`: runs a scheduler node with the embedded LMDB store.
//
// For now the node is minimal: it validates its flags, opens (or creates) the
// store in the data directory, proves it works with a real transaction (a
// health record written, synced and read back), reports that it is ready and
// runs its event loop until SIGINT or SIGTERM. The scheduler node will plug in
// here: it receives the io_context's Timers, the clock and the store.
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "core/check.h"
#include "prod/asio_runtime.h"
#include "prod/commands.h"
#include "prod/lmdb_storage.h"

namespace kairos::cli {
namespace {

constexpr const char* kServerUsage =
    "usage: kairos server --data-dir DIR [--map-size BYTES]\n"
    "\n"
    "Runs a scheduler node with the embedded LMDB store in DIR (created if\n"
    "missing). Stops cleanly on SIGINT or SIGTERM.\n"
    "\n"
    "options:\n"
    "  --data-dir DIR     the store's directory (required)\n"
    "  --map-size BYTES   initial LMDB map size; it grows on demand\n"
    "                     (default 67108864, suffixes K, M, G allowed)\n"
    "  --help             show this text\n";

// In the 0x00 store-metadata range that core/keyspace.h reserves; the LMDB
// adapter keeps its own schema record apart, in its meta database.
constexpr std::string_view kHealthKey{"\x00kairos.server_health", 21};

struct ServerFlags {
  std::string data_dir;
  std::size_t map_size = std::size_t{64} << 20;
};

std::optional<std::size_t> parse_size(std::string_view text) {
  std::size_t multiplier = 1;
  if (!text.empty()) {
    switch (text.back()) {
      case 'K': case 'k': multiplier = std::size_t{1} << 10; break;
      case 'M': case 'm': multiplier = std::size_t{1} << 20; break;
      case 'G': case 'g': multiplier = std::size_t{1} << 30; break;
      default: break;
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

// Returns the exit code when parsing ends the command (help, bad usage).
std::optional<int> parse_flags(int argc, char** argv, ServerFlags& flags) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    std::optional<std::string_view> inline_value;
    if (const auto eq = arg.find('='); arg.starts_with("--") && eq != std::string_view::npos) {
      inline_value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    if (arg == "--help" || arg == "-h") {
      std::fputs(kServerUsage, stdout);
      return 0;
    }
    if (arg != "--data-dir" && arg != "--map-size") {
      std::fprintf(stderr, "kairos server: unknown flag '%.*s'\n\n%s", static_cast<int>(arg.size()),
                   arg.data(), kServerUsage);
      return 2;
    }
    std::string_view value;
    if (inline_value) {
      value = *inline_value;
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      std::fprintf(stderr, "kairos server: flag %.*s needs a value\n\n%s",
                   static_cast<int>(arg.size()), arg.data(), kServerUsage);
      return 2;
    }
    if (arg == "--data-dir") {
      if (value.empty()) {
        std::fputs("kairos server: flag --data-dir needs a non-empty directory\n", stderr);
        return 2;
      }
      flags.data_dir = std::string(value);
    } else {
      const auto size = parse_size(value);
      if (!size) {
        std::fprintf(stderr,
                     "kairos server: flag --map-size: expected a positive byte count such as "
                     "1073741824 or 1G, got '%.*s'\n",
                     static_cast<int>(value.size()), value.data());
        return 2;
      }
      flags.map_size = *size;
    }
  }
  if (flags.data_dir.empty()) {
    std::fprintf(stderr, "kairos server: flag --data-dir is required\n\n%s", kServerUsage);
    return 2;
  }
  return std::nullopt;
}

// Writes the health record and reads it back through real transactions.
absl::Status check_health(boost::asio::io_context& io, Storage& store, const Clock& clock) {
  std::optional<TxnResult> wrote, read;
  std::optional<std::string> seen;
  const std::string stamp = absl::FormatTime(absl::RFC3339_full, clock.now(), absl::UTCTimeZone());
  store.transact(
      [stamp](Txn& t) {
        t.put(kHealthKey, stamp);
        return absl::OkStatus();
      },
      [&](TxnResult r) { wrote = std::move(r); });
  while (!wrote && io.run_one() > 0) {
  }
  if (!wrote || !wrote->committed())
    return absl::UnavailableError(absl::StrFormat(
        "health record write: %s", wrote ? wrote->status.ToString() : "no result"));
  store.transact(
      [&seen](Txn& t) {
        seen = t.get(kHealthKey);
        return absl::OkStatus();
      },
      [&](TxnResult r) { read = std::move(r); }, TxnMode::kReadOnly);
  while (!read && io.run_one() > 0) {
  }
  if (!read || !read->committed())
    return absl::UnavailableError(absl::StrFormat(
        "health record read: %s", read ? read->status.ToString() : "no result"));
  if (seen != stamp) return absl::DataLossError("health record read back differs");
  return absl::OkStatus();
}

}  // namespace

int server_command(int argc, char** argv) {
  ServerFlags flags;
  if (auto code = parse_flags(argc, argv, flags)) return *code;

  boost::asio::io_context io;
  auto work = boost::asio::make_work_guard(io);  // the store's writer posts results
  SystemClock clock;
  AsioTimers timers(io);
  LmdbOptions options;
  options.path = flags.data_dir;
  options.initial_map_size = flags.map_size;
  auto opened = LmdbStorage::Open(options, clock, timers);
  if (!opened.ok()) {
    std::fprintf(stderr, "kairos server: %s\n", std::string(opened.status().message()).c_str());
    return 1;
  }
  std::unique_ptr<LmdbStorage> store = std::move(opened).value();
  if (absl::Status health = check_health(io, *store, clock); !health.ok()) {
    std::fprintf(stderr, "kairos server: store health check failed: %s\n",
                 health.ToString().c_str());
    return 1;
  }

  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int signal) {
    if (ec) return;
    std::fprintf(stderr, "kairos server: %s received, stopping\n",
                 signal == SIGINT ? "SIGINT" : "SIGTERM");
    work.reset();
    io.stop();
  });
  std::printf("kairos server: ready (store: lmdb at %s, schema v%u)\n", store->path().c_str(),
              store->schema_version());
  std::fflush(stdout);
  io.run();
  store.reset();  // finishes queued transactions durably
  std::fputs("kairos server: stopped\n", stderr);
  return 0;
}

}  // namespace kairos::cli
