// Clock: a node's own reading of the current time.
//
// Purpose. Everything in core/ that needs "now" receives a Clock; nothing reads
// a real clock directly. In production the adapter reads the system's realtime
// clock; in the simulator each node has a clock with its own offset, drift and
// jumps over shared virtual time.
//
// Guarantees. None about accuracy: a node's clock may be skewed, drift, or jump
// backwards or forwards. Kairos never relies on clocks for safety (fencing
// tokens and leader epochs provide that); clocks only decide timeliness.
// Where one authoritative time is needed (lease expiry), the store's clock is
// used, read through Txn::now() inside a transaction.
//
// Threading. now() is called only from the owning node's event loop.
#pragma once

#include "absl/time/time.h"

namespace kairos {

class Clock {
 public:
  virtual ~Clock() = default;

  // The node's current time. Never fails. Successive calls may go backwards
  // (a clock jump); callers that measure elapsed time must tolerate that.
  virtual absl::Time now() const = 0;
};

}  // namespace kairos
