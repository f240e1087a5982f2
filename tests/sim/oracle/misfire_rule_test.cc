// The checker judges misfire decisions against the rule of
// core/kernel/misfire.h (sim/oracle/policy_checks.cc, MisfireModel), on
// hand-made histories: a job due every minute whose dispatcher was away, and
// the ledger records one decision (one commit) wrote. Each test pairs the
// decision the rule makes, which passes, with a kernel that does too little
// (skips or coalesces what must run, calls an on-time occurrence late) or
// too much (runs what must be skipped, or more of a backlog than the bound),
// which the check names: misfire-threshold, or catch-up-bounded for the
// catch-up bound and spacing.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/history_builder.h"

namespace kairos::sim {
namespace {

using test_support::Hist;
using test_support::violated;

constexpr NodeId kLeader = 1;
constexpr const char* kThreshold = "misfire-threshold";
constexpr const char* kBound = "catch-up-bounded";

// One job created at t0, due every `every` from t0 + every on (occurrence
// k at t0 + k x every), `count` of them known to the client.
struct MisfireHist : Hist {
  explicit MisfireHist(MisfirePolicy policy, int count = 60,
                       absl::Duration every = absl::Minutes(1))
      : every_(every) {
    LeaderRecord l{"scheduler-1", 1, t0 + absl::Hours(2)};
    commit(absl::ZeroDuration(), kLeader, std::nullopt, std::make_pair(0u, l));
    ClientJob j;
    j.id = "j";
    j.incarnation = 1;
    j.created_at = t0;
    j.recurring = true;
    j.longest_run = absl::Seconds(1);
    j.policy.misfire = policy;  // threshold 60 s
    j.policy.catch_up_max = 3;
    j.policy.catch_up_spacing = absl::Seconds(10);
    jobs.push_back(j);
    for (int k = 1; k <= count; ++k) expected.push_back({"j", 1, occ(k), occ(k)});
  }
  absl::Time occ(int k) const { return t0 + k * every_; }

  // A ledger record for occurrences a..b (fire time = nominal).
  LedgerRecord rec(int a, int b, LedgerOutcome o, std::optional<int> run = std::nullopt) const {
    LedgerRecord l;
    l.incarnation = 1;
    l.nominal = occ(a);
    l.through = occ(b);
    l.count = static_cast<std::uint64_t>(b - a + 1);
    l.outcome = o;
    l.fire_at = occ(a);
    if (run) l.run_nominal = occ(*run);
    return l;
  }
  // A run record of its own for occurrence k.
  LedgerRecord run(int k, LedgerOutcome o) const { return rec(k, k, o, k); }

  // One decision: one commit at t0 + `at` writing `records`.
  void decide(absl::Duration at, const std::vector<LedgerRecord>& records) {
    std::vector<WriteOp> ops;
    for (const LedgerRecord& l : records) ops.push_back(Hist::put("j", l));
    commit_ops(at, kLeader, ops);
  }
  bool fires(const char* invariant) const { return violated(history()).count(invariant) != 0; }

 private:
  absl::Duration every_;
};

constexpr absl::Duration kBack = absl::Minutes(10);  // the dispatcher looks again at 10m

// Catch-up, bound 3, spacing 10 s. At 10m occurrences 1..10 are due (1..8
// misfired; 9, exactly 60 s late, is on time): the oldest 7 are beyond the
// bound, 8 runs late, 9 waits the spacing (10m10s, 70 s late) and runs late,
// then 10 runs on time (10m20s).
TEST(MisfireRule, CatchUpKeepsExactlyTheBoundAndSpacesItsRuns) {
  MisfireHist x(MisfirePolicy::kCatchUp);
  x.decide(kBack, {x.rec(1, 7, LedgerOutcome::kSkippedMisfire), x.run(8, LedgerOutcome::kLate)});
  x.decide(kBack + absl::Seconds(10), {x.run(9, LedgerOutcome::kLate)});
  x.decide(kBack + absl::Seconds(20), {x.run(10, LedgerOutcome::kFired)});
  x.decide(absl::Minutes(11), {x.run(11, LedgerOutcome::kFired)});
  EXPECT_FALSE(x.fires(kThreshold));
  EXPECT_FALSE(x.fires(kBound));
}

TEST(MisfireRule, CatchUpThatSkipsAnOccurrenceTheBoundKeepsIsAViolation) {
  // Too little: 8 skipped as well, so only two of the bound's three run.
  MisfireHist x(MisfirePolicy::kCatchUp);
  x.decide(kBack, {x.rec(1, 8, LedgerOutcome::kSkippedMisfire), x.run(9, LedgerOutcome::kLate)});
  EXPECT_TRUE(x.fires(kBound));
  EXPECT_FALSE(x.fires(kThreshold));
}

TEST(MisfireRule, CatchUpThatKeepsMoreThanTheBoundIsAViolation) {
  // Too much: 7 runs, keeping four of the backlog (7..10). After it three
  // occurrences stay undecided, so counting the kept backlog alone (at most
  // catch_up_max undecided) cannot see it; the rule can.
  MisfireHist x(MisfirePolicy::kCatchUp);
  x.decide(kBack, {x.rec(1, 6, LedgerOutcome::kSkippedMisfire), x.run(7, LedgerOutcome::kLate)});
  EXPECT_TRUE(x.fires(kBound));

  // Too much, unbounded: the oldest runs and nothing is skipped.
  MisfireHist y(MisfirePolicy::kCatchUp);
  y.decide(kBack, {y.run(1, LedgerOutcome::kLate)});
  EXPECT_TRUE(y.fires(kBound));
}

TEST(MisfireRule, CatchUpThatCoalescesIsAViolation) {
  MisfireHist x(MisfirePolicy::kCatchUp);
  x.decide(kBack, {x.run(10, LedgerOutcome::kFired), x.rec(1, 9, LedgerOutcome::kCoalesced, 10)});
  EXPECT_TRUE(x.fires(kThreshold));
}

TEST(MisfireRule, CatchUpRunsBeforeTheSpacingAreAViolation) {
  MisfireHist x(MisfirePolicy::kCatchUp);
  x.decide(kBack, {x.rec(1, 7, LedgerOutcome::kSkippedMisfire), x.run(8, LedgerOutcome::kLate)});
  x.decide(kBack + absl::Seconds(9), {x.run(9, LedgerOutcome::kLate)});
  EXPECT_TRUE(x.fires(kBound));
}

// Lateness equal to the threshold is on time; a microsecond more is late.
// At 2m occurrence 1 is exactly 60 s late (and 2 is due): the rule runs 1 on
// time. A kernel that counts it as misfired writes, per policy, what the
// misfire branch would.
TEST(MisfireRule, LatenessEqualToTheThresholdIsOnTime) {
  const absl::Duration at = absl::Minutes(2);
  for (const MisfirePolicy policy :
       {MisfirePolicy::kRunOnce, MisfirePolicy::kCatchUp, MisfirePolicy::kSkip}) {
    MisfireHist ok(policy);
    ok.decide(at, {ok.run(1, LedgerOutcome::kFired)});
    EXPECT_FALSE(ok.fires(kThreshold)) << static_cast<int>(policy);

    MisfireHist late(policy);
    switch (policy) {
      case MisfirePolicy::kRunOnce:  // 1 coalesced into the run of 2
        late.decide(
            at, {late.run(2, LedgerOutcome::kFired), late.rec(1, 1, LedgerOutcome::kCoalesced, 2)});
        break;
      case MisfirePolicy::kCatchUp:  // 1 runs late
        late.decide(at, {late.run(1, LedgerOutcome::kLate)});
        break;
      case MisfirePolicy::kSkip:  // 1 skipped
        late.decide(at, {late.rec(1, 1, LedgerOutcome::kSkippedMisfire)});
        break;
    }
    EXPECT_TRUE(late.fires(kThreshold)) << static_cast<int>(policy);
  }
  // A microsecond more: catch-up runs 1 late (within the bound).
  const absl::Duration past = at + absl::Microseconds(1);
  MisfireHist x(MisfirePolicy::kCatchUp);
  x.decide(past, {x.run(1, LedgerOutcome::kLate)});
  EXPECT_FALSE(x.fires(kThreshold));
  EXPECT_FALSE(x.fires(kBound));
  MisfireHist y(MisfirePolicy::kCatchUp);
  y.decide(past, {y.run(1, LedgerOutcome::kFired)});
  EXPECT_TRUE(y.fires(kThreshold));
}

// Skip: at 10m01s the misfired prefix 1..9 is skipped (9 is 61 s late) and
// nothing runs; 10 (on time) is the next decision's.
TEST(MisfireRule, SkipRecordsTheMisfiredPrefixAndRunsNothing) {
  const absl::Duration at = kBack + absl::Seconds(1);
  MisfireHist x(MisfirePolicy::kSkip);
  x.decide(at, {x.rec(1, 9, LedgerOutcome::kSkippedMisfire)});
  x.decide(at + absl::Seconds(1), {x.run(10, LedgerOutcome::kFired)});
  EXPECT_FALSE(x.fires(kThreshold));

  // Too much: the on-time 10 run within the misfire decision (each record
  // on its own is fine: 10 is on time).
  MisfireHist y(MisfirePolicy::kSkip);
  y.decide(at, {y.rec(1, 9, LedgerOutcome::kSkippedMisfire), y.run(10, LedgerOutcome::kFired)});
  EXPECT_TRUE(y.fires(kThreshold));

  // Too much: a misfired occurrence runs late.
  MisfireHist z(MisfirePolicy::kSkip);
  z.decide(at, {z.rec(1, 8, LedgerOutcome::kSkippedMisfire), z.run(9, LedgerOutcome::kLate)});
  EXPECT_TRUE(z.fires(kThreshold));

  // Too little: the decision stops short of the misfired prefix.
  MisfireHist w(MisfirePolicy::kSkip);
  w.decide(at, {w.rec(1, 8, LedgerOutcome::kSkippedMisfire)});
  EXPECT_TRUE(w.fires(kThreshold));
}

// Run-once: at 10m01s one run (10, on time) stands for 1..10; 1..9 are
// coalesced into it.
TEST(MisfireRule, RunOnceRunsTheLastDueOccurrenceForTheWholeBacklog) {
  const absl::Duration at = kBack + absl::Seconds(1);
  MisfireHist x(MisfirePolicy::kRunOnce);
  x.decide(at, {x.run(10, LedgerOutcome::kFired), x.rec(1, 9, LedgerOutcome::kCoalesced, 10)});
  EXPECT_FALSE(x.fires(kThreshold));

  // Too little: the run is 9, late (61 s, so the record itself is fine),
  // and 10 is left to another run.
  MisfireHist y(MisfirePolicy::kRunOnce);
  y.decide(at, {y.run(9, LedgerOutcome::kLate), y.rec(1, 8, LedgerOutcome::kCoalesced, 9)});
  EXPECT_TRUE(y.fires(kThreshold));

  // Too little: everything coalesced and no run, with a backlog far from a
  // whole chunk.
  MisfireHist z(MisfirePolicy::kRunOnce);
  z.decide(at, {z.rec(1, 10, LedgerOutcome::kCoalesced)});
  EXPECT_TRUE(z.fires(kThreshold));

  // The coalesced records must name the run.
  MisfireHist w(MisfirePolicy::kRunOnce);
  w.decide(at, {w.run(10, LedgerOutcome::kFired), w.rec(1, 9, LedgerOutcome::kCoalesced)});
  EXPECT_TRUE(w.fires(kThreshold));
}

// A backlog longer than a chunk: the history does not say the chunk, so any
// the store accepts (from 1001) is; a smaller one is not.
TEST(MisfireRule, ACappedRunOnceDecisionCoalescesAWholeChunk) {
  const absl::Duration second = absl::Seconds(1);
  const absl::Duration at = 2500 * second;  // 1..2500 due
  MisfireHist x(MisfirePolicy::kRunOnce, 3000, second);
  x.decide(at, {x.rec(1, 2000, LedgerOutcome::kCoalesced)});
  x.decide(
      at, {x.run(2500, LedgerOutcome::kFired), x.rec(2001, 2499, LedgerOutcome::kCoalesced, 2500)});
  EXPECT_FALSE(x.fires(kThreshold));

  MisfireHist y(MisfirePolicy::kRunOnce, 3000, second);
  y.decide(at, {y.rec(1, 1000, LedgerOutcome::kCoalesced)});
  EXPECT_TRUE(y.fires(kThreshold));
}

// Where the client's schedule does not reach past the decision, the rule is
// not judged (its due list is not known), only each record on its own. At
// 10m01s the rule would run 10 (on time) for the backlog; with 10 unknown to
// the client, running 9 late is all it can see, and that record is fine.
TEST(MisfireRule, ADecisionPastWhatTheClientKnowsIsJudgedPerRecord) {
  const absl::Duration at = kBack + absl::Seconds(1);
  MisfireHist x(MisfirePolicy::kRunOnce, 9);
  x.decide(at, {x.run(9, LedgerOutcome::kLate), x.rec(1, 8, LedgerOutcome::kCoalesced, 9)});
  EXPECT_FALSE(x.fires(kThreshold));
  MisfireHist y(MisfirePolicy::kRunOnce);
  y.decide(at, {y.run(9, LedgerOutcome::kLate), y.rec(1, 8, LedgerOutcome::kCoalesced, 9)});
  EXPECT_TRUE(y.fires(kThreshold));
}

}  // namespace
}  // namespace kairos::sim
