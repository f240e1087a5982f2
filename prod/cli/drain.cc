#include "prod/cli/drain.h"

#include <signal.h>

#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/duration.h"
#include "prod/cli/job_runners.h"

namespace kairos::cli {
namespace {

// How long a timed-out drain waits, beyond the kill grace, for the stopped
// attempts' reports before it gives up on them.
constexpr absl::Duration kReportSlack = absl::Seconds(5);

}  // namespace

DrainOnSignal::DrainOnSignal(boost::asio::io_context& io, Timers& timers, const Clock& clock,
                             EventLog& log, std::vector<Worker*> workers, DrainOptions options,
                             std::function<void()> on_draining)
    : io_(io),
      timers_(timers),
      clock_(clock),
      log_(log),
      workers_(std::move(workers)),
      options_(std::move(options)),
      on_draining_(std::move(on_draining)),
      signals_(io, SIGINT, SIGTERM) {
  arm();
}

DrainOnSignal::~DrainOnSignal() { cancel(); }

void DrainOnSignal::cancel() {
  boost::system::error_code ignored;
  signals_.cancel(ignored);
  if (timeout_timer_) timers_.cancel(*timeout_timer_);
  if (bound_timer_) timers_.cancel(*bound_timer_);
  timeout_timer_.reset();
  bound_timer_.reset();
}

void DrainOnSignal::arm() {
  signals_.async_wait([this](const boost::system::error_code& ec, int signal) {
    if (ec) return;
    on_signal(signal);
  });
}

std::size_t DrainOnSignal::running() const {
  std::size_t n = 0;
  for (const Worker* w : workers_) n += w->running();
  return n;
}

std::size_t DrainOnSignal::pending_reports() const {
  std::size_t n = 0;
  for (const Worker* w : workers_) n += w->pending_reports();
  return n;
}

void DrainOnSignal::say(const std::string& line) const {
  std::fprintf(stderr, "kairos %s: %s\n", options_.process.c_str(), line.c_str());
}

void DrainOnSignal::on_signal(int signal) {
  const std::string name = signal == SIGINT ? "SIGINT" : "SIGTERM";
  if (!outcome_.empty()) return;
  if (!signal_.empty()) {
    // A second signal: no more waiting; the caller's shutdown terminates
    // what still runs.
    say(absl::StrCat(name, " received again, stopping now (", running(), " running)"));
    note(log_, clock_, "drain.interrupted",
         {{"process", options_.process},
          {"signal", name},
          {"running", static_cast<std::uint64_t>(running())}});
    finish("interrupted");
    return;
  }
  signal_ = name;
  started_ = clock_.now();
  arm();  // the second signal
  const std::size_t now_running = running();
  say(absl::StrCat(name, " received, draining: ", now_running, " running, up to ",
                   format_duration(options_.timeout), " (again to stop now)"));
  note(log_, clock_, "drain.started",
       {{"process", options_.process},
        {"signal", name},
        {"running", static_cast<std::uint64_t>(now_running)},
        {"timeout", options_.timeout}});
  if (on_draining_) on_draining_();
  timeout_timer_ = timers_.after(options_.timeout, [this] {
    timeout_timer_.reset();
    on_timeout();
  });
  if (workers_.empty()) {
    undrained_ = 1;  // nothing to wait for: drained at once, on the loop
    timers_.post([this] { on_worker_drained(); });
    return;
  }
  undrained_ = workers_.size();
  for (Worker* w : workers_) w->drain([this] { on_worker_drained(); });
}

void DrainOnSignal::on_worker_drained() {
  if (!outcome_.empty() || undrained_ == 0) return;
  if (--undrained_ > 0) return;
  const absl::Duration took = clock_.now() - started_;
  say(absl::StrCat("drained in ", format_duration(absl::Trunc(took, absl::Milliseconds(1)))));
  note(log_, clock_, "drain.done",
       {{"process", options_.process},
        {"took", took},
        {"timed_out", static_cast<std::uint64_t>(bound_timer_.has_value() ? 1 : 0)}});
  finish("drained");
}

void DrainOnSignal::on_timeout() {
  if (!outcome_.empty()) return;
  const std::size_t left = running();
  say(absl::StrCat("drain timeout (", format_duration(options_.timeout), "): stopping ", left,
                   " running"));
  note(log_, clock_, "drain.timeout",
       {{"process", options_.process},
        {"timeout", options_.timeout},
        {"running", static_cast<std::uint64_t>(left)}});
  for (Worker* w : workers_) w->stop_running();
  bound_timer_ = timers_.after(options_.kill_grace + kReportSlack, [this] {
    bound_timer_.reset();
    if (!outcome_.empty()) return;
    say(absl::StrCat("drain abandoned: ", running(), " running, ", pending_reports(),
                     " reports unanswered"));
    note(log_, clock_, "drain.abandoned",
         {{"process", options_.process},
          {"running", static_cast<std::uint64_t>(running())},
          {"pending_reports", static_cast<std::uint64_t>(pending_reports())}});
    finish("abandoned");
  });
}

void DrainOnSignal::finish(std::string outcome) {
  outcome_ = std::move(outcome);
  cancel();
  io_.stop();
}

}  // namespace kairos::cli
