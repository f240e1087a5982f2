// Node- and worker-level policy behaviour: the per-run timeout enforced by
// the worker (a failure for retries), clock sanity (a skewed node stops
// leading and claiming and resumes), and the job-control API on the node.
#include <gtest/gtest.h>

#include "core/kernel/keyspace.h"
#include "core/kernel/scheduler_node.h"
#include "core/kernel/worker.h"
#include "core/twins/loopback_transport.h"
#include "tests/support/kernel_test_util.h"
#include "tests/support/node_world.h"

namespace kairos {
namespace {

using namespace test_support;  // the node world and the job builders

// A node clock at a settable offset from the store's.
class OffsetClock final : public Clock {
 public:
  explicit OffsetClock(const Clock& base) : base_(base) {}
  absl::Time now() const override { return base_.now() + offset; }
  absl::Duration offset;

 private:
  const Clock& base_;
};

// Node "n1" (one shard) on a clock at a settable offset, and an endpoint for
// a worker.
struct World : test_support::NodeWorld {
  OffsetClock& node_clock = keep<OffsetClock>(clock);
  Node& n1 = add_node(node_config("n1", 1), 7, {.clock = &node_clock});
  SchedulerNode* node = &n1.node;
  LoopbackHub::Endpoint& node_ep = *n1.ep;
  LoopbackHub::Endpoint& worker_ep = add_endpoint();
  Metrics& metrics = n1.metrics;
};

TEST(WorkerTimeout, RunIsStoppedAtItsTimeoutAndRetriedAsAFailure) {
  World w;
  test_support::FakeRunner runner(w.loop, w.clock, w.sink,
                                  absl::Minutes(10));  // never finishes in time
  test_support::TestWorker tw(w.clock, w.loop, w.worker_ep, runner, {w.node_ep.id()}, 3);
  w.node->start();
  tw.worker.start();
  JobSpec s = once_job("a", T0() + absl::Seconds(1));
  s.policy.timeout = absl::Minutes(1);  // longer than the 30s lease: renewals keep it alive
  s.policy.max_attempts = 2;
  s.policy.retry_initial = absl::Seconds(5);
  bool created = false;
  w.node->create_job(s, [&](auto r) { created = r.ok(); });
  w.stepper.run(absl::Minutes(5));
  ASSERT_TRUE(created);
  EXPECT_EQ(tw.events.count("worker.run_timeout"), 2u);
  EXPECT_EQ(tw.events.count("worker.lease_deadline"), 0u);
  EXPECT_EQ(w.events.count("run.retry_scheduled"), 1u);
  auto runs = w.runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].state, RunState::kFailed);
  EXPECT_EQ(runs[0].outcome, RunStatus::kTimedOut);
  ASSERT_EQ(runs[0].attempts.size(), 2u);
  EXPECT_EQ(runs[0].attempts[0].end, AttemptEnd::kTimedOut);
  // Timed out at start + 1m (the lease was renewed meanwhile).
  EXPECT_GE(runs[0].attempts[0].finished_at - runs[0].attempts[0].claimed_at, absl::Minutes(1));
  EXPECT_LT(runs[0].attempts[0].finished_at - runs[0].attempts[0].claimed_at,
            absl::Minutes(1) + absl::Seconds(5));
}

TEST(ClockSanity, SkewedNodeStopsLeadingAndClaimingThenResumes) {
  World w;
  w.node->start();
  w.stepper.run(absl::Seconds(2));
  ASSERT_TRUE(w.node->leads(0));
  ASSERT_TRUE(w.node->clock_sane());
  w.node_clock.offset = absl::Seconds(11);  // bound 10s
  w.stepper.run(absl::Seconds(2));
  EXPECT_FALSE(w.node->clock_sane());
  EXPECT_FALSE(w.node->leads(0));
  EXPECT_EQ(w.events.count("node.clock_skew"), 1u);
  EXPECT_EQ(w.metrics.counter_value("kairos_node_clock_skew_total"), 1);
  // A claim is refused while skewed.
  std::vector<std::string> replies;
  w.worker_ep.set_handler([&](PeerId, std::string_view bytes) {
    auto m = wire::decode(bytes);
    if (m.ok() && std::holds_alternative<wire::ErrorMessage>(*m))
      replies.push_back(std::get<wire::ErrorMessage>(*m).message);
  });
  w.worker_ep.send(w.node_ep.id(), wire::encode(wire::ClaimRequest{1, "w", 1, absl::Seconds(1)}));
  w.stepper.run(absl::Seconds(1));
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_NE(replies[0].find("skew"), std::string::npos);
  // Within bound again (a negative offset inside the bound is fine too).
  w.node_clock.offset = absl::Seconds(-9);
  w.stepper.run(absl::Seconds(3));
  EXPECT_TRUE(w.node->clock_sane());
  EXPECT_EQ(w.events.count("node.clock_ok"), 1u);
  EXPECT_TRUE(w.node->leads(0));
}

// Found by the simulator (scenarios/clock-drift-past-bound.scenario): a
// worker whose first node refuses claims (its clock is skewed) must move on
// to a healthy node instead of retrying the refusing one forever.
TEST(ClockSanity, WorkerMovesOnFromANodeThatRefusesClaims) {
  World w;  // node n1, skewed below
  auto& n2 = w.add_node(node_config("n2", 1), 11, {.own_events = true});
  SchedulerNode& healthy = n2.node;
  LoopbackHub::Endpoint& healthy_ep = *n2.ep;
  test_support::FakeRunner runner(w.loop, w.clock, w.sink, absl::Seconds(1));
  // The refusing node first.
  test_support::TestWorker tw(w.clock, w.loop, w.worker_ep, runner,
                              {w.node_ep.id(), healthy_ep.id()}, 3);
  w.node_clock.offset = absl::Minutes(5);
  w.node->start();
  healthy.start();
  tw.worker.start();
  bool created = false;
  healthy.create_job(once_job("a", T0() + absl::Seconds(10)),
                     [&](auto res) { created = res.ok(); });
  w.stepper.run(absl::Minutes(2));
  ASSERT_TRUE(created);
  EXPECT_FALSE(w.node->clock_sane());
  auto runs = w.runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].state, RunState::kSucceeded);
  EXPECT_EQ(w.sink.effects.size(), 1u);
}

TEST(NodeJobApi, PauseTriggerApplyLedgerThroughTheNode) {
  World w;
  w.node->start();
  w.stepper.run(absl::Seconds(1));
  JobSpec s = interval_job("a", absl::Minutes(1), T0() + absl::Minutes(1));
  s.labels = {{"env", "prod"}};
  std::optional<absl::StatusOr<ControlResult>> applied;
  w.node->apply_job(s, [&](auto r) { applied = r; });
  w.stepper.run(absl::Seconds(1));
  ASSERT_TRUE(applied && applied->ok());
  EXPECT_TRUE((*applied)->created);
  std::optional<absl::StatusOr<ControlResult>> paused;
  w.node->pause_job("a", [&](auto r) { paused = r; });
  std::optional<absl::StatusOr<TriggerResult>> trig;
  w.node->trigger_job("a", false, [&](auto r) { trig = r; });
  w.stepper.run(absl::Seconds(1));
  ASSERT_TRUE(paused && paused->ok());
  EXPECT_TRUE((*paused)->job.paused);
  ASSERT_TRUE(trig && trig->ok()) << trig->status();
  EXPECT_EQ((*trig)->run.kind, RunKind::kManual);
  std::optional<absl::StatusOr<ListResult>> listed;
  w.node->list_jobs("", 10, JobFilter{"", {{"env", "prod"}}}, [&](auto r) { listed = r; });
  std::optional<absl::StatusOr<LedgerResult>> led;
  w.node->get_ledger(LedgerQuery{"a"}, [&](auto r) { led = r; });
  std::optional<absl::StatusOr<ControlResult>> bad;
  w.node->pause_job("missing", [&](auto r) { bad = r; });
  w.stepper.run(absl::Seconds(1));
  ASSERT_TRUE(listed && listed->ok());
  EXPECT_EQ((*listed)->jobs.size(), 1u);
  ASSERT_TRUE(led && led->ok());
  ASSERT_EQ((*led)->records.size(), 1u);
  EXPECT_EQ((*led)->records[0].outcome, LedgerOutcome::kManual);
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(bad->status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(w.events.count("job.paused"), 1u);
  EXPECT_EQ(w.events.count("job.triggered"), 1u);
}

}  // namespace
}  // namespace kairos
