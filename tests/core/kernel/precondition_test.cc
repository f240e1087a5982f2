// Preconditions (If-Match) of the job control bodies and the node's job API:
// a matching expected generation passes, a stale one is refused with the
// generation-mismatch payload and writes nothing, every visible change bumps
// the generation, and a retry after an unknown outcome stays idempotent.
#include <gtest/gtest.h>

#include <optional>

#include "core/base/absl_compat.h"
#include "core/kernel/job_store.h"
#include "core/kernel/keyspace.h"
#include "core/kernel/scheduler_node.h"
#include "tests/support/kernel_test_util.h"
#include "tests/support/node_world.h"
#include "tests/support/policy_fixture.h"

namespace kairos {
namespace {

using namespace test_support;

class PreconditionTest : public PolicyTest {
 protected:
  using Gen = std::optional<std::uint64_t>;
  std::pair<TxnResult, ControlResult> pause(const std::string& id, Gen g) {
    return body<ControlResult>([&](Txn& t, ControlResult* o) { return store.pause(t, id, o, g); });
  }
  std::pair<TxnResult, ControlResult> resume(const std::string& id, Gen g) {
    return body<ControlResult>([&](Txn& t, ControlResult* o) { return store.resume(t, id, o, g); });
  }
  std::pair<TxnResult, ControlResult> set_attempts(const std::string& id, std::uint32_t n, Gen g) {
    return body<ControlResult>([&](Txn& t, ControlResult* o) {
      return store.update(
          t, id,
          [n](JobSpec& s) {
            s.policy.max_attempts = n;
            return absl::OkStatus();
          },
          o, g);
    });
  }
  std::pair<TxnResult, ControlResult> apply(const JobSpec& s, Gen g) {
    return body<ControlResult>([&](Txn& t, ControlResult* o) { return store.apply(t, s, o, g); });
  }
  std::pair<TxnResult, CancelResult> cancel(const std::string& id, Gen g) {
    return body<CancelResult>([&](Txn& t, CancelResult* o) { return store.cancel(t, id, o, g); });
  }
  // Expects `r` to be a generation mismatch that wrote nothing.
  void expect_refused(const TxnResult& r, const MemoryStorage::Map& before) {
    EXPECT_EQ(r.outcome, CommitOutcome::kAborted);
    EXPECT_TRUE(is_generation_mismatch(r.status)) << r.status;
    EXPECT_EQ(b.storage.contents(), before);
  }
};

TEST_F(PreconditionTest, EveryVisibleChangeBumpsTheGeneration) {
  EXPECT_EQ(create(interval_job("a")).generation, 1u);
  EXPECT_EQ(pause("a", std::nullopt).second.job.generation, 2u);
  EXPECT_EQ(pause("a", std::nullopt).second.job.generation, 2u);  // in effect: unchanged
  EXPECT_EQ(resume("a", std::nullopt).second.job.generation, 3u);
  EXPECT_EQ(set_attempts("a", 7, std::nullopt).second.job.generation, 4u);
  EXPECT_EQ(set_attempts("a", 7, std::nullopt).second.job.generation, 4u);  // no change
  EXPECT_EQ(cancel("a", std::nullopt).second.job.generation, 5u);
  EXPECT_EQ(job("a").generation, 5u);
  // A re-created job continues from its tombstone: an ETag never repeats.
  EXPECT_EQ(create(interval_job("a")).generation, 6u);
}

TEST_F(PreconditionTest, MatchingGenerationPasses) {
  create(interval_job("a"));
  auto [p, po] = pause("a", 1);
  ASSERT_TRUE(p.committed()) << p.status;
  EXPECT_TRUE(po.changed);
  auto [r, ro] = resume("a", 2);
  ASSERT_TRUE(r.committed()) << r.status;
  auto [u, uo] = set_attempts("a", 4, 3);
  ASSERT_TRUE(u.committed()) << u.status;
  EXPECT_EQ(uo.job.spec.policy.max_attempts, 4u);
  JobSpec s = interval_job("a");
  s.policy.max_attempts = 9;
  auto [a, ao] = apply(s, 4);
  ASSERT_TRUE(a.committed()) << a.status;
  EXPECT_EQ(ao.job.generation, 5u);
  auto [c, co] = cancel("a", 5);
  ASSERT_TRUE(c.committed()) << c.status;
  EXPECT_TRUE(co.was_active);
  // Re-creating over the tombstone with its generation is a match too.
  auto [a2, a2o] = apply(interval_job("a"), 6);
  ASSERT_TRUE(a2.committed()) << a2.status;
  EXPECT_TRUE(a2o.created);
  EXPECT_EQ(a2o.job.incarnation, 2u);
  EXPECT_EQ(a2o.job.generation, 7u);
}

TEST_F(PreconditionTest, MismatchIsRefusedWithThePayloadAndWritesNothing) {
  create(interval_job("a"));
  pause("a", std::nullopt);  // generation 2
  const auto before = b.storage.contents();
  auto [r, ro] = resume("a", 1);
  expect_refused(r, before);
  EXPECT_EQ(r.status.message(), "generation: expected 1, job 'a' is at 2");
  EXPECT_EQ(std::string(*r.status.GetPayload(absl_sv(kGenerationMismatchPayload))), "2");
  expect_refused(set_attempts("a", 8, 1).first, before);
  JobSpec s = interval_job("a");
  s.policy.max_attempts = 9;
  expect_refused(apply(s, 3).first, before);
  expect_refused(cancel("a", 1).first, before);
  resume("a", std::nullopt);  // generation 3
  const auto before2 = b.storage.contents();
  expect_refused(pause("a", 2).first, before2);
  // No job to match: the mismatch says so, with an empty payload value.
  auto [m, mo] = apply(interval_job("nope"), 1);
  EXPECT_TRUE(is_generation_mismatch(m.status)) << m.status;
  EXPECT_NE(m.status.message().find("does not exist"), std::string_view::npos);
  EXPECT_EQ(b.count_keys(keys::kJob), 1u);
}

TEST_F(PreconditionTest, OtherFailedPreconditionsAreNotMismatches) {
  create(interval_job("a"));
  cancel("a", std::nullopt);
  auto [r, ro] = pause("a", 1);
  EXPECT_EQ(r.status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(is_generation_mismatch(r.status));
  EXPECT_FALSE(is_generation_mismatch(absl::FailedPreconditionError("x")));
  EXPECT_FALSE(is_generation_mismatch(absl::OkStatus()));
}

TEST_F(PreconditionTest, ARequestAlreadyInEffectSucceedsWhateverTheGeneration) {
  // The retry of a request whose first try committed (outcome unknown to
  // the caller) carries the old generation; it finds its change in effect.
  create(interval_job("a"));
  ASSERT_TRUE(pause("a", 1).first.committed());
  const auto before = b.storage.contents();
  auto [p, po] = pause("a", 1);
  ASSERT_TRUE(p.committed()) << p.status;
  EXPECT_FALSE(po.changed);
  EXPECT_EQ(b.storage.contents(), before);  // nothing written
  ASSERT_TRUE(set_attempts("a", 6, 2).first.committed());
  auto [u, uo] = set_attempts("a", 6, 2);
  ASSERT_TRUE(u.committed()) << u.status;
  EXPECT_FALSE(uo.changed);
  ASSERT_TRUE(cancel("a", 3).first.committed());
  auto [c, co] = cancel("a", 3);
  ASSERT_TRUE(c.committed()) << c.status;
  EXPECT_FALSE(co.was_active);
}

// Node "n1" behind a store with scripted faults.
struct FaultyNode : NodeWorld {
  ScriptedStorage& storage = keep<ScriptedStorage>(mem, loop);
  Node& n1 = add_node(node_config("n1"), 7, {.storage = &storage});
  SchedulerNode& node = n1.node;
  template <typename R>
  absl::StatusOr<R> wait(std::optional<absl::StatusOr<R>>& got) {
    stepper.run(absl::Seconds(5));
    EXPECT_TRUE(got.has_value());
    return got ? *got : absl::StatusOr<R>(absl::InternalError("no answer"));
  }
};

TEST(NodePrecondition, RetryAfterUnknownOutcomeStaysIdempotent) {
  FaultyNode w;
  w.node.start();
  std::optional<absl::StatusOr<CreateResult>> created;
  w.node.create_job(interval_job("a"), [&](auto r) { created = std::move(r); });
  ASSERT_TRUE(w.wait(created).ok());

  // The pause commits but its outcome is unknown; the node's retry finds it
  // in effect and answers success (generation 2).
  std::optional<absl::StatusOr<ControlResult>> got;
  w.storage.push(Fault::kUnknownApplied);
  w.node.pause_job("a", 1, [&](auto r) { got = std::move(r); });
  auto r = w.wait(got);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->job.generation, 2u);
  EXPECT_TRUE(r->job.paused);

  // The same for a PATCH-style update.
  got.reset();
  w.storage.push(Fault::kUnknownApplied);
  auto mutate = [](JobSpec& s) {
    s.labels["team"] = "data";
    return absl::OkStatus();
  };
  w.node.update_job("a", mutate, 2, [&](auto r) { got = std::move(r); });
  r = w.wait(got);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->job.generation, 3u);
  EXPECT_EQ(r->job.spec.labels.at("team"), "data");

  // A stale If-Match through the node keeps its payload.
  got.reset();
  w.node.resume_job("a", 2, [&](auto r) { got = std::move(r); });
  r = w.wait(got);
  EXPECT_TRUE(is_generation_mismatch(r.status())) << r.status();

  std::optional<absl::StatusOr<CancelResult>> cancelled;
  w.node.cancel_job("a", 2, [&](auto r) { cancelled = std::move(r); });
  EXPECT_TRUE(is_generation_mismatch(w.wait(cancelled).status()));
  cancelled.reset();
  w.node.cancel_job("a", 3, [&](auto r) { cancelled = std::move(r); });
  auto c = w.wait(cancelled);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->job.generation, 4u);

  got.reset();
  w.node.apply_job(interval_job("a"), 4, [&](auto r) { got = std::move(r); });
  r = w.wait(got);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->created);
  EXPECT_EQ(r->job.generation, 5u);
}

}  // namespace
}  // namespace kairos
