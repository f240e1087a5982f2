// Worker drain: no claim after drain(), running attempts finish and are
// reported before `drained` runs (once); stop_running() hands runs back.
#include <gtest/gtest.h>

#include "core/kernel/scheduler_node.h"
#include "core/kernel/worker.h"
#include "tests/support/node_world.h"

namespace kairos {
namespace {

using namespace test_support;

struct DrainWorld : NodeWorld {
  Node& n1 = add_node(node_config("n1", 1), 7);
  FakeRunner& runner = add_runner(absl::Seconds(20));
  Worker& worker = add_worker(runner, worker_config("w1", {n1.ep->id()}), 3).worker;
  int drained = 0;
  void begin() {
    n1.node.start();
    worker.start();
    n1.node.create_job(interval_job("a"), [](auto) {});
  }
};

TEST(WorkerDrain, RunningAttemptFinishesAndIsReportedBeforeDrained) {
  DrainWorld w;
  w.begin();
  w.stepper.run(absl::Seconds(2));  // T0's run is claimed and running
  ASSERT_EQ(w.worker.running(), 1u);
  w.worker.drain([&] { ++w.drained; });
  EXPECT_TRUE(w.worker.draining());
  w.stepper.run(absl::Seconds(10));
  EXPECT_EQ(w.drained, 0);  // still running
  w.stepper.run(absl::Seconds(20));
  EXPECT_EQ(w.drained, 1);
  EXPECT_EQ(w.worker.running(), 0u);
  EXPECT_EQ(w.worker.pending_reports(), 0u);
  // The run finished and its completion was recorded.
  ASSERT_EQ(w.sink.effects.size(), 1u);
  for (const RunRecord& r : w.runs()) {
    if (r.id.nominal == T0()) {
      EXPECT_EQ(r.state, RunState::kSucceeded);
    }
  }
  // No claim after the drain: later occurrences are never run here.
  w.stepper.run(absl::Minutes(3));
  EXPECT_EQ(w.sink.effects.size(), 1u);
  EXPECT_EQ(w.runner.running(), 0u);
  EXPECT_EQ(w.drained, 1);  // once
}

TEST(WorkerDrain, StopRunningHandsTheRunBack) {
  DrainWorld w;
  w.begin();
  w.stepper.run(absl::Seconds(2));
  ASSERT_EQ(w.worker.running(), 1u);
  w.worker.drain([&] { ++w.drained; });
  w.worker.stop_running();
  w.stepper.run(absl::Seconds(2));
  EXPECT_EQ(w.drained, 1);
  EXPECT_TRUE(w.sink.effects.empty());
  for (const RunRecord& r : w.runs())
    if (r.id.nominal == T0()) {
      EXPECT_EQ(r.state, RunState::kReady);  // released: claimable again at once
      ASSERT_FALSE(r.attempts.empty());
      EXPECT_EQ(r.attempts.back().end, AttemptEnd::kReleased);
    }
}

TEST(WorkerDrain, IdleWorkerDrainsAtOnceAndAbandonsItsLongPoll) {
  DrainWorld w;
  w.n1.node.start();
  w.worker.start();
  w.stepper.run(absl::Seconds(1));  // a long-poll claim is parked
  w.worker.drain([&] { ++w.drained; });
  w.stepper.run(absl::Milliseconds(100));
  EXPECT_EQ(w.drained, 1);
  // Work arriving now is never run by the drained worker.
  w.n1.node.create_job(interval_job("a"), [](auto) {});
  w.stepper.run(absl::Minutes(2));
  EXPECT_TRUE(w.sink.effects.empty());
  EXPECT_EQ(w.worker.running(), 0u);
}

}  // namespace
}  // namespace kairos
