// `kairos server`: a scheduler node with the embedded LMDB store (or a
// PostgreSQL store shared with other nodes) and local workers, in one
// process on one event loop.
//
// Wiring (docs/OPERATIONS.md). One io_context run by the main thread is the
// event loop of everything: the SchedulerNode (core), N Workers (core) and
// the ProcessRunner they share. The node and the workers talk through a
// LoopbackHub, i.e. the real wire protocol without a socket; a later
// `kairos worker` reaches the same node through a TCP transport instead, and
// the HTTP API will call the node's job API on this loop. The store's writer
// thread runs transaction bodies and posts results back to the loop. Events
// of every component go, one line each, to stderr through LogEventLog (its
// own writer thread), so a slow terminal never stalls the loop.
//
// Startup: validate flags (exit 2 naming the flag) -> open the store ->
// health record -> record/check the shard count -> start the node and the
// workers -> print the ready line on stdout -> with --demo, create the demo
// job (idempotent: the same spec is not created twice).
//
// Shutdown on SIGINT/SIGTERM: a drain (prod/cli/drain.h). The local
// workers stop claiming, /readyz answers 503 "draining", and the node, the
// API and the remote-worker listener serve on, so running attempts (local
// and remote) can renew and report. Once nothing runs locally, or after
// --drain-timeout (then the local attempts are stopped: SIGTERM, SIGKILL
// after the grace; each reports kStopped, which hands its run back, and is
// retried later with a higher fencing token), or at once on a second
// signal: the API stops; the node leaves (unless a second signal came):
// it releases the shards it leads and withdraws its node record, so other
// nodes on the store lead them at once (bounded by kLeaveBound, 5 s); the
// remote listener closes (remote workers' leases lapse unless
// they reach another node), the workers stop (terminating whatever still
// runs), then the node; the store finishes every queued transaction durably
// while the node object still exists (queued bodies refer to it), the log is
// flushed, exit 0.
#include <signal.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "core/base/check.h"
#include "core/base/text.h"
#include "core/kernel/job_store.h"
#include "core/kernel/keyspace.h"
#include "core/kernel/node_support.h"
#include "core/kernel/scheduler_node.h"
#include "core/kernel/worker.h"
#include "core/ports/metrics.h"
#include "core/ports/random.h"
#include "core/twins/loopback_transport.h"
#include "prod/api/api_service.h"
#include "prod/api/run_stats.h"
#include "prod/cli/commands.h"
#include "prod/cli/drain.h"
#include "prod/cli/job_runners.h"
#include "prod/cli/server_flags.h"
#include "prod/log/log_event_log.h"
#include "prod/net/handshake.h"
#include "prod/net/tcp_transport.h"
#include "prod/net/transport_mux.h"
#include "prod/runners/job_records.h"
#include "prod/runtime/asio_runtime.h"
#include "prod/store/lmdb_storage.h"
#include "prod/store/postgres_storage.h"

namespace kairos::cli {
namespace {

// In the 0x00 store-metadata range that core/kernel/keyspace.h reserves; the LMDB
// adapter keeps its own schema record apart, in its meta database.
constexpr std::string_view kHealthKey{"\x00kairos.server_health", 21};

constexpr std::string_view kDemoJobId = "demo-hello";
constexpr std::string_view kDemoScript =
    "echo \"hello from kairos: key=$KAIROS_IDEMPOTENCY_KEY token=$KAIROS_FENCING_TOKEN\"";

// How long a stopping server waits for its graceful leave (Server::leave).
constexpr absl::Duration kLeaveBound = absl::Seconds(5);

std::string default_node_id() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') return "kairos";
  std::string id(host);
  for (char& c : id)
    if (!valid_node_id(std::string_view(&c, 1))) c = '_';
  if (id.size() > kMaxWorkerIdSize) id.resize(kMaxWorkerIdSize);
  return id;
}

// Runs one transaction to its result on the loop (startup only: the loop is
// not yet serving anything else).
TxnResult transact_now(boost::asio::io_context& io, Storage& store, TxnBody body,
                       TxnMode mode = TxnMode::kReadWrite) {
  std::optional<TxnResult> result;
  store.transact(
      std::move(body), [&](TxnResult r) { result = std::move(r); }, mode);
  while (!result && io.run_one() > 0) {
  }
  KAIROS_CHECK(result.has_value());
  return std::move(*result);
}

// Writes the health record and reads it back through real transactions.
absl::Status check_health(boost::asio::io_context& io, Storage& store, const Clock& clock) {
  const std::string stamp = absl::FormatTime(absl::RFC3339_full, clock.now(), absl::UTCTimeZone());
  TxnResult wrote = transact_now(io, store, [stamp](Txn& t) {
    t.put(kHealthKey, stamp);
    return absl::OkStatus();
  });
  if (!wrote.committed())
    return absl::UnavailableError(
        absl::StrFormat("health record write: %s", wrote.status.ToString()));
  auto seen = std::make_shared<std::optional<std::string>>();
  TxnResult read = transact_now(
      io, store,
      [seen](Txn& t) {
        *seen = t.get(kHealthKey);
        return absl::OkStatus();
      },
      TxnMode::kReadOnly);
  if (!read.committed())
    return absl::UnavailableError(
        absl::StrFormat("health record read: %s", read.status.ToString()));
  if (*seen != stamp) return absl::DataLossError("health record read back differs");
  return absl::OkStatus();
}

// Records the shard count in a new store, or checks it against an old one.
absl::Status check_shards(boost::asio::io_context& io, Storage& store, std::uint32_t shards) {
  auto job_store = std::make_shared<JobStore>(shards);
  TxnResult r = transact_now(io, store, [job_store](Txn& t) { return job_store->init(t); });
  if (r.committed()) return absl::OkStatus();
  if (r.outcome == CommitOutcome::kAborted)
    return absl::FailedPreconditionError(absl::StrCat("flag --shards: ", r.status.message(),
                                                      "; start with --shards matching the store"));
  return absl::UnavailableError(absl::StrCat("recording the shard count: ", r.status.ToString()));
}

// A run whose attempt the dead incarnation held, handed back to the
// scheduler (fenced by the attempt's token) once its job group is proven
// over: claimable at once instead of after the lease. Idempotent (a repeated
// body, or one after another node's reaper, writes nothing), so a conflict
// or an unknown outcome is simply tried again, a few times.
struct HandBack {
  TxnResult txn;
  ReleaseResult release;
};
HandBack hand_back_run(boost::asio::io_context& io, Storage& store, std::uint32_t shards,
                       const RunId& run, std::uint64_t token) {
  auto job_store = std::make_shared<JobStore>(shards);
  auto out = std::make_shared<ReleaseResult>();
  HandBack h;
  for (int i = 0; i < 3; ++i) {
    h.txn = transact_now(io, store, [job_store, run, token, out](Txn& t) {
      return job_store->release_abandoned(t, run, token, "worker_restart", out.get());
    });
    if (h.txn.committed() || h.txn.outcome == CommitOutcome::kAborted) break;
  }
  h.release = *out;
  return h;
}

JobSpec demo_job_spec(std::uint32_t every_seconds) {
  JobSpec spec;
  spec.id = std::string(kDemoJobId);
  spec.schedule.kind = ScheduleSpec::Kind::kCron;
  spec.schedule.cron = absl::StrCat("*/", every_seconds, " * * * * *");
  spec.schedule.zone = "UTC";
  spec.payload = CommandPayload{{"/bin/sh", "-c", std::string(kDemoScript)}, {}, {}};
  spec.policy.timeout = absl::Seconds(30);
  return spec;
}

// Everything that lives on the loop, in construction order; destroyed in
// reverse, after shutdown() has stopped it.
struct Server {
  boost::asio::io_context& io;
  SystemClock clock;
  AsioTimers timers{io};
  LogEventLog log;
  api::RunStats run_stats;  // GET /v1/stats, fed by the node's events
  api::StatsEventLog stats_log{log, run_stats};
  Metrics metrics;
  std::unique_ptr<Storage> store;
  std::string store_description;  // "lmdb at DIR" or "postgresql at ..." (no password)
  std::uint32_t schema_version = 0;
  std::unique_ptr<CompositeRunner> runner;
  std::optional<LoopbackHub> hub;
  std::unique_ptr<LoopbackHub::Endpoint> node_endpoint;
  // Remote workers: TCP connections beside the local hub, one Transport for the node.
  std::unique_ptr<net::TcpServerTransport> remote;
  std::optional<net::TransportMux> node_transport;
  std::unique_ptr<Random> node_random;
  std::unique_ptr<SchedulerNode> node;
  struct LocalWorker {
    std::unique_ptr<LoopbackHub::Endpoint> endpoint;
    std::unique_ptr<Random> random;
    std::unique_ptr<Worker> worker;
  };
  std::vector<LocalWorker> workers;

  Server(boost::asio::io_context& loop, LogEventLogOptions log_options)
      : io(loop), log(log_options) {}

  void note(std::string_view kind, std::vector<EventField> fields = {}) {
    cli::note(log, clock, kind, std::move(fields));
  }

  // The node's graceful leave (SchedulerNode::leave) on the loop, bounded:
  // its shards are released and its node record withdrawn, so the other
  // nodes on the store (or a replacement) lead them at once rather than
  // after a leader lease. Returns whether it completed within `bound` (an
  // unreachable store cannot hold the shutdown up).
  bool leave(absl::Duration bound) {
    if (!node || !node->running() || node->leaving()) return false;
    bool left = false;
    io.restart();
    node->leave([this, &left] {
      left = true;
      io.stop();
    });
    const TimerId timer = timers.after(bound, [this] { io.stop(); });
    if (!left) io.run();
    timers.cancel(timer);
    return left;
  }

  // Stops the workers and their jobs, then the node; waits (bounded) for the
  // terminated processes; then lets the store finish what is queued.
  void shutdown(absl::Duration kill_grace) {
    if (remote) remote->close();  // remote workers' leases lapse; they reconnect elsewhere
    for (auto& w : workers) w.worker->stop();
    if (runner) shutdown_runners(io, *runner, kill_grace);
    if (node) node->stop();
    // Queued bodies refer to the node (its JobStore and config): the store
    // must finish them while the node object still exists.
    store.reset();
    workers.clear();
    node.reset();
    runner.reset();  // kills (SIGKILL) and reaps anything that outlived the bound
    node_transport.reset();
    remote.reset();
    node_endpoint.reset();
    hub.reset();
  }
};

// Opens the store the flags name: LMDB in its directory, or PostgreSQL
// (whose schema `kairos migrate` must have created at this binary's version).
absl::Status open_store(const ServerFlags& flags, Server& server) {
  if (!flags.postgres.empty()) {
    PostgresOptions options;
    options.conninfo = flags.postgres;
    auto opened = PostgresStorage::Open(options, server.timers);
    if (!opened.ok()) return opened.status();
    server.store_description = (*opened)->describe();
    server.schema_version = (*opened)->schema_version();
    server.store = std::move(opened).value();
    return absl::OkStatus();
  }
  LmdbOptions options;
  options.path = flags.lmdb_dir;
  options.initial_map_size = flags.map_size;
  auto opened = LmdbStorage::Open(options, server.clock, server.timers);
  if (!opened.ok()) return opened.status();
  server.store_description = absl::StrCat("lmdb at ", (*opened)->path());
  server.schema_version = (*opened)->schema_version();
  server.store = std::move(opened).value();
  return absl::OkStatus();
}

}  // namespace

int server_command(int argc, char** argv) {
  ServerFlags flags;
  if (auto code = parse_server_flags(argc, argv, flags)) return *code;
  if (flags.node_id.empty()) flags.node_id = default_node_id();
  auto worker_secret = net::secret_from_flag(flags.worker_secret_file);
  if (!worker_secret.ok()) {
    std::fprintf(stderr, "kairos server: %s\n",
                 std::string(worker_secret.status().message()).c_str());
    return 2;
  }
  ::signal(SIGPIPE, SIG_IGN);  // a closed log pipe is an error to count, not a reason to die

  boost::asio::io_context io;
  auto work = boost::asio::make_work_guard(io);  // the store's writer posts results
  LogEventLogOptions log_options;
  log_options.format = flags.log_format == "json" ? LogFormat::kJson : LogFormat::kText;
  Server server(io, log_options);

  if (absl::Status s = open_store(flags, server); !s.ok()) {
    std::fprintf(stderr, "kairos server: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  if (absl::Status health = check_health(io, *server.store, server.clock); !health.ok()) {
    std::fprintf(stderr, "kairos server: store health check failed: %s\n",
                 health.ToString().c_str());
    return 1;
  }
  if (absl::Status shards = check_shards(io, *server.store, flags.shards); !shards.ok()) {
    std::fprintf(stderr, "kairos server: %s\n", std::string(shards.message()).c_str());
    return shards.code() == absl::StatusCode::kFailedPrecondition ? 2 : 1;
  }

  // Every job runs under the job shim and dies with this process; what a dead
  // incarnation left running is killed before any worker starts.
  std::error_code abs_ec;
  // With a PostgreSQL store the data directory holds only the job records.
  if (!flags.postgres.empty() &&
      (std::filesystem::create_directories(flags.data_dir, abs_ec), abs_ec)) {
    std::fprintf(stderr, "kairos server: cannot create the data directory %s: %s\n",
                 flags.data_dir.c_str(), abs_ec.message().c_str());
    return 1;
  }
  const std::string job_records =
      (std::filesystem::absolute(flags.data_dir, abs_ec) / kJobRecordsDir).string();
  if (absl::Status s = abs_ec ? absl::UnavailableError(abs_ec.message())
                              : prepare_job_group_records(job_records);
      !s.ok()) {
    std::fprintf(stderr, "kairos server: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  const std::vector<JobGroupCleanup> orphans = clean_up_job_groups(job_records);
  for (const JobGroupCleanup& c : orphans) {
    server.note("server.orphan_group", {{"record", c.entry},
                                        {"action", c.action},
                                        {"pgid", static_cast<std::int64_t>(c.pgid)},
                                        {"killed", static_cast<std::uint64_t>(c.killed)},
                                        {"detail", c.detail}});
  }
  // The runs of the groups proven over go back to the scheduler now, before
  // any worker starts; survivors and live owners keep theirs until the lease.
  for (const JobGroupCleanup& c : orphans) {
    if (!group_proven_over(c) || !c.run) continue;
    HandBack h = hand_back_run(io, *server.store, flags.shards, *c.run, c.token);
    if (h.txn.committed())
      for (Event& e : h.release.events)
        record_event(std::move(e), server.clock.now(), "node", flags.node_id, server.log,
                     server.metrics);
    std::vector<EventField> f{{"job", c.run->job_id},
                              {"incarnation", c.run->incarnation},
                              {"nominal", c.run->nominal},
                              {"attempt", static_cast<std::uint64_t>(c.attempt)},
                              {"token", c.token}};
    if (!h.txn.committed()) {
      f.push_back({"result", std::string("error")});
      f.push_back({"detail", h.txn.status.ToString()});
    } else if (h.release.verdict == WriteVerdict::kAccepted) {
      f.push_back({"result", std::string("released")});
      f.push_back({"state", std::string(to_string(h.release.state))});
    } else {
      // Another token holds it, or it already ended: nothing to give back.
      f.push_back({"result", std::string(to_string(h.release.verdict))});
      f.push_back({"detail", h.release.reason});
    }
    server.note("server.run_handed_back", std::move(f));
  }

  SchedulerNodeConfig node_config;
  node_config.node_id = flags.node_id;
  node_config.shard_count = flags.shards;
  node_config.poll_interval = absl::Seconds(1);
  node_config.lease = flags.lease;
  // The grace between SIGTERM and SIGKILL stays within the lease margin, so a
  // job stopped at its worker's lease deadline is gone before the lease lapses.
  JobRunnerSetup runner_setup;
  runner_setup.job_records_dir = job_records;
  runner_setup.lease = node_config.lease;
  runner_setup.http_ca_file = flags.http_ca_file;
  auto runners = build_job_runners(io, server.timers, server.clock, server.log, runner_setup);
  if (!runners.ok()) {
    std::fprintf(stderr, "kairos server: flag --http-ca-file: %s\n",
                 std::string(runners.status().message()).c_str());
    return 2;
  }
  server.runner = std::move(runners).value();
  const absl::Duration kill_grace = runner_setup.lease.margin / 2;
  server.hub.emplace(server.timers);
  server.node_endpoint = server.hub->connect();
  std::vector<Transport*> node_transports{server.node_endpoint.get()};
  if (flags.listen) {
    net::TcpServerTransport::Options o;
    o.server_id = flags.node_id;
    o.secret = *worker_secret;
    o.idle_timeout = net::idle_timeout_for(node_config.lease, node_config.max_claim_wait);
    // A worker gone (a drained `kairos worker` exits with its long-poll still
    // parked here): its parked claims go, so no run is granted to nobody.
    const std::size_t remote_index = node_transports.size();
    o.on_closed = [&server, remote_index](PeerId peer) {
      if (server.node && server.node_transport)
        server.node->forget_peer(server.node_transport->id_of(remote_index, peer));
    };
    o.metrics = &server.metrics;
    auto remote =
        net::TcpServerTransport::Listen(io, net::NetAddress{flags.listen->host, flags.listen->port},
                                        std::move(o), server.clock, server.log);
    if (!remote.ok()) {
      std::fprintf(stderr, "kairos server: flag --listen: %s\n",
                   std::string(remote.status().message()).c_str());
      return remote.status().code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
    }
    server.remote = std::move(remote).value();
    node_transports.push_back(server.remote.get());
  }
  server.node_transport.emplace(std::move(node_transports));
  server.node_random = std::make_unique<Random>(fresh_seed());
  server.node = std::make_unique<SchedulerNode>(server.clock, server.timers, *server.store,
                                                *server.node_transport, *server.node_random,
                                                server.stats_log, server.metrics, node_config);
  for (std::uint32_t i = 0; i < flags.workers; ++i) {
    Server::LocalWorker w;
    w.endpoint = server.hub->connect();
    w.random = std::make_unique<Random>(fresh_seed());
    WorkerConfig wc;
    wc.worker_id = absl::StrCat(flags.node_id, "/w", i + 1);
    wc.nodes = {server.node_endpoint->id()};
    wc.lease = node_config.lease;
    wc.claim_wait = claim_wait_for(node_config.lease);
    w.worker = std::make_unique<Worker>(server.clock, server.timers, *w.endpoint, *server.runner,
                                        *w.random, server.log, server.metrics, std::move(wc));
    server.workers.push_back(std::move(w));
  }
  server.metrics.gauge("kairos_workers_connected{kind=\"embedded\"}", net::kConnectedWorkersHelp)
      .set(static_cast<std::int64_t>(server.workers.size()));

  auto api = api::ApiService::start(
      io, *server.node, server.metrics, flags.api, [&server] { return server.store != nullptr; },
      &server.run_stats);
  if (!api.ok()) {
    std::fprintf(stderr, "kairos server: %s\n", std::string(api.status().message()).c_str());
    return api.status().code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
  }
  server.node->start();
  for (auto& w : server.workers) w.worker->start();
  server.note("server.started", {{"node", flags.node_id},
                                 {"store", server.store_description},
                                 {"shards", static_cast<std::uint64_t>(flags.shards)},
                                 {"workers", static_cast<std::uint64_t>(flags.workers)}});

  if (flags.demo) {
    server.node->create_job(
        demo_job_spec(flags.demo_every), [&server](absl::StatusOr<CreateResult> r) {
          if (!r.ok()) {
            server.note("server.demo_job", {{"job", std::string(kDemoJobId)},
                                            {"result", std::string("error")},
                                            {"error", std::string(r.status().message())}});
            return;
          }
          std::vector<EventField> f{{"job", std::string(kDemoJobId)},
                                    {"result", std::string(r->created ? "created" : "exists")},
                                    {"incarnation", r->job.incarnation}};
          if (r->job.next_due_at) f.push_back({"next_due", *r->job.next_due_at});
          server.note("server.demo_job", std::move(f));
        });
  }

  // SIGTERM/SIGINT drain the local workers while the node, the API and the
  // remote listener serve on (prod/cli/drain.h); the loop stops when the
  // drain ends, or at once on a second signal.
  std::vector<Worker*> local;
  for (auto& w : server.workers) local.push_back(w.worker.get());
  DrainOptions drain_options;
  drain_options.process = "server";
  drain_options.timeout = flags.drain_timeout;
  drain_options.kill_grace = kill_grace;
  DrainOnSignal drain(io, server.timers, server.clock, server.log, std::move(local), drain_options,
                      [&api] { (*api)->set_draining(); });
  std::printf("kairos server: ready (store: %s, schema v%u)\n", server.store_description.c_str(),
              server.schema_version);
  std::fflush(stdout);
  io.run();

  std::fprintf(stderr, "kairos server: stopping (%s)\n", drain.outcome().c_str());
  server.note("server.stopping", {{"signal", drain.signal_name()}, {"drain", drain.outcome()}});
  drain.cancel();
  (*api)->stop();  // no request reaches the node from here on
  if (drain.outcome() != "interrupted") {
    const bool left = server.leave(kLeaveBound);
    std::fputs(left
                   ? "kairos server: left: shards released, node record withdrawn\n"
                   : "kairos server: leave not completed in time: the leases lapse by themselves\n",
               stderr);
    server.note("server.left", {{"completed", std::string(left ? "yes" : "no")}});
  }
  server.shutdown(kill_grace);
  work.reset();
  server.note("server.stopped");
  server.log.flush();
  std::fputs("kairos server: stopped\n", stderr);
  return 0;
}

}  // namespace kairos::cli
