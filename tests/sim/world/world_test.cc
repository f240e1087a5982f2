#include "sim/world/world.h"

#include <gtest/gtest.h>

#include <vector>

#include "sim/world/sim_clock.h"
#include "sim/world/sim_timers.h"

namespace kairos::sim {
namespace {

TEST(World, RunsEventsInTimeThenSequenceOrder) {
  World w(1);
  std::vector<int> order;
  w.schedule_after(absl::Seconds(2), EventKind::kWorld, kWorldNode, 0, [&] { order.push_back(3); });
  w.schedule_after(absl::Seconds(1), EventKind::kWorld, kWorldNode, 0, [&] { order.push_back(1); });
  w.schedule_after(absl::Seconds(1), EventKind::kWorld, kWorldNode, 0, [&] { order.push_back(2); });
  const EventId c = w.schedule_after(absl::Seconds(1), EventKind::kWorld, kWorldNode, 0,
                                     [&] { order.push_back(99); });
  w.cancel(c);
  w.run_for(absl::Seconds(10));
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(w.elapsed(), absl::Seconds(10));
  EXPECT_EQ(w.events_run(), 3u);
}

std::uint64_t random_run(std::uint64_t seed) {
  World w(seed);
  Random r = w.random().fork();
  std::function<void()> tick;
  int left = 1000;
  tick = [&] {
    if (--left <= 0) return;
    w.schedule_after(absl::Microseconds(r.below(1000)), EventKind::kWorld, kWorldNode, r.next_u64(),
                     tick);
  };
  for (int i = 0; i < 10; ++i)
    w.schedule_after(absl::ZeroDuration(), EventKind::kWorld, kWorldNode, 0, tick);
  w.run_for(absl::Hours(1));
  return w.trace_hash();
}

TEST(World, SameSeedSameTraceHashDifferentSeedsDiffer) {
  EXPECT_EQ(random_run(7), random_run(7));
  EXPECT_NE(random_run(7), random_run(8));
}

TEST(World, CrashDropsPendingEventsAndPauseDefersThemInOrder) {
  World w(1);
  const NodeId a = w.add_node("a");
  std::vector<std::string> seen;
  w.schedule_after(absl::Seconds(1), EventKind::kTimer, a, 0, [&] { seen.push_back("a1"); });
  w.crash(a);
  w.schedule_after(absl::Seconds(1), EventKind::kTimer, a, 0, [&] { seen.push_back("down"); });
  w.run_for(absl::Seconds(2));
  EXPECT_TRUE(seen.empty());
  EXPECT_EQ(w.events_dropped(), 1u);
  w.restart(a);
  w.schedule_after(absl::Seconds(1), EventKind::kTimer, a, 0, [&] { seen.push_back("x"); });
  w.schedule_after(absl::Seconds(2), EventKind::kTimer, a, 0, [&] { seen.push_back("y"); });
  w.pause(a, absl::Seconds(5));
  absl::Time ran_at;
  w.schedule_after(absl::Seconds(3), EventKind::kTimer, a, 0, [&] {
    seen.push_back("z");
    ran_at = w.now();
  });
  w.run_for(absl::Seconds(10));
  EXPECT_EQ(seen, (std::vector<std::string>{"x", "y", "z"}));
  EXPECT_EQ(ran_at - w.start(), absl::Seconds(2 + 5));  // deferred to the pause's end
}

TEST(SimClock, OffsetDriftAndJumps) {
  World w(1);
  SimClock c(w, absl::Seconds(-3), 1000);  // 1000 ppm fast
  EXPECT_EQ(c.now(), w.now() - absl::Seconds(3));
  w.run_for(absl::Seconds(1000));
  EXPECT_EQ(c.now() - w.now(), absl::Seconds(-3) + absl::Seconds(1));  // +1 ms per second
  c.jump(absl::Seconds(-10));
  EXPECT_EQ(c.now() - w.now(), absl::Seconds(-12));
  c.set_drift_ppm(0);
  w.run_for(absl::Seconds(100));
  EXPECT_EQ(c.now() - w.now(), absl::Seconds(-12));
  c.set_offset(absl::ZeroDuration());
  EXPECT_EQ(c.now(), w.now());
}

TEST(SimTimers, DriftStretchesTimersJumpsDoNot) {
  World w(1);
  const NodeId n = w.add_node("n");
  SimClock slow(w, absl::ZeroDuration(), -500000);  // runs at half speed
  SimTimers t(w, n, slow);
  absl::Time fired_true, fired_local;
  t.after(absl::Seconds(10), [&] {
    fired_true = w.now();
    fired_local = slow.now();
  });
  slow.jump(absl::Hours(1));  // does not move the pending timer
  w.run_for(absl::Minutes(1));
  EXPECT_EQ(fired_true - w.start(), absl::Seconds(20));
  EXPECT_GE(fired_local - (w.start() + absl::Hours(1)), absl::Seconds(10));
}

TEST(SimTimers, CancelledAndCrashedTimersNeverRun) {
  World w(1);
  const NodeId n = w.add_node("n");
  SimClock c(w);
  SimTimers t(w, n, c);
  int runs = 0;
  const TimerId id = t.after(absl::Seconds(1), [&] { ++runs; });
  t.cancel(id);
  t.post([&] { ++runs; });
  EXPECT_EQ(runs, 0);  // never re-entrant
  w.run_for(absl::Seconds(2));
  EXPECT_EQ(runs, 1);
  t.after(absl::Seconds(1), [&] { ++runs; });
  w.crash(n);
  w.run_for(absl::Seconds(2));
  EXPECT_EQ(runs, 1);
}

}  // namespace
}  // namespace kairos::sim
