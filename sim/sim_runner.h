// SimRunner: a simulated job Runner (core/runner.h) for one worker node.
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
#pragma once

#include <cstdint>
#include <functional>
#include <map>

#include "core/random.h"
#include "core/runner.h"
#include "sim/sim_clock.h"
#include "sim/sim_timers.h"
#include "sim/sink.h"
#include "sim/world.h"

namespace kairos::sim {

struct RunnerConfig {
  absl::Duration min_duration = absl::Milliseconds(100);
  absl::Duration max_duration = absl::Seconds(2);
  std::uint32_t tail_permille = 0;
  absl::Duration tail_max = absl::Seconds(30);
  std::uint32_t fail_permille = 0;
  std::uint32_t permanent_fail_permille = 0;
  std::uint32_t hang_permille = 0;
  friend bool operator==(const RunnerConfig&, const RunnerConfig&) = default;
};

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
  std::size_t active() const { return active_.size(); }
  const RunnerStats& stats() const { return stats_; }
  void set_config(const RunnerConfig& config) { config_ = config; }

 private:
  struct Active {
    RunRequest request;
    std::function<void(RunOutcome)> done;
    TimerId work_timer = 0;
    TimerId deadline_timer = 0;
    bool writing = false;
  };
  void work_done(RunHandle handle);
  void finish(RunHandle handle, RunOutcome outcome);

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
};

}  // namespace kairos::sim
