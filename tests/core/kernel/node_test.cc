// SchedulerNode and Worker over every commit outcome.
#include <gtest/gtest.h>

#include <set>

#include "core/kernel/keyspace.h"
#include "core/kernel/scheduler_node.h"
#include "core/kernel/worker.h"
#include "core/twins/loopback_transport.h"
#include "tests/support/kernel_test_util.h"
#include "tests/support/node_world.h"

namespace kairos {
namespace {

using namespace test_support;  // the node world and the job builders

// Node "n1" behind a store with scripted faults, and an endpoint for a worker.
struct OneNode : test_support::NodeWorld {
  test_support::ScriptedStorage& storage = keep<test_support::ScriptedStorage>(mem, loop);
  Node& n1 = add_node(node_config("n1"), 7, {.storage = &storage});
  SchedulerNode& node = n1.node;
  LoopbackHub::Endpoint& node_ep = *n1.ep;
  LoopbackHub::Endpoint& worker_ep = add_endpoint();
  Metrics& metrics = n1.metrics;
};

TEST(SchedulerNode, CreateIsAcknowledgedOnlyAfterADefiniteOutcome) {
  OneNode w;
  std::optional<absl::StatusOr<CreateResult>> got;
  auto cb = [&](absl::StatusOr<CreateResult> r) { got = std::move(r); };

  w.storage.push(Fault::kUnknownApplied);
  w.node.create_job(interval_job("a"), cb);
  w.stepper.run(absl::Seconds(5));
  ASSERT_TRUE(got && got->ok()) << (got ? got->status() : absl::OkStatus());
  EXPECT_EQ(w.count_keys(keys::kJob), 1u);
  EXPECT_EQ((*got)->job.incarnation, 1u);  // the retry found its own commit

  got.reset();
  w.storage.push(Fault::kUnknownNotApplied);
  w.storage.push(Fault::kConflict);
  w.storage.push(Fault::kUnavailable);
  w.node.create_job(interval_job("b"), cb);
  w.stepper.run(absl::Seconds(5));
  ASSERT_TRUE(got && got->ok());
  EXPECT_TRUE((*got)->created);
  EXPECT_EQ(w.count_keys(keys::kJob), 2u);

  got.reset();
  w.storage.push(Fault::kUnknownNotApplied, 10);
  w.node.create_job(interval_job("c"), cb);
  w.stepper.run(absl::Seconds(30));
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(got->status().message().find("retrying the same request is safe"), std::string::npos);

  // Generated ids are deterministic given the Random, and validation errors
  // name the field before any transaction.
  got.reset();
  JobSpec bad = interval_job("");
  bad.policy.max_attempts = 0;
  w.node.create_job(bad, cb);
  w.stepper.run(absl::Seconds(1));
  EXPECT_NE(got->status().message().find("policy.max_attempts"), std::string::npos);
}

// Every txn of a whole node + worker pipeline sees a random fault; safety and
// eventual progress hold.
class FaultyPipeline : public ::testing::TestWithParam<std::uint64_t> {};

TEST_P(FaultyPipeline, EveryOccurrenceRunsAndTokensFence) {
  OneNode w;
  Random faults(GetParam());
  bool faulty = true;
  w.storage.set_fault_fn([&] {
    if (!faulty) return Fault::kNone;
    switch (faults.below(10)) {
      case 0:
        return Fault::kUnknownApplied;
      case 1:
        return Fault::kUnknownNotApplied;
      case 2:
        return Fault::kConflict;
      case 3:
        return Fault::kUnavailable;
      default:
        return Fault::kNone;
    }
  });
  test_support::Sink sink;
  test_support::FakeRunner runner(w.loop, w.clock, sink, absl::Seconds(3));
  test_support::TestWorker tw(w.clock, w.loop, w.worker_ep, runner, {w.node_ep.id()}, 99);
  w.node.start();
  tw.worker.start();
  int created = 0;
  for (int i = 0; i < 4; ++i) {
    // Overlap `allow` and a long misfire threshold, so a run slowed
    // by faults neither skips nor coalesces the next occurrence (the policy
    // defaults are tested in tests/policy).
    JobSpec spec = interval_job("job" + std::to_string(i));
    spec.policy.overlap = OverlapPolicy::kAllow;
    spec.policy.max_concurrent = 20;
    spec.policy.misfire_threshold = absl::Hours(1);
    spec.policy.max_attempts = 100;
    w.node.create_job(spec, [&](auto r) { created += r.ok(); });
  }
  w.node.create_job(once_job("once", T0() + absl::Minutes(3)), [&](auto r) { created += r.ok(); });
  w.stepper.run(absl::Minutes(20));
  faulty = false;
  w.stepper.run(absl::Minutes(3));
  ASSERT_EQ(created, 5);

  // No occurrence skipped: every nominal time up to the quiet tail has a run,
  // and it succeeded.
  const absl::Time horizon = T0() + absl::Minutes(20);
  std::map<std::string, std::set<absl::Time>> nominals;
  for (const RunRecord& r : w.runs()) {
    nominals[r.id.job_id].insert(r.id.nominal);
    if (r.id.nominal <= horizon) {
      EXPECT_EQ(r.state, RunState::kSucceeded) << idempotency_key(r.id);
    }
  }
  for (int i = 0; i < 4; ++i) {
    const auto& s = nominals["job" + std::to_string(i)];
    for (absl::Time t = T0() + absl::Minutes(1); t <= horizon; t += absl::Minutes(1))
      EXPECT_TRUE(s.count(t)) << i;
  }
  EXPECT_EQ(nominals["once"].size(), 1u);
  // Effects of one occurrence carry distinct, increasing tokens: a retry, not
  // a duplicate under the same lease.
  for (const auto& [key, tokens] : sink.by_key())
    for (std::size_t i = 1; i < tokens.size(); ++i) EXPECT_LT(tokens[i - 1], tokens[i]) << key;
  EXPECT_GT(w.metrics.counter_value("kairos_run_completed_total"), 50);
}

INSTANTIATE_TEST_SUITE_P(Seeds, FaultyPipeline, ::testing::Values(1, 2, 3, 4, 5));

// A clock running at half speed: time as a drifting node sees it.
class SlowClock final : public Clock {
 public:
  SlowClock(const Clock& base, absl::Time origin) : base_(base), origin_(origin) {}
  absl::Time now() const override { return origin_ + (base_.now() - origin_) / 2; }

 private:
  const Clock& base_;
  absl::Time origin_;
};

// A leader paused past its store lease, whose clock drifts beyond the
// tolerated bound so it believes it still leads: its writes are rejected by
// the epoch check, recorded, and no occurrence is dispatched twice.
TEST(SchedulerNode, StalledExLeaderWritesAreRejected) {
  test_support::NodeWorld w;  // a runs on the main loop (stepper loop 0), b on loop_b
  test_support::Stepper& stepper = w.stepper;
  ManualLoop& loop_b = stepper.add_loop();
  auto& store_a = w.keep<test_support::ScriptedStorage>(w.mem, w.loop);
  auto& store_b = w.keep<test_support::ScriptedStorage>(w.mem, loop_b);
  const auto& slow = w.keep<SlowClock>(w.clock, T0());
  MemoryEventLog& events = w.events;
  auto& node_a = w.add_node(node_config("a", 1), 1, {.storage = &store_a, .clock = &slow});
  SchedulerNode& a = node_a.node;
  Metrics& ma = node_a.metrics;
  a.start();
  stepper.run(absl::Seconds(2));
  ASSERT_TRUE(a.leads(0));
  auto& node_b = w.add_node(node_config("b", 1), 2, {.storage = &store_b, .loop = &loop_b});
  SchedulerNode& b = node_b.node;
  b.start();
  std::optional<absl::StatusOr<CreateResult>> got;
  JobSpec spec = interval_job("j", absl::Seconds(10), T0() + absl::Seconds(20));
  spec.policy.overlap = OverlapPolicy::kAllow;  // no worker runs them
  spec.policy.max_concurrent = 100;
  b.create_job(spec, [&](auto r) { got = r; });
  stepper.run(absl::Milliseconds(3500));  // a renewed at 5.05s (2.525s by its clock)
  ASSERT_TRUE(got && got->ok());
  EXPECT_FALSE(b.leads(0));
  stepper.pause(0, true);  // a stalls; its store lease lapses at ~15s
  stepper.run(absl::Seconds(12));
  EXPECT_TRUE(b.leads(0));
  stepper.pause(0, false);  // a wakes believing (by its slow clock) it still leads
  stepper.run(absl::Seconds(60));
  EXPECT_GE(events.count("write.rejected_stale_epoch"), 1u);
  if (::testing::Test::HasFailure())
    for (const Event& e : events.events())
      if (e.kind.substr(0, 3) != "run") std::fprintf(stderr, "%s\n", format_event(e).c_str());
  EXPECT_GE(ma.counter_value("kairos_write_rejected_stale_epoch_total"), 1);
  // Each refusal names the epoch the refused write was made under: a's.
  for (const Event& e : events.events())
    if (e.kind == "write.rejected_stale_epoch") {
      const auto* epoch = e.find("epoch");
      ASSERT_NE(epoch, nullptr);
      EXPECT_EQ(std::get<std::uint64_t>(*epoch), 1u) << format_event(e);
    }
  EXPECT_FALSE(a.leads(0));
  EXPECT_TRUE(b.leads(0));
  // Each occurrence was dispatched exactly once.
  std::map<std::string, int> dispatched;
  for (const Event& e : events.events())
    if (e.kind == "run.dispatched")
      ++dispatched[format_event(Event{absl::UnixEpoch(), e.kind, {e.fields[0], e.fields[2]}})];
  EXPECT_GE(dispatched.size(), 5u);
  for (const auto& [k, n] : dispatched) EXPECT_EQ(n, 1) << k;
}

// A non-leader reads the leader record only once the holder's lease could
// have lapsed (not every tick), and still takes over right after it does.
TEST(SchedulerNode, NonLeaderWaitsOutTheHoldersLeaseThenTakesOver) {
  test_support::NodeWorld w;  // a runs on the main loop (stepper loop 0), b on loop_b
  test_support::Stepper& stepper = w.stepper;
  ManualLoop& loop_b = stepper.add_loop();
  SchedulerNode& a = w.add_node(node_config("a", 1), 1).node;
  a.start();
  stepper.run(absl::Seconds(2));
  ASSERT_TRUE(a.leads(0));
  auto& node_b = w.add_node(node_config("b", 1), 2, {.loop = &loop_b});
  SchedulerNode& b = node_b.node;
  Metrics& mb = node_b.metrics;
  b.start();
  const absl::Duration watched = absl::Minutes(1);
  stepper.run(watched);
  EXPECT_FALSE(b.leads(0));
  const auto leader_txns =
      mb.counter_value("kairos_txn_total{op=\"leader\",outcome=\"committed\"}");
  const std::int64_t ticks = watched / b.config().poll_interval;
  const std::int64_t per_lease = b.config().lease.leader_ttl / b.config().poll_interval;
  EXPECT_GE(leader_txns, 1);
  EXPECT_LE(leader_txns,
            2 * ticks / per_lease + 2);  // about one per leader lease, not one per tick
  a.stop();                              // the holder dies; its lease lapses within leader_ttl
  stepper.run(b.config().lease.leader_ttl + 3 * b.config().poll_interval);
  EXPECT_TRUE(b.leads(0));
}

// A leader whose shard's next due entry comes before its next poll wakes for
// it: a fire is late by a store round trip, not by up to a poll interval.
TEST(SchedulerNode, DispatchWakesForTheNextDueEntryBetweenPolls) {
  test_support::NodeWorld w;
  test_support::Stepper& stepper = w.stepper;
  SchedulerNodeConfig c = node_config("n", 1);
  c.poll_interval = c.lease.leader_renew_period;  // the longest poll allowed (2.5s)
  SchedulerNode& node = w.add_node(c, 1).node;
  node.start();
  stepper.run(absl::Seconds(1));
  ASSERT_TRUE(node.leads(0));
  bool created = false;
  const absl::Time at = T0() + absl::Seconds(6) + absl::Milliseconds(300);  // between polls
  node.create_job(once_job("a", at), [&](auto res) { created = res.ok(); });
  stepper.run(absl::Seconds(20));
  ASSERT_TRUE(created);
  const auto runs = w.runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_GE(runs[0].dispatched_at, at);
  EXPECT_LT(runs[0].dispatched_at - at, absl::Milliseconds(50));
}

TEST(SchedulerNode, ConfigValidationNamesTheField) {
  SchedulerNodeConfig c = node_config("n");
  c.shard_count = 0;
  EXPECT_NE(validate(c).message().find("node.shard_count"), std::string::npos);
  c = node_config("");
  EXPECT_NE(validate(c).message().find("node.node_id"), std::string::npos);
  WorkerConfig w;
  w.worker_id = "w";
  EXPECT_NE(validate(w).message().find("worker.nodes"), std::string::npos);
  w.nodes = {1};
  EXPECT_TRUE(validate(w).ok());
  w.claim_wait = w.lease.lease_ttl;  // grants would arrive with their lease nearly gone
  EXPECT_NE(
      validate(w).message().find("worker.claim_wait: must be at most half of lease.lease_ttl"),
      std::string::npos);
}

}  // namespace
}  // namespace kairos
