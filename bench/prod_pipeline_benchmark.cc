// The whole run pipeline (dispatch + claim + complete) through the real
// classes, wired as `kairos server` wires them (prod/cli/server_command.cc):
// an LMDB store with durable group commit in a temporary directory, the
// SchedulerNode, local Workers over the loopback hub behind a TransportMux,
// all on one Asio loop, and the production event log (LogEventLog, through
// the dashboard's StatsEventLog for the node, into a temporary file) or no
// log at all. The runner is a no-op that succeeds at once, so the figure is
// the scheduler's own cost per run.
//
// One iteration: N one-off jobs, all due at the moment the node starts, run
// by C / 4 workers of 4 slots each (the server's --workers with the default
// concurrency). Timed from node start to the last run.completed. Counters:
// runs_per_s (wall clock) and cpu_us_per_run (getrusage user + system of the
// whole process, every thread, over the same span, divided by N); CPU per run
// is the figure to compare on a loaded machine.
//
// Afterwards the store is read back: there must be exactly one run record per
// job, succeeded, with exactly one attempt, and the node must have counted
// exactly N completions; otherwise the benchmark fails (a fast wrong answer
// is no result).
//
//   build/release/bench/bench_prod_pipeline_benchmark
//   args: jobs / concurrency / event log (1 on, 0 off)
// KAIROS_PIPELINE_JOBS=N in the environment replaces the job count (e.g. a
// small run under callgrind, whose instruction counts do not depend on the
// machine's load).
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "core/base/check.h"
#include "core/base/key_codec.h"
#include "core/kernel/job_store.h"
#include "core/kernel/keyspace.h"
#include "core/kernel/lease_config.h"
#include "core/kernel/records.h"
#include "core/kernel/scheduler_node.h"
#include "core/kernel/worker.h"
#include "core/ports/metrics.h"
#include "core/ports/random.h"
#include "core/twins/loopback_transport.h"
#include "prod/api/run_stats.h"
#include "prod/cli/job_runners.h"
#include "prod/log/log_event_log.h"
#include "prod/net/transport_mux.h"
#include "prod/runtime/asio_runtime.h"
#include "prod/store/lmdb_storage.h"

namespace kairos {
namespace {

// Succeeds at once, on the loop, never inside start() (the Runner contract).
class NoopRunner final : public Runner {
 public:
  explicit NoopRunner(Timers& loop) : loop_(loop) {}
  RunHandle start(RunRequest, std::function<void(RunOutcome)> done) override {
    loop_.post([done = std::move(done)] {
      done(RunOutcome{RunStatus::kSucceeded, 0, "", true, {}});
    });
    return ++next_;
  }
  void stop(RunHandle) override {}

 private:
  Timers& loop_;
  RunHandle next_ = 0;
};

double cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  auto sec = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return sec(u.ru_utime) + sec(u.ru_stime);
}

std::string temp_dir() {
  const char* base = getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/kairos-pipeline-XXXXXX";
  KAIROS_CHECK(mkdtemp(tmpl.data()) != nullptr);
  return tmpl;
}

// One server's worth of objects, in server_command.cc's construction order.
struct Pipeline {
  boost::asio::io_context io;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work =
      boost::asio::make_work_guard(io);
  std::string dir = temp_dir();
  int log_fd = -1;
  SystemClock clock;
  AsioTimers timers{io};
  std::unique_ptr<LogEventLog> text_log;
  NullEventLog null_log;
  api::RunStats run_stats;
  std::unique_ptr<api::StatsEventLog> stats_log;
  EventLog* log = &null_log;
  EventLog* node_log = &null_log;
  Metrics metrics;
  std::unique_ptr<LmdbStorage> store;
  std::unique_ptr<NoopRunner> runner;
  std::optional<LoopbackHub> hub;
  std::unique_ptr<LoopbackHub::Endpoint> node_endpoint;
  std::optional<net::TransportMux> node_transport;
  std::unique_ptr<Random> node_random;
  std::unique_ptr<SchedulerNode> node;
  struct LocalWorker {
    std::unique_ptr<LoopbackHub::Endpoint> endpoint;
    std::unique_ptr<Random> random;
    std::unique_ptr<Worker> worker;
  };
  std::vector<LocalWorker> workers;
  bool stopped = false;
  static constexpr std::uint32_t kShards = 8;

  Pipeline(std::uint32_t worker_count, bool event_log) {
    if (event_log) {
      log_fd = ::open((dir + "/events.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      KAIROS_CHECK(log_fd >= 0);
      LogEventLogOptions o;
      o.fd = log_fd;
      text_log = std::make_unique<LogEventLog>(o);
      stats_log = std::make_unique<api::StatsEventLog>(*text_log, run_stats);
      log = text_log.get();
      node_log = stats_log.get();
    }
    LmdbOptions options;
    options.path = dir + "/store";
    options.initial_map_size = std::size_t{1} << 30;
    auto opened = LmdbStorage::Open(options, clock, timers);
    KAIROS_CHECK(opened.ok());
    store = std::move(opened).value();
    auto job_store = std::make_shared<JobStore>(kShards);
    KAIROS_CHECK(transact([job_store](Txn& t) { return job_store->init(t); }).committed());

    SchedulerNodeConfig node_config;
    node_config.node_id = "bench";
    node_config.shard_count = kShards;
    node_config.poll_interval = absl::Seconds(1);
    auto lease = lease_config_for_ttl(absl::Seconds(30));
    KAIROS_CHECK(lease.ok());
    node_config.lease = *lease;
    runner = std::make_unique<NoopRunner>(timers);
    hub.emplace(timers);
    node_endpoint = hub->connect();
    node_transport.emplace(std::vector<Transport*>{node_endpoint.get()});
    node_random = std::make_unique<Random>(cli::fresh_seed());
    node = std::make_unique<SchedulerNode>(clock, timers, *store, *node_transport, *node_random,
                                           *node_log, metrics, node_config);
    for (std::uint32_t i = 0; i < worker_count; ++i) {
      LocalWorker w;
      w.endpoint = hub->connect();
      w.random = std::make_unique<Random>(cli::fresh_seed());
      WorkerConfig wc;
      wc.worker_id = absl::StrCat("bench/w", i + 1);
      wc.nodes = {node_endpoint->id()};
      wc.lease = node_config.lease;
      wc.claim_wait = claim_wait_for(node_config.lease);
      w.worker = std::make_unique<Worker>(clock, timers, *w.endpoint, *runner, *w.random, *log,
                                          metrics, std::move(wc));
      workers.push_back(std::move(w));
    }
  }

  void stop() {
    if (stopped) return;
    stopped = true;
    for (auto& w : workers) w.worker->stop();
    node->stop();
  }

  ~Pipeline() {
    stop();
    store.reset();
    workers.clear();
    node.reset();
    runner.reset();
    node_transport.reset();
    node_endpoint.reset();
    hub.reset();
    io.poll();
    if (text_log) text_log->flush();
    stats_log.reset();
    text_log.reset();
    if (log_fd >= 0) ::close(log_fd);
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }

  TxnResult transact(TxnBody body, TxnMode mode = TxnMode::kReadWrite) {
    std::optional<TxnResult> result;
    store->transact(
        std::move(body), [&](TxnResult r) { result = std::move(r); }, mode);
    while (!result && io.run_one() > 0) {
    }
    KAIROS_CHECK(result.has_value());
    return std::move(*result);
  }

  // Creates `n` one-off jobs due at `at`; all requests in flight at once.
  void create_jobs(std::size_t n, absl::Time at) {
    std::size_t left = n;
    for (std::size_t i = 0; i < n; ++i) {
      JobSpec spec;
      spec.id = absl::StrCat("bench-", i);
      spec.schedule.kind = ScheduleSpec::Kind::kOnce;
      spec.schedule.at = at;
      spec.payload = CommandPayload{{"/bin/true"}, {}, ""};
      node->create_job(std::move(spec), [&left](absl::StatusOr<CreateResult> r) {
        KAIROS_CHECK_MSG(r.ok() && r->created, "creating a benchmark job failed");
        --left;
      });
    }
    while (left > 0) io.run_one();
  }

  // Every job ran exactly once: one run record per job, succeeded, with one
  // attempt. Returns an empty string when so, else what is wrong.
  std::string verify(std::size_t n) {
    auto seen = std::make_shared<std::vector<RunRecord>>();
    auto bad = std::make_shared<std::string>();
    const std::string begin(1, static_cast<char>(keys::kRun));
    const std::string end = prefix_end(begin);
    TxnResult r = transact(
        [seen, bad, begin, end](Txn& t) {
          seen->clear();
          std::string from = begin;
          while (true) {
            std::vector<KeyValue> page = t.scan(from, end, 4096);
            for (const KeyValue& kv : page) {
              auto run = decode_run(kv.value);
              if (!run.ok()) {
                *bad = "undecodable run record";
                return absl::OkStatus();
              }
              seen->push_back(*std::move(run));
            }
            if (page.size() < 4096) break;
            from = page.back().key;
            from.push_back('\0');
          }
          return absl::OkStatus();
        },
        TxnMode::kReadOnly);
    if (!r.committed()) return "reading the run records failed";
    if (!bad->empty()) return *bad;
    if (seen->size() != n) return absl::StrCat(seen->size(), " run records for ", n, " jobs");
    std::set<std::string> jobs;
    for (const RunRecord& run : *seen) {
      if (run.state != RunState::kSucceeded || run.attempts.size() != 1)
        return absl::StrCat("run of ", run.id.job_id, " is ", absl_sv(to_string(run.state)),
                            " after ", run.attempts.size(), " attempts");
      jobs.insert(run.id.job_id);
    }
    if (jobs.size() != n) return absl::StrCat(jobs.size(), " distinct jobs ran of ", n);
    return {};
  }
};

void BM_Pipeline(benchmark::State& state) {
  std::size_t jobs = static_cast<std::size_t>(state.range(0));
  if (const char* n = getenv("KAIROS_PIPELINE_JOBS"); n != nullptr && *n != '\0') {
    jobs = static_cast<std::size_t>(std::strtoull(n, nullptr, 10));
    KAIROS_CHECK_MSG(jobs > 0, "KAIROS_PIPELINE_JOBS must be a positive number");
  }
  const auto concurrency = static_cast<std::uint32_t>(state.range(1));
  const bool event_log = state.range(2) != 0;
  double total_runs = 0, total_wall = 0, total_cpu = 0;
  for (auto _ : state) {
    auto p = std::make_unique<Pipeline>(std::max<std::uint32_t>(1, concurrency / 4), event_log);
    p->create_jobs(jobs, p->clock.now());
    Counter& completed = p->metrics.counter("kairos_run_completed_total");
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = cpu_seconds();
    p->node->start();
    for (auto& w : p->workers) w.worker->start();
    const auto limit = t0 + std::chrono::minutes(5);
    std::size_t spins = 0;
    while (static_cast<std::size_t>(completed.value()) < jobs) {
      p->io.run_one();
      if (++spins % 4096 == 0 && std::chrono::steady_clock::now() > limit) break;
    }
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double cpu = cpu_seconds() - c0;
    state.SetIterationTime(wall);
    if (static_cast<std::size_t>(completed.value()) != jobs) {
      state.SkipWithError(
          absl::StrCat(completed.value(), " of ", jobs, " runs completed in 5 minutes").c_str());
      return;
    }
    p->stop();
    // Let in-flight reports settle, then check nothing ran twice.
    p->io.poll();
    if (std::string wrong = p->verify(jobs); !wrong.empty()) {
      state.SkipWithError(("not exactly once: " + wrong).c_str());
      return;
    }
    if (static_cast<std::size_t>(completed.value()) != jobs) {
      state.SkipWithError("more completions counted than jobs");
      return;
    }
    total_runs += static_cast<double>(jobs);
    total_wall += wall;
    total_cpu += cpu;
  }
  state.counters["runs_per_s"] = total_runs / total_wall;
  state.counters["cpu_us_per_run"] = total_cpu * 1e6 / total_runs;
}

BENCHMARK(BM_Pipeline)
    ->ArgNames({"jobs", "conc", "log"})
    ->Args({20000, 16, 1})
    ->Args({20000, 16, 0})
    ->Args({20000, 256, 1})
    ->Args({20000, 256, 0})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

}  // namespace
}  // namespace kairos

BENCHMARK_MAIN();
