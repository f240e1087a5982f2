// Membership and rebalancing: the node record codec against hostile bytes,
// JobStore::announce / release_leadership, and scheduler nodes that spread
// shard leadership as nodes join and leave (virtual time), handing a shard
// over without two nodes ever leading it at once.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/kernel/event_kinds.h"
#include "core/kernel/job_store.h"
#include "core/kernel/keyspace.h"
#include "core/kernel/records.h"
#include "core/kernel/scheduler_node.h"
#include "core/kernel/value_codec.h"
#include "tests/support/job_store_fixture.h"
#include "tests/support/node_world.h"

namespace kairos {
namespace {

using namespace test_support;

TEST(NodeRecordCodec, RoundTripsAndRejectsHostileBytes) {
  NodeRecord n{"node-a", T0(), T0() + absl::Seconds(10)};
  const std::string bytes = encode(n);
  auto back = decode_node(bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, n);
  // Every truncation, and every single-byte change, is either an error or a
  // record that passes the codec's own checks; never a crash.
  for (std::size_t len = 0; len < bytes.size(); ++len)
    EXPECT_FALSE(decode_node(bytes.substr(0, len)).ok()) << len;
  for (std::size_t i = 0; i < bytes.size(); ++i)
    for (int delta : {1, 0x80, 0xff}) {
      std::string b = bytes;
      b[i] = static_cast<char>(static_cast<unsigned char>(b[i]) + delta);
      auto r = decode_node(b);
      if (r.ok()) {
        EXPECT_FALSE(r->id.empty());
        EXPECT_LE(r->started, r->expiry);
      } else {
        EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << r.status();
      }
    }
  EXPECT_FALSE(decode_node(bytes + "x").ok());  // trailing bytes
  EXPECT_FALSE(decode_node("").ok());
  // Fields that decode but break the record's rules.
  NodeRecord backwards{"n", T0() + absl::Seconds(5), T0()};
  ByteWriter w;
  w.u8(kRecordVersion).str(backwards.id).time(backwards.started).time(backwards.expiry);
  auto bad = decode_node(std::move(w).take());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("node.started"), std::string_view::npos) << bad.status();
  ByteWriter empty_id;
  empty_id.u8(kRecordVersion).str("").time(T0()).time(T0());
  auto none = decode_node(std::move(empty_id).take());
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("node.id"), std::string_view::npos) << none.status();
}

TEST(Announce, WritesTheNodeRecordCountsLiveNodesAndPassesOverGarbage) {
  StoreBench b(4);
  MembershipResult out;
  ASSERT_TRUE(b.run([&](Txn& t) {
                 return b.store.announce(t, "n2", true, absl::Seconds(10), &out);
               }).committed());
  EXPECT_EQ(out.live, 1u);
  ASSERT_EQ(out.nodes.size(), 1u);
  EXPECT_EQ(out.self.started, T0());
  EXPECT_EQ(out.self.expiry, T0() + absl::Seconds(10));
  EXPECT_EQ(out.free_shards, (std::vector<std::uint32_t>{0, 1, 2, 3}));
  // Another node, a record under the wrong key, and bytes that do not decode.
  b.clock.advance(absl::Seconds(1));
  ASSERT_TRUE(b.run([&](Txn& t) {
                 return b.store.announce(t, "n1", true, absl::Seconds(10), &out);
               }).committed());
  ASSERT_TRUE(b.run([&](Txn& t) {
                 t.put(keys::node("n3"), "\x03garbage");
                 t.put(keys::node("n4"), encode(NodeRecord{"n5", T0(), T0() + absl::Hours(9)}));
                 LeadershipResult l;
                 return b.store.acquire_or_renew(t, 1, "n1", 0, absl::Seconds(10), &l);
               }).committed());
  b.clock.advance(absl::Seconds(1));
  ASSERT_TRUE(b.run([&](Txn& t) {
                 return b.store.announce(t, "n2", false, absl::Seconds(10), &out);
               }).committed());
  EXPECT_EQ(out.live, 2u);
  EXPECT_EQ(out.undecodable, 2u);
  ASSERT_EQ(out.nodes.size(), 2u);
  EXPECT_EQ(out.nodes[0].id, "n1");
  EXPECT_EQ(out.nodes[1].id, "n2");
  EXPECT_EQ(out.self.started, T0());  // kept across renewals
  EXPECT_EQ(out.self.expiry, T0() + absl::Seconds(12));
  EXPECT_EQ(out.free_shards, (std::vector<std::uint32_t>{0, 2, 3}));
  // n1 lapses: still listed, no longer live; after the retention, removed.
  b.clock.advance(absl::Seconds(20));
  ASSERT_TRUE(b.run([&](Txn& t) {
                 return b.store.announce(t, "n2", false, absl::Seconds(10), &out);
               }).committed());
  EXPECT_EQ(out.live, 1u);
  EXPECT_EQ(out.nodes.size(), 2u);
  EXPECT_TRUE(out.events.empty());
  b.clock.advance(kNodeRecordRetention);
  ASSERT_TRUE(b.run([&](Txn& t) {
                 return b.store.announce(t, "n2", false, absl::Seconds(10), &out);
               }).committed());
  EXPECT_EQ(out.nodes.size(), 1u);
  ASSERT_EQ(out.events.size(), 1u);
  EXPECT_EQ(out.events[0].kind, event_kinds::kNodePruned);
  std::vector<NodeRecord> listed;
  ASSERT_TRUE(b.storage.run([&](Txn& t) { return b.store.nodes(t, &listed); }, TxnMode::kReadOnly)
                  .committed());
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].id, "n2");
}

TEST(Release, EndsTheEpochAtOnceAndOnlyTheHoldersOwn) {
  StoreBench b(2);
  LeadershipResult l;
  ASSERT_TRUE(b.run([&](Txn& t) {
                 return b.store.acquire_or_renew(t, 0, "n1", 0, absl::Seconds(10), &l);
               }).committed());
  ASSERT_EQ(l.record.epoch, 1u);
  bool released = true;
  std::vector<Event> events;
  // A wrong epoch or holder gives nothing up.
  ASSERT_TRUE(b.run([&](Txn& t) {
                 return b.store.release_leadership(t, 0, LeaderToken{"n1", 2}, &released, &events);
               }).committed());
  EXPECT_FALSE(released);
  ASSERT_TRUE(b.run([&](Txn& t) {
                 return b.store.release_leadership(t, 0, LeaderToken{"n2", 1}, &released, &events);
               }).committed());
  EXPECT_FALSE(released);
  EXPECT_TRUE(events.empty());
  b.clock.advance(absl::Seconds(1));
  ASSERT_TRUE(b.run([&](Txn& t) {
                 return b.store.release_leadership(t, 0, LeaderToken{"n1", 1}, &released, &events);
               }).committed());
  EXPECT_TRUE(released);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, event_kinds::kLeaderReleased);
  // The old epoch's writes fail the gate from now on ...
  auto gate = b.run([&](Txn& t) { return b.store.check_leader(t, 0, LeaderToken{"n1", 1}); });
  EXPECT_EQ(gate.outcome, CommitOutcome::kAborted);
  // ... and another node acquires the next epoch without waiting.
  ASSERT_TRUE(b.run([&](Txn& t) {
                 return b.store.acquire_or_renew(t, 0, "n2", 0, absl::Seconds(10), &l);
               }).committed());
  EXPECT_EQ(l.kind, LeadershipResult::Kind::kAcquired);
  EXPECT_EQ(l.record.epoch, 2u);
  // Releasing a lapsed or taken-over epoch writes nothing.
  ASSERT_TRUE(b.run([&](Txn& t) {
                 return b.store.release_leadership(t, 0, LeaderToken{"n1", 1}, &released, &events);
               }).committed());
  EXPECT_FALSE(released);
}

// Nodes on one store; after every step no shard is led (by the nodes' own
// view, leads()) by two nodes at once.
struct RebalanceWorld {
  explicit RebalanceWorld(std::uint32_t shards) : shards(shards) {}
  NodeWorld w;
  std::uint32_t shards;
  std::vector<NodeWorld::Node*> nodes;
  std::vector<bool> alive;

  SchedulerNode& add(std::string id) {
    nodes.push_back(&w.add_node(node_config(std::move(id), shards), 10 + nodes.size()));
    alive.push_back(true);
    nodes.back()->node.start();
    return nodes.back()->node;
  }
  void crash(std::size_t i) {
    NodeWorld::crash(*nodes[i]);
    alive[i] = false;
  }
  // Runs `d`, checking after every step that no shard has two leaders.
  void run(absl::Duration d) {
    const absl::Time end = w.clock.now() + d;
    while (w.clock.now() < end) {
      w.stepper.run(absl::Milliseconds(50));
      for (std::uint32_t s = 0; s < shards; ++s) {
        int leading = 0;
        for (std::size_t i = 0; i < nodes.size(); ++i)
          if (alive[i] && nodes[i]->node.leads(s)) ++leading;
        ASSERT_LE(leading, 1) << "shard " << s << " at " << w.clock.now();
      }
    }
  }
  std::vector<std::uint32_t> led(std::size_t i) const {
    std::vector<std::uint32_t> out;
    for (std::uint32_t s = 0; s < shards; ++s)
      if (nodes[i]->node.leads(s)) out.push_back(s);
    return out;
  }
  std::size_t total_led() const {
    std::size_t n = 0;
    for (std::size_t i = 0; i < nodes.size(); ++i)
      if (alive[i]) n += led(i).size();
    return n;
  }
  // Once every shard is led and no live node leads more than its share,
  // the time it took; nullopt when `within` passed first.
  std::optional<absl::Duration> settle(std::size_t live, absl::Duration within) {
    const absl::Time from = w.clock.now();
    const std::size_t fair = (shards + live - 1) / live;
    while (w.clock.now() - from <= within) {
      bool balanced = total_led() == shards;
      for (std::size_t i = 0; i < nodes.size(); ++i)
        if (alive[i] && led(i).size() > fair) balanced = false;
      if (balanced) return w.clock.now() - from;
      run(absl::Milliseconds(100));
      if (::testing::Test::HasFatalFailure()) return std::nullopt;
    }
    return std::nullopt;
  }
};

const absl::Duration kLeaderTtl = LeaseConfig{}.leader_ttl;

std::string node_of(const Event& e) {
  const EventValue* v = e.find("node");
  return v && std::holds_alternative<std::string>(*v) ? std::get<std::string>(*v) : "";
}

TEST(Rebalance, ASingleNodeLeadsEveryShardAfterItsFirstAnnouncement) {
  RebalanceWorld r(8);
  SchedulerNode& n1 = r.add("n1");
  EXPECT_EQ(n1.fair_share(), 0u);  // nothing acquired before the membership is known
  ASSERT_TRUE(r.settle(1, absl::Seconds(2)));
  EXPECT_EQ(n1.live_nodes(), 1u);
  EXPECT_EQ(n1.fair_share(), 8u);
  EXPECT_EQ(r.led(0).size(), 8u);
}

TEST(Rebalance, AJoiningNodeTakesItsShareWithinThreeLeaderLeases) {
  RebalanceWorld r(8);
  r.add("n1");
  ASSERT_TRUE(r.settle(1, absl::Seconds(2)));
  SchedulerNode& n2 = r.add("n2");
  auto took = r.settle(2, 3 * kLeaderTtl);
  ASSERT_TRUE(took) << "n1 leads " << r.led(0).size() << ", n2 " << r.led(1).size();
  EXPECT_EQ(r.led(0), (std::vector<std::uint32_t>{0, 1, 2, 3}));  // gives the highest away
  EXPECT_EQ(r.led(1), (std::vector<std::uint32_t>{4, 5, 6, 7}));
  EXPECT_EQ(n2.live_nodes(), 2u);
  // Released records hand over at once: far sooner than a lease lapse.
  EXPECT_LT(*took, kLeaderTtl);
  std::size_t released = 0, acquired_by_n2 = 0;
  for (const Event& e : r.w.events.events()) {
    if (e.kind == event_kinds::kLeaderReleased) ++released;
    if (e.kind == event_kinds::kLeaderAcquired && node_of(e) == "n2") ++acquired_by_n2;
  }
  EXPECT_EQ(released, 4u);
  EXPECT_EQ(acquired_by_n2, 4u);
  // And it stays balanced: no flapping afterwards.
  r.run(3 * kLeaderTtl);
  EXPECT_EQ(r.led(0).size(), 4u);
  EXPECT_EQ(r.led(1).size(), 4u);
}

TEST(Rebalance, ThreeNodesSpreadAndTheSurvivorsTakeOverALeaver) {
  RebalanceWorld r(8);
  r.add("n1");
  r.add("n2");
  r.add("n3");
  ASSERT_TRUE(r.settle(3, 3 * kLeaderTtl));
  for (std::size_t i = 0; i < 3; ++i) EXPECT_LE(r.led(i).size(), 3u) << i;
  r.run(kLeaderTtl);
  r.crash(1);
  auto took = r.settle(2, 3 * kLeaderTtl);
  ASSERT_TRUE(took) << "n1 leads " << r.led(0).size() << ", n3 " << r.led(2).size();
  EXPECT_EQ(r.led(0).size(), 4u);
  EXPECT_EQ(r.led(2).size(), 4u);
  EXPECT_LE(*took, 2 * kLeaderTtl);
  // A node that comes back (a restart under the same id) gets its share again.
  r.nodes.push_back(&r.w.add_node(node_config("n2", 8), 99));
  r.alive.push_back(true);
  r.nodes.back()->node.start();
  ASSERT_TRUE(r.settle(3, 3 * kLeaderTtl));
  EXPECT_GE(r.led(3).size(), 2u);
}

TEST(Depart, WithdrawsOnlyALiveRecordOfItsOwn) {
  StoreBench b(2);
  MembershipResult m;
  ASSERT_TRUE(b.run([&](Txn& t) {
                 return b.store.announce(t, "n1", true, absl::Seconds(10), &m);
               }).committed());
  ASSERT_TRUE(b.run([&](Txn& t) {
                 return b.store.announce(t, "n2", true, absl::Seconds(10), &m);
               }).committed());
  EXPECT_EQ(m.live, 2u);
  b.clock.advance(absl::Seconds(1));
  bool departed = false;
  std::vector<Event> events;
  ASSERT_TRUE(
      b.run([&](Txn& t) { return b.store.depart(t, "n1", &departed, &events); }).committed());
  EXPECT_TRUE(departed);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, event_kinds::kNodeDeparted);
  // n1 no longer counts as live; n2 does; its record stays for the view.
  ASSERT_TRUE(b.run([&](Txn& t) {
                 return b.store.announce(t, "n2", false, absl::Seconds(10), &m);
               }).committed());
  EXPECT_EQ(m.live, 1u);
  ASSERT_EQ(m.nodes.size(), 2u);
  EXPECT_EQ(m.nodes[0].id, "n1");
  EXPECT_EQ(m.nodes[0].expiry, T0() + absl::Seconds(1));
  // A second departure, an unknown node, or a record that does not decode:
  // nothing written.
  events.clear();
  ASSERT_TRUE(b.run([&](Txn& t) {
                 t.put(keys::node("n3"), "\x03garbage");
                 return absl::OkStatus();
               }).committed());
  for (std::string id : {"n1", "n3", "n4"}) {
    ASSERT_TRUE(
        b.run([&](Txn& t) { return b.store.depart(t, id, &departed, &events); }).committed());
    EXPECT_FALSE(departed) << id;
  }
  EXPECT_TRUE(events.empty());
}

TEST(Rebalance, ALeavingNodeHandsItsShardsOverWithoutALeaseLapse) {
  RebalanceWorld r(8);
  SchedulerNode& n1 = r.add("n1");
  SchedulerNode& n2 = r.add("n2");
  ASSERT_TRUE(r.settle(2, 3 * kLeaderTtl));
  r.run(kLeaderTtl);
  ASSERT_EQ(r.led(1).size(), 4u);
  bool left = false;
  n2.leave([&] { left = true; });
  EXPECT_TRUE(n2.leaving());
  EXPECT_TRUE(r.led(1).empty());  // stops dispatching at once
  auto took = r.settle(1, 3 * kLeaderTtl);
  ASSERT_TRUE(took) << "n1 leads " << r.led(0).size();
  EXPECT_TRUE(left);
  // Released and withdrawn: n1 takes over at its next announcement, far
  // sooner than the leases (and n2's node record) would lapse.
  EXPECT_LT(*took, kLeaderTtl / 2);
  EXPECT_EQ(n1.live_nodes(), 1u);
  std::size_t released = 0, departed = 0;
  for (const Event& e : r.w.events.events()) {
    if (e.kind == event_kinds::kLeaderReleased && node_of(e) == "n2") ++released;
    if (e.kind == event_kinds::kNodeDeparted) ++departed;
  }
  EXPECT_EQ(released, 4u);
  EXPECT_EQ(departed, 1u);
  // The leaver never leads again while it runs on.
  r.run(3 * kLeaderTtl);
  EXPECT_TRUE(r.led(1).empty());
  EXPECT_EQ(r.led(0).size(), 8u);
}

TEST(Rebalance, TheSurvivorsOfALeaveTakeItsShardsAtTheirNextAnnouncement) {
  // Each of three nodes leaves in turn (a world each). The survivors' next
  // announcements (a renew period after the last, at a tick) see the
  // released shards, and each survivor below its share acquires them at
  // once: not a poll later, not after probing the shards the other survivor
  // holds (their backoffs long over here), and a race lost to the other
  // survivor is followed by the next free shard without waiting a tick.
  const absl::Duration bound =
      LeaseConfig{}.leader_renew_period + SchedulerNodeConfig{}.poll_interval;
  for (std::size_t leaver = 0; leaver < 3; ++leaver) {
    RebalanceWorld r(8);
    for (const char* id : {"n1", "n2", "n3"}) r.add(id);
    ASSERT_TRUE(r.settle(3, 3 * kLeaderTtl));
    r.run(2 * kLeaderTtl);  // every backoff from the start-up has run out
    ASSERT_TRUE(r.settle(3, absl::ZeroDuration()));
    bool left = false;
    r.nodes[leaver]->node.leave([&] { left = true; });
    auto took = r.settle(2, 3 * kLeaderTtl);
    ASSERT_TRUE(took) << "leaver n" << leaver + 1;
    EXPECT_TRUE(left);
    EXPECT_LE(*took, bound) << "leaver n" << leaver + 1;
    for (std::size_t i = 0; i < 3; ++i) {
      if (i == leaver) continue;
      EXPECT_EQ(r.led(i).size(), 4u) << "n" << i + 1 << ", leaver n" << leaver + 1;
    }
  }
}

TEST(Rebalance, ALoneNodeThatLeavesReleasesEveryShardForItsReplacement) {
  RebalanceWorld r(4);
  SchedulerNode& n1 = r.add("n1");
  ASSERT_TRUE(r.settle(1, absl::Seconds(2)));
  r.run(absl::Seconds(3));
  bool left = false;
  n1.leave([&] { left = true; });
  r.run(absl::Milliseconds(500));
  EXPECT_TRUE(left);
  r.crash(0);
  // A replacement under another id leads every shard at once: no lease and
  // no node record of n1's to wait out (each would hold it back seconds).
  SchedulerNode& n2 = r.add("n2");
  auto took = r.settle(1, 3 * kLeaderTtl);
  ASSERT_TRUE(took);
  EXPECT_LT(*took, absl::Seconds(2));
  EXPECT_EQ(r.led(1).size(), 4u);
  EXPECT_EQ(n2.live_nodes(), 1u);
}

TEST(Rebalance, TheClusterViewListsNodesWithTheirLeases) {
  RebalanceWorld r(4);
  SchedulerNode& n1 = r.add("n1");
  r.add("n2");
  ASSERT_TRUE(r.settle(2, 3 * kLeaderTtl));
  r.crash(1);
  r.run(kLeaderTtl + absl::Seconds(1));
  std::optional<absl::StatusOr<ClusterView>> got;
  n1.get_cluster([&](auto v) { got = std::move(v); });
  r.run(absl::Milliseconds(200));
  ASSERT_TRUE(got && got->ok());
  const ClusterView& v = **got;
  ASSERT_EQ(v.nodes.size(), 2u);
  EXPECT_EQ(v.nodes[0].id, "n1");
  EXPECT_GT(v.nodes[0].expiry, v.now);
  EXPECT_EQ(v.nodes[1].id, "n2");
  EXPECT_LE(v.nodes[1].expiry, v.now);  // expired: n2 is gone
  EXPECT_LE(v.nodes[0].started, v.nodes[1].started);
}

}  // namespace
}  // namespace kairos

namespace kairos {
namespace {

TEST(PlantedHandoverKeepsEpoch, TakesAReleasedShardOverUnderTheSameEpoch) {
  PlantedBugs bugs;
  ASSERT_TRUE(set_planted_bug(bugs, "handover-keeps-epoch"));
  test_support::StoreBench b(1, bugs);
  LeadershipResult l;
  ASSERT_TRUE(b.run([&](Txn& t) {
                 return b.store.acquire_or_renew(t, 0, "n1", 0, absl::Seconds(10), &l);
               }).committed());
  bool released = false;
  std::vector<Event> events;
  ASSERT_TRUE(b.run([&](Txn& t) {
                 return b.store.release_leadership(t, 0, LeaderToken{"n1", 1}, &released, &events);
               }).committed());
  ASSERT_TRUE(released);
  ASSERT_TRUE(b.run([&](Txn& t) {
                 return b.store.acquire_or_renew(t, 0, "n2", 0, absl::Seconds(10), &l);
               }).committed());
  EXPECT_EQ(l.record.epoch, 1u);  // the bug: one epoch, two holders
  // A node re-acquiring its own lapsed record still bumps the epoch.
  b.clock.advance(absl::Seconds(11));
  ASSERT_TRUE(b.run([&](Txn& t) {
                 return b.store.acquire_or_renew(t, 0, "n2", 0, absl::Seconds(10), &l);
               }).committed());
  EXPECT_EQ(l.record.epoch, 2u);
}

}  // namespace
}  // namespace kairos
