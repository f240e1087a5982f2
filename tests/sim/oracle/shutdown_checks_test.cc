// The graceful-stop rules (sim/oracle/shutdown_checks.cc) on hand-made
// histories: a worker's drain starts nothing new, completes, and loses
// nothing; a leaving scheduler releases its shards before its node record is
// withdrawn. Each fires on the history it is written against and stays
// quiet on a correct one (and on the exemptions it states).
#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/kernel/event_kinds.h"
#include "tests/support/history_builder.h"

namespace kairos::sim {
namespace {

using test_support::granted;
using test_support::Hist;

constexpr NodeId kLeader = 1;  // scheduler-1
constexpr NodeId kOther = 2;   // scheduler-2
constexpr NodeId kWorker = 3;  // worker-1

RunRecord ready_run(absl::Time nominal) {
  RunRecord r;
  r.id = RunId{"job-a", 1, nominal};
  r.due_at = r.ready_at = r.dispatched_at = nominal;
  return r;
}

absl::Time t0_plus(absl::Duration d) { return test_support::Hist{}.t0 + d; }

RunRecord succeeded(RunRecord r, absl::Time now) {
  r.state = RunState::kSucceeded;
  r.attempts.back().end = AttemptEnd::kSucceeded;
  r.attempts.back().finished_at = now;
  r.lease_expiry = absl::InfinitePast();
  return r;
}

struct StopHist : Hist {
  std::vector<Execution> executions;
  std::vector<NodeWindow> time_faults;
  std::vector<DrainFact> drains;
  std::vector<ProcessEnd> process_ends;
  StopHist() {
    names.push_back("worker-1");
    LeaderRecord l{"scheduler-1", 1, t0 + absl::Hours(2)};
    commit(absl::ZeroDuration(), kLeader, std::nullopt, std::make_pair(0u, l));
  }
  absl::Time at(absl::Duration d) const { return t0 + d; }
  void execute(const RunRecord& run, std::uint64_t token, absl::Duration from, absl::Time to) {
    Execution e;
    e.run = facts.strings().id(idempotency_key(run.id));
    e.job = facts.strings().id(run.id.job_id);
    e.token = token;
    e.node = kWorker;
    e.start = at(from);
    e.end = to;
    executions.push_back(e);
  }
  void drain(absl::Duration began, absl::Time completed, absl::Time ended = absl::InfiniteFuture(),
             bool after_stop = false) {
    DrainFact d;
    d.node = kWorker;
    d.process_start = t0;
    d.began = at(began);
    d.completed = completed;
    d.ended = ended;
    d.completed_after_stop = after_stop;
    drains.push_back(d);
  }
  void report_event(std::string_view kind, const RunRecord& r, std::uint64_t token,
                    absl::Duration when) {
    Event e;
    e.kind = kind;  // static storage: an event_kinds constant
    e.at = at(when);
    e.with("job", r.id.job_id)
        .with("incarnation", r.id.incarnation)
        .with("nominal", r.id.nominal)
        .with("token", token);
    facts.observe_event(e, at(when));
  }
  History full() const {
    History h = history();
    h.executions = &executions;
    h.time_faults = &time_faults;
    h.drains = &drains;
    h.process_ends = &process_ends;
    h.store_node = 0;
    h.max_drift_ppm = 10'000;
    h.lease_margin = absl::Seconds(1);
    h.leader_ttl = absl::Seconds(10);
    h.bounds.round_trip = absl::Milliseconds(20);
    h.bounds.settle = absl::Seconds(30);
    h.report_bound = absl::Seconds(24);
    return h;
  }
  bool fires(std::string_view name) const {
    for (const auto& v : Checker::with_defaults().run(full(), {}).violations)
      if (v.invariant == name) return true;
    return false;
  }
};

TEST(ShutdownChecks, ADrainingWorkerStartingAnAttemptIsAViolation) {
  const RunRecord r = ready_run(absl::FromUnixSeconds(1767225601));
  auto make = [&](absl::Duration start) {
    StopHist x;
    x.commit(absl::Seconds(1), kLeader, r);
    x.commit(absl::Seconds(2), kLeader, granted(r, 1, x.at(absl::Seconds(2))));
    x.execute(r, 1, start, x.at(start + absl::Seconds(3)));
    x.commit(start + absl::Seconds(4), kLeader,
             succeeded(granted(r, 1, x.at(absl::Seconds(2))), x.at(start + absl::Seconds(4))));
    x.drain(absl::Seconds(10), x.at(absl::Seconds(30)), x.at(absl::Seconds(30)));
    return x;
  };
  EXPECT_FALSE(make(absl::Seconds(5)).fires("drain-starts-nothing"));
  EXPECT_TRUE(make(absl::Seconds(11)).fires("drain-starts-nothing"));
  // A later process of the same worker (after the drain's stop) may run.
  EXPECT_FALSE(make(absl::Seconds(31)).fires("drain-starts-nothing"));
}

TEST(ShutdownChecks, ADrainThatNeverCompletesOrCompletesAfterStopIsAViolation) {
  const RunRecord r = ready_run(absl::FromUnixSeconds(1767225601));
  // An attempt from 3s to `end` (none: still running at the end of the run).
  auto make = [&](std::optional<absl::Duration> end) {
    StopHist x;
    x.commit(absl::Seconds(1), kLeader, r);
    x.commit(absl::Seconds(2), kLeader, granted(r, 1, x.at(absl::Seconds(2))));
    x.execute(r, 1, absl::Seconds(3), end ? x.at(*end) : absl::InfiniteFuture());
    return x;
  };
  // Never completed, the process alive to the end of the run (1h), nothing
  // running after 20s.
  StopHist never = make(absl::Seconds(20));
  never.drain(absl::Seconds(10), absl::InfiniteFuture());
  EXPECT_TRUE(never.fires("drain-completes"));
  // Completed: quiet.
  StopHist done = make(absl::Seconds(20));
  done.drain(absl::Seconds(10), done.at(absl::Seconds(21)), done.at(absl::Seconds(21)));
  EXPECT_FALSE(done.fires("drain-completes"));
  // An attempt still running (its timeout bounds it): not judged.
  StopHist running = make(std::nullopt);
  running.drain(absl::Seconds(10), absl::InfiniteFuture());
  EXPECT_FALSE(running.fires("drain-completes"));
  // The process crashed before completing: not judged.
  StopHist crashed = make(absl::Seconds(20));
  crashed.drain(absl::Seconds(10), absl::InfiniteFuture(), crashed.at(absl::Seconds(15)));
  EXPECT_FALSE(crashed.fires("drain-completes"));
  // A fault from 1 min (inside the bound: settle 30 s + reports 24 s after
  // the attempt's end at 20 s) until 30 s before the end of the run (1 h):
  // the wait counts from its heal and has not run out.
  StopHist healed = make(absl::Seconds(20));
  healed.drain(absl::Seconds(10), absl::InfiniteFuture());
  healed.faults.push_back(
      {healed.at(absl::Minutes(1)), healed.at(absl::Minutes(59) + absl::Seconds(30)), "net"});
  EXPECT_FALSE(healed.fires("drain-completes"));
  // Healed a minute before the end: more than the bound after the heal.
  StopHist healed_early = make(absl::Seconds(20));
  healed_early.drain(absl::Seconds(10), absl::InfiniteFuture());
  healed_early.faults.push_back(
      {healed_early.at(absl::Minutes(1)), healed_early.at(absl::Minutes(59)), "net"});
  EXPECT_TRUE(healed_early.fires("drain-completes"));
  // A fault that began after the bound had passed excuses nothing.
  StopHist late_fault = make(absl::Seconds(20));
  late_fault.drain(absl::Seconds(10), absl::InfiniteFuture());
  late_fault.faults.push_back({late_fault.at(absl::Minutes(5)),
                               late_fault.at(absl::Minutes(59) + absl::Seconds(30)), "net"});
  EXPECT_TRUE(late_fault.fires("drain-completes"));
  // The callback ran after the worker had been stopped.
  StopHist late = make(absl::Seconds(20));
  late.drain(absl::Seconds(10), late.at(absl::Seconds(25)), late.at(absl::Seconds(25)),
             /*after_stop=*/true);
  EXPECT_TRUE(late.fires("drain-completes"));
}

TEST(ShutdownChecks, ADrainCompletingWithAnAttemptUnsettledIsAViolation) {
  const RunRecord r = ready_run(absl::FromUnixSeconds(1767225601));
  const absl::Duration completed = absl::Seconds(40);
  auto make = [&](absl::Duration exec_end) {
    StopHist x;
    x.commit(absl::Seconds(1), kLeader, r);
    x.commit(absl::Seconds(2), kLeader, granted(r, 1, x.at(absl::Seconds(2))));
    x.execute(r, 1, absl::Seconds(3), x.at(exec_end));
    x.drain(absl::Seconds(10), x.at(completed), x.at(completed));
    return x;
  };
  // Ended, but its lease still held and no report settled at completion.
  StopHist unreported = make(absl::Seconds(30));
  EXPECT_TRUE(unreported.fires("drain-loses-nothing"));
  // The store recorded the outcome before the completion.
  StopHist recorded = make(absl::Seconds(30));
  recorded.commit(
      absl::Seconds(35), kLeader,
      succeeded(granted(r, 1, recorded.at(absl::Seconds(2))), recorded.at(absl::Seconds(35))));
  EXPECT_FALSE(recorded.fires("drain-loses-nothing"));
  // ... but only after it: still unsettled when the drain completed.
  StopHist after = make(absl::Seconds(30));
  after.commit(absl::Seconds(45), kLeader,
               succeeded(granted(r, 1, after.at(absl::Seconds(2))), after.at(absl::Seconds(45))));
  EXPECT_TRUE(after.fires("drain-loses-nothing"));
  // The worker gave the report up (its lease lost): settled.
  StopHist dropped = make(absl::Seconds(30));
  dropped.report_event(event_kinds::kWorkerReportDropped, r, 1, absl::Seconds(31));
  EXPECT_FALSE(dropped.fires("drain-loses-nothing"));
  // Still executing when the drain completed.
  StopHist running = make(absl::Seconds(50));
  running.commit(
      absl::Seconds(51), kLeader,
      succeeded(granted(r, 1, running.at(absl::Seconds(2))), running.at(absl::Seconds(51))));
  EXPECT_TRUE(running.fires("drain-loses-nothing"));
}

// Rule 16 (reports-settle, report_checks.cc), which shares the drain's
// report bound: every attempt a worker ran to the end is settled within the
// bound (24 s of reports + 30 s settle) of its end or of the heal of the
// faults touching the wait, unless its process ended first.
TEST(ShutdownChecks, AnAttemptWhoseReportNeverSettlesIsAViolation) {
  const RunRecord r = ready_run(absl::FromUnixSeconds(1767225601));
  auto make = [&] {
    StopHist x;
    x.commit(absl::Seconds(1), kLeader, r);
    x.commit(absl::Seconds(2), kLeader, granted(r, 1, x.at(absl::Seconds(2))));
    x.execute(r, 1, absl::Seconds(3), x.at(absl::Seconds(20)));
    return x;
  };
  // Ended at 20 s, never settled, the process alive to the end (1 h).
  EXPECT_TRUE(make().fires("reports-settle"));
  // Answered (accepted) at 21 s: quiet; dropped (lease lost) at once: quiet.
  StopHist accepted = make();
  accepted.report_event(event_kinds::kWorkerReportAccepted, r, 1, absl::Seconds(21));
  EXPECT_FALSE(accepted.fires("reports-settle"));
  StopHist dropped = make();
  dropped.report_event(event_kinds::kWorkerReportDropped, r, 1, absl::Seconds(20));
  EXPECT_FALSE(dropped.fires("reports-settle"));
  // Settled, but a minute after the bound ran out (74 s).
  StopHist late = make();
  late.report_event(event_kinds::kWorkerReportAccepted, r, 1, absl::Seconds(135));
  EXPECT_TRUE(late.fires("reports-settle"));
  // Another token's settlement settles nothing of this one.
  StopHist other = make();
  other.report_event(event_kinds::kWorkerReportAccepted, r, 2, absl::Seconds(21));
  EXPECT_TRUE(other.fires("reports-settle"));
  // The process crashed at 40 s, inside the bound: its reports died with it.
  StopHist crashed = make();
  crashed.process_ends.push_back({kWorker, crashed.at(absl::Seconds(40))});
  EXPECT_FALSE(crashed.fires("reports-settle"));
  // ... a crash after the bound had run out excuses nothing.
  StopHist crashed_late = make();
  crashed_late.process_ends.push_back({kWorker, crashed_late.at(absl::Minutes(5))});
  EXPECT_TRUE(crashed_late.fires("reports-settle"));
  // Another worker's crash excuses nothing either.
  StopHist crashed_other = make();
  crashed_other.process_ends.push_back({kOther, crashed_other.at(absl::Seconds(40))});
  EXPECT_TRUE(crashed_other.fires("reports-settle"));
  // A store outage from 30 s until 30 s before the end: the wait counts
  // from its heal and has not run out; healed ten minutes before the end,
  // it has.
  StopHist outage = make();
  outage.faults.push_back(
      {outage.at(absl::Seconds(30)), outage.at(absl::Minutes(59) + absl::Seconds(30)), "store"});
  EXPECT_FALSE(outage.fires("reports-settle"));
  StopHist healed = make();
  healed.faults.push_back({healed.at(absl::Seconds(30)), healed.at(absl::Minutes(50)), "store"});
  EXPECT_TRUE(healed.fires("reports-settle"));
  // An attempt still executing at the end is not judged.
  StopHist running;
  running.commit(absl::Seconds(1), kLeader, r);
  running.commit(absl::Seconds(2), kLeader, granted(r, 1, running.at(absl::Seconds(2))));
  running.execute(r, 1, absl::Seconds(3), absl::InfiniteFuture());
  EXPECT_FALSE(running.fires("reports-settle"));
}

// Rules 1 (occurrences-complete) and 7 (timeliness) with a reap batch
// passing over lapsed leases (scenario corrupted-lapsed-leases): a run left
// leased of a job whose record a fault corrupted cannot be reaped (its
// policy is in that record), so neither rule requires it to end; any other
// job's run left leased is still a violation of both.
TEST(ShutdownChecks, ARunLeftLeasedOfACorruptedJobIsNotRequiredToEnd) {
  const RunRecord r = ready_run(absl::FromUnixSeconds(1767225601));
  auto make = [&](std::vector<CorruptedRecord> corrupted) {
    StopHist x;
    x.commit(absl::Seconds(1), kLeader, r);
    x.commit(absl::Seconds(2), kLeader, granted(r, 1, x.at(absl::Seconds(2))));
    std::set<std::string> names;
    History h = x.full();
    h.corrupted = &corrupted;
    for (const auto& v : Checker::with_defaults().run(h, {}).violations) names.insert(v.invariant);
    return names;
  };
  const std::set<std::string> healthy = make({});
  EXPECT_EQ(healthy.count("occurrences-complete"), 1u);
  EXPECT_EQ(healthy.count("timeliness"), 1u);
  const std::set<std::string> corrupted = make({{"job-a", t0_plus(absl::Seconds(5))}});
  EXPECT_EQ(corrupted.count("occurrences-complete"), 0u);
  EXPECT_EQ(corrupted.count("timeliness"), 0u);
  const std::set<std::string> other = make({{"job-b", t0_plus(absl::Seconds(5))}});
  EXPECT_EQ(other.count("occurrences-complete"), 1u);
  EXPECT_EQ(other.count("timeliness"), 1u);
}

TEST(ShutdownChecks, ADepartureBeforeTheReleaseIsAViolation) {
  // scheduler-2 leads shard 1 (renewed at 20s, until 30s) and departs at
  // `depart`; with `release`, its record is released at 20.5s first.
  auto make = [&](absl::Duration depart, bool release, bool acked = true) {
    StopHist x;
    x.commit(absl::Seconds(20), kOther, std::nullopt,
             std::make_pair(1u, LeaderRecord{"scheduler-2", 3, x.at(absl::Seconds(30))}));
    x.commits.back().acked = acked;
    if (release) {
      x.commit(
          absl::Milliseconds(20'500), kOther, std::nullopt,
          std::make_pair(1u, LeaderRecord{"scheduler-2", 3, x.at(absl::Milliseconds(20'500))}));
      x.commits.back().acked = true;
    }
    NodeRecord n{"scheduler-2", x.t0, x.at(depart)};
    x.commit_ops(depart, kOther, {{WriteOp::Kind::kPut, keys::node("scheduler-2"), encode(n)}});
    x.facts.mutable_departs().back().node_clock_us = absl::ToUnixMicros(x.at(depart));
    return x;
  };
  EXPECT_TRUE(make(absl::Seconds(21), /*release=*/false).fires("leave-releases-before-depart"));
  EXPECT_FALSE(make(absl::Seconds(21), /*release=*/true).fires("leave-releases-before-depart"));
  // Past the node's own deadline (lease less drift, margin and a round
  // trip), a release may be skipped: the lease lapses by itself.
  EXPECT_FALSE(make(absl::Milliseconds(28'950), false).fires("leave-releases-before-depart"));
  EXPECT_TRUE(make(absl::Milliseconds(28'700), false).fires("leave-releases-before-depart"));
  // A leader write the node was not told of: it may not know it leads.
  EXPECT_FALSE(
      make(absl::Seconds(21), false, /*acked=*/false).fires("leave-releases-before-depart"));
  // A fault window within a leader lease before the departure: not judged.
  StopHist faulted = make(absl::Seconds(21), false);
  faulted.faults.push_back(
      {faulted.at(absl::Seconds(15)), faulted.at(absl::Seconds(16)), "store-slow"});
  EXPECT_FALSE(faulted.fires("leave-releases-before-depart"));
  // A node-record write that extends the record is an announcement.
  StopHist announced;
  announced.commit(
      absl::Seconds(20), kOther, std::nullopt,
      std::make_pair(1u, LeaderRecord{"scheduler-2", 3, announced.at(absl::Seconds(30))}));
  NodeRecord n{"scheduler-2", announced.t0, announced.at(absl::Seconds(31))};
  announced.commit_ops(absl::Seconds(21), kOther,
                       {{WriteOp::Kind::kPut, keys::node("scheduler-2"), encode(n)}});
  EXPECT_TRUE(announced.facts.departs().empty());
  EXPECT_FALSE(announced.fires("leave-releases-before-depart"));
}

}  // namespace
}  // namespace kairos::sim
