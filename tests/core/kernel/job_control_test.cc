// Job control bodies: pause/resume (with the misfire policy and kPaused
// ledger records), reschedule (due entry and unclaimed runs follow), trigger
// now (own idempotency key, overlap unless forced), update, apply,
// namespace/label filtering.
#include "tests/support/policy_fixture.h"

namespace kairos {
namespace {

using namespace test_support;  // the fixture and the job builders

class ControlTest : public PolicyTest {
 protected:
  ControlResult control(const std::function<absl::Status(Txn&, ControlResult*)>& f,
                        absl::StatusCode want = absl::StatusCode::kOk) {
    auto [r, out] = body<ControlResult>(f);
    if (want == absl::StatusCode::kOk)
      EXPECT_TRUE(r.committed()) << r.status;
    else
      EXPECT_EQ(r.status.code(), want) << r.status;
    return out;
  }
  ControlResult pause(const std::string& id) {
    return control([&](Txn& t, ControlResult* o) { return store.pause(t, id, o); });
  }
  ControlResult resume(const std::string& id) {
    return control([&](Txn& t, ControlResult* o) { return store.resume(t, id, o); });
  }
  ControlResult reschedule(const std::string& id, const ScheduleSpec& schedule) {
    return control([&](Txn& t, ControlResult* o) {
      return store.update(
          t, id,
          [&](JobSpec& s) {
            s.schedule = schedule;
            return absl::OkStatus();
          },
          o);
    });
  }
  static ScheduleSpec hourly_from(absl::Time start) {
    ScheduleSpec s;
    s.kind = ScheduleSpec::Kind::kInterval;
    s.every = absl::Hours(1);
    s.start = start;
    return s;
  }
  std::pair<TxnResult, TriggerResult> trigger(const std::string& id, std::uint64_t tid,
                                              bool force = false) {
    TriggerArgs a{id, tid, b.clock.now(), force};
    return body<TriggerResult>([&](Txn& t, TriggerResult* o) { return store.trigger(t, a, o); });
  }
};

TEST_F(ControlTest, PauseAcrossMissedOccurrencesFollowsRunOnceAndRecordsPaused) {
  create(interval_job("a"));
  dispatch();
  for (const auto& g : claim()) complete(g.run, RunStatus::kSucceeded);
  b.clock.advance(absl::Seconds(30));
  EXPECT_TRUE(pause("a").changed);
  EXPECT_FALSE(pause("a").changed);  // idempotent
  EXPECT_FALSE(job("a").next_due_at.has_value());
  b.clock.advance(absl::Minutes(5));
  EXPECT_TRUE(dispatch().dispatched.empty());  // nothing due while paused
  EXPECT_TRUE(resume("a").changed);
  auto d = dispatch();
  ASSERT_EQ(d.dispatched.size(), 1u);  // run-once: one run for the window
  EXPECT_EQ(d.dispatched[0].id.nominal, T0() + absl::Minutes(5));
  auto l = ledger("a");
  ASSERT_EQ(l.size(), 3u);
  EXPECT_EQ(l[0].outcome, LedgerOutcome::kFired);
  EXPECT_EQ(l[1].outcome, LedgerOutcome::kPaused);
  EXPECT_EQ(l[1].count, 4u);                       // T0+1m .. T0+4m
  EXPECT_EQ(l[2].outcome, LedgerOutcome::kFired);  // T0+5m itself is only 30s late
  EXPECT_EQ(d.dispatched[0].stands_for, 5u);
}

TEST_F(ControlTest, PauseWithSkipSkipsTheMissedOccurrences) {
  JobSpec s = interval_job("a");
  s.policy.misfire = MisfirePolicy::kSkip;
  create(s);
  pause("a");
  b.clock.advance(absl::Minutes(3) + absl::Seconds(30));
  resume("a");
  auto d = dispatch();
  ASSERT_EQ(d.dispatched.size(), 1u);
  EXPECT_EQ(d.dispatched[0].id.nominal, T0() + absl::Minutes(3));  // 30s late: on time
  auto l = ledger("a");
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0].outcome, LedgerOutcome::kPaused);
  EXPECT_EQ(l[0].count, 3u);  // T0 .. T0+2m
  EXPECT_EQ(l[1].outcome, LedgerOutcome::kFired);
  EXPECT_EQ(*job("a").next_due_at, T0() + absl::Minutes(4));
}

TEST_F(ControlTest, RescheduleMovesTheDueEntryAndWithdrawsUnclaimedRuns) {
  create(once_job("a", T0() + absl::Minutes(1)));
  b.clock.advance(absl::Minutes(1));
  ASSERT_EQ(dispatch().dispatched.size(), 1u);  // ready, not claimed
  ScheduleSpec later;
  later.kind = ScheduleSpec::Kind::kOnce;
  later.at = T0() + absl::Hours(1);
  auto out = reschedule("a", later);
  EXPECT_TRUE(out.changed);
  EXPECT_EQ(out.withdrawn_runs, 1u);
  EXPECT_EQ(out.job.incarnation, 1u);
  EXPECT_EQ(*out.job.next_due_at, T0() + absl::Hours(1));
  EXPECT_TRUE(claim().empty());
  EXPECT_EQ(ledger("a")[0].outcome, LedgerOutcome::kCancelled);
  b.clock.advance(absl::Hours(1));
  EXPECT_EQ(dispatch().dispatched.size(), 1u);
  // A claimed run is not touched by a reschedule.
  auto g = claim();
  ASSERT_EQ(g.size(), 1u);
  later.at = T0() + absl::Hours(2);
  out = reschedule("a", later);
  EXPECT_EQ(out.withdrawn_runs, 0u);
  EXPECT_EQ(run_of(g[0].run.id).state, RunState::kLeased);
}

// Every occurrence that became due keeps exactly one ledger outcome, even
// when the leader was behind and never dispatched it before a reschedule.
TEST_F(ControlTest, RescheduleRecordsOverdueUndispatchedOccurrencesAsCancelled) {
  create(interval_job("a"));                              // every minute from T0
  b.clock.advance(absl::Minutes(3) + absl::Seconds(10));  // T0..T0+3m overdue, none dispatched
  reschedule("a", hourly_from(T0() + absl::Hours(1)));
  auto l = ledger("a");
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].outcome, LedgerOutcome::kCancelled);
  EXPECT_EQ(l[0].nominal, T0());
  EXPECT_EQ(l[0].through, T0() + absl::Minutes(3));
  EXPECT_EQ(l[0].count, 4u);
  EXPECT_EQ(l[0].detail, "rescheduled before dispatch");
  EXPECT_EQ(*job("a").next_due_at, T0() + absl::Hours(1));
  EXPECT_TRUE(dispatch().dispatched.empty());
}

TEST_F(ControlTest, RescheduleOfAPausedJobRecordsThePausedOccurrences) {
  create(interval_job("a"));
  dispatch();  // T0 fires
  b.clock.advance(absl::Seconds(30));
  pause("a");
  b.clock.advance(absl::Minutes(2));  // T0+1m, T0+2m fall in the pause
  reschedule("a", hourly_from(T0() + absl::Hours(1)));
  auto l = ledger("a");
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0].outcome, LedgerOutcome::kCancelled);  // its ready run was withdrawn
  EXPECT_EQ(l[1].outcome, LedgerOutcome::kPaused);
  EXPECT_EQ(l[1].count, 2u);
  EXPECT_FALSE(job("a").next_due_at.has_value());  // still paused
  resume("a");
  EXPECT_EQ(*job("a").next_due_at, T0() + absl::Hours(1));
}

TEST_F(ControlTest, CancelRecordsOverdueUndispatchedOccurrences) {
  create(interval_job("a"));
  b.clock.advance(absl::Minutes(1) + absl::Seconds(5));
  auto [r, out] =
      body<CancelResult>([&](Txn& t, CancelResult* o) { return store.cancel(t, "a", o); });
  ASSERT_TRUE(r.committed()) << r.status;
  auto l = ledger("a");
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].outcome, LedgerOutcome::kCancelled);
  EXPECT_EQ(l[0].count, 2u);  // T0 and T0+1m
  EXPECT_EQ(l[0].detail, "job cancelled before dispatch");
}

TEST_F(ControlTest, TriggerNowHasItsOwnKeyRespectsOverlapAndIsIdempotent) {
  create(interval_job("a", absl::Hours(1), T0() + absl::Hours(1)));
  auto [r1, t1] = trigger("a", 7);
  ASSERT_TRUE(r1.committed()) << r1.status;
  EXPECT_TRUE(t1.created);
  EXPECT_EQ(t1.run.kind, RunKind::kManual);
  // The same request again (after an unknown outcome): the same run.
  auto [r2, t2] = trigger("a", 7);
  ASSERT_TRUE(r2.committed());
  EXPECT_FALSE(t2.created);
  EXPECT_EQ(t2.run.id, t1.run.id);
  // Another trigger while the first is unfinished: overlap skip refuses it.
  auto [r3, t3] = trigger("a", 8);
  EXPECT_EQ(r3.status.code(), absl::StatusCode::kFailedPrecondition);
  auto [r4, t4] = trigger("a", 9, /*force=*/true);
  ASSERT_TRUE(r4.committed());
  EXPECT_NE(t4.run.id, t1.run.id);
  EXPECT_EQ(claim().size(), 2u);
  EXPECT_EQ(ledger("a")[0].outcome, LedgerOutcome::kManual);
}

TEST_F(ControlTest, TriggerNeverTakesAScheduledOccurrencesIdentity) {
  create(interval_job("a", absl::Minutes(1), T0()));
  b.clock.advance(absl::Minutes(2));  // T0+2m is an occurrence
  auto [r, t] = trigger("a", 1, true);
  ASSERT_TRUE(r.committed());
  EXPECT_EQ(t.run.id.nominal, T0() + absl::Minutes(2) + absl::Microseconds(1));
}

TEST_F(ControlTest, ApplyCreatesUpdatesAndIsANoOpWhenUnchanged) {
  JobSpec s = interval_job("a");
  s.ns = "team-x";
  s.labels = {{"env", "prod"}};
  auto a1 = control([&](Txn& t, ControlResult* o) { return store.apply(t, s, o); });
  EXPECT_TRUE(a1.created);
  const auto before = b.storage.contents();
  auto a2 = control([&](Txn& t, ControlResult* o) { return store.apply(t, s, o); });
  EXPECT_FALSE(a2.changed);
  EXPECT_EQ(a2.job, a1.job);
  EXPECT_TRUE(a2.events.empty());
  EXPECT_EQ(b.storage.contents(), before);  // nothing written
  EXPECT_EQ(job("a"), a1.job);
  s.policy.max_attempts = 5;
  auto a3 = control([&](Txn& t, ControlResult* o) { return store.apply(t, s, o); });
  EXPECT_TRUE(a3.changed);
  EXPECT_FALSE(a3.created);
  EXPECT_EQ(a3.job.incarnation, 1u);
  EXPECT_EQ(a3.job.generation, 2u);
  EXPECT_EQ(a3.job.next_due_at, a1.job.next_due_at);  // policy change: due entry unchanged
}

TEST_F(ControlTest, PriorityUpdateMovesQueuedRuns) {
  create(with_overlap(once_job("a", T0()), OverlapPolicy::kSkip));
  dispatch();
  JobPolicy p;
  p.priority = 9;
  control([&](Txn& t, ControlResult* o) {
    return store.update(
        t, "a",
        [&](JobSpec& s) {
          s.policy = p;
          return absl::OkStatus();
        },
        o);
  });
  auto g = claim();
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].run.priority, 9);
}

TEST_F(ControlTest, ListFiltersByNamespaceAndLabels) {
  auto mk = [&](const char* id, const char* ns, const char* env) {
    JobSpec s = interval_job(id);
    s.ns = ns;
    s.labels = {{"env", env}, {"team", "core"}};
    create(s);
  };
  mk("a", "x", "prod");
  mk("b", "y", "prod");
  mk("c", "x", "dev");
  mk("d", "x", "prod");
  auto list = [&](JobFilter f) {
    std::vector<std::string> ids;
    std::string token;
    do {
      ListResult out;
      EXPECT_TRUE(b.run([&](Txn& t) { return store.list(t, token, 1, f, &out); }).committed());
      for (const auto& j : out.jobs) ids.push_back(j.spec.id);
      token = out.next_page_token;
    } while (!token.empty());
    return ids;
  };
  EXPECT_EQ(list({"x", {}}), (std::vector<std::string>{"a", "c", "d"}));
  EXPECT_EQ(list({"x", {{"env", "prod"}}}), (std::vector<std::string>{"a", "d"}));
  EXPECT_EQ(list({"", {{"env", "prod"}, {"team", "core"}}}),
            (std::vector<std::string>{"a", "b", "d"}));
  JobSpec bad = interval_job("z");
  bad.ns = "Bad NS";
  EXPECT_NE(validate_job_spec(bad).message().find("namespace"), std::string::npos);
  bad = interval_job("z");
  bad.labels = {{"", "v"}};
  EXPECT_NE(validate_job_spec(bad).message().find("labels"), std::string::npos);
}

TEST_F(ControlTest, ControlOfUnknownOrCancelledJobsSaysWhy) {
  control([&](Txn& t, ControlResult* o) { return store.pause(t, "nope", o); },
          absl::StatusCode::kNotFound);
  create(interval_job("a"));
  CancelResult c;
  b.run([&](Txn& t) { return store.cancel(t, "a", &c); });
  control([&](Txn& t, ControlResult* o) { return store.resume(t, "a", o); },
          absl::StatusCode::kFailedPrecondition);
}

TEST_F(ControlTest, CancelWithdrawsWaitingRunsAndRecordsIt) {
  create(with_overlap(interval_job("a"), OverlapPolicy::kQueue));
  dispatch();
  claim();
  b.clock.advance(absl::Minutes(1));
  dispatch();  // waiting
  CancelResult c;
  ASSERT_TRUE(b.run([&](Txn& t) { return store.cancel(t, "a", &c); }).committed());
  EXPECT_EQ(c.cancelled_runs, 1u);
  EXPECT_EQ(c.running_runs, 1u);
  EXPECT_EQ(ledger("a")[1].outcome, LedgerOutcome::kCancelled);
}

}  // namespace
}  // namespace kairos
