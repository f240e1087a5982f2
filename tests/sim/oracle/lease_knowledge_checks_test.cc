// The true-time rules on what a worker knows of its lease
// (sim/oracle/execution_checks.cc): `grant-started-within-deadline` (no
// attempt starts at or after the worker's own-clock deadline of its grant)
// and `lease-loss-stops-execution` (no attempt executes after its worker
// learned its lease is gone), each on a hand-made history that breaks it and
// on a correct one, with the exemptions they state.
#include <gtest/gtest.h>

#include "core/kernel/event_kinds.h"
#include "tests/support/history_builder.h"

namespace kairos::sim {
namespace {

using test_support::granted;
using test_support::Hist;

constexpr NodeId kLeader = 1;  // scheduler-1
constexpr NodeId kWorker = 3;  // worker-1

RunRecord ready_run() {
  RunRecord r;
  r.id = RunId{"job-a", 1, absl::FromUnixSeconds(1767225601)};
  r.due_at = r.ready_at = r.dispatched_at = r.id.nominal;
  return r;
}

struct LeaseHist : Hist {
  std::vector<Execution> executions;
  std::vector<NodeWindow> time_faults;
  std::vector<LeaseRefusal> refusals;
  RunRecord run = ready_run();
  LeaseHist() {
    names.push_back("worker-1");
    commit(absl::ZeroDuration(), kLeader, std::nullopt,
           std::make_pair(0u, LeaderRecord{"scheduler-1", 1, t0 + absl::Hours(2)}));
    commit(absl::Seconds(1), kLeader, run);
    commit(absl::Seconds(2), kLeader, granted(run, 1, at(absl::Seconds(2))));  // lease 30s
  }
  absl::Time at(absl::Duration d) const { return t0 + d; }
  std::uint32_t key() { return facts.strings().id(idempotency_key(run.id)); }
  // Token 1's execution on worker-1 from t0 + from to t0 + to; the worker's
  // clock reads true time + `skew`; its claim went out at t0 + sent.
  Execution& execute(absl::Duration from, absl::Duration to, absl::Duration sent,
                     absl::Duration skew = absl::ZeroDuration()) {
    Execution e;
    e.run = key();
    e.job = facts.strings().id(run.id.job_id);
    e.token = 1;
    e.node = kWorker;
    e.start = at(from);
    e.end = at(to);
    e.start_store_us = absl::ToUnixMicros(e.start);
    e.end_store_us = absl::ToUnixMicros(e.end);
    e.start_local = e.start + skew;
    e.end_local = e.end + skew;
    e.grant_sent = at(sent) + skew;
    e.grant_ttl = absl::Seconds(30);
    executions.push_back(e);
    return executions.back();
  }
  // The worker's own record `kind` about token 1 at t0 + when.
  void worker_event(std::string_view kind, absl::Duration when) {
    Event e;
    e.kind = kind;  // static storage (event_kinds)
    e.at = at(when);
    e.with("job", run.id.job_id)
        .with("incarnation", run.id.incarnation)
        .with("nominal", run.id.nominal)
        .with("token", std::uint64_t{1});
    facts.observe_event(e, at(when));
  }
  // A refusal of token 1's renewal sent at t0 + sent, handled at t0 + when.
  void refusal(absl::Duration sent, absl::Duration when) {
    refusals.push_back({key(), 1, kWorker, at(when), at(sent), at(sent), at(when)});
  }
  History full() const {
    History h = history();
    h.executions = &executions;
    h.time_faults = &time_faults;
    h.refusals = &refusals;
    h.store_node = 0;
    h.max_drift_ppm = 10'000;
    h.lease_margin = absl::Seconds(1);
    h.rpc_timeout = absl::Seconds(1);
    return h;
  }
  bool fires(std::string_view name) const {
    for (const auto& v : Checker::with_defaults().run(full(), {}).violations)
      if (v.invariant == name) return true;
    return false;
  }
};

constexpr std::string_view kStart = "grant-started-within-deadline";
constexpr std::string_view kStop = "lease-loss-stops-execution";

TEST(LeaseKnowledgeChecks, AGrantStartedAtOrAfterItsOwnClockDeadlineIsAViolation) {
  // Lease 30s, max drift 1%, margin 1s: the deadline is 28.7s after the
  // claim's send (t0 + 1.5s), at t0 + 30.2s by the worker's clock.
  auto started = [](absl::Duration from, absl::Duration skew = absl::ZeroDuration()) {
    LeaseHist x;
    x.execute(from, from + absl::Milliseconds(1), absl::Milliseconds(1500), skew);
    return x;
  };
  EXPECT_FALSE(started(absl::Seconds(3)).fires(kStart));
  EXPECT_FALSE(started(absl::Milliseconds(30'199)).fires(kStart));
  EXPECT_TRUE(started(absl::Milliseconds(30'200)).fires(kStart));  // exactly at the deadline
  EXPECT_TRUE(started(absl::Seconds(31)).fires(kStart));
  // The worker's own clock is the measure: a clock 10s ahead of true time
  // changes nothing, both readings carry it.
  EXPECT_TRUE(started(absl::Seconds(31), absl::Seconds(10)).fires(kStart));
  EXPECT_FALSE(started(absl::Seconds(3), absl::Seconds(10)).fires(kStart));
  // No time fault exempts it: the worker reads its clock as it handles the grant.
  LeaseHist paused = started(absl::Seconds(31));
  paused.time_faults.push_back(
      {kWorker, paused.at(absl::Seconds(2)), paused.at(absl::Seconds(31)), "pause"});
  EXPECT_TRUE(paused.fires(kStart));
  // An attempt with no known grant (it did not start from a claim answer) is
  // not judged.
  LeaseHist unknown = started(absl::Seconds(31));
  unknown.executions.back().grant_sent = absl::InfinitePast();
  EXPECT_FALSE(unknown.fires(kStart));
}

TEST(LeaseKnowledgeChecks, AnAttemptStillExecutingAfterItsLeaseWasRefusedIsAViolation) {
  auto refused = [](absl::Duration end) {
    LeaseHist x;
    x.execute(absl::Seconds(3), end, absl::Seconds(2));
    x.refusal(absl::Milliseconds(9'800), absl::Seconds(10));
    return x;
  };
  // Stopped at the very instant the worker handled the refusal: correct.
  EXPECT_FALSE(refused(absl::Seconds(10)).fires(kStop));
  EXPECT_FALSE(refused(absl::Seconds(8)).fires(kStop));
  EXPECT_TRUE(refused(absl::Seconds(15)).fires(kStop));
  // An answer the worker no longer waited for (handled more than the rpc
  // timeout after the send, by its clock) is not judged...
  LeaseHist late;
  late.execute(absl::Seconds(3), absl::Seconds(15), absl::Seconds(2));
  late.refusal(absl::Seconds(8), absl::Seconds(10));
  EXPECT_FALSE(late.fires(kStop));
  // ... nor one across a clock step of the worker; a pause is no excuse.
  LeaseHist stepped = refused(absl::Seconds(15));
  stepped.time_faults.push_back(
      {kWorker, stepped.at(absl::Seconds(9)), absl::InfiniteFuture(), "clock-jump"});
  EXPECT_FALSE(stepped.fires(kStop));
  LeaseHist paused = refused(absl::Seconds(15));
  paused.time_faults.push_back(
      {kWorker, paused.at(absl::Seconds(9)), paused.at(absl::Seconds(10)), "pause"});
  EXPECT_TRUE(paused.fires(kStop));
}

TEST(LeaseKnowledgeChecks, AnAttemptExecutingAfterItsWorkerSaidItStoppedIsAViolation) {
  for (std::string_view kind : {event_kinds::kWorkerLeaseLost, event_kinds::kWorkerLeaseDeadline,
                                event_kinds::kWorkerRunTimeout}) {
    auto make = [&](absl::Duration end) {
      LeaseHist x;
      x.execute(absl::Seconds(3), end, absl::Seconds(2));
      x.worker_event(kind, absl::Seconds(20));
      return x;
    };
    EXPECT_FALSE(make(absl::Seconds(20)).fires(kStop)) << kind;
    EXPECT_TRUE(make(absl::Seconds(21)).fires(kStop)) << kind;
    // An attempt of another token is not concerned.
    LeaseHist other = make(absl::Seconds(21));
    other.executions.back().token = 2;
    EXPECT_FALSE(other.fires(kStop)) << kind;
  }
}

TEST(LeaseKnowledgeChecks, AnAttemptStartedAfterItsLeaseWasRefusedIsAViolation) {
  LeaseHist x;
  x.refusal(absl::Milliseconds(9'800), absl::Seconds(10));
  x.execute(absl::Seconds(11), absl::Seconds(12), absl::Seconds(2));
  EXPECT_TRUE(x.fires(kStop));
}

}  // namespace
}  // namespace kairos::sim
