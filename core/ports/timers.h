// Timers: deferred work on a node's event loop.
//
// Purpose. Core logic is event-driven and single-threaded per node: it never
// blocks, never sleeps and never starts threads. When it must act later (poll
// the due index, renew a lease, give up waiting for a reply) it asks Timers.
// In production the adapter is an Asio steady timer on the node's io_context;
// in the simulator it is an event in the virtual-time queue.
//
// Guarantees.
// - Every callback runs on the node's event loop, never inside the call that
//   scheduled it (post() and after() never run `fn` re-entrantly), and one
//   at a time: a callback never starts while another runs.
// - Callbacks scheduled with post() run in the order they were posted.
//   after() with a zero or negative delay is a post: it joins the same
//   first-in first-out order and does not wait for time to pass.
// - after(d, fn) runs `fn` no earlier than `d` after the call as measured by
//   the loop's own monotonic notion of elapsed time (never the wall clock, so
//   clock jumps do not move timers), and as soon as practical after that.
// - Order: callbacks run by (deadline, scheduling order). Equal deadlines run
//   in the order they were scheduled; what a callback posts runs after every
//   callback already due at that instant. (On virtual time this is exact; on
//   real time two after() calls with the same delay get deadlines a hair
//   apart, still in scheduling order.)
// - cancel(id) before the callback started guarantees it never runs; after
//   that it is a no-op and touches no other callback. Cancelling an unknown,
//   cancelled or finished id, or 0, is a no-op. A callback may cancel any id,
//   its own included.
// - Ids are never 0 and never reused by one Timers instance (an adapter
//   whose node is down may return 0 for a callback it dropped at once).
// - When the node stops (process exit, simulated crash) pending callbacks are
//   dropped without running.
//
// Conformance. tests/conformance/timers_conformance.h checks every point
// above against ManualLoop, SimTimers and AsioTimers.
#pragma once

#include <cstdint>
#include <functional>

#include "absl/time/time.h"

namespace kairos {

using TimerId = std::uint64_t;

class Timers {
 public:
  virtual ~Timers() = default;

  // Runs `fn` on the event loop soon, after the current callback returns.
  virtual void post(std::function<void()> fn) = 0;

  // Runs `fn` once, `delay` from now (a non-positive delay behaves like post).
  // Returns an id for cancel(); ids are never reused by one Timers instance.
  virtual TimerId after(absl::Duration delay, std::function<void()> fn) = 0;

  // Prevents a pending callback from running. See the guarantees above.
  virtual void cancel(TimerId id) = 0;
};

}  // namespace kairos
