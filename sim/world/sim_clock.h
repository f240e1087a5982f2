// SimClock: one node's Clock over the world's virtual time.
//
// A node's local time is a piecewise-linear function of true time:
//   local(t) = anchor_local + (t - anchor_true) * (1e6 + drift_ppm) / 1e6
// with an initial offset, an integer drift in parts per million (positive:
// the clock runs fast), and jumps (instant steps, forwards or backwards, as
// an NTP correction or an operator would make). Changing the drift or jumping
// re-anchors at the current instant, so local time is continuous except at
// jumps. Integer arithmetic only (128-bit intermediates), so every build
// agrees to the nanosecond.
//
// Drift also governs the node's timers: a local duration d lasts
// to_true(d) = ceil(d * 1e6 / (1e6 + drift_ppm)) of true time, so a fast
// clock's timers fire early in true time, never early by the node's own
// clock. Jumps do not move pending timers (Timers measure elapsed time, which
// is monotonic).
#pragma once

#include <cstdint>

#include "absl/time/time.h"
#include "core/ports/clock.h"
#include "sim/world/world.h"

namespace kairos::sim {

class SimClock final : public Clock {
 public:
  // Drift is limited to +-50% to keep every conversion well defined.
  static constexpr std::int64_t kMaxDriftPpm = 500000;

  explicit SimClock(const World& world, absl::Duration offset = absl::ZeroDuration(),
                    std::int64_t drift_ppm = 0);

  absl::Time now() const override { return absl::FromUnixNanos(local_ns(world_.now_ns())); }

  // local - true, at this instant.
  absl::Duration offset() const;
  std::int64_t drift_ppm() const { return ppm_; }

  // Sets the offset (local - true) to `offset` now: a jump by the difference.
  void set_offset(absl::Duration offset);
  // Steps the clock by `d` (negative: backwards).
  void jump(absl::Duration d);
  // Changes the rate from now on.
  void set_drift_ppm(std::int64_t ppm);

  // True duration that a local duration lasts at the current rate (>= 0,
  // rounded up).
  absl::Duration to_true(absl::Duration local) const;

 private:
  std::int64_t local_ns(std::int64_t true_ns) const;
  void reanchor();

  const World& world_;
  std::int64_t anchor_true_ns_;
  std::int64_t anchor_local_ns_;
  std::int64_t ppm_;
};

}  // namespace kairos::sim
