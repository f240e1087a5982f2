// The cluster-membership rules (sim/oracle/checker.cc, C1 and C2) on
// hand-made histories: leadership spreads to a fair share, and a released
// shard is taken over. Each fires on the history it is written against and
// stays quiet on a correct one (and on the exemptions it states).
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/history_builder.h"

namespace kairos::sim {
namespace {

using test_support::Hist;

constexpr NodeId kLeader = 1;  // scheduler-1
constexpr NodeId kOther = 2;   // scheduler-2

struct ClusterHist : Hist {
  std::vector<BalanceSample> balance;
  std::vector<LiveSet> live_sets;
  ClusterHist() {
    // scheduler-1 acquires shard 0 at t0 for two hours; both schedulers
    // are live from the start.
    commit(absl::ZeroDuration(), kLeader, std::nullopt,
           std::make_pair(0u, LeaderRecord{"scheduler-1", 1, at(absl::Hours(2))}));
    live_sets.push_back({t0, {"scheduler-1", "scheduler-2"}});
  }
  absl::Time at(absl::Duration d) const { return t0 + d; }
  // `holder` releases shard 0 (its record's expiry set to the store's now)
  // at t0 + `when`.
  void release(absl::Duration when, NodeId by = kLeader, std::string holder = "scheduler-1",
               std::uint64_t epoch = 1) {
    commit(when, by, std::nullopt, std::make_pair(0u, LeaderRecord{holder, epoch, at(when)}));
  }
  // scheduler-2 acquires shard 0 under `epoch` at t0 + `when`.
  void take(absl::Duration when, std::uint64_t epoch = 2) {
    commit(when, kOther, std::nullopt,
           std::make_pair(0u, LeaderRecord{"scheduler-2", epoch, at(when + absl::Seconds(10))}));
  }
  bool fires(std::string_view name) const {
    History h = history();
    h.balance = &balance;
    h.live_sets = &live_sets;
    h.shard_count = 4;
    h.leader_ttl = absl::Seconds(10);
    h.leader_renew_period = absl::Milliseconds(2500);
    h.bounds.settle = absl::Seconds(5);
    for (const auto& v : Checker::with_defaults().run(h, {}).violations)
      if (v.invariant == name) return true;
    return false;
  }
};

// C2: the bound is the renew period (2.5 s) plus the start bound (3 s).
constexpr std::string_view kTakenOver = "released-shards-taken-over";

TEST(LeadershipChecks, AReleasedShardTakenOverWithinTheBoundIsQuiet) {
  ClusterHist x;
  x.release(absl::Seconds(60));
  x.take(absl::Seconds(65));
  EXPECT_FALSE(x.fires(kTakenOver));
}

TEST(LeadershipChecks, AReleasedShardTakenOverLateOrNeverIsAViolation) {
  ClusterHist late;
  late.release(absl::Seconds(60));
  late.take(absl::Seconds(66));
  EXPECT_TRUE(late.fires(kTakenOver));
  ClusterHist never;
  never.release(absl::Seconds(60));
  EXPECT_TRUE(never.fires(kTakenOver));
  // A leave (the releaser's own departure) excuses nothing: the others
  // must still take the shard over.
  ClusterHist leaving;
  leaving.release(absl::Seconds(60));
  leaving.faults.push_back({leaving.at(absl::Seconds(59)), leaving.at(absl::Seconds(61)), "leave"});
  EXPECT_TRUE(leaving.fires(kTakenOver));
}

TEST(LeadershipChecks, ALateTakeoverIsNotJudgedNearAFaultOrWithNoOtherLiveScheduler) {
  // A partition settling within the window delays the others' view.
  ClusterHist partitioned;
  partitioned.release(absl::Seconds(60));
  partitioned.faults.push_back(
      {partitioned.at(absl::Seconds(50)), partitioned.at(absl::Seconds(56)), "partition"});
  EXPECT_TRUE(partitioned.faults.back().to + absl::Seconds(5) >= partitioned.at(absl::Seconds(60)));
  EXPECT_FALSE(partitioned.fires(kTakenOver));
  // One that settled before the release excuses nothing.
  ClusterHist settled;
  settled.release(absl::Seconds(60));
  settled.faults.push_back(
      {settled.at(absl::Seconds(40)), settled.at(absl::Seconds(50)), "partition"});
  EXPECT_TRUE(settled.fires(kTakenOver));
  // The releaser was the only live scheduler for part of the window.
  ClusterHist alone;
  alone.release(absl::Seconds(60));
  alone.live_sets.push_back({alone.at(absl::Seconds(62)), {"scheduler-1"}});
  alone.live_sets.push_back({alone.at(absl::Seconds(64)), {"scheduler-1", "scheduler-2"}});
  EXPECT_FALSE(alone.fires(kTakenOver));
  // The window runs past the end of the history: not judged.
  ClusterHist tail;
  tail.release(absl::Hours(1) - absl::Seconds(2));
  EXPECT_FALSE(tail.fires(kTakenOver));
}

TEST(LeadershipChecks, OnlyAReleaseOfALeaseStillRunningIsJudged) {
  // A write of an expired record after the lease lapsed by itself (here:
  // the holder's record expired an hour in, then rewritten) is no release.
  ClusterHist lapsed;
  lapsed.commit(absl::ZeroDuration() + absl::Seconds(1), kLeader, std::nullopt,
                std::make_pair(0u, LeaderRecord{"scheduler-1", 1, lapsed.at(absl::Seconds(30))}));
  lapsed.release(absl::Seconds(60));
  EXPECT_FALSE(lapsed.fires(kTakenOver));
  // A takeover of another shard does not answer shard 0's release.
  ClusterHist wrong_shard;
  wrong_shard.release(absl::Seconds(60));
  wrong_shard.commit(
      absl::Seconds(62), kOther, std::nullopt,
      std::make_pair(1u, LeaderRecord{"scheduler-2", 1, wrong_shard.at(absl::Seconds(72))}));
  EXPECT_TRUE(wrong_shard.fires(kTakenOver));
}

// C1: a sample of a scheduler leading more than its fair share (ceil(4 /
// live)) is a violation once the live set and every fault are three leader
// leases (30 s) old.
constexpr std::string_view kBalanced = "leadership-balanced";

TEST(LeadershipChecks, LeadingMoreThanAFairShareLongAfterAChangeIsAViolation) {
  ClusterHist x;
  x.balance.push_back({x.at(absl::Seconds(100)), x.at(absl::Seconds(60)), 2, 3, "scheduler-1"});
  EXPECT_TRUE(x.fires(kBalanced));
}

TEST(LeadershipChecks, AnUnfairShareSoonAfterAChangeOrAFaultIsQuiet) {
  ClusterHist recent;
  recent.balance.push_back(
      {recent.at(absl::Seconds(100)), recent.at(absl::Seconds(80)), 2, 3, "scheduler-1"});
  EXPECT_FALSE(recent.fires(kBalanced));
  ClusterHist faulted;
  faulted.balance.push_back(
      {faulted.at(absl::Seconds(100)), faulted.at(absl::Seconds(10)), 2, 3, "scheduler-1"});
  faulted.faults.push_back({faulted.at(absl::Seconds(70)), faulted.at(absl::Seconds(75)), "pause"});
  EXPECT_FALSE(faulted.fires(kBalanced));
  // At its fair share (2 of 4 with two live): quiet however old.
  ClusterHist fair;
  fair.balance.push_back(
      {fair.at(absl::Seconds(100)), fair.at(absl::Seconds(10)), 2, 2, "scheduler-1"});
  EXPECT_FALSE(fair.fires(kBalanced));
}

}  // namespace
}  // namespace kairos::sim
