#include "sim/world/sim_runner.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "core/base/duration.h"

namespace kairos::sim {

namespace {

constexpr std::string_view kRun = "run=";
constexpr std::string_view kFail = "fail=";
constexpr std::string_view kPermanentFail = "permanent-fail=";

bool permille(std::string_view text, std::uint32_t* out) {
  std::uint32_t n = 0;
  if (!absl::SimpleAtoi(absl_sv(text), &n) || n > 1000) return false;
  *out = n;
  return true;
}

}  // namespace

Payload job_payload(const JobRunProfile& p) {
  CommandPayload c;
  c.argv.push_back("sim-job");
  if (p.min_duration && p.max_duration)
    c.argv.push_back(absl::StrCat(absl_sv(kRun), format_duration(*p.min_duration), "..",
                                  format_duration(*p.max_duration)));
  if (p.fail_permille) c.argv.push_back(absl::StrCat(absl_sv(kFail), *p.fail_permille));
  if (p.permanent_fail_permille)
    c.argv.push_back(absl::StrCat(absl_sv(kPermanentFail), *p.permanent_fail_permille));
  return c;
}

RunnerConfig apply_run_profile(const Payload& payload, RunnerConfig c) {
  const auto* command = std::get_if<CommandPayload>(&payload);
  if (command == nullptr) return c;
  for (std::size_t i = 1; i < command->argv.size(); ++i) {
    const std::string_view w = command->argv[i];
    if (w.substr(0, kRun.size()) == kRun) {
      const std::string_view range = w.substr(kRun.size());
      const auto dots = range.find("..");
      if (dots == std::string_view::npos) continue;
      auto lo = parse_duration(range.substr(0, dots));
      auto hi = parse_duration(range.substr(dots + 2));
      if (!lo.ok() || !hi.ok() || *lo > *hi) continue;
      c.min_duration = *lo;
      c.max_duration = *hi;
    } else if (w.substr(0, kFail.size()) == kFail) {
      permille(w.substr(kFail.size()), &c.fail_permille);
    } else if (w.substr(0, kPermanentFail.size()) == kPermanentFail) {
      permille(w.substr(kPermanentFail.size()), &c.permanent_fail_permille);
    }
  }
  return c;
}

SimRunner::SimRunner(World& world, NodeId node, SimTimers& timers, const SimClock& clock,
                     Sink& sink, Random random, RunnerConfig config)
    : world_(world),
      node_(node),
      timers_(timers),
      clock_(clock),
      sink_(sink),
      random_(random),
      config_(config) {}

RunHandle SimRunner::start(RunRequest request, std::function<void(RunOutcome)> done) {
  const RunHandle h = ++next_;
  ++stats_.started;
  Active& a = active_[h];
  const absl::Duration budget = request.deadline - clock_.now();  // worker clock
  a.config = apply_run_profile(request.payload, config_);
  a.request = std::move(request);
  a.done = std::move(done);
  const RunnerConfig& c = a.config;
  bool hang = c.hang_permille != 0 && random_.chance(c.hang_permille, 1000);
  absl::Duration d = random_.duration_between(c.min_duration, c.max_duration);
  if (c.tail_permille != 0 && random_.chance(c.tail_permille, 1000))
    d += random_.duration_between(absl::ZeroDuration(), c.tail_max);
  d = on_grid(d, c.quantum);
  if (!hang) a.work_timer = timers_.after(d, [this, h] { work_done(h); });
  a.deadline_timer = timers_.after(budget, [this, h] {
    auto it = active_.find(h);
    if (it == active_.end()) return;
    ++stats_.timed_out;
    finish(h, {RunStatus::kTimedOut, 0, "deadline reached"});
  });
  observe(h, a.request, true);
  return h;
}

void SimRunner::work_done(RunHandle h) {
  auto it = active_.find(h);
  if (it == active_.end()) return;
  Active& a = it->second;
  a.work_timer = 0;
  const std::uint64_t roll = random_.below(1000);
  if (roll < a.config.permanent_fail_permille) {
    ++stats_.failed;
    finish(h, {RunStatus::kFailedPermanent, 2, "simulated permanent failure"});
    return;
  }
  if (roll < a.config.permanent_fail_permille + a.config.fail_permille) {
    ++stats_.failed;
    finish(h, {RunStatus::kFailed, 1, "simulated failure"});
    return;
  }
  a.writing = true;
  SinkWrite w;
  w.key = a.request.idempotency_key;
  w.token = a.request.fencing_token;
  w.job_id = a.request.job_id;
  w.nominal_us = absl::ToUnixMicros(a.request.nominal_time);
  w.attempt = a.request.attempt;
  sink_.write(node_, std::move(w), [this, h](SinkOutcome outcome) {
    auto it = active_.find(h);
    if (it == active_.end()) return;  // stopped or timed out meanwhile
    switch (outcome) {
      case SinkOutcome::kAccepted:
      case SinkOutcome::kDuplicate:
        ++stats_.succeeded;
        finish(h, {RunStatus::kSucceeded, 0, std::string(to_string(outcome))});
        return;
      case SinkOutcome::kStaleToken:
        ++stats_.fenced;
        ++stats_.failed;
        world_.mark("runner.fenced-by-sink");
        finish(h, {RunStatus::kFailed, 409, "fenced: the sink saw a higher token"});
        return;
      case SinkOutcome::kError:
      case SinkOutcome::kTimeout:
        ++stats_.failed;
        finish(h, {RunStatus::kFailed, 503, absl::StrCat("sink ", absl_sv(to_string(outcome)))});
        return;
    }
  });
}

void SimRunner::stop(RunHandle h) {
  auto it = active_.find(h);
  if (it == active_.end()) return;
  ++stats_.stopped;
  Active a = std::move(it->second);
  active_.erase(it);
  observe(h, a.request, false);
  timers_.cancel(a.work_timer);
  timers_.cancel(a.deadline_timer);
  timers_.post([done = std::move(a.done)] { done({RunStatus::kStopped, 0, "stopped"}); });
}

void SimRunner::finish(RunHandle h, RunOutcome outcome) {
  auto it = active_.find(h);
  if (it == active_.end()) return;
  Active a = std::move(it->second);
  active_.erase(it);
  observe(h, a.request, false);
  timers_.cancel(a.work_timer);
  timers_.cancel(a.deadline_timer);
  a.done(std::move(outcome));
}

void SimRunner::reset() {
  for (const auto& [h, a] : active_) observe(h, a.request, false);
  active_.clear();
}

}  // namespace kairos::sim
