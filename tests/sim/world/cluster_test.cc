#include "sim/world/cluster.h"

#include <gtest/gtest.h>

#include <set>

#include "core/kernel/keyspace.h"
#include "sim/oracle/determinism.h"
#include "sim/world/kernel_nodes.h"
#include "tests/support/history_builder.h"

namespace kairos::sim {
namespace {

Scenario small() {
  auto s = parse_scenario(R"(name small
duration 20m
quiet-tail 6m
topology schedulers=3 workers=3 shards=4
job interval count=10 every=30s
job cron count=4 expr="*/2 * * * *" zone=America/New_York
job once count=20 within=10m
cancel count=1 at=5m
swarm per-hour=30 for=1s..20s kinds=pause,crash,crash-at,partition,one-way,isolate,store-crash,store-outage,store-slow,net,clock-jump,clock-drift,sink-faults,swizzle,fleet-restart
)",
                          "small");
  EXPECT_TRUE(s.ok()) << s.status();
  return *s;
}

std::string first_violation(const Cluster& c) {
  if (c.report().violations.empty()) return "";
  const auto& v = c.report().violations[0];
  std::string out = v.invariant + ": " + v.detail;
  for (const auto& e : v.evidence) out += "\n  " + e;
  return out;
}

// The kernel on the simulated world: one seed gives one history.
TEST(Cluster, SameSeedSameTraceAndDifferentSeedsDiffer) {
  const Scenario s = small();
  Cluster a(s, 5), b(s, 5), c(s, 6);
  const RunSummary ra = a.run(), rb = b.run(), rc = c.run();
  EXPECT_EQ(ra.trace_hash, rb.trace_hash);
  EXPECT_EQ(ra.events, rb.events);
  EXPECT_NE(ra.trace_hash, rc.trace_hash);
  EXPECT_GT(ra.runs_fired, 300u);
  EXPECT_GT(ra.faults, 0u);
}

// The real SchedulerNode/Worker under every fault kind pass every invariant,
// and every invariant is checked (none pending, none skipped).
TEST(Cluster, KernelPassesEveryInvariantUnderFaults) {
  const Scenario s = small();
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    Cluster c(s, seed);
    const RunSummary r = c.run();
    EXPECT_TRUE(r.ok) << r.line() << "\n" << first_violation(c);
    EXPECT_EQ(c.report().checked.size(), Checker::with_defaults().invariants().size());
    EXPECT_GT(c.workload().created(), 30u);
    EXPECT_FALSE(c.workload().cancels().empty());
  }
}

// A clock jump with a length is stepped back by the same amount after it
// (NTP correcting a stepped clock); one without stays until the heal.
TEST(Cluster, AClockJumpWithALengthIsSteppedBackAfterIt) {
  auto s = parse_scenario(
      "name jump\nduration 30m\nquiet-tail 5m\n"
      "topology schedulers=2 workers=1 shards=1\n",
      "jump");
  ASSERT_TRUE(s.ok()) << s.status();
  Cluster c(*s, 1);
  const NodeId a = c.schedulers()[0], b = c.schedulers()[1];
  const absl::Duration a0 = c.clock(a).offset(), b0 = c.clock(b).offset();
  FaultSpec corrected;
  corrected.kind = FaultKind::kClockJump;
  corrected.node = "scheduler-1";
  corrected.amount = absl::Seconds(-12);
  corrected.length = absl::Minutes(2);
  c.apply(corrected);
  FaultSpec kept = corrected;
  kept.node = "scheduler-2";
  kept.length = absl::ZeroDuration();
  c.apply(kept);
  c.world().run_for(absl::Minutes(1));
  EXPECT_EQ(c.clock(a).offset() - a0, absl::Seconds(-12));
  EXPECT_EQ(c.clock(b).offset() - b0, absl::Seconds(-12));
  c.world().run_for(absl::Minutes(2));
  EXPECT_EQ(c.clock(a).offset(), a0);
  EXPECT_EQ(c.clock(b).offset() - b0, absl::Seconds(-12));
}

TEST(Cluster, WorkloadExpectsTheCronEnginesOccurrencesAcrossDst) {
  auto s = parse_scenario(R"(name dst
start 2026-03-29T00:00:00Z
duration 3h
quiet-tail 30m
topology schedulers=1 workers=1 shards=1
job cron count=2 expr="30 2 * * *" zone=Europe/Berlin
)",
                          "dst");
  ASSERT_TRUE(s.ok()) << s.status();
  Cluster c(*s, 1);
  const RunSummary r = c.run();
  EXPECT_TRUE(r.ok) << first_violation(c);
  // 02:30 does not exist in Berlin that day; the default gap policy fires at
  // the transition (01:00Z), once per job.
  std::size_t fires = 0;
  for (const auto& o : *c.history().expected) {
    EXPECT_EQ(o.due, absl::FromUnixSeconds(1774746000));
    ++fires;
  }
  EXPECT_EQ(fires, 2u);
}

// The workload drives pause/resume, reschedule and trigger through the
// kernel's job API and shapes what it expects around them.
TEST(Cluster, WorkloadDrivesJobControlAndExpectsAroundIt) {
  auto s = parse_scenario(R"(name control
duration 20m
quiet-tail 5m
topology schedulers=2 workers=2 shards=2
job interval count=4 every=30s priority=2..8 run=1s..3s
job cron count=2 expr="* * * * *" zone=UTC
pause at=3m count=2 job=1 for=2m
pause at=4m count=1 job=2
reschedule at=6m count=1 job=2 every=45s
trigger at=8m count=2 job=1
)",
                          "control");
  ASSERT_TRUE(s.ok()) << s.status();
  Cluster c(*s, 3);
  const RunSummary r = c.run();
  EXPECT_TRUE(r.ok) << first_violation(c);
  const Workload& w = c.workload();
  // 2 pauses, 2 resumes, 1 pause for good, 1 reschedule, 2 triggers.
  EXPECT_EQ(w.controls_acked() + w.controls_refused(), 8u);
  EXPECT_GE(w.controls_acked(), 6u);  // a trigger may meet a running run
  ASSERT_EQ(w.client_jobs().size(), 6u);
  for (const ClientJob& j : w.client_jobs()) {
    EXPECT_TRUE(j.recurring);
    EXPECT_EQ(j.policy.timeout, s->timing.job_timeout);
    if (j.id.rfind("every-", 0) == 0) {
      EXPECT_GE(j.policy.priority, 2);
      EXPECT_LE(j.policy.priority, 8);
      EXPECT_EQ(j.longest_run, absl::Seconds(3) + s->sink.timeout);
    }
  }
  // The job paused for good expects nothing from 2 minutes before the pause.
  const auto windows = w.pause_windows();
  ASSERT_EQ(windows.size(), 3u);
  std::string forever;
  for (const auto& pw : windows)
    if (pw.to == absl::InfiniteFuture()) forever = pw.job;
  ASSERT_EQ(forever.rfind("cron-1-", 0), 0u) << forever;
  const absl::Time cut = c.history().start + absl::Minutes(4) - kControlMargin;
  std::size_t before = 0;
  for (const auto& o : *c.history().expected) {
    if (o.job != forever) continue;
    EXPECT_LT(o.due, cut);
    ++before;
  }
  EXPECT_GE(before, 1u);
}

TEST(Cluster, CrashPointsInTheKernelFireAndAreSurvived) {
  auto s = parse_scenario(R"(name points
duration 20m
quiet-tail 8m
topology schedulers=3 workers=3 shards=2
job interval count=10 every=20s
fault crash-at at=1m node=leader point=dispatch-after-commit-before-reply
fault crash-at at=2m node=worker-1 point=effect-before-complete
fault crash-at at=3m node=scheduler-2 point=claim-after-commit
fault crash-at at=4m node=any-scheduler point=complete-after-commit-before-ack
fault crash-at at=5m node=leader point=dispatch-before-commit
)",
                          "points");
  ASSERT_TRUE(s.ok()) << s.status();
  std::set<std::string> hit;
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    Cluster c(*s, seed);
    EXPECT_TRUE(c.run().ok) << first_violation(c);
    for (const auto& [name, n] : c.world().marks())
      if (name.rfind("crash-point.", 0) == 0) hit.insert(name);
  }
  EXPECT_TRUE(hit.count("crash-point.dispatch-after-commit-before-reply"));
  EXPECT_TRUE(hit.count("crash-point.effect-before-complete"));
  EXPECT_TRUE(hit.count("crash-point.claim-after-commit"));
  EXPECT_TRUE(hit.count("crash-point.complete-after-commit-before-ack"));
}

TEST(Cluster, ValidateRejectsAConfigurationTheKernelWouldRefuse) {
  Scenario s = small();
  s.timing.poll = absl::Seconds(5);  // longer than the leader renewal period
  const absl::Status st = Cluster::validate(s);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(std::string(st.message()).find("poll_interval"), std::string::npos) << st;
}

TEST(Determinism, CheckerNamesNoDivergenceForOneSeed) {
  const Scenario s = small();
  const Divergence d = check_determinism([&] { return std::make_unique<Cluster>(s, 11); });
  EXPECT_FALSE(d.diverged);
  EXPECT_NE(d.hash_a, 0u);
}

// --- the checker on hand-made histories ---------------------------------

using test_support::Hist;
using test_support::violated;

TEST(Checker, CatchesADoubleEffectAndAnAcknowledgedRollback) {
  Hist x;
  x.sink.resize(2);
  x.sink[0].write = {"k", 5, "job", 1, 1};
  x.sink[0].outcome = SinkOutcome::kAccepted;
  x.sink[0].applied = true;
  x.sink[1] = x.sink[0];
  x.sink[1].index = 1;  // accepted twice: a broken sink or a bypass
  StoreCommit lost;
  lost.acked = true;
  lost.state = StoreCommit::State::kLost;
  x.commits.push_back(lost);
  const auto names = violated(x.history());
  EXPECT_TRUE(names.count("sink-one-effect-per-key"));
  EXPECT_TRUE(names.count("sink-one-attempt-per-token"));
  EXPECT_TRUE(names.count("acked-commits-durable"));
}

TEST(Checker, ReplaysStoreFactsForLeasesTokensEpochsCancelsAndDueTimes) {
  Hist x;
  LeaderRecord l1{"scheduler-1", 1, x.t0 + absl::Minutes(10)};
  x.commit(absl::ZeroDuration(), 1, std::nullopt, std::make_pair(0u, l1));
  RunRecord run;
  run.id = RunId{"j", 1, x.t0 + absl::Seconds(10)};
  run.due_at = run.id.nominal;
  run.ready_at = run.due_at;
  // Dispatched 5 s early, by the leader, then by a node that is not.
  x.commit(absl::Seconds(5), 1, run);
  RunRecord other = run;
  other.id.nominal = x.t0 + absl::Seconds(1);
  other.due_at = other.ready_at = other.id.nominal;
  x.commit(absl::Seconds(6), 2, other);
  // Granted token 3, then granted token 2 while token 3 is still valid.
  run.state = RunState::kLeased;
  run.token = 3;
  run.owner = "worker-1";
  run.lease_expiry = x.t0 + absl::Seconds(40);
  x.commit(absl::Seconds(11), 1, run);
  run.token = 2;
  run.owner = "worker-2";
  x.commit(absl::Seconds(12), 1, run);
  // The leader record goes back an epoch.
  LeaderRecord l0{"scheduler-2", 0, x.t0 + absl::Minutes(10)};
  x.commit(absl::Seconds(13), 2, std::nullopt, std::make_pair(0u, l0));
  // A cancel acknowledged before the next grant of the other run.
  x.cancels.push_back({"j", 1, x.t0 + absl::Seconds(20)});
  other.state = RunState::kLeased;
  other.token = 9;
  other.owner = "worker-1";
  other.lease_expiry = x.t0 + absl::Seconds(60);
  x.commit(absl::Seconds(30), 2, other);
  const auto names = violated(x.history());
  EXPECT_TRUE(names.count("not-before-due"));
  EXPECT_TRUE(names.count("no-stale-leader-writes"));
  EXPECT_TRUE(names.count("single-valid-lease"));
  EXPECT_TRUE(names.count("tokens-increase"));
  EXPECT_TRUE(names.count("run-created-once"));  // token went back from 3 to 2
  EXPECT_TRUE(names.count("epochs-increase"));
  EXPECT_TRUE(names.count("cancel-stops-runs"));
}

TEST(Checker, StaleCompletionsAndMissingOccurrencesAreViolations) {
  Hist x;
  LeaderRecord l1{"scheduler-1", 1, x.t0 + absl::Minutes(10)};
  x.commit(absl::ZeroDuration(), 1, std::nullopt, std::make_pair(0u, l1));
  RunRecord run;
  run.id = RunId{"j", 1, x.t0};
  run.due_at = run.ready_at = x.t0;
  x.commit(absl::Seconds(1), 1, run);
  run.state = RunState::kLeased;
  run.token = 1;
  run.owner = "worker-1";
  run.lease_expiry = x.t0 + absl::Seconds(11);
  x.commit(absl::Seconds(1), 1, run);
  // The reaper re-queues it; a completion then lands anyway.
  run.state = RunState::kReady;
  run.attempt = 2;
  x.commit(absl::Seconds(12), 1, run);
  run.state = RunState::kSucceeded;
  x.commit(absl::Seconds(13), 1, run);
  // A completion recorded as made by a worker that never held token 1.
  Event e;
  e.kind = "run.completed";
  e.with("job", std::string("j"))
      .with("incarnation", std::uint64_t{1})
      .with("nominal", x.t0)
      .with("token", std::uint64_t{1})
      .with("worker", std::string("worker-9"));
  x.facts.observe_event(e, x.t0 + absl::Seconds(13));
  x.expected.push_back({"k", 1, x.t0, x.t0});  // never dispatched
  MemoryStorage::Map final_store;
  final_store[keys::run(run.id)] = encode(run);  // succeeded, but no sink effect
  History h = x.history();
  h.final_store = &final_store;
  const auto names = violated(h);
  EXPECT_TRUE(names.count("no-stale-token-writes"));
  EXPECT_TRUE(names.count("occurrences-complete"));
  EXPECT_TRUE(names.count("effect-per-success"));
}

}  // namespace
}  // namespace kairos::sim
