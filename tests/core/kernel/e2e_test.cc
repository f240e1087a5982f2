// End to end in virtual time: 3 scheduler nodes and 3 workers over an
// in-test network, one shared store; the node leading the shards crashes
// mid-stream; every occurrence still fires exactly once.
#include <gtest/gtest.h>

#include "core/kernel/keyspace.h"
#include "core/kernel/scheduler_node.h"
#include "core/kernel/worker.h"
#include "core/twins/manual_clock.h"
#include "core/twins/memory_event_log.h"
#include "tests/support/fake_world.h"
#include "tests/support/kernel_test_util.h"

namespace kairos {
namespace {

using test_support::interval_job;
using test_support::once_job;
using test_support::T0;

TEST(EndToEnd, ExactlyOnceThroughALeaderFailover) {
  ManualClock clock{T0()};
  test_support::Stepper stepper{clock};
  ManualLoop& loop = stepper.add_loop();
  MemoryStorage mem{clock, loop};
  test_support::Net net;
  MemoryEventLog events;
  test_support::Sink sink;

  struct NodeBox {
    test_support::Net::Endpoint* ep;
    std::unique_ptr<Random> random;
    std::unique_ptr<Metrics> metrics;
    std::unique_ptr<SchedulerNode> node;
  };
  std::vector<NodeBox> nodes;
  std::vector<PeerId> node_peers;
  for (int i = 0; i < 3; ++i) {
    NodeBox b;
    b.ep = &net.add(loop);
    b.random = std::make_unique<Random>(100 + i);
    b.metrics = std::make_unique<Metrics>();
    SchedulerNodeConfig c;
    c.node_id = "node" + std::to_string(i);
    c.shard_count = 4;
    c.poll_interval = absl::Milliseconds(500);
    b.node =
        std::make_unique<SchedulerNode>(clock, loop, mem, *b.ep, *b.random, events, *b.metrics, c);
    node_peers.push_back(b.ep->id());
    nodes.push_back(std::move(b));
  }
  nodes[0].node->start();
  stepper.run(absl::Seconds(1));  // node0 takes every shard first
  nodes[1].node->start();
  nodes[2].node->start();

  struct WorkerBox {
    std::unique_ptr<test_support::FakeRunner> runner;
    std::unique_ptr<Random> random;
    std::unique_ptr<Metrics> metrics;
    std::unique_ptr<Worker> worker;
  };
  std::vector<WorkerBox> workers;
  for (int i = 0; i < 3; ++i) {
    WorkerBox b;
    auto& ep = net.add(loop);
    b.runner = std::make_unique<test_support::FakeRunner>(loop, clock, sink, absl::Seconds(4));
    b.random = std::make_unique<Random>(200 + i);
    b.metrics = std::make_unique<Metrics>();
    WorkerConfig c;
    c.worker_id = "worker" + std::to_string(i);
    c.nodes = {node_peers[i % 3], node_peers[(i + 1) % 3], node_peers[(i + 2) % 3]};
    c.claim_wait = absl::Seconds(5);
    b.worker =
        std::make_unique<Worker>(clock, loop, ep, *b.runner, *b.random, events, *b.metrics, c);
    b.worker->start();
    workers.push_back(std::move(b));
  }

  int created = 0;
  for (int i = 0; i < 20; ++i)
    nodes[1].node->create_job(interval_job("every-min-" + std::to_string(i)),
                              [&](auto r) { created += r.ok(); });
  for (int i = 0; i < 10; ++i)
    nodes[2].node->create_job(
        once_job("once-" + std::to_string(i), T0() + absl::Seconds(37 * i + 5)),
        [&](auto r) { created += r.ok(); });
  stepper.run(absl::Minutes(4));
  ASSERT_EQ(created, 30);
  for (std::uint32_t s = 0; s < 4; ++s) ASSERT_TRUE(nodes[0].node->leads(s)) << s;

  // The leader crashes (its endpoint goes dark with it).
  nodes[0].node->stop();
  nodes[0].ep->down = true;
  stepper.run(absl::Minutes(6));
  for (std::uint32_t s = 0; s < 4; ++s)
    EXPECT_TRUE(nodes[1].node->leads(s) || nodes[2].node->leads(s)) << s;

  // Every occurrence up to a quiet tail fired, exactly once.
  const absl::Time horizon = clock.now() - absl::Minutes(1);
  const auto effects = sink.by_key();
  std::size_t expected = 0;
  for (int i = 0; i < 20; ++i) {
    for (absl::Time t = T0() + absl::Minutes(1); t <= horizon; t += absl::Minutes(1)) {
      ++expected;
      const std::string key = idempotency_key({"every-min-" + std::to_string(i), 1, t});
      auto it = effects.find(key);
      ASSERT_NE(it, effects.end()) << key;
      EXPECT_EQ(it->second.size(), 1u) << key;
    }
  }
  for (int i = 0; i < 10; ++i) {
    ++expected;
    const std::string key =
        idempotency_key({"once-" + std::to_string(i), 1, T0() + absl::Seconds(37 * i + 5)});
    ASSERT_EQ(effects.count(key), 1u) << key;
    EXPECT_EQ(effects.at(key).size(), 1u) << key;
  }
  EXPECT_GE(effects.size(), expected);
  for (const auto& [key, tokens] : effects) EXPECT_EQ(tokens.size(), 1u) << key;
  EXPECT_GE(events.count("leader.acquired"), 8u);  // 4 by node0, 4 after the crash
}

}  // namespace
}  // namespace kairos
