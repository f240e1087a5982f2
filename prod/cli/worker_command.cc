// `kairos worker`: a remote worker that runs jobs for a `kairos server` over
// TCP.
//
// Wiring. One io_context run by the main thread is the event loop of core's
// Worker (core/kernel/worker.h), the ProcessRunner it runs jobs with and the
// TCP transport (prod/net/tcp_transport.h) that connects it to the servers
// listed in --connect, one connection at a time, with the handshake of
// prod/net/handshake.h. The worker sends its claims, renewals and reports to
// one peer, "the scheduler nodes"; the transport moves that peer between the
// listed servers as connections come and go. Events go, one line each, to
// stderr (LogEventLog).
//
// State. A worker has no store; what it keeps on disk is the job-group
// records of its running jobs (prod/runners/job_records.h) in
// STATE_DIR/running, so that a worker restarted after a crash kills what its
// dead predecessor left running before it claims anything. Their runs are
// not handed back (only a server can): their leases lapse and the server
// re-runs them with a higher fencing token. Several workers may share a
// state directory (a live owner's records are left alone), but one per
// directory keeps the log readable.
//
// Runners. build_job_runners() (prod/cli/job_runners.h, shared with the
// server) makes them: the process runner for command jobs and the HTTP
// runner for webhooks, restricted to the kinds --runners names.
//
// Shutdown on SIGINT/SIGTERM: a drain (prod/cli/drain.h). The worker stops
// claiming (a grant still arriving is handed straight back) while its running
// attempts go on, renewing and reporting over the connection. Once nothing
// runs and every report is answered, or after --drain-timeout (then the
// attempts are stopped: SIGTERM, SIGKILL after the grace; each reports
// kStopped, which hands its run back to be retried with a higher fencing
// token; one whose report does not get through keeps its lease until it
// lapses), or at once on a second signal: the worker stops (terminating
// whatever still runs), the connection closes, the log is flushed, exit 0.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/base/absl_compat.h"
#include "core/base/duration.h"
#include "core/base/text.h"
#include "core/kernel/lease_config.h"
#include "core/kernel/worker.h"
#include "core/ports/metrics.h"
#include "core/ports/random.h"
#include "prod/cli/commands.h"
#include "prod/cli/drain.h"
#include "prod/cli/flags.h"
#include "prod/cli/job_runners.h"
#include "prod/log/log_event_log.h"
#include "prod/net/handshake.h"
#include "prod/net/tcp_transport.h"
#include "prod/runners/composite_runner.h"
#include "prod/runners/job_records.h"
#include "prod/runtime/asio_runtime.h"

namespace kairos::cli {
namespace {

constexpr const char* kWorkerUsage =
    "usage: kairos worker --connect HOST:PORT[,HOST:PORT...] --state-dir DIR\n"
    "                     [--concurrency N] [--id ID] [--runners KINDS]\n"
    "                     [--worker-secret-file FILE] [--lease-ttl DURATION]\n"
    "                     [--drain-timeout DURATION]\n"
    "\n"
    "Runs jobs for the `kairos server`s listed in --connect (their --listen\n"
    "address), connecting to one at a time and moving to the next when a\n"
    "connection fails. Jobs run as child processes of this worker and die with\n"
    "it. Events are logged to stderr, one line each. On SIGINT or SIGTERM it\n"
    "drains: claims nothing new, lets running jobs finish within\n"
    "--drain-timeout (then stops them; they are retried), exits 0; a second\n"
    "signal stops at once.\n"
    "\n"
    "options:\n"
    "  --connect LIST        comma-separated HOST:PORT ([IPV6]:PORT) of servers\n"
    "                        (required; at most 64)\n"
    "  --state-dir DIR       where the worker records its running jobs\n"
    "                        (DIR/running), so a restarted worker kills what a\n"
    "                        crashed one left (required; created if missing)\n"
    "  --concurrency N       jobs run at once (default 4, at most 1024)\n"
    "  --id ID               this worker's name in claims and logs\n"
    "                        (default: HOSTNAME/PID)\n"
    "  --runners KINDS       payload kinds this worker runs: a comma-separated\n"
    "                        subset of command,http (default command,http)\n"
    "  --worker-secret-file FILE  the server's shared secret (16..4096 bytes, not\n"
    "                        readable by others); with it the worker also\n"
    "                        requires the server to prove the secret\n"
    "                        (default: none)\n"
    "  --lease-ttl DURATION  the run lease the worker plans its heartbeats for:\n"
    "                        the server's --lease-ttl (default 30s, in\n"
    "                        [1s, 24h]); heartbeat and long poll follow from it\n"
    "  --drain-timeout DURATION  on SIGTERM/SIGINT, how long running jobs may\n"
    "                        finish before they are stopped (default 30s, in\n"
    "                        [0s, 24h]; 0s stops them at once)\n"
    "  --help                show this text\n";

constexpr std::uint32_t kMaxConcurrency = 1024;
constexpr std::size_t kMaxServers = 64;
constexpr const char* kRecordsDir = "running";  // as a server's DATA_DIR/running

enum RunnerKind : unsigned { kCommandRunner = 1, kHttpRunner = 2 };

struct WorkerFlags {
  std::vector<net::NetAddress> connect;
  std::string state_dir;
  std::uint32_t concurrency = 4;
  std::string id;
  unsigned runners = kCommandRunner | kHttpRunner;
  std::string secret_file;
  absl::Duration lease_ttl = absl::Microseconds(lease_defaults::kLeaseTtlUs);
  absl::Duration drain_timeout = kDefaultDrainTimeout;
};

int bad_value(std::string_view flag, std::string_view expected, std::string_view got) {
  const std::string shown = excerpt(got);
  std::fprintf(stderr, "kairos worker: flag %.*s: expected %.*s, got '%s'\n",
               static_cast<int>(flag.size()), flag.data(), static_cast<int>(expected.size()),
               expected.data(), shown.c_str());
  return 2;
}

std::optional<unsigned> parse_runners(std::string_view text) {
  unsigned kinds = 0;
  while (true) {
    const auto comma = text.find(',');
    const std::string_view kind = text.substr(0, comma);
    unsigned bit = 0;
    if (kind == "command") bit = kCommandRunner;
    if (kind == "http") bit = kHttpRunner;
    if (bit == 0 || (kinds & bit) != 0) return std::nullopt;  // unknown or repeated
    kinds |= bit;
    if (comma == std::string_view::npos) return kinds;
    text.remove_prefix(comma + 1);
  }
}

// Returns the exit code when parsing ends the command (help, bad usage).
std::optional<int> parse_flags(int argc, char** argv, WorkerFlags& flags) {
  bool connect_given = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    std::optional<std::string_view> inline_value;
    if (const auto eq = arg.find('='); arg.starts_with("--") && eq != std::string_view::npos) {
      inline_value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    if (arg == "--help" || arg == "-h") {
      std::fputs(kWorkerUsage, stdout);
      return 0;
    }
    if (arg != "--connect" && arg != "--state-dir" && arg != "--concurrency" && arg != "--id" &&
        arg != "--runners" && arg != "--worker-secret-file" && arg != "--lease-ttl" &&
        arg != "--drain-timeout") {
      std::fprintf(stderr, "kairos worker: unknown flag '%s'\n\n%s", excerpt(arg).c_str(),
                   kWorkerUsage);
      return 2;
    }
    std::string_view value;
    if (inline_value) {
      value = *inline_value;
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      std::fprintf(stderr, "kairos worker: flag %.*s needs a value\n\n%s",
                   static_cast<int>(arg.size()), arg.data(), kWorkerUsage);
      return 2;
    }
    if (arg == "--connect") {
      flags.connect.clear();
      for (absl::string_view part : absl::StrSplit(absl_sv(value), ',')) {
        HostPort at;
        if (absl::Status st = parse_host_port(std_sv(part), &at, /*allow_port_zero=*/false);
            !st.ok() || flags.connect.size() == kMaxServers) {
          std::fprintf(stderr, "kairos worker: flag --connect: %s\n",
                       st.ok() ? "at most 64 servers" : std::string(st.message()).c_str());
          return 2;
        }
        flags.connect.push_back({at.host, at.port});
      }
      connect_given = true;
    } else if (arg == "--state-dir") {
      if (value.empty()) return bad_value(arg, "a directory", value);
      flags.state_dir = std::string(value);
    } else if (arg == "--concurrency") {
      std::uint32_t n = 0;
      const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (value.empty() || ec != std::errc() || ptr != value.data() + value.size() || n < 1 ||
          n > kMaxConcurrency)
        return bad_value(arg, absl::StrCat("an integer in [1, ", kMaxConcurrency, "]"), value);
      flags.concurrency = n;
    } else if (arg == "--id") {
      if (!net::valid_peer_name(value))
        return bad_value(
            arg, "1..200 printable ASCII characters without spaces, quotes, '=' or '\\'", value);
      flags.id = std::string(value);
    } else if (arg == "--runners") {
      const auto kinds = parse_runners(value);
      if (!kinds)
        return bad_value(arg, "a comma-separated subset of command,http, each at most once", value);
      flags.runners = *kinds;
    } else if (arg == "--worker-secret-file") {
      if (value.empty()) return bad_value(arg, "a file name", value);
      flags.secret_file = std::string(value);
    } else if (arg == "--drain-timeout") {
      auto d = parse_duration(value);
      if (!d.ok() || *d < absl::ZeroDuration() || *d > kMaxDrainTimeout)
        return bad_value(arg, "a duration in [0s, 24h], such as 30s", value);
      flags.drain_timeout = *d;
    } else {  // --lease-ttl
      auto d = parse_duration(value);
      if (!d.ok() || *d < kMinLeaseTtl || *d > kMaxLeaseTtl)
        return bad_value(arg, "a duration in [1s, 24h], such as 30s", value);
      flags.lease_ttl = *d;
    }
  }
  if (!connect_given) {
    std::fprintf(stderr, "kairos worker: flag --connect is required\n\n%s", kWorkerUsage);
    return 2;
  }
  if (flags.state_dir.empty()) {
    std::fprintf(stderr, "kairos worker: flag --state-dir is required\n\n%s", kWorkerUsage);
    return 2;
  }
  return std::nullopt;
}

std::string default_worker_id() {
  char host[256] = {};
  std::string id = (::gethostname(host, sizeof host - 1) == 0 && host[0] != '\0') ? host : "worker";
  for (char& c : id)
    if (!net::valid_peer_name(std::string_view(&c, 1)) || c == '/') c = '_';
  if (id.size() > 180) id.resize(180);
  return absl::StrCat(id, "/", ::getpid());
}

}  // namespace

int worker_command(int argc, char** argv) {
  WorkerFlags flags;
  if (auto code = parse_flags(argc, argv, flags)) return *code;
  if (flags.id.empty()) flags.id = default_worker_id();
  auto secret = net::secret_from_flag(flags.secret_file);
  if (!secret.ok()) {
    std::fprintf(stderr, "kairos worker: %s\n", std::string(secret.status().message()).c_str());
    return 2;
  }
  WorkerConfig wc;
  wc.worker_id = flags.id;
  wc.nodes = {net::TcpClientTransport::kNode};
  wc.max_concurrent = flags.concurrency;
  // The claim never grants a run of a kind this worker does not run.
  wc.accepts = static_cast<std::uint8_t>(((flags.runners & kCommandRunner) ? kAcceptCommand : 0) |
                                         ((flags.runners & kHttpRunner) ? kAcceptHttp : 0));
  // The same derivation as the server's, so equal --lease-ttl values agree.
  auto lease = lease_config_for_ttl(flags.lease_ttl);
  if (lease.ok()) {
    wc.lease = *lease;
    wc.claim_wait = claim_wait_for(wc.lease);
  }
  if (absl::Status s = lease.ok() ? validate(wc) : lease.status(); !s.ok()) {
    std::fprintf(stderr, "kairos worker: flag --lease-ttl: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  ::signal(SIGPIPE, SIG_IGN);

  // The state directory and the records of a dead predecessor's jobs.
  std::error_code ec;
  std::filesystem::create_directories(flags.state_dir, ec);
  if (ec || !std::filesystem::is_directory(flags.state_dir, ec)) {
    std::fprintf(stderr, "kairos worker: flag --state-dir: cannot use '%s' as a directory: %s\n",
                 excerpt(flags.state_dir).c_str(), ec ? ec.message().c_str() : "not a directory");
    return 1;
  }
  const std::string job_records =
      (std::filesystem::absolute(flags.state_dir, ec) / kRecordsDir).string();
  if (absl::Status s =
          ec ? absl::UnavailableError(ec.message()) : prepare_job_group_records(job_records);
      !s.ok()) {
    std::fprintf(stderr, "kairos worker: %s\n", std::string(s.message()).c_str());
    return 1;
  }

  boost::asio::io_context io;
  SystemClock clock;
  AsioTimers timers(io);
  LogEventLog log;
  Metrics metrics;
  for (const JobGroupCleanup& c : clean_up_job_groups(job_records)) {
    note(log, clock, "worker.orphan_group",
         {{"record", c.entry},
          {"action", c.action},
          {"pgid", static_cast<std::int64_t>(c.pgid)},
          {"killed", static_cast<std::uint64_t>(c.killed)},
          {"detail", c.detail}});
  }

  // The one place this worker's runners are made (prod/cli/job_runners.h),
  // restricted to the kinds --runners names.
  JobRunnerSetup runner_setup;
  runner_setup.job_records_dir = job_records;
  runner_setup.lease = wc.lease;
  std::vector<PayloadKind> kinds;
  if (flags.runners & kCommandRunner) kinds.push_back(PayloadKind::kCommand);
  if (flags.runners & kHttpRunner) kinds.push_back(PayloadKind::kHttp);
  runner_setup.kinds = kinds;
  auto built = build_job_runners(io, timers, clock, log, runner_setup);
  if (!built.ok()) {
    std::fprintf(stderr, "kairos worker: %s\n", std::string(built.status().message()).c_str());
    return 1;
  }
  std::unique_ptr<CompositeRunner> runner = std::move(built).value();
  const absl::Duration kill_grace = wc.lease.margin / 2;

  net::TcpClientTransport::Options to;
  to.worker_id = flags.id;
  to.secret = *secret;
  to.nodes = flags.connect;
  to.idle_timeout = net::idle_timeout_for(wc.lease, wc.claim_wait);
  to.seed = fresh_seed();
  auto transport = std::make_unique<net::TcpClientTransport>(io, std::move(to), clock, log);
  Random random(fresh_seed());
  auto worker = std::make_unique<Worker>(clock, timers, *transport, *runner, random, log, metrics,
                                         std::move(wc));

  std::string targets;
  for (const net::NetAddress& a : flags.connect)
    absl::StrAppend(&targets, targets.empty() ? "" : ",", a.to_string());
  std::string kind_names;
  for (PayloadKind k : kinds)
    absl::StrAppend(&kind_names, kind_names.empty() ? "" : ",", absl_sv(payload_kind_name(k)));
  transport->start();
  worker->start();
  note(log, clock, "worker.process_started",
       {{"worker", flags.id},
        {"connect", targets},
        {"concurrency", static_cast<std::uint64_t>(flags.concurrency)},
        {"runners", kind_names},
        {"secret", std::string(*secret ? "yes" : "no")}});

  // SIGTERM/SIGINT drain the worker (prod/cli/drain.h); the loop stops when
  // the drain ends, or at once on a second signal.
  DrainOptions drain_options;
  drain_options.process = "worker";
  drain_options.timeout = flags.drain_timeout;
  drain_options.kill_grace = kill_grace;
  DrainOnSignal drain(io, timers, clock, log, {worker.get()}, drain_options);
  std::printf("kairos worker: ready (id %s, connecting to %s)\n", flags.id.c_str(),
              targets.c_str());
  std::fflush(stdout);
  io.run();

  std::fprintf(stderr, "kairos worker: stopping (%s)\n", drain.outcome().c_str());
  note(log, clock, "worker.stopping",
       {{"signal", drain.signal_name()}, {"drain", drain.outcome()}});
  drain.cancel();
  worker->stop();
  transport->close();
  shutdown_runners(io, *runner, kill_grace);
  worker.reset();
  transport.reset();
  runner.reset();  // kills (SIGKILL) and reaps anything that outlived the bound
  note(log, clock, "worker.stopped");
  log.flush();
  std::fputs("kairos worker: stopped\n", stderr);
  return 0;
}

}  // namespace kairos::cli
