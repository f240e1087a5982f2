// SchedulerNode::forget_peer: a worker gone for good (a drained remote worker
// exits with its long-poll claim still parked at the node) leaves no parked
// claim behind, so a run due afterwards is not granted to nobody (it would
// sit leased until its lease lapsed) but waits, ready, for a live worker.
#include <gtest/gtest.h>

#include "core/kernel/scheduler_node.h"
#include "core/kernel/worker.h"
#include "tests/support/node_world.h"

namespace kairos {
namespace {

using namespace test_support;

struct GoneWorld : NodeWorld {
  Node& n1 = add_node(node_config("n1", 1), 7);
  FakeRunner& runner = add_runner(absl::Seconds(1));
  // The hub hands out ids in order: the worker's endpoint comes after n1's.
  PeerId worker_peer = n1.ep->id() + 1;
  Worker& worker = add_worker(runner, worker_config("w1", {n1.ep->id()}), 3).worker;

  // The worker parks a long-poll, drains and goes away for good.
  void park_and_leave() {
    n1.node.start();
    worker.start();
    stepper.run(absl::Seconds(1));
    ASSERT_EQ(n1.node.parked_claims(), 1u);
    bool drained = false;
    worker.drain([&] { drained = true; });
    stepper.run(absl::Milliseconds(100));
    ASSERT_TRUE(drained);
    worker.stop();
  }
  std::size_t leased() const {
    std::size_t n = 0;
    for (const RunRecord& r : runs()) n += r.state == RunState::kLeased ? 1 : 0;
    return n;
  }
};

TEST(ForgetPeer, DropsTheGoneWorkersParkedClaim) {
  GoneWorld w;
  w.park_and_leave();
  w.n1.node.forget_peer(w.worker_peer + 1);  // another peer: nothing changes
  EXPECT_EQ(w.n1.node.parked_claims(), 1u);
  w.n1.node.forget_peer(w.worker_peer);
  EXPECT_EQ(w.n1.node.parked_claims(), 0u);
  w.n1.node.create_job(interval_job("a", absl::Minutes(1), w.clock.now() + absl::Seconds(1)),
                       [](auto) {});
  w.stepper.run(absl::Seconds(3));
  EXPECT_FALSE(w.runs().empty());
  EXPECT_EQ(w.leased(), 0u);  // ready for the next worker, not leased to the gone one
}

TEST(ForgetPeer, WithoutItTheParkedClaimLeasesARunToTheGoneWorker) {
  GoneWorld w;
  w.park_and_leave();
  w.n1.node.create_job(interval_job("a", absl::Minutes(1), w.clock.now() + absl::Seconds(1)),
                       [](auto) {});
  w.stepper.run(absl::Seconds(3));
  EXPECT_EQ(w.leased(), 1u);  // what forget_peer prevents
}

}  // namespace
}  // namespace kairos
