// The policy invariants (sim/oracle/policy_checks.cc) on hand-made
// histories: each fires on the violation it is written for, and a history
// that follows the policies passes. (That the swarm catches the planted
// policy bugs is tests/sim/oracle/planted_bugs_test.cc.)
#include <gtest/gtest.h>

#include "core/base/stable_hash.h"
#include "core/ports/random.h"
#include "tests/support/history_builder.h"

namespace kairos::sim {
namespace {

using test_support::granted;
using test_support::Hist;
using test_support::violated;

constexpr NodeId kLeader = 1;

ClientJob client_job(const std::string& id, absl::Time created) {
  ClientJob j;
  j.id = id;
  j.incarnation = 1;
  j.created_at = created;
  j.recurring = true;
  j.longest_run = absl::Seconds(1);
  return j;
}

RunRecord ready_run(const std::string& job, absl::Time nominal, std::int32_t priority = 5) {
  RunRecord r;
  r.id = RunId{job, 1, nominal};
  r.due_at = r.ready_at = r.dispatched_at = nominal;
  r.priority = priority;
  return r;
}

LedgerRecord record(absl::Time from, absl::Time through, std::uint64_t count,
                    LedgerOutcome outcome) {
  LedgerRecord l;
  l.incarnation = 1;
  l.nominal = from;
  l.through = through;
  l.count = count;
  l.outcome = outcome;
  l.fire_at = from;
  return l;
}

struct PolicyHist : Hist {
  PolicyHist() {
    LeaderRecord l{"scheduler-1", 1, t0 + absl::Hours(2)};
    commit(absl::ZeroDuration(), kLeader, std::nullopt, std::make_pair(0u, l));
  }
  absl::Time at(absl::Duration d) const { return t0 + d; }
};

TEST(PolicyChecker, AClaimThatPassesOverAHigherPriorityReadyRunIsAViolation) {
  PolicyHist x;
  const RunRecord low = ready_run("low", x.at(absl::Seconds(1)), 1);
  const RunRecord high = ready_run("high", x.at(absl::Seconds(2)), 9);
  x.commit(absl::Seconds(1), kLeader, low);
  x.commit(absl::Seconds(2), kLeader, high);
  x.commit(absl::Seconds(3), kLeader, granted(low, 1, x.at(absl::Seconds(3))));
  EXPECT_TRUE(violated(x.history()).count("priority-order"));

  // Served in order (high first, then low): no violation.
  PolicyHist y;
  y.commit(absl::Seconds(1), kLeader, low);
  y.commit(absl::Seconds(2), kLeader, high);
  y.commit_ops(absl::Seconds(3), kLeader,
               {Hist::put(granted(high, 1, y.at(absl::Seconds(3)))),
                Hist::put(granted(low, 1, y.at(absl::Seconds(3))))});
  EXPECT_FALSE(violated(y.history()).count("priority-order"));
}

TEST(PolicyChecker, AStarvedRunIsServedBeforeAnyPriority) {
  PolicyHist x;
  const RunRecord old = ready_run("old", x.at(absl::Seconds(1)), 0);
  const RunRecord fresh = ready_run("fresh", x.at(absl::Seconds(100)), 9);
  x.commit(absl::Seconds(1), kLeader, old);
  x.commit(absl::Seconds(100), kLeader, fresh);
  // At 101 s `old` has waited 100 s > 60 s: taking `fresh` first is wrong.
  x.commit(absl::Seconds(101), kLeader, granted(fresh, 1, x.at(absl::Seconds(101))));
  EXPECT_TRUE(violated(x.history()).count("priority-order"));
}

TEST(PolicyChecker, AttemptsBeyondTheMaximumAreAViolation) {
  PolicyHist x;
  ClientJob j = client_job("j", x.t0);
  j.policy.max_attempts = 2;
  x.jobs.push_back(j);
  RunRecord r = ready_run("j", x.at(absl::Seconds(1)));
  x.commit(absl::Seconds(1), kLeader, r);
  for (std::uint32_t attempt = 1; attempt <= 3; ++attempt) {
    r.attempt = attempt;
    r.state = RunState::kReady;
    const absl::Duration t = absl::Seconds(10 * attempt);
    r = granted(r, attempt, x.at(t));
    x.commit(t, kLeader, r);
    r.attempts.back().end = AttemptEnd::kLapsed;  // the reaper re-queues it
  }
  EXPECT_TRUE(violated(x.history()).count("attempts-bounded"));
}

TEST(PolicyChecker, ARetryReadyOutsideItsBackoffBoundsIsAViolation) {
  // The documented delay after attempt 1 of the default policy: 10s less the
  // run's deterministic jitter cut, 10s x 20% x u / 2^32 (docs/POLICIES.md).
  const RunId id{"j", 1, PolicyHist().at(absl::Seconds(1))};
  const std::uint64_t u = stable_hash(idempotency_key(id), 1) >> 32;
  const absl::Duration exact = absl::Microseconds(
      10'000'000 - static_cast<std::int64_t>(static_cast<uint128_t>(2'000'000) * u >> 32));
  for (const auto& [delay, bad] : std::vector<std::pair<absl::Duration, bool>>{
           {exact, false},
           {absl::Seconds(1), true},
           {absl::Seconds(11), true},
           {exact + absl::Microseconds(1), true},  // inside [8s, 10s], not the documented point
           {exact - absl::Microseconds(1), true}}) {
    PolicyHist x;
    x.jobs.push_back(client_job("j", x.t0));  // default policy: [8s, 10s] after attempt 1
    RunRecord r = ready_run("j", x.at(absl::Seconds(1)));
    x.commit(absl::Seconds(1), kLeader, r);
    r = granted(r, 1, x.at(absl::Seconds(2)));
    x.commit(absl::Seconds(2), kLeader, r);
    r.state = RunState::kReady;
    r.attempts.back().end = AttemptEnd::kFailed;
    r.attempt = 2;
    r.ready_at = x.at(absl::Seconds(5)) + delay;
    x.commit(absl::Seconds(5), kLeader, r);
    EXPECT_EQ(violated(x.history()).count("retry-backoff"), bad ? 1u : 0u) << delay;
  }
}

TEST(PolicyChecker, UnfinishedRunsBeyondTheOverlapPolicyAreAViolation) {
  for (const OverlapPolicy overlap : {OverlapPolicy::kSkip, OverlapPolicy::kAllow}) {
    PolicyHist x;
    ClientJob j = client_job("j", x.t0);
    j.policy.overlap = overlap;
    j.policy.max_concurrent = 2;
    x.jobs.push_back(j);
    x.commit(absl::Seconds(1), kLeader, ready_run("j", x.at(absl::Seconds(1))));
    x.commit(absl::Seconds(2), kLeader, ready_run("j", x.at(absl::Seconds(2))));
    EXPECT_EQ(violated(x.history()).count("overlap-respected"),
              overlap == OverlapPolicy::kSkip ? 1u : 0u);
    x.commit(absl::Seconds(3), kLeader, ready_run("j", x.at(absl::Seconds(3))));
    EXPECT_TRUE(violated(x.history()).count("overlap-respected"));
  }
}

TEST(PolicyChecker, LedgerRecordsMustCoverEachOccurrenceExactlyOnce) {
  PolicyHist x;
  x.jobs.push_back(client_job("j", x.t0));
  const absl::Time m1 = x.at(absl::Minutes(1)), m2 = x.at(absl::Minutes(2)),
                   m3 = x.at(absl::Minutes(3));
  x.commit_ops(absl::Minutes(3), kLeader,
               {Hist::put("j", record(m1, m3, 3, LedgerOutcome::kCoalesced)),
                Hist::put("j", record(m2, m2, 1, LedgerOutcome::kFired))});
  x.expected.push_back({"j", 1, m1, m1});
  EXPECT_TRUE(violated(x.history()).count("ledger-one-outcome"));  // m2 twice

  PolicyHist y;
  y.jobs.push_back(client_job("j", y.t0));
  y.commit_ops(absl::Minutes(1), kLeader,
               {Hist::put("j", record(m1, m1, 1, LedgerOutcome::kFired))});
  y.expected.push_back({"j", 1, m1, m1});
  EXPECT_FALSE(violated(y.history()).count("ledger-one-outcome"));
  y.expected.push_back({"j", 1, m2, m2});  // never recorded
  EXPECT_TRUE(violated(y.history()).count("ledger-one-outcome"));
}

// A cancel closes the books: an occurrence of the cancelled incarnation
// whose fire time came by the commit that cancelled it has an outcome; one
// after it needs none, nor does one of a cancel that was never applied.
TEST(PolicyChecker, ACancelLeavesNoOccurrenceDueByItsCommitWithoutALedgerRecord) {
  // The job's record as created, and its cancel at `at` (rolled back by a
  // store crash when `lost`).
  auto job = [] {
    JobRecord j;
    j.spec.id = "j";
    j.spec.schedule.kind = ScheduleSpec::Kind::kInterval;
    j.spec.schedule.every = absl::Minutes(1);
    j.spec.schedule.start = absl::FromUnixSeconds(1767225600);
    j.incarnation = 1;
    return j;
  };
  auto created = [&](PolicyHist& x) {
    x.jobs.push_back(client_job("j", x.t0));
    x.commit_ops(absl::ZeroDuration(), kLeader,
                 {{WriteOp::Kind::kPut, keys::job("j"), encode(job())}});
  };
  auto cancelled_at = [&](PolicyHist& x, absl::Duration at, bool lost) {
    JobRecord j = job();
    j.state = JobState::kCancelled;
    j.generation += 1;
    x.commit_ops(at, kLeader, {{WriteOp::Kind::kPut, keys::job("j"), encode(j)}});
    if (lost) x.commits.back().state = StoreCommit::State::kLost;
  };
  const absl::Time m1 = absl::FromUnixSeconds(1767225600) + absl::Minutes(1);
  const absl::Time m2 = m1 + absl::Minutes(1), m3 = m2 + absl::Minutes(1);
  std::vector<Occurrence> due = {{"j", 1, m1, m1}, {"j", 1, m2, m2}, {"j", 1, m3, m3}};
  auto judged = [&](PolicyHist& x) {
    History h = x.history();
    h.cancelled_due = &due;
    return violated(h).count("ledger-one-outcome");
  };
  // Cancelled at m2 exactly: m1 fired, m2 closed by the cancel, m3 after it.
  PolicyHist ok;
  created(ok);
  ok.commit_ops(absl::Minutes(1), kLeader,
                {Hist::put("j", record(m1, m1, 1, LedgerOutcome::kFired))});
  cancelled_at(ok, absl::Minutes(2), false);
  ok.commit_ops(absl::Minutes(2), kLeader,
                {Hist::put("j", record(m2, m2, 1, LedgerOutcome::kCancelled))});
  EXPECT_EQ(judged(ok), 0u);

  // The cancel left m2, due at its commit, without an outcome.
  PolicyHist open;
  created(open);
  open.commit_ops(absl::Minutes(1), kLeader,
                  {Hist::put("j", record(m1, m1, 1, LedgerOutcome::kFired))});
  cancelled_at(open, absl::Minutes(2), false);
  EXPECT_EQ(judged(open), 1u);

  // A cancelling commit a store crash rolled back cancelled nothing.
  PolicyHist rolled_back;
  created(rolled_back);
  rolled_back.commit_ops(absl::Minutes(1), kLeader,
                         {Hist::put("j", record(m1, m1, 1, LedgerOutcome::kFired))});
  cancelled_at(rolled_back, absl::Minutes(2), true);
  EXPECT_EQ(judged(rolled_back), 0u);
}

TEST(PolicyChecker, MisfireOutcomesMustMatchTheThresholdAndThePolicy) {
  PolicyHist x;
  x.jobs.push_back(client_job("j", x.t0));  // run-once, threshold 60 s
  // Recorded as fired five minutes after its fire time.
  x.commit_ops(absl::Minutes(6), kLeader,
               {Hist::put("j", record(x.at(absl::Minutes(1)), x.at(absl::Minutes(1)), 1,
                                      LedgerOutcome::kFired))});
  EXPECT_TRUE(violated(x.history()).count("misfire-threshold"));

  PolicyHist y;
  y.jobs.push_back(client_job("j", y.t0));  // run-once never skips for a misfire
  y.commit_ops(absl::Minutes(6), kLeader,
               {Hist::put("j", record(y.at(absl::Minutes(1)), y.at(absl::Minutes(2)), 2,
                                      LedgerOutcome::kSkippedMisfire))});
  EXPECT_TRUE(violated(y.history()).count("misfire-threshold"));
}

TEST(PolicyChecker, CatchUpMayKeepOnlyItsBoundOfABacklog) {
  PolicyHist x;
  ClientJob j = client_job("j", x.t0);
  j.policy.misfire = MisfirePolicy::kCatchUp;
  j.policy.catch_up_max = 1;
  x.jobs.push_back(j);
  for (int m = 0; m < 4; ++m)
    x.expected.push_back({"j", 1, x.at(absl::Minutes(m)), x.at(absl::Minutes(m))});
  // At 5 m, the oldest runs late and three due occurrences stay undecided.
  x.commit_ops(absl::Minutes(5), kLeader,
               {Hist::put("j", record(x.t0, x.t0, 1, LedgerOutcome::kLate))});
  EXPECT_TRUE(violated(x.history()).count("catch-up-bounded"));

  // Two late runs one second apart break the spacing (10 s by default).
  PolicyHist y;
  ClientJob k = j;
  k.policy.catch_up_max = 10;
  y.jobs.push_back(k);
  y.commit_ops(absl::Minutes(5), kLeader,
               {Hist::put("j", record(y.t0, y.t0, 1, LedgerOutcome::kLate))});
  y.commit_ops(absl::Minutes(5) + absl::Seconds(1), kLeader,
               {Hist::put("j", record(y.at(absl::Minutes(1)), y.at(absl::Minutes(1)), 1,
                                      LedgerOutcome::kLate))});
  EXPECT_TRUE(violated(y.history()).count("catch-up-bounded"));
}

}  // namespace
}  // namespace kairos::sim
