// The operator metrics of the scheduler node (core/kernel/node_metrics.h):
// lateness histograms, the due backlog gauge, runs by outcome, leadership
// changes, store transaction latency, and a HELP text for every family.
// Everything runs on the manual clock: a node is held late by pausing its
// loop (its timers wait; store results and messages still arrive).
#include "core/kernel/node_metrics.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "core/kernel/event_kinds.h"
#include "core/kernel/node_support.h"
#include "core/kernel/scheduler_node.h"
#include "tests/support/kernel_test_util.h"
#include "tests/support/node_world.h"

namespace kairos {
namespace {

using namespace test_support;  // the node world and the job builders

constexpr std::int64_t kSecondUs = 1'000'000;

// The per-bucket count of the bucket whose upper bound is `le` microseconds.
std::uint64_t bucket(const Histogram& h, std::int64_t le) {
  for (std::size_t i = 0; i < h.upper_bounds().size(); ++i)
    if (h.upper_bounds()[i] == le) return h.bucket_counts()[i];
  ADD_FAILURE() << "no bucket le=" << le;
  return 0;
}

// Node "n1" (one shard) on its own loop, which a test can pause.
struct PausableNode : NodeWorld {
  explicit PausableNode(SchedulerNodeConfig config = node_config("n1", 1)) : config_(config) {}
  SchedulerNodeConfig config_;
  ManualLoop& node_loop = stepper.add_loop();  // loop 1
  Node& n1 = add_node(config_, 7, {.loop = &node_loop});
  Metrics& metrics = n1.metrics;

  void create(JobSpec spec) {
    bool done = false;
    n1.node.create_job(std::move(spec), [&](absl::StatusOr<CreateResult> r) {
      ASSERT_TRUE(r.ok()) << r.status();
      done = true;
    });
    stepper.run(absl::Milliseconds(100));
    ASSERT_TRUE(done);
  }
  // Holds the node's timers from now until `until`, then lets them run.
  void hold_until(absl::Time until) {
    stepper.pause(1, true);
    stepper.run(until - clock.now());
    stepper.pause(1, false);
  }
  std::int64_t backlog() const {
    return n1.metrics.gauge_value(node_metrics::shard_series(node_metrics::kDueBacklog, 0));
  }
};

TEST(NodeMetrics, ARunDueAtTDispatchedAtTPlus3sLandsInTheFiveSecondBucket) {
  PausableNode w;
  w.n1.node.start();
  w.stepper.run(absl::Seconds(1));
  ASSERT_TRUE(w.n1.node.leads(0));
  const absl::Time due = T0() + absl::Seconds(10);
  w.create(once_job("a", due));
  w.stepper.run(due - absl::Seconds(1) - w.clock.now());
  w.hold_until(due + absl::Seconds(3));
  w.stepper.run(absl::Seconds(1));

  const Histogram* h = w.metrics.find_histogram(node_metrics::kDispatchLateness);
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->count(), 1u);
  EXPECT_EQ(bucket(*h, 5 * kSecondUs), 1u);  // (2.5s, 5s]
  EXPECT_GE(h->sum(), 3 * kSecondUs);
  EXPECT_LT(h->sum(), 3 * kSecondUs + 200'000);  // within a few 50 ms steps
  // Exported cumulatively under the family's name and HELP.
  const std::string text = w.metrics.to_prometheus();
  EXPECT_NE(text.find("kairos_dispatch_lateness_us_bucket{le=\"2500000\"} 0\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("kairos_dispatch_lateness_us_bucket{le=\"5000000\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("# HELP kairos_dispatch_lateness_us Time from a run's due time"),
            std::string::npos);
}

TEST(NodeMetrics, AnOnTimeDispatchIsInTheLowestBuckets) {
  PausableNode w;
  w.n1.node.start();
  w.stepper.run(absl::Seconds(1));
  w.create(once_job("a", T0() + absl::Seconds(5)));
  w.stepper.run(absl::Seconds(6));
  const Histogram* h = w.metrics.find_histogram(node_metrics::kDispatchLateness);
  ASSERT_NE(h, nullptr);
  ASSERT_EQ(h->count(), 1u);
  // The node wakes for the due entry: late by at most one 50 ms step.
  EXPECT_LE(h->sum(), 50'000);
}

TEST(NodeMetrics, FireLatenessIsMeasuredAtTheFirstGrant) {
  PausableNode w;
  FakeRunner& runner = w.add_runner(absl::Seconds(1));
  TestWorker& worker = w.add_worker(runner, worker_config("w1", {w.n1.ep->id()}), 3);
  w.n1.node.start();
  worker.worker.start();
  w.stepper.run(absl::Seconds(1));
  const absl::Time due = T0() + absl::Seconds(10);
  w.create(once_job("a", due));
  w.stepper.run(due - absl::Seconds(1) - w.clock.now());
  w.hold_until(due + absl::Seconds(3));
  w.stepper.run(absl::Seconds(5));
  ASSERT_EQ(w.sink.effects.size(), 1u);

  const Histogram* h = w.metrics.find_histogram(node_metrics::kFireLateness);
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->count(), 1u);
  EXPECT_EQ(bucket(*h, 5 * kSecondUs), 1u);
  // The run succeeded: counted by outcome, and the event counter agrees.
  EXPECT_EQ(w.metrics.counter_value("kairos_runs_total{outcome=\"succeeded\"}"), 1);
  EXPECT_EQ(w.metrics.counter_value("kairos_run_completed_total"), 1);
}

TEST(NodeMetrics, BacklogIsWhatTheLastPassFoundDue) {
  PausableNode w;
  w.n1.node.start();
  w.stepper.run(absl::Seconds(1));
  EXPECT_EQ(w.backlog(), 0);  // exported at 0 from the start
  const absl::Time due = T0() + absl::Seconds(10);
  for (const char* id : {"a", "b", "c"}) w.create(once_job(id, due));
  w.stepper.run(due - absl::Seconds(1) - w.clock.now());
  w.hold_until(due + absl::Seconds(2));
  w.stepper.run(absl::Milliseconds(50));  // one pass: all three were due
  EXPECT_EQ(w.backlog(), 3);
  EXPECT_EQ(w.metrics.counter_value("kairos_run_dispatched_total"), 3);
  w.stepper.run(absl::Seconds(2));  // later passes find nothing due
  EXPECT_EQ(w.backlog(), 0);
  EXPECT_NE(w.metrics.to_prometheus().find("# TYPE kairos_due_backlog gauge\n"
                                           "kairos_due_backlog{shard=\"0\"} 0\n"),
            std::string::npos);
}

// A runner whose runs end at once with a fixed status.
class StatusRunner final : public Runner {
 public:
  StatusRunner(Timers& loop, RunStatus status) : loop_(loop), status_(status) {}
  RunHandle start(RunRequest, std::function<void(RunOutcome)> done) override {
    loop_.post([done = std::move(done), s = status_] { done(RunOutcome{s, 1, "scripted"}); });
    return ++next_;
  }
  void stop(RunHandle) override {}

 private:
  Timers& loop_;
  RunStatus status_;
  RunHandle next_ = 0;
};

TEST(NodeMetrics, RunsAreCountedByOutcomeAndRetriesByTheirEvent) {
  PausableNode w;
  StatusRunner& runner = w.keep<StatusRunner>(w.loop, RunStatus::kTimedOut);
  TestWorker& worker = w.add_worker(runner, worker_config("w1", {w.n1.ep->id()}), 3);
  w.n1.node.start();
  worker.worker.start();
  w.stepper.run(absl::Seconds(1));
  JobSpec spec = once_job("a", T0() + absl::Seconds(3));
  spec.policy.max_attempts = 2;
  spec.policy.retry_initial = absl::Seconds(1);
  w.create(spec);
  w.stepper.run(absl::Seconds(20));
  EXPECT_EQ(w.metrics.counter_value("kairos_run_retry_scheduled_total"), 1);
  EXPECT_EQ(w.metrics.counter_value("kairos_runs_total{outcome=\"timed_out\"}"), 1);
  EXPECT_EQ(w.metrics.counter_value("kairos_runs_total{outcome=\"succeeded\"}"), 0);
  // Only the run's first grant is a fire.
  const Histogram* h = w.metrics.find_histogram(node_metrics::kFireLateness);
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->count(), 1u);
  EXPECT_EQ(w.metrics.counter_value("kairos_run_claimed_total"), 2);
}

TEST(NodeMetrics, LeaderChangesAreCountedOnBothSides) {
  PausableNode w;
  NodeWorld::Node& n2 = w.add_node(node_config("n2", 1), 8);
  w.n1.node.start();
  w.stepper.run(absl::Seconds(1));
  ASSERT_TRUE(w.n1.node.leads(0));
  n2.node.start();
  w.stepper.run(absl::Seconds(1));
  EXPECT_EQ(w.metrics.counter_value("kairos_leader_acquired_total"), 1);
  EXPECT_EQ(n2.metrics.counter_value("kairos_leader_acquired_total"), 0);
  // n1 stalls past its leader lease: n2 takes over, n1 notices it lost.
  w.hold_until(w.clock.now() + absl::Seconds(15));
  w.stepper.run(absl::Seconds(2));
  EXPECT_TRUE(n2.node.leads(0));
  EXPECT_FALSE(w.n1.node.leads(0));
  EXPECT_EQ(n2.metrics.counter_value("kairos_leader_acquired_total"), 1);
  EXPECT_EQ(w.metrics.counter_value("kairos_leader_lost_total"), 1);
  EXPECT_EQ(w.backlog(), 0);
  const std::string text = w.metrics.to_prometheus();
  EXPECT_NE(text.find("# HELP kairos_leader_lost_total "), std::string::npos);
  EXPECT_NE(text.find("# HELP kairos_leader_acquired_total "), std::string::npos);
}

TEST(NodeMetrics, EveryCountedTransactionHasALatencyObservation) {
  PausableNode w;
  w.n1.node.start();
  w.create(interval_job("a", absl::Seconds(1)));
  w.stepper.run(absl::Seconds(5));
  for (std::string_view op : {"init", "leader", "dispatch", "reap", "create"}) {
    const Histogram* h =
        w.metrics.find_histogram(node_metrics::op_series(node_metrics::kTxnDuration, op));
    ASSERT_NE(h, nullptr) << op;
    std::int64_t counted = 0;
    for (std::string_view outcome : {"committed", "conflict", "aborted", "unavailable", "unknown"})
      counted += w.metrics.counter_value(absl::StrCat("kairos_txn_total{op=\"", absl_sv(op),
                                                      "\",outcome=\"", absl_sv(outcome), "\"}"));
    EXPECT_GT(counted, 0) << op;
    EXPECT_EQ(static_cast<std::int64_t>(h->count()), counted) << op;
  }
}

TEST(NodeMetrics, AMalformedMessageIsCountedOnce) {
  PausableNode w;
  LoopbackHub::Endpoint& peer = w.add_endpoint();
  w.n1.node.start();
  w.stepper.run(absl::Seconds(1));
  peer.send(w.n1.ep->id(), "not a wire message");
  w.stepper.run(absl::Milliseconds(100));
  EXPECT_EQ(w.metrics.counter_value("kairos_wire_malformed_total"), 1);
}

TEST(NodeMetrics, EveryEventKindAndFamilyHasHelp) {
  for (std::string_view kind : event_kinds::kAllEventKinds)
    EXPECT_FALSE(node_metrics::event_help(kind).empty()) << kind;
  EXPECT_TRUE(node_metrics::event_help("no.such_kind").empty());
  PausableNode w;
  w.n1.node.start();
  w.stepper.run(absl::Seconds(2));
  // Every exported family has a HELP line right before its TYPE line.
  const std::string text = w.metrics.to_prometheus();
  std::size_t families = 0;
  for (std::size_t at = text.find("# TYPE "); at != std::string::npos;
       at = text.find("# TYPE ", at + 1)) {
    ++families;
    const std::string name = text.substr(at + 7, text.find(' ', at + 7) - at - 7);
    const std::string help = "# HELP " + name + " ";
    const std::size_t help_at = text.rfind(help, at);
    EXPECT_TRUE(help_at != std::string::npos && text.find('\n', help_at) + 1 == at) << name;
  }
  EXPECT_GT(families, 10u);
  // The operator series exist at 0 before anything happened.
  for (std::string_view outcome : node_metrics::kRunOutcomes)
    EXPECT_NE(text.find(absl::StrCat("kairos_runs_total{outcome=\"", absl_sv(outcome), "\"} 0\n")),
              std::string::npos)
        << outcome;
  EXPECT_NE(text.find("kairos_write_rejected_stale_token_total 0\n"), std::string::npos);
  EXPECT_NE(text.find("kairos_run_lease_lapsed_total 0\n"), std::string::npos);
}

TEST(NodeMetrics, RunOutcomeReadsTheCompletionStatus) {
  Event done;
  done.kind = event_kinds::kRunCompleted;
  done.with("status", static_cast<std::uint64_t>(RunStatus::kFailedPermanent));
  EXPECT_EQ(node_metrics::run_outcome(done), "failed_permanent");
  Event cancelled;
  cancelled.kind = event_kinds::kRunCancelled;
  EXPECT_EQ(node_metrics::run_outcome(cancelled), "cancelled");
  Event other;
  other.kind = event_kinds::kRunClaimed;
  EXPECT_EQ(node_metrics::run_outcome(other), std::nullopt);
}

}  // namespace
}  // namespace kairos
