// End to end in virtual time: 3 scheduler nodes and 3 workers over the
// loopback transport, one shared store (tests/support/node_world.h); the node
// leading the shards crashes mid-stream; every occurrence still fires exactly
// once.
#include <gtest/gtest.h>

#include "core/kernel/keyspace.h"
#include "core/kernel/scheduler_node.h"
#include "core/kernel/worker.h"
#include "tests/support/kernel_test_util.h"
#include "tests/support/node_world.h"

namespace kairos {
namespace {

using namespace test_support;  // the node world and the job builders

TEST(EndToEnd, ExactlyOnceThroughALeaderFailover) {
  test_support::NodeWorld w;
  test_support::Stepper& stepper = w.stepper;
  const ManualClock& clock = w.clock;
  MemoryEventLog& events = w.events;

  // Three nodes and three workers, all logging to the world's event log.
  std::vector<test_support::NodeWorld::Node*> nodes;
  std::vector<PeerId> node_peers;
  for (int i = 0; i < 3; ++i) {
    nodes.push_back(&w.add_node(node_config("node" + std::to_string(i), 4), 100 + i));
    node_peers.push_back(nodes.back()->ep->id());
  }
  nodes[0]->node.start();
  stepper.run(absl::Seconds(1));  // node0 takes every shard first, then shares them
  nodes[1]->node.start();
  nodes[2]->node.start();

  for (int i = 0; i < 3; ++i) {
    auto& runner = w.add_runner(absl::Seconds(4));
    w.add_worker(
         runner,
         worker_config("worker" + std::to_string(i),
                       {node_peers[i % 3], node_peers[(i + 1) % 3], node_peers[(i + 2) % 3]}),
         200 + i, /*shared_events=*/true)
        .worker.start();
  }

  int created = 0;
  for (int i = 0; i < 20; ++i)
    nodes[1]->node.create_job(interval_job("every-min-" + std::to_string(i)),
                              [&](auto r) { created += r.ok(); });
  for (int i = 0; i < 10; ++i)
    nodes[2]->node.create_job(
        once_job("once-" + std::to_string(i), T0() + absl::Seconds(37 * i + 5)),
        [&](auto r) { created += r.ok(); });
  stepper.run(absl::Minutes(4));
  ASSERT_EQ(created, 30);
  // Leadership spread (rebalancing): node0 kept its fair share of the four.
  std::size_t led_by_node0 = 0;
  for (std::uint32_t s = 0; s < 4; ++s) led_by_node0 += nodes[0]->node.leads(s);
  ASSERT_GE(led_by_node0, 1u);

  // The leader crashes (its endpoint goes dark with it).
  test_support::NodeWorld::crash(*nodes[0]);
  stepper.run(absl::Minutes(6));
  for (std::uint32_t s = 0; s < 4; ++s)
    EXPECT_TRUE(nodes[1]->node.leads(s) || nodes[2]->node.leads(s)) << s;

  // Every occurrence up to a quiet tail fired, exactly once.
  const absl::Time horizon = clock.now() - absl::Minutes(1);
  const auto effects = w.sink.by_key();
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
  // 4 by node0 at first, the ones handed over, and node0's again after the crash.
  EXPECT_GE(events.count("leader.acquired"), 4u + led_by_node0);
}

}  // namespace
}  // namespace kairos
