// ManualClock: the in-memory twin of Clock for unit tests of logic. Time
// moves only when the test says so; nothing reads a real clock.
#pragma once

#include "absl/time/time.h"
#include "core/ports/clock.h"

namespace kairos {

// A clock set by hand, for unit tests of logic. Starts at `start` and moves
// only when told to.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(absl::Time start = absl::UnixEpoch()) : now_(start) {}
  absl::Time now() const override { return now_; }
  void set(absl::Time t) { now_ = t; }
  void advance(absl::Duration d) { now_ += d; }

 private:
  absl::Time now_;
};

}  // namespace kairos
