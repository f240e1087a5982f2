// The true-time execution rules (sim/oracle/execution_checks.cc) on
// hand-made histories: each fires on the history it is written against and
// stays quiet on a correct one (and on the exemptions it states).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

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

// `r` (leased) lapsed by the reaper at `now`: back to ready.
RunRecord lapsed(RunRecord r, absl::Time now) {
  r.state = RunState::kReady;
  r.attempts.back().end = AttemptEnd::kLapsed;
  r.attempts.back().finished_at = now;
  r.attempt += 1;
  r.ready_at = now;
  return r;
}

struct TimeHist : Hist {
  std::vector<Execution> executions;
  std::vector<NodeWindow> time_faults;
  std::vector<ProcessStart> starts;
  TimeHist() {
    names.push_back("worker-1");
    LeaderRecord l{"scheduler-1", 1, t0 + absl::Hours(2)};
    commit(absl::ZeroDuration(), kLeader, std::nullopt, std::make_pair(0u, l));
  }
  absl::Time at(absl::Duration d) const { return t0 + d; }
  // An execution of `run`'s token on worker-1 from t0 + from to t0 + to
  // (the store's clock is true time here).
  void execute(const RunRecord& run, std::uint64_t token, absl::Duration from, absl::Duration to) {
    Execution e;
    e.run = facts.strings().id(idempotency_key(run.id));
    e.job = facts.strings().id(run.id.job_id);
    e.token = token;
    e.node = kWorker;
    e.start = at(from);
    e.end = at(to);
    e.start_store_us = absl::ToUnixMicros(e.start);
    e.end_store_us = absl::ToUnixMicros(e.end);
    executions.push_back(e);
  }
  History full() const {
    History h = history();
    h.executions = &executions;
    h.time_faults = &time_faults;
    h.store_node = 0;
    h.max_drift_ppm = 10'000;
    h.lease_margin = absl::Seconds(1);
    h.leader_renew_period = absl::Milliseconds(2500);
    h.store_client_timeout = absl::Seconds(1);
    h.leader_ttl = absl::Seconds(10);
    h.process_starts = &starts;
    return h;
  }
  bool fires(std::string_view name) const {
    for (const auto& v : Checker::with_defaults().run(full(), {}).violations)
      if (v.invariant == name) return true;
    return false;
  }
};

TEST(ExecutionChecks, AnAttemptExecutingPastItsStoreLeaseExpiryIsAViolation) {
  const RunRecord r = ready_run(absl::FromUnixSeconds(1767225601));
  auto make = [&](absl::Duration end) {
    TimeHist x;
    x.commit(absl::Seconds(1), kLeader, r);
    x.commit(absl::Seconds(2), kLeader, granted(r, 1, x.at(absl::Seconds(2))));  // until 32s
    x.execute(r, 1, absl::Seconds(3), end);
    return x;
  };
  EXPECT_FALSE(make(absl::Seconds(31)).fires("execution-within-lease"));
  EXPECT_TRUE(make(absl::Seconds(33)).fires("execution-within-lease"));
  // A renewal committed before the end extends the lease it is judged by.
  TimeHist renewed = make(absl::Seconds(40));
  renewed.commit(absl::Seconds(20), kLeader, granted(r, 1, renewed.at(absl::Seconds(20))));
  EXPECT_FALSE(renewed.fires("execution-within-lease"));
  // A worker paused across its expiry cannot stop on time: exempt.
  TimeHist paused = make(absl::Seconds(33));
  paused.time_faults.push_back(
      {kWorker, paused.at(absl::Seconds(10)), paused.at(absl::Seconds(33)), "pause"});
  EXPECT_FALSE(paused.fires("execution-within-lease"));
}

TEST(ExecutionChecks, TwoAttemptsOfOneRunExecutingAtOnceIsAViolation) {
  const RunRecord r = ready_run(absl::FromUnixSeconds(1767225601));
  auto make = [&](absl::Duration second_start) {
    TimeHist x;
    x.commit(absl::Seconds(1), kLeader, r);
    x.commit(absl::Seconds(2), kLeader, granted(r, 1, x.at(absl::Seconds(2))));
    x.commit(absl::Seconds(33), kLeader,
             lapsed(granted(r, 1, x.at(absl::Seconds(2))), x.at(absl::Seconds(33))));
    x.execute(r, 1, absl::Seconds(3), absl::Seconds(30));
    x.execute(r, 2, second_start, second_start + absl::Seconds(5));
    return x;
  };
  EXPECT_FALSE(make(absl::Seconds(34)).fires("executions-never-overlap"));
  EXPECT_TRUE(make(absl::Seconds(29)).fires("executions-never-overlap"));
  // Ending exactly when the next starts is not an overlap.
  EXPECT_FALSE(make(absl::Seconds(30)).fires("executions-never-overlap"));
}

TEST(ExecutionChecks, AWorkerDeadlineBeyondTheLeaseUnderMaxDriftIsAViolation) {
  const RunRecord r = ready_run(absl::FromUnixSeconds(1767225601));
  // Lease 30s, max drift 1%, margin 1s: at most 28.7s past the worker's clock
  // at the lease write (which reads true time + 5s here).
  auto make = [&](absl::Duration after_write) {
    TimeHist x;
    x.commit(absl::Seconds(1), kLeader, r);
    x.commit(absl::Seconds(2), kLeader, granted(r, 1, x.at(absl::Seconds(2))));
    x.facts.mutable_runs().back().owner_clock_us =
        absl::ToUnixMicros(x.at(absl::Seconds(2) + absl::Seconds(5)));
    Event e;
    e.kind = event_kinds::kWorkerLeaseDeadline;
    e.at = x.at(absl::Seconds(7) + after_write);  // the worker's clock
    e.with("job", r.id.job_id)
        .with("incarnation", r.id.incarnation)
        .with("nominal", r.id.nominal)
        .with("token", std::uint64_t{1});
    x.facts.observe_event(e, x.at(absl::Seconds(2) + after_write));
    return x;
  };
  EXPECT_FALSE(make(absl::Milliseconds(28'700)).fires("deadline-inside-lease"));
  // Ignoring the drift (29s) or the margin (29.7s) puts it outside.
  EXPECT_TRUE(make(absl::Seconds(29)).fires("deadline-inside-lease"));
  EXPECT_TRUE(make(absl::Milliseconds(29'700)).fires("deadline-inside-lease"));
  // A clock step of the worker in between: exempt.
  TimeHist stepped = make(absl::Seconds(29));
  stepped.time_faults.push_back(
      {kWorker, stepped.at(absl::Seconds(10)), absl::InfiniteFuture(), "clock-jump"});
  EXPECT_FALSE(stepped.fires("deadline-inside-lease"));
}

TEST(ExecutionChecks, AReaperLapsingAnUnexpiredLeaseIsAViolation) {
  const RunRecord r = ready_run(absl::FromUnixSeconds(1767225601));
  auto make = [&](absl::Duration lapse_at) {
    TimeHist x;
    x.commit(absl::Seconds(1), kLeader, r);
    const RunRecord g = granted(r, 1, x.at(absl::Seconds(2)));  // until 32s
    x.commit(absl::Seconds(2), kLeader, g);
    x.commit(lapse_at, kLeader, lapsed(g, x.at(lapse_at)));
    return x;
  };
  EXPECT_FALSE(make(absl::Seconds(32)).fires("reaper-waits-for-expiry"));
  EXPECT_TRUE(make(absl::Seconds(31)).fires("reaper-waits-for-expiry"));
}

// A hand-back (topology handback=yes: a restarted worker's
// JobStore::release_abandoned) ends the lease before its expiry; it is the
// holder's own node's write, and fine only once the granted process is over.
TEST(ExecutionChecks, AHandBackIsJudgedByTheHolderHavingDied) {
  const RunRecord r = ready_run(absl::FromUnixSeconds(1767225601));
  // worker-1's process started at 0s, was granted the lease at 2s (until
  // 32s) and executed it from 3s until `exec_end`; its node restarted at
  // `restart` (none when negative) and the node handed the run back at 10s.
  struct Case {
    absl::Duration restart, exec_end;
    NodeId writer = kWorker;
  };
  auto make = [&](Case c) {
    auto x = std::make_unique<TimeHist>();
    x->starts.push_back({kWorker, x->at(absl::ZeroDuration())});
    if (c.restart >= absl::ZeroDuration()) x->starts.push_back({kWorker, x->at(c.restart)});
    x->commit(absl::Seconds(1), kLeader, r);
    const RunRecord g = granted(r, 1, x->at(absl::Seconds(2)));
    x->commit(absl::Seconds(2), kLeader, g);
    x->execute(r, 1, absl::Seconds(3), c.exec_end);
    x->commit(absl::Seconds(10), c.writer, lapsed(g, x->at(absl::Seconds(10))));
    return x;
  };
  auto fires = [](const TimeHist& x, std::string_view name) {
    History h = x.full();
    h.process_starts = &x.starts;
    for (const auto& v : Checker::with_defaults().run(h, {}).violations)
      if (v.invariant == name) return true;
    return false;
  };
  constexpr std::string_view kRule = "handback-after-holder-died";
  // The process crashed at 5s (its execution ended then) and the node came
  // back at 9s: a hand-back, judged by this rule alone (not the reaper's
  // wait, nor a leader write).
  auto ok = make({absl::Seconds(9), absl::Seconds(5)});
  EXPECT_FALSE(fires(*ok, kRule));
  EXPECT_FALSE(fires(*ok, "reaper-waits-for-expiry"));
  EXPECT_FALSE(fires(*ok, "leader-writes-within-lease"));
  // The granted process itself gives its lease back (no restart since).
  EXPECT_TRUE(fires(*make({absl::Seconds(-1), absl::Seconds(5)}), kRule));
  // Restarted, but the attempt still executes at the hand-back.
  EXPECT_TRUE(fires(*make({absl::Seconds(9), absl::Seconds(20)}), kRule));
  // Restarted before the grant: the granted process is the live one.
  EXPECT_TRUE(fires(*make({absl::Seconds(1), absl::Seconds(5)}), kRule));
  // A lapse before the expiry by another node is the reaper's, judged there.
  auto reaper = make({absl::Seconds(9), absl::Seconds(5), kOther});
  EXPECT_FALSE(fires(*reaper, kRule));
  EXPECT_TRUE(fires(*reaper, "reaper-waits-for-expiry"));
}

TEST(ExecutionChecks, LeaderBodyWritesByANonLeaderOrAfterExpiryAreViolations) {
  const RunRecord r = ready_run(absl::FromUnixSeconds(1767225601));
  auto make = [&](NodeId reaper, NodeId decider, bool expired = false) {
    TimeHist x;
    x.commit(absl::Seconds(1), kLeader, r);
    const RunRecord g = granted(r, 1, x.at(absl::Seconds(2)));
    x.commit(absl::Seconds(2), kLeader, g);
    x.commit(absl::Seconds(40), reaper, lapsed(g, x.at(absl::Seconds(40))));
    if (expired)  // the leader's last renewal, expiring at 55s
      x.commit(absl::Seconds(50), kLeader, std::nullopt,
               std::make_pair(0u, LeaderRecord{"scheduler-1", 1, x.at(absl::Seconds(55))}));
    LedgerRecord l;
    l.incarnation = 1;
    l.nominal = l.through = l.fire_at = x.at(absl::Seconds(60));
    l.count = 1;
    l.outcome = LedgerOutcome::kSkippedMisfire;
    x.commit_ops(absl::Seconds(61), decider, {Hist::put("job-a", l)});
    return x;
  };
  EXPECT_FALSE(make(kLeader, kLeader).fires("leader-writes-within-lease"));
  EXPECT_TRUE(make(kOther, kLeader).fires("leader-writes-within-lease"));
  EXPECT_TRUE(make(kLeader, kOther).fires("leader-writes-within-lease"));
  // The leader itself, after its record expired.
  EXPECT_TRUE(make(kLeader, kLeader, /*expired=*/true).fires("leader-writes-within-lease"));
}

TEST(ExecutionChecks, ALeaderRenewingFasterThanItsPeriodIsAViolation) {
  // Shard 1's leader writes at the given offsets (seconds), each acknowledged
  // unless listed in `unacked`; the epoch moves to 2 at `new_epoch_at`.
  // Renewals come every 2.5 s, so at least 2.5 s / 1.01 - 1 s = 1.475 s apart.
  auto make = [](std::vector<double> at, std::vector<double> unacked = {},
                 double new_epoch_at = 1e9) {
    TimeHist x;
    for (double s : at) {
      const absl::Duration d = absl::Seconds(s);
      const std::uint64_t epoch = s >= new_epoch_at ? 2 : 1;
      x.commit(d, kLeader, std::nullopt,
               std::make_pair(1u, LeaderRecord{"scheduler-1", epoch, x.at(d + absl::Seconds(10))}));
      x.commits.back().acked = std::find(unacked.begin(), unacked.end(), s) == unacked.end();
      x.commits.back().request = x.commits.size();  // sent in commit order
    }
    return x;
  };
  constexpr std::string_view kRule = "leader-renews-on-cadence";
  EXPECT_FALSE(make({1, 3.5, 6, 8.5}).fires(kRule));
  // Renewed on every 1 s tick instead of every 2.5 s.
  EXPECT_TRUE(make({1, 2, 3, 4}).fires(kRule));
  // Early, yet within the bound: the earlier commit may have landed up to
  // the store client's timeout after its send.
  EXPECT_FALSE(make({1, 2.6}).fires(kRule));
  EXPECT_TRUE(make({1, 2.4}).fires(kRule));
  // The node did not learn the first write committed: it retries at once.
  EXPECT_FALSE(make({1, 2}, /*unacked=*/{1}).fires(kRule));
  // The second write is an older request, timed out and applied late: the
  // node did not send it after the first one's answer.
  {
    TimeHist x = make({1, 2});
    x.commits.back().request = 0;
    EXPECT_FALSE(x.fires(kRule));
  }
  // A new epoch is an acquire, not a renewal.
  EXPECT_FALSE(make({1, 2}, {}, /*new_epoch_at=*/2).fires(kRule));
  // Another node's write in between ends the holder's run of writes.
  {
    TimeHist x = make({1});
    x.commit(absl::Milliseconds(1500), kOther, std::nullopt,
             std::make_pair(1u, LeaderRecord{"scheduler-2", 2, x.at(absl::Seconds(12))}));
    x.commits.back().acked = true;
    EXPECT_FALSE(x.fires(kRule));
  }
  // A restarted process, or a clock step of the holder, is not judged.
  {
    TimeHist x = make({1, 2});
    x.starts.push_back({kLeader, x.at(absl::Milliseconds(1500))});
    EXPECT_FALSE(x.fires(kRule));
  }
  {
    TimeHist x = make({1, 2});
    x.time_faults.push_back({kLeader, x.at(absl::Milliseconds(1200)),
                             x.at(absl::Milliseconds(1300)), "clock step +2s"});
    EXPECT_FALSE(x.fires(kRule));
  }
}

// Shard 0 led by scheduler-1, whose clock runs 5 s ahead of true time. The
// history's first commit (t0) is its acquisition of epoch 1, sent 1 ms
// before it committed (`acked`: the node was told it committed); job-a's run
// is created at 1 s. Leader lease 10 s, max drift 1%, margin 1 s: the node's
// own deadline lies 8.9 s after that send by its clock, while the store's
// record (until t0 + 2 h) accepts its writes long after.
struct LeaderHist : TimeHist {
  static constexpr std::int64_t kEffectiveNs = 8'900'000'000;
  std::uint64_t requests = 0;
  int decisions = 0;
  explicit LeaderHist(bool acked = true) {
    stamp(commits[0], absl::Milliseconds(-1), acked);
    commit(absl::Seconds(1), kLeader, ready_run(nominal()));
    stamp(commits.back(), absl::Seconds(1) - absl::Milliseconds(1));
  }
  static absl::Time nominal() { return absl::FromUnixSeconds(1767225601); }
  // scheduler-1's clock at true time t0 + `d`.
  std::int64_t clock_ns(absl::Duration d) const {
    return absl::ToUnixNanos(at(d + absl::Seconds(5)));
  }
  // The deadline the acquisition gives: its send by the node's clock + 8.9 s.
  std::int64_t deadline_ns() const { return clock_ns(-absl::Milliseconds(1)) + kEffectiveNs; }
  // `c` as its node's next request, sent at true time t0 + `sent`.
  void stamp(StoreCommit& c, absl::Duration sent, bool acked = true) {
    c.request = ++requests;
    c.sent_local_ns = clock_ns(sent);
    c.acked = acked;
  }
  // A renewal of epoch 1 committed at `when`, sent 1 ms before.
  void renew(absl::Duration when, bool acked = true) {
    commit(when, kLeader, std::nullopt,
           std::make_pair(0u, LeaderRecord{"scheduler-1", 1, at(absl::Hours(2))}));
    stamp(commits.back(), when - absl::Milliseconds(1), acked);
  }
  // A dispatch decision of job-a by `by`, sent at scheduler-1's clock
  // reading `sent_ns` and committed 1 ms later.
  void dispatch(std::int64_t sent_ns, NodeId by = kLeader) {
    LedgerRecord l;
    l.incarnation = 1;
    l.nominal = l.through = l.fire_at = at(absl::Minutes(1) + absl::Seconds(++decisions));
    l.count = 1;
    l.outcome = LedgerOutcome::kSkippedMisfire;
    const absl::Duration sent = absl::Nanoseconds(sent_ns - clock_ns(absl::ZeroDuration()));
    commit_ops(sent + absl::Milliseconds(1), by, {Hist::put("job-a", l)});
    commits.back().request = ++requests;
    commits.back().sent_local_ns = sent_ns;
    commits.back().acked = true;
  }
};

TEST(ExecutionChecks, ALeaderActingAfterItsOwnClockDeadlineIsAViolation) {
  constexpr std::string_view kRule = "leader-acts-within-own-deadline";
  {
    // Up to the last nanosecond before its deadline: fine, and the store
    // accepts it (leader-writes-within-lease is quiet either way).
    LeaderHist x;
    x.dispatch(x.deadline_ns() - 1);
    EXPECT_FALSE(x.fires(kRule));
    EXPECT_FALSE(x.fires("leader-writes-within-lease"));
  }
  {
    // At its deadline by its own clock: too late, though the store, whose
    // record runs for hours, still takes the write.
    LeaderHist x;
    x.dispatch(x.deadline_ns());
    EXPECT_TRUE(x.fires(kRule));
    EXPECT_FALSE(x.fires("leader-writes-within-lease"));
  }
  {
    // An acknowledged renewal moves the deadline on: measured from its send.
    LeaderHist x;
    x.renew(absl::Seconds(3));
    x.dispatch(x.clock_ns(absl::Seconds(11)));
    EXPECT_FALSE(x.fires(kRule));
  }
  {
    // The renewal's reply was lost: the store's record moved on, the
    // node's deadline did not.
    LeaderHist x;
    x.renew(absl::Seconds(3), /*acked=*/false);
    x.dispatch(x.clock_ns(absl::Seconds(11)));
    EXPECT_TRUE(x.fires(kRule));
  }
  {
    // A renewal the node sent after the dispatch gave that dispatch nothing
    // (it commits first here, its request is the later one).
    LeaderHist x;
    x.renew(absl::Seconds(9));
    x.dispatch(x.clock_ns(absl::Seconds(11)));
    std::swap(x.commits[2].request, x.commits[3].request);
    EXPECT_TRUE(x.fires(kRule));
  }
  {
    // The epoch's only write was never acknowledged: the node had no
    // leadership to act on.
    LeaderHist x(/*acked=*/false);
    x.dispatch(x.clock_ns(absl::Seconds(2)));
    EXPECT_TRUE(x.fires(kRule));
  }
  {
    // A pause of the leader (or a step of its clock) is no excuse: both
    // readings are its own clock's.
    LeaderHist x;
    x.time_faults.push_back({kLeader, x.at(absl::Seconds(2)), x.at(absl::Seconds(12)), "pause"});
    x.dispatch(x.clock_ns(absl::Seconds(12)));
    EXPECT_TRUE(x.fires(kRule));
  }
  {
    // The node restarted after the write: the process it was acknowledged
    // to is gone, not judged.
    LeaderHist x;
    x.starts.push_back({kLeader, x.at(absl::Seconds(5))});
    x.dispatch(x.clock_ns(absl::Seconds(12)));
    EXPECT_FALSE(x.fires(kRule));
  }
  {
    // No clock reading for the send (a commit stamped by nobody): not judged.
    LeaderHist x;
    x.dispatch(x.deadline_ns());
    x.commits.back().sent_local_ns = 0;
    EXPECT_FALSE(x.fires(kRule));
  }
  {
    // Another node's decision is leader-writes-within-lease's to judge.
    LeaderHist x;
    x.dispatch(x.deadline_ns(), kOther);
    EXPECT_FALSE(x.fires(kRule));
    EXPECT_TRUE(x.fires("leader-writes-within-lease"));
  }
}

TEST(ExecutionChecks, AReapAfterTheLeadersOwnDeadlineIsAViolation) {
  constexpr std::string_view kRule = "leader-acts-within-own-deadline";
  // job-a's run granted at 2 s until 32 s, lapsed by scheduler-1's reaper
  // at 40 s: after the lease's expiry, and after the node's own deadline
  // unless it renewed at 35 s.
  for (const bool renewed : {false, true}) {
    LeaderHist x;
    const RunRecord g = granted(ready_run(LeaderHist::nominal()), 1, x.at(absl::Seconds(2)));
    x.commit(absl::Seconds(2), kLeader, g);
    x.stamp(x.commits.back(), absl::Seconds(2) - absl::Milliseconds(1));
    if (renewed) x.renew(absl::Seconds(35));
    x.commit(absl::Seconds(40), kLeader, lapsed(g, x.at(absl::Seconds(40))));
    x.stamp(x.commits.back(), absl::Seconds(40) - absl::Milliseconds(1));
    EXPECT_FALSE(x.fires("reaper-waits-for-expiry"));
    EXPECT_EQ(x.fires(kRule), !renewed);
  }
}

TEST(ExecutionChecks, AReleaseAfterTheLeadersOwnDeadlineIsAViolation) {
  constexpr std::string_view kRule = "leader-acts-within-own-deadline";
  // scheduler-1 releases shard 0 (its record's expiry set to the store's
  // now) at 8 s, or at 9 s: before its own deadline (8.9 s after the
  // acquisition's send), or past it, while the store's record still runs
  // (the store writes the release). Past the deadline the lease lapses by
  // itself: sending a release then is a leader write the node no longer
  // owns. A renewal at 5 s moves the deadline past 9 s.
  for (const auto& [when, renewed, violation] :
       {std::tuple{absl::Seconds(8), false, false}, std::tuple{absl::Seconds(9), false, true},
        std::tuple{absl::Seconds(9), true, false}}) {
    LeaderHist x;
    if (renewed) x.renew(absl::Seconds(5));
    x.commit(when, kLeader, std::nullopt,
             std::make_pair(0u, LeaderRecord{"scheduler-1", 1, x.at(when)}));
    x.stamp(x.commits.back(), when - absl::Milliseconds(1));
    EXPECT_EQ(x.fires(kRule), violation) << absl::FormatDuration(when) << " renewed=" << renewed;
  }
  // Another node's write of an expired record is no release of scheduler-1's.
  LeaderHist other;
  other.commit(absl::Seconds(9), kOther, std::nullopt,
               std::make_pair(0u, LeaderRecord{"scheduler-1", 1, other.at(absl::Seconds(9))}));
  other.commits.back().sent_local_ns = other.clock_ns(absl::Seconds(9));
  EXPECT_FALSE(other.fires(kRule));
}

// T12 (fenced-leader-stops): after a node was refused a leader write as
// made under a stale epoch, a later refusal of the same node, shard and
// epoch answers a transaction already in flight (within the store client's
// timeout, 1 s here, plus drift) or breaks the rule.
TEST(ExecutionChecks, ALeaderRefusedForAStaleEpochThatGoesOnWritingUnderItIsAViolation) {
  auto refusal = [](TimeHist& x, std::string node, std::uint64_t shard, std::uint64_t epoch,
                    absl::Duration when) {
    Event e;
    e.kind = event_kinds::kWriteRejectedStaleEpoch;
    e.at = x.at(when);
    e.with("shard", shard).with("epoch", epoch).with("op", std::string("dispatch"));
    e.with("node", std::move(node));
    x.facts.observe_event(e, x.at(when));
  };
  // A dispatch and a reap in flight together, refused 5 ms apart: quiet.
  TimeHist pair;
  refusal(pair, "scheduler-1", 0, 3, absl::Seconds(10));
  refusal(pair, "scheduler-1", 0, 3, absl::Seconds(10) + absl::Milliseconds(5));
  EXPECT_FALSE(pair.fires("fenced-leader-stops"));
  // Refused again two seconds later under the same epoch: it kept leading.
  TimeHist again;
  refusal(again, "scheduler-1", 0, 3, absl::Seconds(10));
  refusal(again, "scheduler-1", 0, 3, absl::Seconds(12));
  EXPECT_TRUE(again.fires("fenced-leader-stops"));
  // Another epoch, shard or node later on: quiet (it re-acquired, or another
  // leadership was fenced).
  TimeHist other;
  refusal(other, "scheduler-1", 0, 3, absl::Seconds(10));
  refusal(other, "scheduler-1", 0, 4, absl::Seconds(12));
  refusal(other, "scheduler-1", 1, 3, absl::Seconds(12));
  refusal(other, "scheduler-2", 0, 3, absl::Seconds(12));
  EXPECT_FALSE(other.fires("fenced-leader-stops"));
  // The node paused in between: its answers were handled late, not judged.
  TimeHist paused;
  refusal(paused, "scheduler-1", 0, 3, absl::Seconds(10));
  refusal(paused, "scheduler-1", 0, 3, absl::Seconds(12));
  paused.time_faults.push_back(
      {kLeader, paused.at(absl::Seconds(10)), paused.at(absl::Seconds(11)), "pause"});
  EXPECT_FALSE(paused.fires("fenced-leader-stops"));
}

}  // namespace
}  // namespace kairos::sim
