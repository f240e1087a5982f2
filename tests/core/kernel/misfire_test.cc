// decide_misfire, the pure misfire rule (core/kernel/misfire.h): each policy
// (run once now, bounded catch-up, skip), the threshold boundary (lateness
// equal to the threshold is on time), the catch-up bound and its rate limit,
// the capped scan and the run-once backlog.
#include "core/kernel/misfire.h"

#include <gtest/gtest.h>

#include <vector>

namespace kairos {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1'767'225'600);  // 2026-01-01

Fire fire_at(absl::Time t) {
  Fire f;
  f.at = f.nominal = t;
  return f;
}

// Occurrences every minute from kT0; `now` is `late` after the first.
MisfireInput input(MisfirePolicy policy, std::size_t due, absl::Duration late,
                   absl::Duration threshold = absl::Minutes(1)) {
  MisfireInput in;
  in.policy.misfire = policy;
  in.policy.misfire_threshold = threshold;
  in.policy.catch_up_max = 3;
  in.policy.catch_up_spacing = absl::Seconds(10);
  in.created_at = kT0 - absl::Hours(1);
  in.now = kT0 + late;
  for (std::size_t i = 0; i < due; ++i) in.due.push_back(fire_at(kT0 + absl::Minutes(i)));
  in.after_last = fire_at(kT0 + absl::Minutes(due));
  return in;
}

MisfireAction run(std::size_t i, LedgerOutcome o, absl::Duration late, std::uint32_t stands) {
  MisfireAction a;
  a.kind = MisfireAction::Kind::kRun;
  a.index = i;
  a.outcome = o;
  a.lateness = late;
  a.stands_for = stands;
  return a;
}

MisfireAction record(std::size_t b, std::size_t e, LedgerOutcome o, std::string detail,
                     bool linked = false) {
  MisfireAction a;
  a.kind = MisfireAction::Kind::kRecord;
  a.begin = b;
  a.end = e;
  a.outcome = o;
  a.detail = std::move(detail);
  a.linked = linked;
  return a;
}

TEST(Misfire, Lateness) {
  const Fire f = fire_at(kT0);
  EXPECT_EQ(misfire_lateness(f, kT0 - absl::Hours(1), kT0 + absl::Seconds(5)), absl::Seconds(5));
  // Judged from the job's creation when it came later; never negative.
  EXPECT_EQ(misfire_lateness(f, kT0 + absl::Seconds(3), kT0 + absl::Seconds(5)), absl::Seconds(2));
  EXPECT_EQ(misfire_lateness(f, kT0, kT0 - absl::Seconds(5)), absl::ZeroDuration());
}

TEST(Misfire, ThresholdBoundaryIsOnTime) {
  for (MisfirePolicy p : {MisfirePolicy::kRunOnce, MisfirePolicy::kCatchUp, MisfirePolicy::kSkip}) {
    // Exactly at the threshold: on time, runs, the next occurrence follows.
    MisfireInput in = input(p, 1, absl::Minutes(1));
    in.backlog = 4;
    const MisfireDecision d = decide_misfire(in);
    EXPECT_FALSE(d.misfire);
    EXPECT_EQ(d.actions,
              std::vector<MisfireAction>{run(0, LedgerOutcome::kFired, absl::Minutes(1), 5)});
    EXPECT_EQ(d.backlog, 0u);
    ASSERT_TRUE(d.next.has_value());
    EXPECT_EQ(d.next->nominal, kT0 + absl::Minutes(1));
    EXPECT_EQ(d.next_at, kT0 + absl::Minutes(1));
    // One microsecond more: misfired.
    EXPECT_TRUE(misfired(in.policy, in.due[0], in.created_at, in.now + absl::Microseconds(1)));
    EXPECT_FALSE(misfired(in.policy, in.due[0], in.created_at, in.now));
  }
}

TEST(Misfire, OnTimeDstShiftedFireIsRecordedAsMoved) {
  MisfireInput in = input(MisfirePolicy::kSkip, 1, absl::ZeroDuration());
  in.due[0].note = DstNote::kGapShifted;
  const MisfireDecision d = decide_misfire(in);
  ASSERT_EQ(d.actions.size(), 1u);
  EXPECT_EQ(d.actions[0].outcome, LedgerOutcome::kMovedDst);
}

TEST(Misfire, RunOnceRunsTheLastAndCoalescesTheRest) {
  // Five due (kT0..kT0+4m), now = kT0+4m+30s: the first four misfired
  // (threshold 1m), the last is on time.
  MisfireInput in = input(MisfirePolicy::kRunOnce, 5, absl::Minutes(4) + absl::Seconds(30));
  in.backlog = 2;
  const MisfireDecision d = decide_misfire(in);
  EXPECT_TRUE(d.misfire);
  EXPECT_EQ(d.misfired, 4u);
  EXPECT_EQ(d.actions,
            (std::vector<MisfireAction>{run(4, LedgerOutcome::kFired, absl::Seconds(30), 7),
                                        record(0, 4, LedgerOutcome::kCoalesced,
                                               "run-once: 7 occurrences, one run", true)}));
  EXPECT_EQ(d.coalesced, 4u);
  EXPECT_EQ(d.skipped, 0u);
  EXPECT_EQ(d.backlog, 0u);
  EXPECT_EQ(d.next->nominal, kT0 + absl::Minutes(5));
}

TEST(Misfire, RunOnceLateRunIsMarkedLate) {
  MisfireInput in = input(MisfirePolicy::kRunOnce, 3, absl::Minutes(10));
  const MisfireDecision d = decide_misfire(in);
  ASSERT_EQ(d.actions.size(), 2u);
  EXPECT_EQ(d.actions[0], run(2, LedgerOutcome::kLate, absl::Minutes(8), 3));
}

TEST(Misfire, RunOnceCappedDefersTheRunAndGrowsTheBacklog) {
  MisfireInput in = input(MisfirePolicy::kRunOnce, 4, absl::Hours(1));
  in.capped = true;
  in.backlog = 10;
  const MisfireDecision d = decide_misfire(in);
  EXPECT_EQ(d.actions, std::vector<MisfireAction>{record(0, 4, LedgerOutcome::kCoalesced,
                                                         "run-once: backlog, run follows")});
  EXPECT_EQ(d.backlog, 14u);
  EXPECT_EQ(d.coalesced, 4u);
  EXPECT_EQ(d.next->nominal, kT0 + absl::Minutes(4));
}

TEST(Misfire, SkipDropsTheMisfiredPrefix) {
  // Due kT0..kT0+4m, now = kT0+4m+30s: four misfired, the fifth is next.
  const MisfireDecision d =
      decide_misfire(input(MisfirePolicy::kSkip, 5, absl::Minutes(4) + absl::Seconds(30)));
  EXPECT_EQ(d.actions, std::vector<MisfireAction>{record(0, 4, LedgerOutcome::kSkippedMisfire,
                                                         "skip: past the misfire threshold")});
  EXPECT_EQ(d.skipped, 4u);
  ASSERT_TRUE(d.next.has_value());
  EXPECT_EQ(d.next->nominal, kT0 + absl::Minutes(4));
  EXPECT_EQ(d.next_at, kT0 + absl::Minutes(4));
}

TEST(Misfire, SkipAllMisfiredContinuesAfterTheLast) {
  const MisfireDecision d = decide_misfire(input(MisfirePolicy::kSkip, 3, absl::Hours(1)));
  EXPECT_EQ(d.skipped, 3u);
  EXPECT_EQ(d.next->nominal, kT0 + absl::Minutes(3));
}

TEST(Misfire, CatchUpWithinTheBoundRunsTheOldestAndRateLimits) {
  // Three due (= catch_up_max), all misfired: none skipped, the oldest runs,
  // the next (already due) waits the spacing.
  MisfireInput in = input(MisfirePolicy::kCatchUp, 3, absl::Minutes(10));
  const MisfireDecision d = decide_misfire(in);
  EXPECT_EQ(d.actions,
            std::vector<MisfireAction>{run(0, LedgerOutcome::kLate, absl::Minutes(10), 1)});
  EXPECT_EQ(d.skipped, 0u);
  EXPECT_EQ(d.next->nominal, kT0 + absl::Minutes(1));
  EXPECT_EQ(d.next_at, in.now + absl::Seconds(10));
}

TEST(Misfire, CatchUpBeyondTheBoundSkipsTheOldest) {
  // Seven due, bound 3: the four oldest are skipped, the fifth runs.
  MisfireInput in = input(MisfirePolicy::kCatchUp, 7, absl::Minutes(30));
  const MisfireDecision d = decide_misfire(in);
  EXPECT_EQ(d.actions,
            (std::vector<MisfireAction>{
                record(0, 4, LedgerOutcome::kSkippedMisfire, "catch-up: beyond the bound of 3"),
                run(4, LedgerOutcome::kLate, absl::Minutes(26), 1)}));
  EXPECT_EQ(d.skipped, 4u);
  EXPECT_EQ(d.next->nominal, kT0 + absl::Minutes(5));
  EXPECT_EQ(d.next_at, in.now + absl::Seconds(10));
}

TEST(Misfire, CatchUpLastDueRunsAndTheNextIsNotDueYet) {
  // One due and misfired: it runs; the next occurrence is in the future, so
  // no spacing applies.
  MisfireInput in =
      input(MisfirePolicy::kCatchUp, 1, absl::Seconds(50), /*threshold=*/absl::Seconds(30));
  const MisfireDecision d = decide_misfire(in);
  EXPECT_EQ(d.actions,
            std::vector<MisfireAction>{run(0, LedgerOutcome::kLate, absl::Seconds(50), 1)});
  EXPECT_EQ(d.next_at, kT0 + absl::Minutes(1));
}

TEST(Misfire, CatchUpCappedResumesAtTheBound) {
  // A capped scan (more were due): only the skip part; the pass resumes at
  // the first occurrence within the bound, at its own time.
  MisfireInput in = input(MisfirePolicy::kCatchUp, 1001, absl::Hours(24));
  in.capped = true;
  const MisfireDecision d = decide_misfire(in);
  EXPECT_EQ(d.actions, std::vector<MisfireAction>{record(0, 998, LedgerOutcome::kSkippedMisfire,
                                                         "catch-up: beyond the bound of 3")});
  EXPECT_EQ(d.skipped, 998u);
  EXPECT_EQ(d.next->nominal, kT0 + absl::Minutes(998));
  EXPECT_EQ(d.next_at, kT0 + absl::Minutes(998));
}

TEST(Misfire, UnboundedCatchUpIsThePlantedBug) {
  MisfireInput in = input(MisfirePolicy::kCatchUp, 7, absl::Minutes(30));
  in.bound_catch_up = false;
  const MisfireDecision d = decide_misfire(in);
  EXPECT_EQ(d.actions,
            std::vector<MisfireAction>{run(0, LedgerOutcome::kLate, absl::Minutes(30), 1)});
  EXPECT_EQ(d.next->nominal, kT0 + absl::Minutes(1));
  EXPECT_EQ(d.next_at, kT0 + absl::Minutes(1));  // no spacing either
}

TEST(Misfire, TheScheduleEnds) {
  MisfireInput in = input(MisfirePolicy::kSkip, 2, absl::Hours(1));
  in.after_last.reset();
  EXPECT_FALSE(decide_misfire(in).next.has_value());
  MisfireInput on = input(MisfirePolicy::kRunOnce, 1, absl::ZeroDuration());
  on.after_last.reset();
  EXPECT_FALSE(decide_misfire(on).next.has_value());
}

TEST(Misfire, PolicyNames) {
  EXPECT_EQ(misfire_policy_name(MisfirePolicy::kRunOnce), "run-once");
  EXPECT_EQ(misfire_policy_name(MisfirePolicy::kCatchUp), "catch-up");
  EXPECT_EQ(misfire_policy_name(MisfirePolicy::kSkip), "skip");
}

}  // namespace
}  // namespace kairos
