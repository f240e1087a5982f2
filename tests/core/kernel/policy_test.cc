// Unit tests of each policy decision at the JobStore bodies: retries and
// backoff, lapse accounting, overlap, misfire, priority with the
// no-starvation rule, the ledger and its pruning, and the three planted bugs.
#include "tests/support/policy_fixture.h"

namespace kairos {
namespace {

using namespace test_support;  // the fixture and the job builders

// ---------------------------------------------------------------- retries

TEST(RetryMath, DefaultsDoubleFrom10sCappedAt5m) {
  const JobPolicy p;
  const std::int64_t want[] = {10, 20, 40, 80, 160, 300, 300};
  for (std::uint32_t k = 1; k <= 7; ++k)
    EXPECT_EQ(retry_base_delay(p, k), absl::Seconds(want[k - 1])) << k;
}

TEST(RetryMath, JitterIsDeterministicAndWithinBounds) {
  JobPolicy p;
  p.retry_multiplier_percent = 150;
  for (int i = 0; i < 200; ++i) {
    const RunId id{"job" + std::to_string(i), 1, T0() + absl::Seconds(i)};
    for (std::uint32_t k = 1; k <= 5; ++k) {
      const absl::Duration d = retry_delay(p, id, k);
      EXPECT_EQ(d, retry_delay(p, id, k));
      EXPECT_GE(d, retry_lower_bound(p, k));
      EXPECT_LE(d, retry_base_delay(p, k));
    }
  }
  p.retry_jitter_percent = 0;
  EXPECT_EQ(retry_delay(p, {"x", 1, T0()}, 2), absl::Seconds(15));
  // Huge multipliers saturate instead of overflowing.
  p.retry_multiplier_percent = 1000;
  p.retry_max = absl::Hours(24 * 365);
  EXPECT_EQ(retry_base_delay(p, 100), p.retry_max);
}

class RetryTest : public PolicyTest {};

TEST_F(RetryTest, FailureRetriesTheSameRunAfterBackoffWithAHigherToken) {
  create(once_job("a", T0()));
  ASSERT_EQ(dispatch().dispatched.size(), 1u);
  const RunId id{"a", 1, T0()};
  std::uint64_t last_token = 0;
  for (std::uint32_t attempt = 1; attempt <= 3; ++attempt) {
    auto g = claim();
    ASSERT_EQ(g.size(), 1u) << attempt;
    EXPECT_EQ(g[0].run.id, id);  // same idempotency key
    EXPECT_EQ(g[0].run.attempt, attempt);
    EXPECT_GT(g[0].run.token, last_token);
    last_token = g[0].run.token;
    auto c = complete(g[0].run, RunStatus::kFailed);
    EXPECT_EQ(c.verdicts[0].verdict, WriteVerdict::kAccepted);
    RunRecord r = run_of(id);
    if (attempt < 3) {
      EXPECT_EQ(r.state, RunState::kReady);
      EXPECT_EQ(count(c.events, "run.retry_scheduled"), 1u);
      const absl::Duration d = retry_delay(JobPolicy{}, id, attempt);
      EXPECT_EQ(r.ready_at, b.clock.now() + d);
      EXPECT_EQ(r.last_retry_delay, d);
      b.clock.advance(d - absl::Microseconds(1));
      EXPECT_TRUE(claim().empty()) << "claimable before its backoff elapsed";
      b.clock.advance(absl::Microseconds(1));
    } else {
      EXPECT_EQ(r.state, RunState::kFailed);  // stays visible
      EXPECT_EQ(r.attempts.size(), 3u);
      for (const auto& a : r.attempts) EXPECT_EQ(a.end, AttemptEnd::kFailed);
      EXPECT_EQ(count(c.events, "run.completed"), 1u);
    }
  }
  EXPECT_TRUE(claim().empty());
  // A duplicate of the last report (unknown outcome, retried) is accepted again.
  RunRecord r = run_of(id);
  EXPECT_EQ(complete(r, RunStatus::kFailed).verdicts[0].verdict, WriteVerdict::kAccepted);
}

TEST_F(RetryTest, DuplicateFailureReportAfterRetryScheduledIsAcceptedOnce) {
  create(once_job("a", T0()));
  dispatch();
  auto g = claim();
  complete(g[0].run, RunStatus::kFailed);
  auto again = complete(g[0].run, RunStatus::kFailed);
  EXPECT_EQ(again.verdicts[0].verdict, WriteVerdict::kAccepted);
  EXPECT_TRUE(again.events.empty());
  EXPECT_EQ(run_of(g[0].run.id).attempt, 2u);
}

TEST_F(RetryTest, PermanentFailureFailsAtOnce) {
  create(once_job("a", T0()));
  dispatch();
  auto g = claim();
  complete(g[0].run, RunStatus::kFailedPermanent);
  RunRecord r = run_of(g[0].run.id);
  EXPECT_EQ(r.state, RunState::kFailed);
  EXPECT_EQ(r.outcome, RunStatus::kFailedPermanent);
  EXPECT_EQ(r.attempt, 1u);
}

TEST_F(RetryTest, TimeoutCountsAsAFailure) {
  create(once_job("a", T0()));
  dispatch();
  auto g = claim();
  auto c = complete(g[0].run, RunStatus::kTimedOut);
  EXPECT_EQ(count(c.events, "run.retry_scheduled"), 1u);
  EXPECT_EQ(run_of(g[0].run.id).attempts[0].end, AttemptEnd::kTimedOut);
}

TEST_F(RetryTest, CrashedWorkersRunIsRetriedAfterOneLeasePeriodAndCountsAnAttempt) {
  JobSpec s = once_job("a", T0());
  s.policy.max_attempts = 2;
  create(s);
  dispatch();
  auto g = claim();  // 30s lease; the worker "crashes"
  b.clock.advance(absl::Seconds(29));
  EXPECT_TRUE(reap().requeued.empty());
  b.clock.advance(absl::Seconds(1));
  EXPECT_EQ(reap().requeued.size(), 1u);
  auto g2 = claim();  // no backoff after a lapse
  ASSERT_EQ(g2.size(), 1u);
  EXPECT_EQ(g2[0].run.attempt, 2u);
  b.clock.advance(absl::Seconds(30));
  ReapResult last = reap();
  EXPECT_TRUE(last.requeued.empty());
  RunRecord r = run_of(g[0].run.id);
  EXPECT_EQ(r.state, RunState::kFailed);
  EXPECT_NE(r.detail.find("lease lapsed on the last attempt"), std::string::npos);
  ASSERT_EQ(r.attempts.size(), 2u);
  EXPECT_EQ(r.attempts[0].end, AttemptEnd::kLapsed);
  EXPECT_EQ(r.attempts[0].worker, "w");
}

class RetryBugTest : public PolicyTest {
 protected:
  static PlantedBugs bug() {
    PlantedBugs b;
    set_planted_bug(b, "retry-without-backoff");
    return b;
  }
  RetryBugTest() : PolicyTest(bug()) {}
};

TEST_F(RetryBugTest, RetryWithoutBackoffRequeuesAtOnce) {
  create(once_job("a", T0()));
  dispatch();
  auto g = claim();
  complete(g[0].run, RunStatus::kFailed);
  EXPECT_EQ(run_of(g[0].run.id).ready_at, b.clock.now());
  EXPECT_EQ(claim().size(), 1u);
}

// ---------------------------------------------------------------- overlap

class OverlapTest : public PolicyTest {};

TEST_F(OverlapTest, SkipIsTheDefaultAndIsRecorded) {
  create(interval_job("a"));  // every minute from T0
  dispatch();
  auto g = claim();
  ASSERT_EQ(g.size(), 1u);
  b.clock.advance(absl::Minutes(1));
  EXPECT_TRUE(dispatch().dispatched.empty());
  auto l = ledger("a");
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0].outcome, LedgerOutcome::kFired);
  EXPECT_EQ(l[1].outcome, LedgerOutcome::kSkippedOverlap);
  EXPECT_EQ(l[1].nominal, T0() + absl::Minutes(1));
  // A pending retry also counts as unfinished.
  complete(g[0].run, RunStatus::kFailed);
  b.clock.advance(absl::Minutes(1));
  EXPECT_TRUE(dispatch().dispatched.empty());
  EXPECT_EQ(ledger("a").back().outcome, LedgerOutcome::kSkippedOverlap);
}

TEST_F(OverlapTest, QueueKeepsAtMostOneWaitingAndPromotesIt) {
  create(with_overlap(interval_job("a"), OverlapPolicy::kQueue));
  dispatch();
  auto g = claim();
  b.clock.advance(absl::Minutes(1));
  auto d = dispatch();
  ASSERT_EQ(d.dispatched.size(), 1u);
  EXPECT_EQ(d.dispatched[0].state, RunState::kWaiting);
  EXPECT_TRUE(claim().empty());  // waiting is not claimable
  b.clock.advance(absl::Minutes(1));
  EXPECT_TRUE(dispatch().dispatched.empty());
  EXPECT_EQ(ledger("a").back().outcome, LedgerOutcome::kSkippedOverlap);
  auto c = complete(g[0].run, RunStatus::kSucceeded);
  EXPECT_EQ(count(c.events, "run.promoted"), 1u);
  auto g2 = claim();
  ASSERT_EQ(g2.size(), 1u);
  EXPECT_EQ(g2[0].run.id.nominal, T0() + absl::Minutes(1));
}

TEST_F(OverlapTest, AllowIsBoundedByMaxConcurrent) {
  create(with_overlap(interval_job("a"), OverlapPolicy::kAllow, 2));
  dispatch();
  b.clock.advance(absl::Minutes(1));
  dispatch();
  b.clock.advance(absl::Minutes(1));
  EXPECT_TRUE(dispatch().dispatched.empty());
  EXPECT_EQ(claim().size(), 2u);
  EXPECT_EQ(ledger("a")[2].outcome, LedgerOutcome::kSkippedOverlap);
}

class OverlapBugTest : public PolicyTest {
 protected:
  static PlantedBugs bug() {
    PlantedBugs b;
    set_planted_bug(b, "overlap-ignored");
    return b;
  }
  OverlapBugTest() : PolicyTest(bug()) {}
};

TEST_F(OverlapBugTest, OverlapIgnoredStartsEveryOccurrence) {
  create(interval_job("a"));
  dispatch();
  claim();
  b.clock.advance(absl::Minutes(1));
  EXPECT_EQ(dispatch().dispatched.size(), 1u);
}

// ---------------------------------------------------------------- misfire

class MisfireTest : public PolicyTest {
 protected:
  // Interval job every minute from T0; the scheduler is "down" until T0+10m30s.
  void down_for_ten_minutes(MisfirePolicy p, std::uint32_t bound = 10) {
    JobSpec s = with_overlap(interval_job("a"), OverlapPolicy::kAllow, 100);
    s.policy.misfire = p;
    s.policy.catch_up_max = bound;
    s.policy.catch_up_spacing = absl::Seconds(5);
    create(s);
    b.clock.advance(absl::Minutes(10) + absl::Seconds(30));
  }
};

TEST_F(MisfireTest, LateButBelowThresholdFiresNormally) {
  create(interval_job("a"));
  b.clock.advance(absl::Seconds(59));
  auto d = dispatch();
  ASSERT_EQ(d.dispatched.size(), 1u);
  EXPECT_EQ(d.dispatched[0].lateness, absl::Seconds(59));
  EXPECT_EQ(ledger("a")[0].outcome, LedgerOutcome::kFired);
  EXPECT_EQ(count(d.events, "misfire.decided"), 0u);
}

TEST_F(MisfireTest, RunOnceOneRunStandsForTheWindow) {
  down_for_ten_minutes(MisfirePolicy::kRunOnce);
  auto d = dispatch();
  ASSERT_EQ(d.dispatched.size(), 1u);
  const RunRecord& r = d.dispatched[0];
  EXPECT_EQ(r.id.nominal, T0() + absl::Minutes(10));  // the latest due occurrence
  EXPECT_EQ(r.stands_for, 11u);
  EXPECT_EQ(r.lateness, absl::Seconds(30));
  auto l = ledger("a");
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0].outcome, LedgerOutcome::kCoalesced);
  EXPECT_EQ(l[0].count, 10u);
  EXPECT_EQ(l[0].through, T0() + absl::Minutes(9));
  EXPECT_EQ(l[0].run_nominal, r.id.nominal);
  EXPECT_EQ(l[1].outcome, LedgerOutcome::kFired);  // its own occurrence was on time
  EXPECT_EQ(*job("a").next_due_at, T0() + absl::Minutes(11));
}

TEST_F(MisfireTest, SkipJumpsToTheNextOccurrence) {
  down_for_ten_minutes(MisfirePolicy::kSkip);
  auto d = dispatch();
  // T0..T0+9m are misfired (> 60s late) and skipped; T0+10m is 30s late: fires.
  ASSERT_EQ(d.dispatched.size(), 1u);
  EXPECT_EQ(d.dispatched[0].id.nominal, T0() + absl::Minutes(10));
  auto l = ledger("a");
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0].outcome, LedgerOutcome::kSkippedMisfire);
  EXPECT_EQ(l[0].count, 10u);
  EXPECT_GT(l[0].lateness, absl::Seconds(60));
}

TEST_F(MisfireTest, CatchUpIsBoundedAndRateLimited) {
  down_for_ten_minutes(MisfirePolicy::kCatchUp, 3);
  auto d = dispatch();
  ASSERT_EQ(d.dispatched.size(), 1u);  // one per spacing
  auto l = ledger("a");
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0].outcome, LedgerOutcome::kSkippedMisfire);
  EXPECT_EQ(l[0].count, 8u);  // 11 due, bound 3
  EXPECT_EQ(l[1].outcome, LedgerOutcome::kLate);
  EXPECT_EQ(l[1].nominal, T0() + absl::Minutes(8));
  EXPECT_EQ(*job("a").next_due_at, b.clock.now() + absl::Seconds(5));
  b.clock.advance(absl::Seconds(4));
  EXPECT_TRUE(dispatch().dispatched.empty());
  b.clock.advance(absl::Seconds(1));
  auto d2 = dispatch();
  ASSERT_EQ(d2.dispatched.size(), 1u);
  EXPECT_EQ(d2.dispatched[0].id.nominal, T0() + absl::Minutes(9));
  b.clock.advance(absl::Seconds(5));
  auto d3 = dispatch();
  ASSERT_EQ(d3.dispatched.size(), 1u);
  EXPECT_EQ(d3.dispatched[0].id.nominal, T0() + absl::Minutes(10));
  EXPECT_EQ(ledger("a").back().outcome, LedgerOutcome::kFired);  // 40s late: on time
  EXPECT_EQ(*job("a").next_due_at, T0() + absl::Minutes(11));
}

class CatchUpBugTest : public MisfireTest {
 protected:
  CatchUpBugTest() {
    PlantedBugs bugs;
    set_planted_bug(bugs, "unbounded-catch-up");
    store = JobStore(1, bugs);
  }
};

TEST_F(CatchUpBugTest, UnboundedCatchUpFiresEverythingAtOnce) {
  down_for_ten_minutes(MisfirePolicy::kCatchUp, 3);
  EXPECT_EQ(dispatch().dispatched.size(), 11u);
}

TEST_F(MisfireTest, HugeBacklogIsChunkedIntoRangeRecords) {
  JobSpec s = interval_job("a", absl::Seconds(1));
  create(s);
  b.clock.advance(absl::Hours(2));  // 7201 occurrences due
  auto d = dispatch();
  ASSERT_EQ(d.dispatched.size(), 1u);
  EXPECT_EQ(d.dispatched[0].stands_for, 7201u);
  std::uint64_t covered = 0;
  for (const auto& l : ledger("a")) covered += l.count;
  EXPECT_EQ(covered, 7201u);
  EXPECT_LE(ledger("a").size(), 6u);
}

TEST_F(MisfireTest, NewOneOffInThePastIsJudgedFromCreation) {
  JobSpec s = once_job("a", T0() - absl::Hours(5));
  s.policy.misfire = MisfirePolicy::kSkip;
  create(s);
  EXPECT_EQ(dispatch().dispatched.size(), 1u);
}

// ---------------------------------------------------------------- priority

class PriorityTest : public PolicyTest {};

TEST_F(PriorityTest, HigherFirstButNeverStarvedPastTheBound) {
  b.clock.advance(absl::Minutes(10));
  JobSpec low = once_job("low", b.clock.now() - absl::Seconds(61));
  low.policy.priority = 0;
  JobSpec high1 = once_job("high1", b.clock.now() - absl::Seconds(10));
  high1.policy.priority = 9;
  JobSpec high2 = once_job("high2", b.clock.now() - absl::Seconds(5));
  high2.policy.priority = 9;
  JobSpec mid = once_job("mid", b.clock.now() - absl::Seconds(30));
  mid.policy.priority = 5;
  // Created earlier so their fire times are their own (not their creation).
  b.clock.advance(absl::Minutes(-5));
  for (const auto& s : {low, high1, high2, mid}) create(s);
  b.clock.advance(absl::Minutes(5));
  EXPECT_EQ(dispatch().dispatched.size(), 4u);
  // low has waited 61s > 60s: served first; then by priority, FIFO in a band.
  std::vector<std::string> order;
  for (int i = 0; i < 4; ++i)
    for (const auto& g : claim(1)) order.push_back(g.run.id.job_id);
  EXPECT_EQ(order, (std::vector<std::string>{"low", "high1", "high2", "mid"}));
}

// ---------------------------------------------------------------- ledger

class RetentionTest : public PolicyTest {
 protected:
  static PolicyOptions opts() {
    PolicyOptions o;
    o.ledger_keep = 5;
    o.prune_budget = 2;
    return o;
  }
  RetentionTest() : PolicyTest({}, opts()) {}
};

TEST_F(RetentionTest, PrunesIncrementallyToTheCountAndNeverPastAnOpenRun) {
  create(interval_job("a"));
  for (int i = 0; i < 12; ++i) {
    dispatch();
    for (const auto& g : claim()) complete(g.run, RunStatus::kSucceeded);
    b.clock.advance(absl::Minutes(1));
  }
  EXPECT_LE(ledger("a").size(), 6u);  // keep 5; pruning trails by at most one
  EXPECT_EQ(job("a").ledger_count, ledger("a").size());
  EXPECT_EQ(runs("a").size(), ledger("a").size());  // runs pruned with their records
  // An open run stops pruning.
  dispatch();
  auto g = claim();
  for (int i = 0; i < 8; ++i) {
    b.clock.advance(absl::Minutes(1));
    dispatch();  // skipped by overlap, recorded
  }
  const auto l = ledger("a");
  bool has_open = false;
  for (const auto& r : l) has_open |= r.run_nominal == g[0].run.id.nominal;
  EXPECT_TRUE(has_open);
}

TEST_F(RetentionTest, ACancelledJobsLedgerAndRunsAreSweptOnceOld) {
  create(interval_job("a"));
  for (int i = 0; i < 4; ++i) {
    dispatch();
    for (const auto& g : claim()) complete(g.run, RunStatus::kSucceeded);
    b.clock.advance(absl::Minutes(1));
  }
  ASSERT_EQ(ledger("a").size(), 4u);
  auto [r, out] =
      body<CancelResult>([&](Txn& t, CancelResult* o) { return store.cancel(t, "a", o); });
  ASSERT_TRUE(r.committed()) << r.status;
  ASSERT_EQ(ledger("a").size(), 5u);  // + T0+4m, due at the cancel: "cancelled before dispatch"
  reap();
  EXPECT_EQ(ledger("a").size(), 5u);  // kept while younger than ledger_max_age
  b.clock.advance(PolicyOptions{}.ledger_max_age + absl::Minutes(1));
  reap();  // prune_budget 2 per pass
  EXPECT_EQ(ledger("a").size(), 3u);
  reap();
  reap();
  EXPECT_TRUE(ledger("a").empty());
  EXPECT_TRUE(runs("a").empty());                   // each record's run went with it
  EXPECT_EQ(job("a").state, JobState::kCancelled);  // the job itself stays visible
  EXPECT_EQ(job("a").ledger_count, 0u);
  const auto& m = b.storage.contents();
  auto x = m.lower_bound(std::string(1, keys::kSweep));
  EXPECT_TRUE(x == m.end() ||
              static_cast<std::uint8_t>(x->first[0]) != keys::kSweep);  // entry dropped
}

// A cancelled job's ledger record that does not decode stops the sweep of
// that job only: the reaper's pass commits (it used to fail with DATA_LOSS at
// every pass, so no lapsed lease of the shard was taken back either), the
// record is reported, the job's sweep entry stays, and the other cancelled
// job's ledger is swept as before.
TEST_F(RetentionTest, ALedgerRecordThatDoesNotDecodeStopsOnlyItsJobsSweep) {
  for (const char* id : {"a", "c"}) create(interval_job(id));
  for (int i = 0; i < 4; ++i) {
    dispatch();
    for (const auto& g : claim(2)) complete(g.run, RunStatus::kSucceeded);
    b.clock.advance(absl::Minutes(1));
  }
  for (const char* id : {"a", "c"}) {
    auto [r, out] =
        body<CancelResult>([&](Txn& t, CancelResult* o) { return store.cancel(t, id, o); });
    ASSERT_TRUE(r.committed()) << r.status;
  }
  const std::string bad = keys::ledger("a", T0(), 1);  // a's oldest: the sweep's first
  ASSERT_TRUE(b.run([&](Txn& t) {
                 auto v = t.get(bad);
                 if (!v || v->empty()) return absl::NotFoundError("no ledger record");
                 (*v)[0] = static_cast<char>((*v)[0] ^ 0x7f);
                 t.put(bad, *v);
                 return absl::OkStatus();
               }).committed());
  b.clock.advance(PolicyOptions{}.ledger_max_age + absl::Minutes(1));
  ReapResult first = reap();  // commits (reap() checks it)
  ASSERT_EQ(first.undecodable.size(), 1u);
  EXPECT_EQ(first.undecodable[0].job_id, "a");
  EXPECT_EQ(first.undecodable[0].key, bad);
  for (int i = 0; i < 3; ++i) reap();
  EXPECT_TRUE(ledger("c").empty());
  EXPECT_EQ(job("c").ledger_count, 0u);
  EXPECT_EQ(b.storage.contents().count(bad), 1u);  // left as it was
  std::size_t sweep_entries = 0;
  for (const auto& [k, v] : b.storage.contents())
    sweep_entries += static_cast<std::uint8_t>(k[0]) == keys::kSweep;
  EXPECT_EQ(sweep_entries, 1u);  // a's, passed over
}

TEST_F(PolicyTest, LedgerQueryByTimeRange) {
  JobSpec s = with_overlap(interval_job("a"), OverlapPolicy::kAllow, 100);
  create(s);
  for (int i = 0; i < 5; ++i) {
    dispatch();
    b.clock.advance(absl::Minutes(1));
  }
  LedgerQuery q;
  q.job_id = "a";
  q.from = T0() + absl::Minutes(1);
  q.to = T0() + absl::Minutes(3);
  auto [r, out] =
      body<LedgerResult>([&](Txn& t, LedgerResult* o) { return store.ledger(t, q, o); });
  ASSERT_TRUE(r.committed());
  ASSERT_EQ(out.records.size(), 2u);
  EXPECT_EQ(out.records[0].nominal, T0() + absl::Minutes(1));
  EXPECT_EQ(out.records[1].nominal, T0() + absl::Minutes(2));
}

TEST_F(PolicyTest, LedgerQueryFindsARangeRecordStartingBeforeFrom) {
  create(interval_job("a"));  // every minute from T0, run-once
  b.clock.advance(absl::Minutes(10) + absl::Seconds(30));
  dispatch();  // coalesced T0..T0+9m, fired T0+10m
  LedgerQuery q;
  q.job_id = "a";
  q.from = T0() + absl::Minutes(4);  // "why didn't T0+4m run?"
  q.to = T0() + absl::Minutes(5);
  auto [r, out] =
      body<LedgerResult>([&](Txn& t, LedgerResult* o) { return store.ledger(t, q, o); });
  ASSERT_TRUE(r.committed());
  ASSERT_EQ(out.records.size(), 1u);
  EXPECT_EQ(out.records[0].outcome, LedgerOutcome::kCoalesced);
  EXPECT_EQ(out.records[0].nominal, T0());
  EXPECT_EQ(out.records[0].through, T0() + absl::Minutes(9));
  EXPECT_EQ(out.records[0].run_nominal, T0() + absl::Minutes(10));
  // A range that ends before `from` is not included; the limit still holds.
  q.from = T0() + absl::Minutes(9) + absl::Seconds(1);
  q.to = absl::InfiniteFuture();
  q.limit = 1;
  auto [r2, out2] =
      body<LedgerResult>([&](Txn& t, LedgerResult* o) { return store.ledger(t, q, o); });
  ASSERT_TRUE(r2.committed());
  ASSERT_EQ(out2.records.size(), 1u);
  EXPECT_EQ(out2.records[0].nominal, T0() + absl::Minutes(10));
  EXPECT_FALSE(out2.more);
}

TEST_F(PolicyTest, LedgerQueryRefusesAWindowEndingBeforeItStarts) {
  create(interval_job("a"));  // every minute from T0, run-once
  b.clock.advance(absl::Minutes(10) + absl::Seconds(30));
  dispatch();  // coalesced T0..T0+9m: a range that contains the inverted window
  LedgerQuery q;
  q.job_id = "a";
  q.from = T0() + absl::Minutes(5);
  q.to = T0() + absl::Minutes(4);
  auto [r, out] =
      body<LedgerResult>([&](Txn& t, LedgerResult* o) { return store.ledger(t, q, o); });
  EXPECT_EQ(r.status.code(), absl::StatusCode::kInvalidArgument) << r.status;
  EXPECT_NE(r.status.message().find("to: must not be before from"), std::string_view::npos)
      << r.status;
  q.to = q.from;  // an empty window is a question, answered by the range that holds it
  auto [r2, out2] =
      body<LedgerResult>([&](Txn& t, LedgerResult* o) { return store.ledger(t, q, o); });
  ASSERT_TRUE(r2.committed()) << r2.status;
  ASSERT_EQ(out2.records.size(), 1u);
  EXPECT_EQ(out2.records[0].outcome, LedgerOutcome::kCoalesced);
}

TEST(PlantedBugs, NewNamesRoundTrip) {
  for (const char* n : {"unbounded-catch-up", "overlap-ignored", "retry-without-backoff"}) {
    PlantedBugs b;
    EXPECT_TRUE(set_planted_bug(b, n)) << n;
    EXPECT_TRUE(b.any());
  }
}

}  // namespace
}  // namespace kairos
