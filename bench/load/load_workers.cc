#include "bench/load/load_workers.h"

#include <algorithm>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <functional>
#include <thread>
#include <unordered_set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/duration.h"
#include "core/kernel/event_kinds.h"
#include "core/kernel/lease_config.h"
#include "core/kernel/worker.h"
#include "core/ports/event_log.h"
#include "core/ports/metrics.h"
#include "core/ports/random.h"
#include "core/ports/runner.h"
#include "prod/cli/job_runners.h"
#include "prod/runtime/asio_runtime.h"

namespace kairos::load {
namespace asio = boost::asio;

namespace {

constexpr std::size_t kMaxExamples = 10;

// Succeeds every attempt on the next turn of the loop (never inside start(),
// as the Runner contract requires) and records when it started.
class NoopRunner final : public Runner {
 public:
  NoopRunner(Timers& loop, const Clock& clock, const std::string& job_prefix,
             WorkerRecords& records)
      : loop_(loop), clock_(clock), job_prefix_(job_prefix), records_(records) {}

  RunHandle start(RunRequest request, std::function<void(RunOutcome)> done) override {
    note_start(request);
    loop_.post([done = std::move(done)] {
      done(RunOutcome{RunStatus::kSucceeded, 0, "", true, {}});
    });
    return ++next_;
  }
  void stop(RunHandle) override {}

 private:
  void note_start(const RunRequest& request) {
    if (!request.job_id.starts_with(job_prefix_)) {
      ++records_.foreign_starts;
      return;
    }
    const absl::Time now = clock_.now();
    ++records_.starts;
    if (!started_.insert(request.run_id).second) {
      ++records_.duplicate_starts;
      if (records_.duplicate_examples.size() < kMaxExamples)
        records_.duplicate_examples.push_back(request.run_id);
      return;
    }
    records_.lateness_us.push_back(absl::ToInt64Microseconds(now - request.nominal_time));
    if (!records_.first_start || now < *records_.first_start) records_.first_start = now;
    if (!records_.last_start || now > *records_.last_start) records_.last_start = now;
  }

  Timers& loop_;
  const Clock& clock_;
  const std::string& job_prefix_;
  WorkerRecords& records_;
  std::unordered_set<std::string> started_;
  RunHandle next_ = 0;
};

// Counts the workers' answered reports and everything that should not
// happen in a fault-free run; drops the rest.
class RecordingEventLog final : public EventLog {
 public:
  RecordingEventLog(const std::string& job_prefix, WorkerRecords& records,
                    std::function<void()> on_answered)
      : job_prefix_(job_prefix), records_(records), on_answered_(std::move(on_answered)) {}

  void record(Event event) override {
    const std::string_view kind = event.kind;
    if (kind == event_kinds::kWorkerReportAccepted || kind == event_kinds::kWorkerReportRejected) {
      const EventValue* job = event.find("job");
      const auto* id = job != nullptr ? std::get_if<std::string>(job) : nullptr;
      if (id == nullptr || !id->starts_with(job_prefix_)) return;
      if (kind == event_kinds::kWorkerReportAccepted) {
        ++records_.accepted;
        if (!records_.last_accepted || event.at > *records_.last_accepted)
          records_.last_accepted = event.at;
      } else {
        ++records_.rejected;
      }
      on_answered_();
      return;
    }
    if (stopping_) return;
    if (kind == event_kinds::kWorkerStarted || kind == event_kinds::kWorkerRunStarted ||
        kind == "net.connected")
      return;
    if (kind.starts_with("worker.") || kind.starts_with("net."))
      ++records_.anomalies[std::string(kind)];
  }
  void stopping() { stopping_ = true; }

 private:
  const std::string& job_prefix_;
  WorkerRecords& records_;
  std::function<void()> on_answered_;
  bool stopping_ = false;
};

}  // namespace

struct WorkerPool::State {
  asio::io_context io;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> guard{
      asio::make_work_guard(io)};
  SystemClock clock;
  std::unique_ptr<AsioTimers> timers;
  Metrics metrics;
  std::unique_ptr<RecordingEventLog> log;
  std::unique_ptr<NoopRunner> runner;
  std::vector<std::unique_ptr<net::TcpClientTransport>> transports;
  std::vector<std::unique_ptr<Random>> randoms;
  std::vector<std::unique_ptr<Worker>> workers;
  std::thread thread;
  bool stopped = false;
};

WorkerPool::WorkerPool(WorkerPoolOptions options)
    : options_(std::move(options)), state_(std::make_unique<State>()) {}

WorkerPool::~WorkerPool() { stop(); }

absl::Status WorkerPool::start(absl::Duration connect_timeout) {
  State& s = *state_;
  auto lease = lease_config_for_ttl(options_.lease_ttl);
  if (!lease.ok()) return lease.status();
  s.timers = std::make_unique<AsioTimers>(s.io);
  // Wakes the waiting thread only once the last expected report is in, not
  // per report (it would compete with the server for the CPU).
  s.log = std::make_unique<RecordingEventLog>(options_.job_prefix, records_, [this] {
    if (answered_.fetch_add(1) + 1 < expected_.load()) return;
    std::lock_guard<std::mutex> lock(mu_);
    cv_.notify_all();
  });
  s.runner = std::make_unique<NoopRunner>(*s.timers, s.clock, options_.job_prefix, records_);
  std::uint32_t left = options_.concurrency;
  for (std::uint32_t i = 0; i < options_.workers; ++i) {
    WorkerConfig wc;
    wc.worker_id = absl::StrCat(options_.id_prefix, "-", i);
    wc.nodes = {net::TcpClientTransport::kNode};
    wc.max_concurrent = i + 1 == options_.workers ? left : std::min(left, options_.slots);
    left -= wc.max_concurrent;
    wc.lease = *lease;
    wc.claim_wait = claim_wait_for(wc.lease);
    if (absl::Status st = validate(wc); !st.ok()) return st;
    net::TcpClientTransport::Options to;
    to.worker_id = wc.worker_id;
    to.secret = options_.secret;
    to.nodes = {options_.server};
    to.idle_timeout = net::idle_timeout_for(wc.lease, wc.claim_wait);
    to.seed = cli::fresh_seed();
    to.on_ready = [this](const std::string&) {
      ready_.fetch_add(1);
      std::lock_guard<std::mutex> lock(mu_);
      cv_.notify_all();
    };
    s.transports.push_back(
        std::make_unique<net::TcpClientTransport>(s.io, std::move(to), s.clock, *s.log));
    s.randoms.push_back(std::make_unique<Random>(cli::fresh_seed()));
    s.workers.push_back(std::make_unique<Worker>(s.clock, *s.timers, *s.transports.back(),
                                                 *s.runner, *s.randoms.back(), *s.log, s.metrics,
                                                 std::move(wc)));
  }
  asio::post(s.io, [&s] {
    for (auto& t : s.transports) t->start();
    for (auto& w : s.workers) w->start();
  });
  s.thread = std::thread([&s] { s.io.run(); });
  const auto deadline = absl::ToChronoTime(absl::Now() + connect_timeout);
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_until(lock, deadline, [this] { return ready_.load() == options_.workers; }))
    return absl::UnavailableError(absl::StrCat(
        "only ", ready_.load(), " of ", options_.workers, " workers finished the handshake with ",
        options_.server.to_string(), " within ", format_duration(connect_timeout)));
  return absl::OkStatus();
}

bool WorkerPool::wait_for_reports(std::uint64_t expected, absl::Time deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  expected_.store(expected);
  return cv_.wait_until(lock, absl::ToChronoTime(deadline),
                        [&] { return answered_.load() >= expected; });
}

void WorkerPool::stop() {
  State& s = *state_;
  if (s.stopped) return;
  s.stopped = true;
  if (s.thread.joinable()) {
    asio::post(s.io, [&s] {
      if (s.log) s.log->stopping();
      for (auto& w : s.workers) w->stop();
      for (auto& t : s.transports) t->close();
      s.io.stop();
    });
    s.thread.join();
  }
  // After the loop stopped: the workers before their transports and runner.
  s.workers.clear();
  s.transports.clear();
  s.runner.reset();
  s.timers.reset();
  s.guard.reset();
}

}  // namespace kairos::load
