// Unit tests of JobStore::release_abandoned, the fenced hand-back of a run
// whose holder is known to be over (a restarted server's own runs): it ends
// the attempt exactly as the reaper's lapse does, at once instead of after
// the lease, and only under the run's current token.
#include <optional>
#include <string>

#include "tests/support/policy_fixture.h"

namespace kairos {
namespace {

using namespace test_support;  // the fixture and the job builders

class ReleaseAbandonedTest : public PolicyTest {
 protected:
  ReleaseResult release(const RunId& id, std::uint64_t token) {
    ReleaseResult out;
    auto r = b.run(
        [&](Txn& t) { return store.release_abandoned(t, id, token, "worker_restart", &out); });
    EXPECT_TRUE(r.committed()) << r.status;
    return out;
  }
  static const Event* find(const std::vector<Event>& ev, std::string_view kind) {
    for (const auto& e : ev)
      if (e.kind == kind) return &e;
    return nullptr;
  }
};

TEST_F(ReleaseAbandonedTest, MatchingTokenReleasesAtOnceAndTheNextClaimHasAHigherToken) {
  create(once_job("a", T0()));
  ASSERT_EQ(dispatch().dispatched.size(), 1u);
  auto g = claim();  // 30s lease
  ASSERT_EQ(g.size(), 1u);
  const RunId id = g[0].run.id;
  const std::uint64_t t1 = g[0].run.token;
  b.clock.advance(absl::Seconds(1));  // long before the lease lapses

  const ReleaseResult rel = release(id, t1);
  EXPECT_EQ(rel.verdict, WriteVerdict::kAccepted);
  EXPECT_EQ(rel.state, RunState::kReady);
  const Event* e = find(rel.events, "run.lease_lapsed");
  ASSERT_NE(e, nullptr);
  ASSERT_NE(e->find("reason"), nullptr);
  EXPECT_EQ(std::get<std::string>(*e->find("reason")), "worker_restart");
  EXPECT_EQ(std::get<std::uint64_t>(*e->find("lapsed_token")), t1);

  const RunRecord r = run_of(id);
  EXPECT_EQ(r.state, RunState::kReady);
  EXPECT_EQ(r.ready_at, b.clock.now());  // at once: no lease wait, no backoff
  EXPECT_EQ(r.attempt, 2u);
  ASSERT_EQ(r.attempts.size(), 1u);
  EXPECT_EQ(r.attempts[0].end, AttemptEnd::kLapsed);

  auto g2 = claim();
  ASSERT_EQ(g2.size(), 1u);
  EXPECT_EQ(g2[0].run.id, id);
  EXPECT_EQ(g2[0].run.attempt, 2u);
  EXPECT_GT(g2[0].run.token, t1);
  // The lease-expiry entry went with the lease: the reaper finds nothing.
  b.clock.advance(absl::Seconds(29));
  EXPECT_TRUE(reap().requeued.empty());
}

TEST_F(ReleaseAbandonedTest, StaleOrUnknownTokenWritesNothing) {
  create(once_job("a", T0()));
  dispatch();
  auto g = claim();
  const RunId id = g[0].run.id;
  const std::uint64_t t1 = g[0].run.token;
  // Another node's reaper re-queued the run and another worker holds it now.
  b.clock.advance(absl::Seconds(30));
  ASSERT_EQ(reap().requeued.size(), 1u);
  auto g2 = claim(1, "w2");
  ASSERT_EQ(g2.size(), 1u);
  const RunRecord before = run_of(id);

  for (const std::uint64_t token : {t1, g2[0].run.token + 1, std::uint64_t{0}}) {
    auto [txn, rel] = body<ReleaseResult>([&](Txn& t, ReleaseResult* out) {
      return store.release_abandoned(t, id, token, "worker_restart", out);
    });
    EXPECT_TRUE(txn.committed());
    EXPECT_EQ(rel.verdict, WriteVerdict::kStaleToken) << token;
    EXPECT_TRUE(rel.events.empty());
    EXPECT_EQ(rel.state, RunState::kLeased);
  }
  const RunRecord after = run_of(id);
  EXPECT_EQ(after.state, RunState::kLeased);
  EXPECT_EQ(after.token, before.token);
  EXPECT_EQ(after.owner, "w2");
  EXPECT_EQ(after.lease_expiry, before.lease_expiry);
  EXPECT_EQ(after.attempts.size(), before.attempts.size());

  const ReleaseResult none = release(RunId{"a", 1, T0() + absl::Seconds(5)}, t1);
  EXPECT_EQ(none.verdict, WriteVerdict::kUnknownRun);
  EXPECT_TRUE(none.events.empty());
}

TEST_F(ReleaseAbandonedTest, RepeatedCallIsHarmless) {
  create(once_job("a", T0()));
  dispatch();
  auto g = claim();
  const RunId id = g[0].run.id;
  ASSERT_EQ(release(id, g[0].run.token).verdict, WriteVerdict::kAccepted);
  const RunRecord once = run_of(id);
  for (int i = 0; i < 3; ++i) {
    const ReleaseResult again = release(id, g[0].run.token);
    EXPECT_EQ(again.verdict, WriteVerdict::kNotLeased);
    EXPECT_TRUE(again.events.empty());
  }
  const RunRecord r = run_of(id);
  EXPECT_EQ(r.state, once.state);
  EXPECT_EQ(r.attempt, once.attempt);
  EXPECT_EQ(r.attempts.size(), once.attempts.size());
  EXPECT_EQ(claim().size(), 1u);
}

// The hand-back is a lapse: it consumes one attempt of max_attempts, and
// the last one fails the run with the lapse's detail. Driven side by side
// with the reaper's lapse, the runs end identically (but sooner).
TEST_F(ReleaseAbandonedTest, AttemptsAreCountedExactlyAsALapse) {
  JobSpec s = once_job("a", T0());
  s.policy.max_attempts = 2;
  create(s);
  JobSpec s2 = once_job("b", T0());
  s2.policy.max_attempts = 2;
  create(s2);
  dispatch();
  const RunId a{"a", 1, T0()}, bb{"b", 1, T0()};
  for (std::uint32_t attempt = 1; attempt <= 2; ++attempt) {
    auto g = claim();
    ASSERT_EQ(g.size(), 2u) << attempt;
    for (const Grant& x : g) EXPECT_EQ(x.run.attempt, attempt);
    const RunRecord held_a = run_of(a);
    EXPECT_EQ(release(a, held_a.token).verdict, WriteVerdict::kAccepted);
    b.clock.advance(absl::Seconds(30));
    EXPECT_EQ(reap().scanned, 1u);  // b's lease lapsed the ordinary way
  }
  const RunRecord ra = run_of(a), rb = run_of(bb);
  EXPECT_EQ(ra.state, RunState::kFailed);
  EXPECT_EQ(rb.state, RunState::kFailed);
  EXPECT_EQ(ra.detail, rb.detail);
  EXPECT_NE(ra.detail.find("lease lapsed on the last attempt (2 of 2)"), std::string::npos);
  ASSERT_EQ(ra.attempts.size(), rb.attempts.size());
  for (std::size_t i = 0; i < ra.attempts.size(); ++i) {
    EXPECT_EQ(ra.attempts[i].end, AttemptEnd::kLapsed);
    EXPECT_EQ(rb.attempts[i].end, AttemptEnd::kLapsed);
  }
  EXPECT_EQ(ra.attempt, rb.attempt);
  EXPECT_TRUE(claim().empty());
  EXPECT_EQ(release(a, ra.token).verdict, WriteVerdict::kNotLeased);
}

TEST_F(ReleaseAbandonedTest, RunOfACancelledJobIsWithdrawnAsTheReaperWould) {
  create(once_job("a", T0()));
  dispatch();
  auto g = claim();
  CancelResult c;
  ASSERT_TRUE(b.run([&](Txn& t) { return store.cancel(t, "a", &c); }).committed());
  const ReleaseResult rel = release(g[0].run.id, g[0].run.token);
  EXPECT_EQ(rel.verdict, WriteVerdict::kAccepted);
  EXPECT_EQ(rel.state, RunState::kCancelled);
  EXPECT_TRUE(claim().empty());
}

TEST_F(ReleaseAbandonedTest, TheReapersLapseEventHasNoReason) {
  create(once_job("a", T0()));
  dispatch();
  claim();
  b.clock.advance(absl::Seconds(30));
  const ReapResult r = reap();
  const Event* e = find(r.events, "run.lease_lapsed");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->find("reason"), nullptr);
}

}  // namespace
}  // namespace kairos
