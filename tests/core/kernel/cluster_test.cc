// The cluster view: every shard's leader record as stored (expired ones
// too), read-only, and the node's get_cluster with the store's clock.
#include <gtest/gtest.h>

#include <optional>

#include "absl/strings/str_cat.h"
#include "core/kernel/job_store.h"
#include "core/kernel/keyspace.h"
#include "core/kernel/scheduler_node.h"
#include "tests/support/job_store_fixture.h"
#include "tests/support/node_world.h"

namespace kairos {
namespace {

using namespace test_support;

TEST(Cluster, LeadersListsEveryLedShardInOrderAndWritesNothing) {
  StoreBench b(3);
  std::vector<std::pair<std::uint32_t, LeaderRecord>> got;
  ASSERT_TRUE(b.run([&](Txn& t) { return b.store.leaders(t, &got); }).committed());
  EXPECT_TRUE(got.empty());  // never led
  for (std::uint32_t shard : {2u, 0u}) {
    LeadershipResult out;
    ASSERT_TRUE(b.run([&](Txn& t) {
                   return b.store.acquire_or_renew(t, shard, "n1", 0, absl::Seconds(10), &out);
                 }).committed());
  }
  b.clock.advance(absl::Seconds(11));  // both lapse; they are still listed
  const auto before = b.storage.contents();
  ASSERT_TRUE(b.storage.run([&](Txn& t) { return b.store.leaders(t, &got); }, TxnMode::kReadOnly)
                  .committed());
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].first, 0u);
  EXPECT_EQ(got[1].first, 2u);
  EXPECT_EQ(got[0].second.holder, "n1");
  EXPECT_EQ(got[0].second.epoch, 1u);
  EXPECT_EQ(got[0].second.expiry, T0() + absl::Seconds(10));
  EXPECT_LT(got[1].second.expiry, b.now());
  EXPECT_EQ(b.storage.contents(), before);
}

TEST(Cluster, NodeReportsLeadersAndTheStoreClock) {
  NodeWorld w;
  SchedulerNode& node = w.add_node(node_config("n1", 4), 7).node;
  node.start();
  w.stepper.run(absl::Seconds(2));
  std::optional<absl::StatusOr<ClusterView>> got;
  node.get_cluster([&](auto r) { got = std::move(r); });
  w.stepper.run(absl::Milliseconds(100));
  ASSERT_TRUE(got && got->ok()) << (got ? got->status() : absl::OkStatus());
  const ClusterView& v = **got;
  EXPECT_EQ(v.shard_count, 4u);
  ASSERT_EQ(v.leaders.size(), 4u);
  for (const auto& [shard, rec] : v.leaders) {
    EXPECT_EQ(rec.holder, "n1") << shard;
    EXPECT_GT(rec.expiry, v.now);
  }
  EXPECT_GE(v.now, T0() + absl::Seconds(2));
  EXPECT_LE(v.now, w.clock.now());
}

TEST(Cluster, DueBacklogCountsWhatIsDueByTheStoreClockPerShardUpToACap) {
  StoreBench b(2);
  // Due entries straight into the index: three due now on shard 0, one
  // due later on shard 0, five due now on shard 1.
  ASSERT_TRUE(b.run([&](Txn& t) {
                 for (int i = 0; i < 3; ++i)
                   t.put(keys::due(0, b.now() - absl::Seconds(i), absl::StrCat("a", i)), "");
                 t.put(keys::due(0, b.now() + absl::Seconds(5), "later"), "");
                 for (int i = 0; i < 5; ++i)
                   t.put(keys::due(1, b.now() - absl::Milliseconds(i), absl::StrCat("b", i)), "");
                 return absl::OkStatus();
               }).committed());
  auto backlog = [&](std::uint32_t shard, std::uint64_t cap) {
    std::pair<std::uint64_t, bool> got{0, false};
    EXPECT_TRUE(b.storage
                    .run(
                        [&](Txn& t) {
                          b.store.due_backlog(t, shard, cap, &got.first, &got.second);
                          return absl::OkStatus();
                        },
                        TxnMode::kReadOnly)
                    .committed());
    return got;
  };
  EXPECT_EQ(backlog(0, 100), std::make_pair(std::uint64_t{3}, false));
  EXPECT_EQ(backlog(1, 100), std::make_pair(std::uint64_t{5}, false));
  EXPECT_EQ(backlog(1, 5), std::make_pair(std::uint64_t{5}, false));
  EXPECT_EQ(backlog(1, 4), std::make_pair(std::uint64_t{4}, true));
  b.clock.advance(absl::Seconds(5));  // the later one is due now
  EXPECT_EQ(backlog(0, 100), std::make_pair(std::uint64_t{4}, false));
}

TEST(Cluster, TheNodesViewCarriesEveryShardsBacklog) {
  NodeWorld w;
  SchedulerNode& node = w.add_node(node_config("n1", 4), 7).node;
  node.start();
  w.stepper.run(absl::Seconds(2));
  std::optional<absl::StatusOr<ClusterView>> got;
  node.get_cluster([&](auto r) { got = std::move(r); });
  w.stepper.run(absl::Milliseconds(100));
  ASSERT_TRUE(got && got->ok());
  ASSERT_EQ((*got)->backlog.size(), 4u);
  for (const auto& b : (*got)->backlog) {
    EXPECT_EQ(b.due, 0u);  // nothing stored
    EXPECT_FALSE(b.capped);
  }
}

}  // namespace
}  // namespace kairos
