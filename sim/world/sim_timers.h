// SimTimers: one node's Timers on the world's event queue.
//
// post() and after() schedule node-scoped world events, so the world's node
// rules apply: a crash drops every pending callback (the node's incarnation
// changes), a pause defers them to the pause's end in their original order.
// after(d) is measured by the node's own clock rate (SimClock::to_true), so a
// drifting clock stretches or shrinks its timers; clock jumps do not.
// TimerIds are the world's event ids: unique for the world's lifetime.
#pragma once

#include <functional>

#include "core/ports/timers.h"
#include "sim/world/sim_clock.h"
#include "sim/world/world.h"

namespace kairos::sim {

class SimTimers final : public Timers {
 public:
  SimTimers(World& world, NodeId node, const SimClock& clock)
      : world_(world), node_(node), clock_(clock) {}

  void post(std::function<void()> fn) override {
    world_.schedule_at(world_.now(), EventKind::kPost, node_, 0, std::move(fn));
  }

  TimerId after(absl::Duration delay, std::function<void()> fn) override {
    const absl::Duration d = clock_.to_true(delay);
    return world_.schedule_after(d, EventKind::kTimer, node_,
                                 static_cast<std::uint64_t>(absl::ToInt64Nanoseconds(d)),
                                 std::move(fn));
  }

  void cancel(TimerId id) override { world_.cancel(id); }

  NodeId node() const { return node_; }

 private:
  World& world_;
  NodeId node_;
  const SimClock& clock_;
};

}  // namespace kairos::sim
