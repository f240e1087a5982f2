// Runner kinds: a claim grants only the payload kinds its worker accepts,
// leaves the others ready and untouched, and still finds accepted runs
// queued behind unaccepted ones (within kClaimSkipBudget); the wire and the
// worker config refuse an empty kind set.
#include <gtest/gtest.h>

#include <optional>

#include "absl/strings/str_cat.h"
#include "core/kernel/job_store.h"
#include "core/kernel/keyspace.h"
#include "core/kernel/wire.h"
#include "core/kernel/worker.h"
#include "tests/support/node_world.h"
#include "tests/support/policy_fixture.h"

namespace kairos {
namespace {

using namespace test_support;

JobSpec http_job(std::string id) {
  JobSpec s = once_job(std::move(id), T0());
  s.payload = HttpPayload{"POST", "https://x.test/h", {}, ""};
  return s;
}

class KindsTest : public PolicyTest {
 protected:
  std::vector<Grant> claim_kinds(std::uint8_t accepts, std::uint32_t n = 10) {
    ClaimResult out;
    ClaimArgs a{"w", n, absl::Seconds(30), 0, accepts};
    auto r = b.run([&](Txn& t) { return store.claim(t, a, &out); });
    EXPECT_TRUE(r.committed()) << r.status;
    return out.grants;
  }
};

TEST_F(KindsTest, HttpOnlyClaimNeverGetsACommandRun) {
  create(once_job("c", T0()));
  create(http_job("h"));
  dispatch();
  const auto before = b.runs();
  auto g = claim_kinds(kAcceptHttp);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].run.id.job_id, "h");
  EXPECT_TRUE(claim_kinds(kAcceptHttp).empty());
  // The command run is still ready, exactly as before.
  for (const RunRecord& r : b.runs())
    if (r.id.job_id == "c") {
      EXPECT_EQ(r.state, RunState::kReady);
      EXPECT_EQ(r, before[0].id.job_id == "c" ? before[0] : before[1]);
    }
  auto c = claim_kinds(kAcceptCommand);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].run.id.job_id, "c");
}

TEST_F(KindsTest, CommandRunsBehindManyHttpRunsAreStillServed) {
  // 300 http runs are ahead of the command run in the queue (same band,
  // earlier ready time); a command-only claim passes over them.
  for (int i = 0; i < 300; ++i) create(http_job(absl::StrCat("h", i)));
  dispatch();
  b.clock.advance(absl::Seconds(1));
  create(once_job("c", b.now()));
  dispatch();
  auto g = claim_kinds(kAcceptCommand, 5);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].run.id.job_id, "c");
  // The http runs wait for an http worker, which gets them in order.
  auto h = claim_kinds(kAcceptAll, 5);
  ASSERT_EQ(h.size(), 5u);
  EXPECT_EQ(h[0].run.id.job_id.substr(0, 1), "h");
  // Past the starvation bound the oldest-first pass applies the filter too.
  b.clock.advance(absl::Minutes(5));
  create(once_job("c2", b.now()));
  dispatch();
  b.clock.advance(absl::Minutes(2));
  auto s = claim_kinds(kAcceptCommand, 5);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].run.id.job_id, "c2");
}

TEST(RunnerKinds, EmptyKindSetIsRefused) {
  wire::ClaimRequest m{1, "w", 1, absl::ZeroDuration(), 0};
  auto d = wire::decode(wire::encode(m));
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("accepts"), std::string_view::npos) << d.status();
  m.accepts = kAcceptHttp;
  auto ok = wire::decode(wire::encode(m));
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(std::get<wire::ClaimRequest>(*ok).accepts, kAcceptHttp);
  WorkerConfig c = worker_config("w1", {1});
  c.accepts = 0;
  EXPECT_NE(validate(c).message().find("worker.accepts"), std::string_view::npos);
  c.accepts = 4;
  EXPECT_FALSE(validate(c).ok());
}

TEST(RunnerKinds, AnHttpOnlyWorkerLeavesCommandJobsWaiting) {
  NodeWorld w;
  NodeWorld::Node& n1 = w.add_node(node_config("n1", 1), 7);
  FakeRunner& runner = w.add_runner(absl::Seconds(1));
  WorkerConfig wc = worker_config("w1", {n1.ep->id()});
  wc.accepts = kAcceptHttp;
  Worker& worker = w.add_worker(runner, wc, 3).worker;
  n1.node.start();
  worker.start();
  int created = 0;
  n1.node.create_job(once_job("c", T0() + absl::Seconds(2)), [&](auto r) { created += r.ok(); });
  n1.node.create_job(http_job("h"), [&](auto r) { created += r.ok(); });
  w.stepper.run(absl::Seconds(30));
  ASSERT_EQ(created, 2);
  bool saw_c = false;
  for (const RunRecord& r : w.runs()) {
    if (r.id.job_id == "c") {
      saw_c = true;
      EXPECT_EQ(r.state, RunState::kReady);
      EXPECT_EQ(r.token, 0u);
    } else {
      EXPECT_EQ(r.state, RunState::kSucceeded);
    }
  }
  EXPECT_TRUE(saw_c);
  EXPECT_EQ(w.sink.effects.size(), 1u);
}

}  // namespace
}  // namespace kairos
