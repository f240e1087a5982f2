// Run details for the runners: a grant's lateness and occurrence count reach
// the RunRequest, an attempt's captured output travels in its completion and
// is stored on its AttemptRecord; version-2 records still decode, and the
// wire refuses an oversized output.
#include <gtest/gtest.h>

#include <optional>

#include "core/kernel/records.h"
#include "core/kernel/wire.h"
#include "tests/support/node_world.h"
#include "tests/support/policy_fixture.h"

namespace kairos {
namespace {

using namespace test_support;

RunRecord run_with_attempt(std::string output) {
  RunRecord r;
  r.id = {"j", 2, T0()};
  r.state = RunState::kSucceeded;
  r.dispatched_at = T0();
  r.ready_at = T0();
  r.due_at = T0();
  AttemptRecord a;
  a.attempt = 1;
  a.token = 5;
  a.worker = "w1";
  a.end = AttemptEnd::kSucceeded;
  a.output = std::move(output);
  r.attempts.push_back(a);
  return r;
}

TEST(RunDetails, RecordsRoundTripOutputAndStillDecodeVersion2) {
  const RunRecord r = run_with_attempt("hello\nworld");
  const std::string bytes = encode(r);
  EXPECT_EQ(static_cast<std::uint8_t>(bytes[0]), kRecordVersion);
  ASSERT_TRUE(decode_run(bytes).ok());
  EXPECT_EQ(*decode_run(bytes), r);

  // The same record as the previous release wrote it: version byte 2 and no
  // output field (the attempt's output is the record's last field).
  const std::string v3_empty = encode(run_with_attempt(""));
  std::string v2 = v3_empty.substr(0, v3_empty.size() - 4);
  v2[0] = 2;
  auto back = decode_run(v2);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, run_with_attempt(""));
  // A version-2 job record has the version-3 layout.
  JobRecord j;
  j.spec = normalize_spec(interval_job("a"));
  std::string jv2 = encode(j);
  jv2[0] = 2;
  ASSERT_TRUE(decode_job(jv2).ok());
  EXPECT_EQ(*decode_job(jv2), j);
}

TEST(RunDetails, WireCarriesLatenessOccurrencesAndBoundedOutput) {
  wire::WireGrant g;
  g.run = RunId{"j", 1, T0()};
  g.token = 3;
  g.lease_ttl = absl::Seconds(30);
  g.payload = CommandPayload{{"/bin/true"}, {}, ""};
  g.timeout = absl::Minutes(1);
  g.late_by = absl::Seconds(90);
  g.occurrences = 4;
  const wire::Message m = wire::ClaimResponse{7, {g}};
  auto back = wire::decode(wire::encode(m));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(std::get<wire::ClaimResponse>(*back), std::get<wire::ClaimResponse>(m));

  wire::ClaimResponse neg{7, {g}};
  neg.grants[0].late_by = -absl::Seconds(1);
  EXPECT_NE(wire::decode(wire::encode(neg)).status().message().find("late_by"),
            std::string_view::npos);

  CompleteItem item{
      RunId{"j", 1, T0()}, 3, RunStatus::kSucceeded, 0, "ok", std::string(kMaxRunOutputSize, 'x')};
  const wire::Message c = wire::CompleteRequest{8, "w", {item}};
  auto cb = wire::decode(wire::encode(c));
  ASSERT_TRUE(cb.ok()) << cb.status();
  EXPECT_EQ(std::get<wire::CompleteRequest>(*cb).items[0].output.size(), kMaxRunOutputSize);
  item.output.push_back('y');
  auto big = wire::decode(wire::encode(wire::CompleteRequest{8, "w", {item}}));
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("output"), std::string_view::npos) << big.status();
}

class CompleteOutput : public PolicyTest {};

TEST_F(CompleteOutput, CompleteStoresTheOutputOnTheAttempt) {
  create(interval_job("a"));
  dispatch();
  auto grants = claim();
  ASSERT_EQ(grants.size(), 1u);
  CompleteResult out;
  std::vector<CompleteItem> items{
      {grants[0].run.id, grants[0].run.token, RunStatus::kSucceeded, 0, "ok", "printed"}};
  ASSERT_TRUE(b.run([&](Txn& t) { return store.complete(t, "w", items, &out); }).committed());
  const RunRecord r = run_of(grants[0].run.id);
  ASSERT_EQ(r.attempts.size(), 1u);
  EXPECT_EQ(r.attempts[0].output, "printed");
  // A retried report (same token) is accepted again and keeps it.
  ASSERT_TRUE(b.run([&](Txn& t) { return store.complete(t, "w", items, &out); }).committed());
  EXPECT_EQ(out.verdicts[0].verdict, WriteVerdict::kAccepted);
  EXPECT_EQ(run_of(grants[0].run.id).attempts[0].output, "printed");
}

// A runner that remembers its requests and finishes each at once with output.
class EchoRunner final : public Runner {
 public:
  explicit EchoRunner(Timers& loop) : loop_(loop) {}
  RunHandle start(RunRequest req, std::function<void(RunOutcome)> done) override {
    requests.push_back(req);
    loop_.post([done = std::move(done), key = req.idempotency_key] {
      RunOutcome o{RunStatus::kSucceeded, 0, "ok"};
      o.output = "out of " + key;
      done(o);
    });
    return ++next_;
  }
  void stop(RunHandle) override {}
  std::vector<RunRequest> requests;

 private:
  Timers& loop_;
  RunHandle next_ = 0;
};

TEST(RunDetails, WorkerHandsLatenessToTheRunnerAndOutputToTheStore) {
  NodeWorld w;
  NodeWorld::Node& n1 = w.add_node(node_config("n1", 1), 7);
  SchedulerNode& node = n1.node;
  EchoRunner& runner = w.keep<EchoRunner>(w.loop);
  Worker& worker = w.add_worker(runner, worker_config("w1", {n1.ep->id()}), 3).worker;
  JobSpec s = interval_job("a");
  s.policy.misfire = MisfirePolicy::kRunOnce;
  s.policy.misfire_threshold = absl::Seconds(1);
  std::optional<absl::StatusOr<CreateResult>> created;
  node.create_job(s, [&](auto r) { created = std::move(r); });
  // The node starts late: the first occurrences are missed and run-once
  // folds them into one late run.
  w.stepper.run(absl::Minutes(3) + absl::Seconds(30));
  ASSERT_TRUE(created && created->ok());
  node.start();
  worker.start();
  w.stepper.run(absl::Seconds(10));
  ASSERT_FALSE(runner.requests.empty());
  const RunRequest& first = runner.requests.front();
  EXPECT_GT(first.late_by, absl::ZeroDuration());
  EXPECT_GT(first.occurrences, 1u);
  bool found = false;
  for (const RunRecord& r : w.runs()) {
    if (r.id.nominal != first.nominal_time) continue;
    found = true;
    EXPECT_EQ(r.lateness, first.late_by);
    EXPECT_EQ(r.stands_for, first.occurrences);
    ASSERT_FALSE(r.attempts.empty());
    EXPECT_EQ(r.attempts.back().output, "out of " + idempotency_key(r.id));
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace kairos
