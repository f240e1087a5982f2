// SimRunner: a simulated job Runner (core/ports/runner.h) for one worker node.
//
// An attempt takes a duration drawn from the configured distribution
// (uniform in [min, max], with tail_permille of attempts taking up to
// tail_max more); with hang_permille it never finishes on its own. When the
// work is done it fails with fail_permille (kFailed) or
// permanent_fail_permille (kFailedPermanent); otherwise it writes its effect
// to the Sink, carrying the request's idempotency key and fencing token, and
// reports kSucceeded only after the sink accepted it (or deduplicated it). A
// sink that rejects the token (stale) -> kFailed "fenced"; a sink error or
// timeout -> kFailed (the effect may or may not exist: the next attempt with
// a higher token settles it).
//
// The attempt is bounded by request.deadline on the worker's own clock
// (kTimedOut) and by stop() (kStopped). `done` runs exactly once, on the
// worker's node, never inside start() or stop(). A worker crash drops
// everything (call reset()); an effect already sent to the sink may still
// land, as with a real process.
//
// Execution record. An observer (set_execution_observer) is told when an
// attempt starts executing and when it stops -- finished, stopped, or
// dropped by reset() -- at the true instant it happens; observing changes
// nothing the runner does.
//
// Per-job profiles. A job may carry its own duration range and failure rates
// in its payload (what a scenario's `job ... run=20s..40s fail=300` line
// asks for): the workload writes them as words of its CommandPayload argv,
// {"sim-job", "run=20s..40s", "fail=300", "permanent-fail=10"}, each word
// optional (job_payload()); start() reads them back from RunRequest.payload
// (apply_run_profile()) and takes what is absent -- and always the tail and
// hang rates -- from the runner's RunnerConfig.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>

#include "core/ports/payload.h"
#include "core/ports/random.h"
#include "core/ports/runner.h"
#include "sim/world/sim_clock.h"
#include "sim/world/sim_timers.h"
#include "sim/world/sink.h"
#include "sim/world/world.h"

namespace kairos::sim {

struct RunnerConfig {
  absl::Duration min_duration = absl::Milliseconds(100);
  absl::Duration max_duration = absl::Seconds(2);
  std::uint32_t tail_permille = 0;
  absl::Duration tail_max = absl::Seconds(30);
  std::uint32_t fail_permille = 0;
  std::uint32_t permanent_fail_permille = 0;
  std::uint32_t hang_permille = 0;
  // A run's drawn duration rounded up to a multiple of this (on_grid; 0:
  // off); from the scenario's `timing quantum=`, not written on the
  // `runner` line.
  absl::Duration quantum = absl::ZeroDuration();
  friend bool operator==(const RunnerConfig&, const RunnerConfig&) = default;
};

// What one job asks of its simulated runs; absent fields: the RunnerConfig.
struct JobRunProfile {
  std::optional<absl::Duration> min_duration, max_duration;  // both or neither
  std::optional<std::uint32_t> fail_permille;
  std::optional<std::uint32_t> permanent_fail_permille;
  bool empty() const {
    return !min_duration && !max_duration && !fail_permille && !permanent_fail_permille;
  }
  friend bool operator==(const JobRunProfile&, const JobRunProfile&) = default;
};

// The payload of a workload job with `profile`: argv {"sim-job", words...}.
Payload job_payload(const JobRunProfile& profile);
// `base` with the profile words of `payload` applied. Words that are not a
// profile word, or do not parse, are ignored (the job runs with `base`).
RunnerConfig apply_run_profile(const Payload& payload, RunnerConfig base);

struct RunnerStats {
  std::uint64_t started = 0;
  std::uint64_t succeeded = 0;
  std::uint64_t failed = 0;
  std::uint64_t timed_out = 0;
  std::uint64_t stopped = 0;
  std::uint64_t fenced = 0;
};

class SimRunner final : public Runner {
 public:
  SimRunner(World& world, NodeId node, SimTimers& timers, const SimClock& clock, Sink& sink,
            Random random, RunnerConfig config = {});

  RunHandle start(RunRequest request, std::function<void(RunOutcome)> done) override;
  void stop(RunHandle handle) override;

  // Forget every attempt (the worker process crashed).
  void reset();
  // Told (handle, request, true at start / false at its end) for every
  // attempt; the request is the one start() received.
  using ExecutionObserver = std::function<void(RunHandle, const RunRequest&, bool started)>;
  void set_execution_observer(ExecutionObserver o) { observer_ = std::move(o); }
  std::size_t active() const { return active_.size(); }
  const RunnerStats& stats() const { return stats_; }
  void set_config(const RunnerConfig& config) { config_ = config; }

 private:
  struct Active {
    RunRequest request;
    RunnerConfig config;  // config_ with the job's profile applied
    std::function<void(RunOutcome)> done;
    TimerId work_timer = 0;
    TimerId deadline_timer = 0;
    bool writing = false;
  };
  void work_done(RunHandle handle);
  void finish(RunHandle handle, RunOutcome outcome);
  void observe(RunHandle handle, const RunRequest& request, bool started) const {
    if (observer_) observer_(handle, request, started);
  }

  World& world_;
  NodeId node_;
  SimTimers& timers_;
  const SimClock& clock_;
  Sink& sink_;
  Random random_;
  RunnerConfig config_;
  RunHandle next_ = 0;
  std::map<RunHandle, Active> active_;
  RunnerStats stats_;
  ExecutionObserver observer_;
};

}  // namespace kairos::sim
