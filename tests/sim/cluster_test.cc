#include "sim/cluster.h"

#include <gtest/gtest.h>

#include <set>

#include "core/keyspace.h"
#include "sim/determinism.h"
#include "sim/kernel_nodes.h"

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
)", "small");
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

TEST(Cluster, WorkloadExpectsTheCronEnginesOccurrencesAcrossDst) {
  auto s = parse_scenario(R"(name dst
start 2026-03-29T00:00:00Z
duration 3h
quiet-tail 30m
topology schedulers=1 workers=1 shards=1
job cron count=2 expr="30 2 * * *" zone=Europe/Berlin
)", "dst");
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
)", "points");
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

struct Hist {
  std::vector<SinkAttempt> sink;
  std::vector<StoreCommit> commits;
  FactRecorder facts;
  std::vector<NodeEvent> events;
  std::vector<Occurrence> expected;
  std::vector<CancelAck> cancels;
  std::vector<FaultWindow> faults;
  std::vector<std::string> names{"store", "scheduler-1", "scheduler-2"};
  absl::Time t0 = absl::FromUnixSeconds(1767225600);

  // One commit at t0 + `at` writing `run` (and optionally a leader record).
  void commit(absl::Duration at, NodeId client, std::optional<RunRecord> run,
              std::optional<std::pair<std::uint32_t, LeaderRecord>> leader = {}) {
    StoreCommit c;
    c.index = commits.size();
    c.at = c.store_time = t0 + at;
    c.client = client;
    c.state = StoreCommit::State::kDurable;
    std::vector<WriteOp> ops;
    if (run) ops.push_back({WriteOp::Kind::kPut, keys::run(run->id), encode(*run)});
    if (leader)
      ops.push_back({WriteOp::Kind::kPut, keys::leader(leader->first), encode(leader->second)});
    facts.observe(c, ops);
    commits.push_back(c);
  }
  History history() const {
    History h;
    h.start = t0;
    h.end = t0 + absl::Hours(1);
    h.quiet_tail = absl::Minutes(10);
    h.sink = &sink;
    h.commits = &commits;
    h.events = &events;
    h.facts = &facts;
    h.node_names = &names;
    h.expected = &expected;
    h.cancels = &cancels;
    h.faults = &faults;
    h.bounds.start = absl::Seconds(3);
    h.bounds.done = absl::Minutes(1);
    return h;
  }
};

std::set<std::string> violated(const History& h) {
  std::set<std::string> names;
  for (const auto& v : Checker::with_defaults().run(h, {}).violations) names.insert(v.invariant);
  return names;
}

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
  e.with("job", std::string("j")).with("incarnation", std::uint64_t{1}).with("nominal", x.t0)
      .with("token", std::uint64_t{1}).with("worker", std::string("worker-9"));
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
