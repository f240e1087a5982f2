#include "core/kernel/job_store.h"

#include <gtest/gtest.h>

#include "core/kernel/keyspace.h"
#include "tests/support/job_store_fixture.h"
#include "tests/support/kernel_test_util.h"

namespace kairos {
namespace {

using test_support::interval_job;
using test_support::once_job;
using test_support::StoreBench;
using test_support::T0;

class JobStoreTest : public ::testing::Test {
 protected:
  JobRecord create(const JobSpec& spec) { return b.create(spec); }
  LeaderToken lead(std::uint32_t shard, const std::string& node = "n1") {
    LeadershipResult out;
    auto r = b.run(
        [&](Txn& t) { return store.acquire_or_renew(t, shard, node, 0, absl::Seconds(10), &out); });
    EXPECT_TRUE(r.committed());
    return {node, out.record.epoch};
  }
  DispatchResult dispatch(std::uint32_t shard, const LeaderToken& l, TxnResult* res = nullptr) {
    DispatchResult out;
    auto r = b.run([&](Txn& t) { return store.dispatch(t, shard, l, 100, &out); });
    if (res)
      *res = r;
    else
      EXPECT_TRUE(r.committed()) << r.status;
    return out;
  }
  ClaimResult claim(const std::string& worker, std::uint32_t n = 10) {
    ClaimResult out;
    ClaimArgs a{worker, n, absl::Seconds(30), 0};
    auto r = b.run([&](Txn& t) { return store.claim(t, a, &out); });
    EXPECT_TRUE(r.committed()) << r.status;
    return out;
  }
  CompleteResult complete(const RunId& id, std::uint64_t token,
                          RunStatus s = RunStatus::kSucceeded) {
    CompleteResult out;
    std::vector<CompleteItem> items{{id, token, s, 0, ""}};
    auto r = b.run([&](Txn& t) { return store.complete(t, "w", items, &out); });
    EXPECT_TRUE(r.committed()) << r.status;
    return out;
  }
  RenewResult renew(const RunId& id, std::uint64_t token) {
    RenewResult out;
    std::vector<RenewItem> items{{id, token}};
    auto r = b.run([&](Txn& t) { return store.renew(t, "w", items, absl::Seconds(30), &out); });
    EXPECT_TRUE(r.committed()) << r.status;
    return out;
  }
  std::optional<RunRecord> run_of(const RunId& id) {
    std::optional<RunRecord> out;
    b.run([&](Txn& t) { return store.get_run(t, id, &out); });
    return out;
  }
  std::size_t count_prefix(std::uint8_t tag) { return b.count_keys(tag); }

  StoreBench b{4};
  JobStore& store = b.store;
};

TEST_F(JobStoreTest, CreateIsIdempotentAndRejectsADifferentSpec) {
  JobRecord j = create(interval_job("a"));
  EXPECT_EQ(j.incarnation, 1u);
  ASSERT_TRUE(j.next_due_at.has_value());
  EXPECT_EQ(*j.next_due_at, T0());  // interval fires at its start
  CreateResult again;
  ASSERT_TRUE(
      b.run([&](Txn& t) { return store.create(t, interval_job("a"), &again); }).committed());
  EXPECT_FALSE(again.created);
  EXPECT_EQ(again.job, j);
  CreateResult other;
  auto r =
      b.run([&](Txn& t) { return store.create(t, interval_job("a", absl::Minutes(2)), &other); });
  EXPECT_EQ(r.outcome, CommitOutcome::kAborted);
  EXPECT_EQ(r.status.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(r.status.message().find("job 'a'"), std::string::npos);
  EXPECT_EQ(count_prefix(keys::kDue), 1u);
}

TEST_F(JobStoreTest, ValidationNamesTheField) {
  JobSpec s = interval_job("bad id!");
  EXPECT_NE(validate_job_spec(s).message().find("id:"), std::string::npos);
  s = interval_job("x");
  s.policy.priority = 12;
  EXPECT_NE(validate_job_spec(s).message().find("policy.priority"), std::string::npos);
  s = interval_job("x");
  s.policy.timeout = absl::ZeroDuration();
  EXPECT_NE(validate_job_spec(s).message().find("policy.timeout"), std::string::npos);
  s = interval_job("x");
  s.payload = CommandPayload{};
  EXPECT_NE(validate_job_spec(s).message().find("payload.command.argv"), std::string::npos);
  s = interval_job("x", absl::ZeroDuration());
  EXPECT_NE(validate_job_spec(s).message().find("schedule"), std::string::npos);
  EXPECT_TRUE(validate_job_spec(interval_job("ok-id_1.2:3/4")).ok());
}

TEST_F(JobStoreTest, ListPagesByKey) {
  for (const char* id : {"c", "a", "e", "b", "d"}) create(interval_job(id));
  std::vector<std::string> seen;
  std::string token;
  do {
    ListResult out;
    ASSERT_TRUE(b.run([&](Txn& t) { return store.list(t, token, 2, &out); }).committed());
    for (const auto& j : out.jobs) seen.push_back(j.spec.id);
    token = out.next_page_token;
  } while (!token.empty());
  EXPECT_EQ(seen, (std::vector<std::string>{"a", "b", "c", "d", "e"}));
}

TEST_F(JobStoreTest, DispatchCreatesRunAndAdvancesTheDueEntryAtomically) {
  // A 10-minute misfire threshold keeps the 3-minute lag below a
  // misfire, so each occurrence fires on its own (tests/policy covers misfires
  // and overlap).
  JobSpec spec = interval_job("a");
  spec.policy.misfire_threshold = absl::Minutes(10);
  spec.policy.overlap = OverlapPolicy::kAllow;  // the first run never finishes here
  spec.policy.max_concurrent = 10;
  create(spec);
  const std::uint32_t s = store.shard_of("a");
  const LeaderToken l = lead(s);
  b.clock.advance(absl::Seconds(5));  // T0 + 5s: the T0 occurrence is due
  DispatchResult d = dispatch(s, l);
  ASSERT_EQ(d.dispatched.size(), 1u);
  EXPECT_EQ(d.dispatched[0].id, (RunId{"a", 1, T0()}));
  ASSERT_EQ(d.events.size(), 2u);  // the run and its occurrence's ledger record
  EXPECT_EQ(d.events[0].kind, "run.dispatched");
  EXPECT_EQ(d.events[1].kind, "ledger.recorded");
  // The due entry moved to the next occurrence.
  std::optional<JobRecord> job;
  b.run([&](Txn& t) { return store.get(t, "a", &job); });
  EXPECT_EQ(*job->next_due_at, T0() + absl::Minutes(1));
  EXPECT_EQ(count_prefix(keys::kDue), 1u);
  EXPECT_EQ(count_prefix(keys::kReady), 1u);
  // Nothing else is due: a second dispatch is a no-op.
  EXPECT_TRUE(dispatch(s, l).dispatched.empty());
  // Catch-up: three minutes later three more occurrences, one per pass.
  b.clock.advance(absl::Minutes(3));
  const LeaderToken l2 = lead(s);  // the 10s leader lease lapsed meanwhile
  EXPECT_EQ(l2.epoch, l.epoch + 1);
  std::size_t n = 0;
  for (int i = 0; i < 5; ++i) n += dispatch(s, l2).dispatched.size();
  EXPECT_EQ(n, 3u);
}

TEST_F(JobStoreTest, OneOffFiresOnceThenHasNoDueEntry) {
  create(once_job("o", T0() + absl::Seconds(5)));
  const std::uint32_t s = store.shard_of("o");
  const LeaderToken l = lead(s);
  EXPECT_TRUE(dispatch(s, l).dispatched.empty());  // not yet due
  b.clock.advance(absl::Seconds(5));
  EXPECT_EQ(dispatch(s, l).dispatched.size(), 1u);
  EXPECT_EQ(count_prefix(keys::kDue), 0u);
}

TEST_F(JobStoreTest, DispatchIsIdempotentOnTheRunKey) {
  create(interval_job("a"));
  const std::uint32_t s = store.shard_of("a");
  const LeaderToken l = lead(s);
  b.clock.advance(absl::Seconds(1));
  ASSERT_EQ(dispatch(s, l).dispatched.size(), 1u);
  const RunRecord first = *run_of({"a", 1, T0()});
  // A retried creation of the same occurrence (what the second half of a
  // dispatch does after an unknown outcome) creates nothing.
  DispatchResult again;
  ASSERT_TRUE(
      b.run([&](Txn& t) { return store.create_runs(t, s, l, {first}, true, &again); }).committed());
  EXPECT_TRUE(again.dispatched.empty());
  EXPECT_EQ(count_prefix(keys::kRun), 1u);
  EXPECT_EQ(count_prefix(keys::kReady), 1u);
}

TEST_F(JobStoreTest, NonLeaderAndStaleEpochAreRejected) {
  create(interval_job("a"));
  const std::uint32_t s = store.shard_of("a");
  b.clock.advance(absl::Seconds(1));
  TxnResult r;
  dispatch(s, LeaderToken{"n1", 1}, &r);
  EXPECT_EQ(r.outcome, CommitOutcome::kAborted);
  EXPECT_EQ(r.status.code(), absl::StatusCode::kFailedPrecondition);
  const LeaderToken old = lead(s, "n1");
  b.clock.advance(absl::Seconds(11));  // n1's leader lease lapses (ttl 10s)
  const LeaderToken fresh = lead(s, "n2");
  EXPECT_EQ(fresh.epoch, old.epoch + 1);
  dispatch(s, old, &r);  // the stalled ex-leader wakes up
  EXPECT_EQ(r.outcome, CommitOutcome::kAborted);
  EXPECT_NE(r.status.message().find("stale epoch 1"), std::string::npos) << r.status;
  EXPECT_EQ(count_prefix(keys::kRun), 0u);
  EXPECT_EQ(dispatch(s, fresh).dispatched.size(), 1u);
}

TEST_F(JobStoreTest, LeaderElection) {
  LeadershipResult out;
  auto acquire = [&](const std::string& node, std::uint64_t known) {
    EXPECT_TRUE(b.run([&](Txn& t) {
                   return store.acquire_or_renew(t, 0, node, known, absl::Seconds(10), &out);
                 }).committed());
    return out.kind;
  };
  EXPECT_EQ(acquire("n1", 0), LeadershipResult::Kind::kAcquired);
  EXPECT_EQ(out.record.epoch, 1u);
  EXPECT_EQ(acquire("n2", 0), LeadershipResult::Kind::kHeldByOther);
  b.clock.advance(absl::Seconds(5));
  EXPECT_EQ(acquire("n1", 1), LeadershipResult::Kind::kRenewed);
  EXPECT_EQ(out.record.expiry, b.clock.now() + absl::Seconds(10));
  b.clock.advance(absl::Seconds(9));
  EXPECT_EQ(acquire("n2", 0), LeadershipResult::Kind::kHeldByOther);  // renewed: still held
  b.clock.advance(absl::Seconds(2));
  EXPECT_EQ(acquire("n2", 0), LeadershipResult::Kind::kAcquired);
  EXPECT_EQ(out.record.epoch, 2u);
  EXPECT_EQ(acquire("n1", 1), LeadershipResult::Kind::kHeldByOther);  // the old leader lost it
  // A restarted n2 that forgot its epoch takes over with a new one.
  EXPECT_EQ(acquire("n2", 0), LeadershipResult::Kind::kAcquired);
  EXPECT_EQ(out.record.epoch, 3u);
}

TEST_F(JobStoreTest, ClaimRenewCompleteWithFencing) {
  create(interval_job("a"));
  const std::uint32_t s = store.shard_of("a");
  const LeaderToken l = lead(s);
  b.clock.advance(absl::Seconds(1));
  dispatch(s, l);
  ClaimResult c = claim("w1");
  ASSERT_EQ(c.grants.size(), 1u);
  const RunRecord& g = c.grants[0].run;
  EXPECT_EQ(g.state, RunState::kLeased);
  EXPECT_EQ(g.token, 1u);
  EXPECT_EQ(g.lease_expiry, b.clock.now() + absl::Seconds(30));
  EXPECT_TRUE(claim("w2").grants.empty());  // one holder only
  EXPECT_EQ(count_prefix(keys::kExpiry), 1u);

  EXPECT_EQ(renew(g.id, 1).verdicts[0].verdict, WriteVerdict::kAccepted);
  RenewResult stale = renew(g.id, 7);
  EXPECT_EQ(stale.verdicts[0].verdict, WriteVerdict::kStaleToken);
  ASSERT_EQ(stale.events.size(), 1u);
  EXPECT_EQ(stale.events[0].kind, "write.rejected_stale_token");

  CompleteResult bad = complete(g.id, 0);
  EXPECT_EQ(bad.verdicts[0].verdict, WriteVerdict::kStaleToken);
  CompleteResult ok = complete(g.id, 1);
  EXPECT_EQ(ok.verdicts[0].verdict, WriteVerdict::kAccepted);
  EXPECT_EQ(run_of(g.id)->state, RunState::kSucceeded);
  // A retry of the same completion (after an unknown outcome) is accepted again.
  CompleteResult retry = complete(g.id, 1);
  EXPECT_EQ(retry.verdicts[0].verdict, WriteVerdict::kAccepted);
  EXPECT_TRUE(retry.events.empty());
  // ...but a different outcome with the same token is not.
  EXPECT_EQ(complete(g.id, 1, RunStatus::kFailed).verdicts[0].verdict, WriteVerdict::kNotLeased);
  EXPECT_EQ(count_prefix(keys::kExpiry), 0u);
  EXPECT_EQ(count_prefix(keys::kOpen), 0u);
  EXPECT_EQ(renew(g.id, 1).verdicts[0].verdict, WriteVerdict::kNotLeased);
}

TEST_F(JobStoreTest, LapsedLeaseIsRequeuedWithAHigherToken) {
  create(interval_job("a"));
  const std::uint32_t s = store.shard_of("a");
  LeaderToken l = lead(s);
  b.clock.advance(absl::Seconds(1));
  dispatch(s, l);
  const RunRecord g = claim("w1").grants.at(0).run;
  b.clock.advance(absl::Seconds(31));  // the worker stalls past its lease
  EXPECT_EQ(renew(g.id, g.token).verdicts[0].verdict, WriteVerdict::kLeaseLapsed);
  l = lead(s);  // renew leadership (the old lease expired too)
  ReapResult reaped;
  ASSERT_TRUE(b.run([&](Txn& t) { return store.reap(t, s, l, 100, &reaped); }).committed());
  ASSERT_EQ(reaped.requeued.size(), 1u);
  EXPECT_EQ(reaped.events.at(0).kind, "run.lease_lapsed");
  const RunRecord g2 = claim("w2").grants.at(0).run;
  EXPECT_EQ(g2.id, g.id);
  EXPECT_GT(g2.token, g.token);
  EXPECT_EQ(g2.attempt, 2u);
  // The stalled worker's completion is fenced off.
  EXPECT_EQ(complete(g.id, g.token).verdicts[0].verdict, WriteVerdict::kStaleToken);
  EXPECT_EQ(complete(g2.id, g2.token).verdicts[0].verdict, WriteVerdict::kAccepted);
}

TEST_F(JobStoreTest, StoppedOutcomeReleasesTheRun) {
  create(interval_job("a"));
  const std::uint32_t s = store.shard_of("a");
  dispatch(s, lead(s));
  const RunRecord g = claim("w1").grants.at(0).run;
  EXPECT_EQ(complete(g.id, g.token, RunStatus::kStopped).verdicts[0].verdict,
            WriteVerdict::kAccepted);
  EXPECT_EQ(run_of(g.id)->state, RunState::kReady);
  EXPECT_EQ(complete(g.id, g.token, RunStatus::kStopped).verdicts[0].verdict,
            WriteVerdict::kAccepted);
  const RunRecord g2 = claim("w2").grants.at(0).run;
  EXPECT_GT(g2.token, g.token);
}

// A release on the run's last attempt fails it (a release counts as an
// attempt); a worker that lost the answer and sends the release again must
// hear it was applied ("already released"), not "not leased": the run still
// stands as that release left it. Found by the simulator's
// report-verdicts-truthful once it judged releases (drain-hands-back).
TEST_F(JobStoreTest, ARetriedReleaseThatFailedTheRunIsAcceptedAgain) {
  JobSpec spec = interval_job("a");
  spec.policy.max_attempts = 1;
  create(spec);
  const std::uint32_t s = store.shard_of("a");
  dispatch(s, lead(s));
  const RunRecord g = claim("w1").grants.at(0).run;
  EXPECT_EQ(complete(g.id, g.token, RunStatus::kStopped).verdicts[0].verdict,
            WriteVerdict::kAccepted);
  EXPECT_EQ(run_of(g.id)->state, RunState::kFailed);
  const CompleteResult again = complete(g.id, g.token, RunStatus::kStopped);
  EXPECT_EQ(again.verdicts[0].verdict, WriteVerdict::kAccepted);
  EXPECT_EQ(again.verdicts[0].reason, "already released");
  EXPECT_EQ(run_of(g.id)->state, RunState::kFailed);
  // Another outcome under the same token is still refused.
  EXPECT_NE(complete(g.id, g.token, RunStatus::kSucceeded).verdicts[0].verdict,
            WriteVerdict::kAccepted);
}

TEST_F(JobStoreTest, TokensKeepIncreasingAcrossIncarnations) {
  create(once_job("a", T0()));
  const std::uint32_t s = store.shard_of("a");
  const LeaderToken l = lead(s);
  dispatch(s, l);
  const std::uint64_t t1 = claim("w").grants.at(0).run.token;
  CancelResult cr;
  ASSERT_TRUE(b.run([&](Txn& t) { return store.cancel(t, "a", &cr); }).committed());
  JobRecord j2 = create(once_job("a", T0()));
  EXPECT_EQ(j2.incarnation, 2u);
  dispatch(s, l);
  const RunRecord g = claim("w").grants.at(0).run;
  EXPECT_EQ(g.id.incarnation, 2u);
  EXPECT_GT(g.token, t1);
}

TEST_F(JobStoreTest, CancelWithdrawsReadyRunsAndStopsFutureOnes) {
  create(interval_job("a"));
  create(interval_job("b"));
  const LeaderToken la = lead(store.shard_of("a"));
  const LeaderToken lb =
      store.shard_of("b") == store.shard_of("a") ? la : lead(store.shard_of("b"));
  dispatch(store.shard_of("a"), la);
  if (store.shard_of("b") != store.shard_of("a")) dispatch(store.shard_of("b"), lb);
  // b's run is claimed (running); a's run is still ready.
  ClaimResult c;
  ClaimArgs args{"w", 1, absl::Seconds(30), store.shard_of("b")};
  CancelResult ca;
  ASSERT_TRUE(b.run([&](Txn& t) { return store.cancel(t, "a", &ca); }).committed());
  EXPECT_TRUE(ca.was_active);
  EXPECT_EQ(ca.cancelled_runs, 1u);
  ASSERT_TRUE(b.run([&](Txn& t) { return store.claim(t, args, &c); }).committed());
  ASSERT_EQ(c.grants.size(), 1u);
  EXPECT_EQ(c.grants[0].run.id.job_id, "b");
  CancelResult cb;
  ASSERT_TRUE(b.run([&](Txn& t) { return store.cancel(t, "b", &cb); }).committed());
  EXPECT_EQ(cb.running_runs, 1u);
  // The running one may finish.
  EXPECT_EQ(complete(c.grants[0].run.id, c.grants[0].run.token).verdicts[0].verdict,
            WriteVerdict::kAccepted);
  // Nothing new is dispatched for either job, ever.
  b.clock.advance(absl::Hours(1));
  EXPECT_TRUE(dispatch(store.shard_of("a"), lead(store.shard_of("a"))).dispatched.empty());
  EXPECT_TRUE(dispatch(store.shard_of("b"), lead(store.shard_of("b"))).dispatched.empty());
  EXPECT_EQ(count_prefix(keys::kDue), 0u);
  // Cancelling again is idempotent; an unknown id is NotFound.
  ASSERT_TRUE(b.run([&](Txn& t) { return store.cancel(t, "a", &ca); }).committed());
  EXPECT_FALSE(ca.was_active);
  auto r = b.run([&](Txn& t) { return store.cancel(t, "zz", &ca); });
  EXPECT_EQ(r.status.code(), absl::StatusCode::kNotFound);
}

TEST_F(JobStoreTest, HigherPriorityIsClaimedFirst) {
  JobSpec lo = once_job("lo", T0());
  lo.policy.priority = 1;
  JobSpec hi = once_job("hi", T0() + absl::Seconds(1));
  hi.policy.priority = 8;
  JobStore one(1);
  for (const JobSpec* s : {&lo, &hi}) {
    CreateResult out;
    ASSERT_TRUE(b.run([&](Txn& t) { return one.create(t, *s, &out); }).committed());
  }
  b.clock.advance(absl::Seconds(2));
  LeadershipResult lr;
  b.run([&](Txn& t) { return one.acquire_or_renew(t, 0, "n", 0, absl::Seconds(10), &lr); });
  DispatchResult d;
  ASSERT_TRUE(b.run([&](Txn& t) {
                 return one.dispatch(t, 0, {"n", lr.record.epoch}, 10, &d);
               }).committed());
  ClaimResult c;
  ClaimArgs a{"w", 1, absl::Seconds(30), 0};
  ASSERT_TRUE(b.run([&](Txn& t) { return one.claim(t, a, &c); }).committed());
  EXPECT_EQ(c.grants.at(0).run.id.job_id, "hi");
}

TEST_F(JobStoreTest, ShardCountIsFixedAtInit) {
  ASSERT_TRUE(b.run([&](Txn& t) { return store.init(t); }).committed());
  ASSERT_TRUE(b.run([&](Txn& t) { return store.init(t); }).committed());
  JobStore other(8);
  auto r = b.run([&](Txn& t) { return other.init(t); });
  EXPECT_EQ(r.status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status.message().find("shard_count"), std::string::npos);
}

// Planted bugs deviate exactly at their decision points.
TEST_F(JobStoreTest, PlantedBugs) {
  PlantedBugs bugs;
  bugs.ignore_fencing = true;
  bugs.reuse_token = true;
  bugs.skip_epoch_check = true;
  JobStore buggy(4, bugs);
  CreateResult cr;
  ASSERT_TRUE(b.run([&](Txn& t) { return buggy.create(t, interval_job("a"), &cr); }).committed());
  const std::uint32_t s = buggy.shard_of("a");
  DispatchResult d;  // skip_epoch_check: no leader record at all, still dispatches
  ASSERT_TRUE(b.run([&](Txn& t) {
                 return buggy.dispatch(t, s, {"nobody", 9}, 10, &d);
               }).committed());
  EXPECT_EQ(d.dispatched.size(), 1u);
  ClaimResult c;
  ClaimArgs a{"w", 1, absl::Seconds(30), 0};
  ASSERT_TRUE(b.run([&](Txn& t) { return buggy.claim(t, a, &c); }).committed());
  const RunRecord g = c.grants.at(0).run;
  b.clock.advance(absl::Seconds(31));
  ReapResult rr;
  ASSERT_TRUE(b.run([&](Txn& t) { return buggy.reap(t, s, {"nobody", 9}, 10, &rr); }).committed());
  ClaimResult c2;
  ASSERT_TRUE(b.run([&](Txn& t) { return buggy.claim(t, a, &c2); }).committed());
  EXPECT_EQ(c2.grants.at(0).run.token, g.token);  // reuse_token
  CompleteResult comp;
  std::vector<CompleteItem> items{{g.id, g.token + 100, RunStatus::kSucceeded, 0, ""}};
  ASSERT_TRUE(b.run([&](Txn& t) { return buggy.complete(t, "w", items, &comp); }).committed());
  EXPECT_EQ(comp.verdicts[0].verdict, WriteVerdict::kAccepted);  // ignore_fencing

  PlantedBugs nle;
  nle.no_lease_expiry = true;
  JobStore lazy(4, nle);
  ASSERT_TRUE(b.run([&](Txn& t) { return lazy.create(t, interval_job("z"), &cr); }).committed());
  const std::uint32_t sz = lazy.shard_of("z");
  LeadershipResult lr;
  b.run([&](Txn& t) { return lazy.acquire_or_renew(t, sz, "n", 0, absl::Seconds(100), &lr); });
  const LeaderToken lt{"n", lr.record.epoch};
  ASSERT_TRUE(b.run([&](Txn& t) { return lazy.dispatch(t, sz, lt, 10, &d); }).committed());
  ASSERT_TRUE(b.run([&](Txn& t) { return lazy.claim(t, a, &c); }).committed());
  b.clock.advance(absl::Seconds(31));
  ASSERT_TRUE(b.run([&](Txn& t) { return lazy.reap(t, sz, lt, 10, &rr); }).committed());
  EXPECT_TRUE(rr.requeued.empty());

  PlantedBugs na;
  na.non_atomic_dispatch = true;
  JobStore split(4, na);
  ASSERT_TRUE(b.run([&](Txn& t) { return split.create(t, interval_job("n"), &cr); }).committed());
  const std::uint32_t sn = split.shard_of("n");
  b.run([&](Txn& t) { return split.acquire_or_renew(t, sn, "n", 0, absl::Seconds(100), &lr); });
  ASSERT_TRUE(b.run([&](Txn& t) {
                 return split.dispatch(t, sn, {"n", lr.record.epoch}, 1, &d);
               }).committed());
  EXPECT_TRUE(d.dispatched.empty());
  EXPECT_FALSE(d.to_create.empty());
}

}  // namespace
}  // namespace kairos
