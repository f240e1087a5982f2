// The report rules (sim/oracle/report_checks.cc) on hand-made histories:
// `runs-record-reports` fires when a completion the store applied records an
// outcome, exit code or detail its worker's report did not say, or closes an
// attempt as reported with no report sent, and stays quiet on a faithful
// record, a detail cut at the documented limit and a lapse;
// `report-verdicts-truthful` fires when a copy of an applied report is
// answered refused while the run still stands as the report left it, and
// stays quiet once the run was written again, before the report applied and
// on an accepted copy. Releases (a draining worker's `stopped` report) are
// judged by both: an attempt ends `released` only by its worker's stopped
// report of that token, and a copy of an applied release is not refused;
// `report-events-truthful` fires when a worker's
// report_accepted / report_rejected event names a verdict or reason no
// answer it handled at that instant gave, and stays quiet on faithful lines;
// `reports-abandoned-unanswered` fires when a report is given up although
// an answer (an error included) reached its last send, and stays quiet when
// none did.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "core/kernel/event_kinds.h"
#include "tests/support/history_builder.h"

namespace kairos::sim {
namespace {

using test_support::granted;
using test_support::Hist;
using test_support::violated;

constexpr NodeId kNode = 1;
constexpr NodeId kWorker = 3;
constexpr std::string_view kRecord = "runs-record-reports";
constexpr std::string_view kTruthful = "report-verdicts-truthful";
constexpr std::string_view kEvents = "report-events-truthful";
constexpr std::string_view kAbandoned = "reports-abandoned-unanswered";

struct ReportHist : Hist {
  RunRecord r;
  std::vector<ReportFact> reports;
  ReportHist() {
    names.push_back("worker-1");
    r.id = RunId{"job-r", 1, t0 + absl::Seconds(10)};
    r.due_at = r.ready_at = r.dispatched_at = r.id.nominal;
    commit(absl::Seconds(10), kNode, r);
    r = granted(r, 1, t0 + absl::Seconds(11));
    commit(absl::Seconds(11), kNode, r);
  }
  // The worker's report of token 1 (sent), or an answer to a copy of it.
  void report(absl::Duration at, RunStatus outcome, std::int32_t exit, const std::string& detail,
              std::optional<WriteVerdict> answer = std::nullopt, const std::string& reason = "") {
    ReportFact f;
    f.run = facts.strings().id(idempotency_key(r.id));
    f.token = 1;
    f.outcome = outcome;
    f.exit_code = exit;
    f.detail = facts.strings().id(detail);
    f.answered = answer.has_value();
    if (answer) f.verdict = *answer;
    f.reason = facts.strings().id(reason);
    f.worker = kWorker;
    f.at = t0 + at;
    reports.push_back(f);
  }
  // The store closes attempt 1 as `end`: final, or ready for a retry.
  void close(absl::Duration at, AttemptEnd end, RunStatus outcome, std::int32_t exit,
             const std::string& detail, bool retry) {
    r.attempts.back().end = end;
    r.attempts.back().exit_code = exit;
    r.attempts.back().finished_at = t0 + at;
    r.outcome = outcome;
    r.exit_code = exit;
    r.detail = detail;
    r.owner.clear();
    r.lease_expiry = absl::InfinitePast();
    if (retry) {
      r.state = RunState::kReady;
      r.attempt += 1;
      r.ready_at = t0 + at + absl::Seconds(5);
    } else {
      r.state = outcome == RunStatus::kSucceeded ? RunState::kSucceeded : RunState::kFailed;
    }
    commit(at, kNode, r);
  }
  // An error message answering the request that carried the report.
  void error_answer(absl::Duration at) {
    report(at, RunStatus::kSucceeded, 0, "ok");
    reports.back().answered = true;
    reports.back().error = true;
  }
  // The worker's event settling its report of token 1 at t0 + `at`.
  void settled(absl::Duration at, std::string_view kind, std::optional<std::string> reason) {
    Event e;
    e.kind = kind;
    e.with("job", r.id.job_id)
        .with("incarnation", r.id.incarnation)
        .with("nominal", r.id.nominal)
        .with("token", std::uint64_t{1});
    if (reason) e.with("reason", *reason);
    facts.observe_event(e, t0 + at);
  }
  std::set<std::string> fired() const {
    History h = history();
    h.reports = &reports;
    return violated(h);
  }
};

TEST(ReportChecks, AFaithfulRecordOfTheReportIsQuiet) {
  ReportHist ok;
  ok.report(absl::Seconds(12), RunStatus::kSucceeded, 0, "deduplicated");
  ok.close(absl::Seconds(12) + absl::Milliseconds(5), AttemptEnd::kSucceeded, RunStatus::kSucceeded,
           0, "deduplicated", false);
  EXPECT_EQ(ok.fired().count(std::string(kRecord)), 0u);

  ReportHist retry;
  retry.report(absl::Seconds(12), RunStatus::kFailed, 1, "simulated failure");
  retry.close(absl::Seconds(12) + absl::Milliseconds(5), AttemptEnd::kFailed, RunStatus::kFailed, 1,
              "simulated failure", true);
  EXPECT_EQ(retry.fired().count(std::string(kRecord)), 0u);

  // The stored detail is the report's cut at the documented limit.
  ReportHist longer;
  const std::string detail(kMaxDetailSize + 10, 'x');
  longer.report(absl::Seconds(12), RunStatus::kFailed, 1, detail);
  longer.close(absl::Seconds(12) + absl::Milliseconds(5), AttemptEnd::kFailed, RunStatus::kFailed,
               1, detail.substr(0, kMaxDetailSize), false);
  EXPECT_EQ(longer.fired().count(std::string(kRecord)), 0u);

  // A lapse is the reaper's, not a report's.
  ReportHist lapse;
  lapse.r.attempts.back().end = AttemptEnd::kLapsed;
  lapse.r.state = RunState::kReady;
  lapse.r.owner.clear();
  lapse.commit(absl::Seconds(45), kNode, lapse.r);
  EXPECT_EQ(lapse.fired().count(std::string(kRecord)), 0u);
}

TEST(ReportChecks, ARecordTheReportDidNotSayIsAViolation) {
  // A retry's detail that lost a byte.
  ReportHist detail;
  detail.report(absl::Seconds(12), RunStatus::kFailed, 1, "simulated failure");
  detail.close(absl::Seconds(12) + absl::Milliseconds(5), AttemptEnd::kFailed, RunStatus::kFailed,
               1, "imulated failure", true);
  EXPECT_EQ(detail.fired().count(std::string(kRecord)), 1u);

  // Another exit code.
  ReportHist exit;
  exit.report(absl::Seconds(12), RunStatus::kFailed, 1, "boom");
  exit.close(absl::Seconds(12) + absl::Milliseconds(5), AttemptEnd::kFailed, RunStatus::kFailed, 2,
             "boom", false);
  EXPECT_EQ(exit.fired().count(std::string(kRecord)), 1u);

  // Another outcome: reported failed, recorded timed out.
  ReportHist outcome;
  outcome.report(absl::Seconds(12), RunStatus::kFailed, 1, "boom");
  outcome.close(absl::Seconds(12) + absl::Milliseconds(5), AttemptEnd::kTimedOut,
                RunStatus::kTimedOut, 1, "boom", false);
  EXPECT_EQ(outcome.fired().count(std::string(kRecord)), 1u);

  // Closed as succeeded with no report sent at all.
  ReportHist none;
  none.close(absl::Seconds(12), AttemptEnd::kSucceeded, RunStatus::kSucceeded, 0, "", false);
  EXPECT_EQ(none.fired().count(std::string(kRecord)), 1u);
}

TEST(ReportChecks, ARefusedCopyOfAnAppliedReportIsAViolationUntilTheRunMovesOn) {
  auto applied = [] {
    ReportHist h;
    h.report(absl::Seconds(12), RunStatus::kFailed, 1, "boom");
    h.close(absl::Seconds(12) + absl::Milliseconds(5), AttemptEnd::kFailed, RunStatus::kFailed, 1,
            "boom", true);
    return h;
  };
  ReportHist refused = applied();
  refused.report(absl::Seconds(14), RunStatus::kFailed, 1, "boom", WriteVerdict::kStaleToken);
  EXPECT_EQ(refused.fired().count(std::string(kTruthful)), 1u);

  ReportHist accepted = applied();
  accepted.report(absl::Seconds(14), RunStatus::kFailed, 1, "boom", WriteVerdict::kAccepted);
  EXPECT_EQ(accepted.fired().count(std::string(kTruthful)), 0u);

  // Granted again (token 2) before the copy's answer: stale is the truth.
  ReportHist moved = applied();
  moved.r = granted(moved.r, 2, moved.t0 + absl::Seconds(13));
  moved.commit(absl::Seconds(13), kNode, moved.r);
  moved.report(absl::Seconds(14), RunStatus::kFailed, 1, "boom", WriteVerdict::kStaleToken);
  EXPECT_EQ(moved.fired().count(std::string(kTruthful)), 0u);

  // An answer handled before the report applied judges an earlier state.
  ReportHist before;
  before.report(absl::Seconds(11) + absl::Milliseconds(500), RunStatus::kFailed, 1, "boom",
                WriteVerdict::kStaleToken);
  before.report(absl::Seconds(12), RunStatus::kFailed, 1, "boom");
  before.close(absl::Seconds(12) + absl::Milliseconds(5), AttemptEnd::kFailed, RunStatus::kFailed,
               1, "boom", true);
  EXPECT_EQ(before.fired().count(std::string(kTruthful)), 0u);
}

TEST(ReportChecks, WorkerEventsStateTheVerdictAndReasonTheyWereGiven) {
  const absl::Duration at = absl::Seconds(12) + absl::Milliseconds(5);
  auto answered = [&](WriteVerdict v, const std::string& reason) {
    ReportHist h;
    h.report(absl::Seconds(12), RunStatus::kSucceeded, 0, "ok");
    h.report(at, RunStatus::kSucceeded, 0, "ok", v, reason);
    return h;
  };
  ReportHist accepted = answered(WriteVerdict::kAccepted, "");
  accepted.settled(at, event_kinds::kWorkerReportAccepted, std::nullopt);
  EXPECT_EQ(accepted.fired().count(std::string(kEvents)), 0u);

  ReportHist rejected = answered(WriteVerdict::kStaleToken, "stale token: run re-granted");
  rejected.settled(at, event_kinds::kWorkerReportRejected,
                   std::string("stale token: run re-granted"));
  EXPECT_EQ(rejected.fired().count(std::string(kEvents)), 0u);

  // Dropped and abandoned reports had no answer: nothing to compare.
  ReportHist dropped;
  dropped.report(absl::Seconds(12), RunStatus::kSucceeded, 0, "ok");
  dropped.settled(at, event_kinds::kWorkerReportDropped, std::string("lease lost"));
  EXPECT_EQ(dropped.fired().count(std::string(kEvents)), 0u);

  // An accepted report logged with a (refusal's) reason.
  ReportHist with_reason = answered(WriteVerdict::kAccepted, "");
  with_reason.settled(at, event_kinds::kWorkerReportAccepted, std::string(""));
  EXPECT_EQ(with_reason.fired().count(std::string(kEvents)), 1u);

  // A refusal logged without its reason, or with another one.
  ReportHist no_reason = answered(WriteVerdict::kStaleToken, "stale token");
  no_reason.settled(at, event_kinds::kWorkerReportRejected, std::nullopt);
  EXPECT_EQ(no_reason.fired().count(std::string(kEvents)), 1u);
  ReportHist other = answered(WriteVerdict::kNotLeased, "not leased");
  other.settled(at, event_kinds::kWorkerReportRejected, std::string("stale token"));
  EXPECT_EQ(other.fired().count(std::string(kEvents)), 1u);

  // The wrong verdict: refused but logged accepted, accepted but logged rejected.
  ReportHist flipped = answered(WriteVerdict::kStaleToken, "stale token");
  flipped.settled(at, event_kinds::kWorkerReportAccepted, std::nullopt);
  EXPECT_EQ(flipped.fired().count(std::string(kEvents)), 1u);
  ReportHist flipped_back = answered(WriteVerdict::kAccepted, "");
  flipped_back.settled(at, event_kinds::kWorkerReportRejected, std::string(""));
  EXPECT_EQ(flipped_back.fired().count(std::string(kEvents)), 1u);

  // A verdict logged with no answer handled at that instant.
  ReportHist unanswered;
  unanswered.report(absl::Seconds(12), RunStatus::kSucceeded, 0, "ok");
  unanswered.settled(at, event_kinds::kWorkerReportAccepted, std::nullopt);
  EXPECT_EQ(unanswered.fired().count(std::string(kEvents)), 1u);
}

TEST(ReportChecks, AReportIsAbandonedOnlyWhenItsLastSendWentUnanswered) {
  auto sent = [] {
    ReportHist h;
    h.report(absl::Seconds(12), RunStatus::kSucceeded, 0, "ok");
    return h;
  };
  const std::optional<std::string> none;
  ReportHist unanswered = sent();
  unanswered.settled(absl::Seconds(13), event_kinds::kWorkerReportAbandoned, none);
  EXPECT_EQ(unanswered.fired().count(std::string(kAbandoned)), 0u);

  // The node answered with an error: the worker must try again.
  ReportHist error = sent();
  error.error_answer(absl::Seconds(12) + absl::Milliseconds(300));
  error.settled(absl::Seconds(13), event_kinds::kWorkerReportAbandoned, none);
  EXPECT_EQ(error.fired().count(std::string(kAbandoned)), 1u);

  // An error to an earlier send, then a send nothing answered.
  ReportHist retried = sent();
  retried.error_answer(absl::Seconds(12) + absl::Milliseconds(300));
  retried.report(absl::Seconds(14), RunStatus::kSucceeded, 0, "ok");
  retried.settled(absl::Seconds(15), event_kinds::kWorkerReportAbandoned, none);
  EXPECT_EQ(retried.fired().count(std::string(kAbandoned)), 0u);

  // A late answer to an earlier send (the network kept a copy of it) says
  // nothing about the last one.
  ReportHist late = sent();
  late.reports.back().request = 1;
  late.report(absl::Seconds(14), RunStatus::kSucceeded, 0, "ok");
  late.reports.back().request = 2;
  late.error_answer(absl::Seconds(14) + absl::Milliseconds(300));
  late.reports.back().request = 1;
  late.settled(absl::Seconds(15), event_kinds::kWorkerReportAbandoned, none);
  EXPECT_EQ(late.fired().count(std::string(kAbandoned)), 0u);
  late.error_answer(absl::Seconds(14) + absl::Milliseconds(400));
  late.reports.back().request = 2;
  EXPECT_EQ(late.fired().count(std::string(kAbandoned)), 1u);

  // An answer handled at the abandon's own instant may have come after it.
  ReportHist tie = sent();
  tie.error_answer(absl::Seconds(13));
  tie.settled(absl::Seconds(13), event_kinds::kWorkerReportAbandoned, none);
  EXPECT_EQ(tie.fired().count(std::string(kAbandoned)), 0u);

  // An error answer is not a verdict: no worker event may claim one from it.
  ReportHist logged = sent();
  logged.error_answer(absl::Seconds(12) + absl::Milliseconds(300));
  logged.settled(absl::Seconds(12) + absl::Milliseconds(300), event_kinds::kWorkerReportAccepted,
                 none);
  EXPECT_EQ(logged.fired().count(std::string(kEvents)), 1u);
}

// A release: the draining worker's `stopped` report hands the grant back
// unrun; the store ends the attempt `released` and re-queues the run, or
// fails it on its last attempt (the outcome is the failure, not the report's).
struct ReleaseHist : ReportHist {
  void release(absl::Duration at, bool last) {
    r.attempts.back().end = AttemptEnd::kReleased;
    r.attempts.back().finished_at = t0 + at;
    r.owner.clear();
    r.lease_expiry = absl::InfinitePast();
    if (last) {
      r.state = RunState::kFailed;
      r.outcome = RunStatus::kFailed;
      r.detail = "released on the last attempt (1 of 1)";
    } else {
      r.state = RunState::kReady;
      r.attempt += 1;
      r.ready_at = t0 + at;
    }
    commit(at, kNode, r);
  }
};

TEST(ReportChecks, AReleaseNeedsTheWorkersStoppedReport) {
  // Handed back by the worker: quiet, re-queued or failed on the last attempt.
  for (bool last : {false, true}) {
    ReleaseHist ok;
    ok.report(absl::Seconds(12), RunStatus::kStopped, 0, "worker draining");
    ok.release(absl::Seconds(12) + absl::Milliseconds(5), last);
    EXPECT_EQ(ok.fired().count(std::string(kRecord)), 0u) << last;
  }
  // Released with no report at all, or with a report that said something
  // else (a failure recorded as a hand-back): the store ended an attempt its
  // worker never gave back.
  ReleaseHist none;
  none.release(absl::Seconds(12), false);
  EXPECT_EQ(none.fired().count(std::string(kRecord)), 1u);
  ReleaseHist other;
  other.report(absl::Seconds(12), RunStatus::kFailed, 1, "boom");
  other.release(absl::Seconds(12) + absl::Milliseconds(5), false);
  EXPECT_EQ(other.fired().count(std::string(kRecord)), 1u);
  // A stopped report of another token does not cover this attempt.
  ReleaseHist token;
  token.report(absl::Seconds(12), RunStatus::kStopped, 0, "worker draining");
  token.reports.back().token = 7;
  token.release(absl::Seconds(12) + absl::Milliseconds(5), false);
  EXPECT_EQ(token.fired().count(std::string(kRecord)), 1u);
}

TEST(ReportChecks, ARefusedCopyOfAnAppliedReleaseIsAViolation) {
  // The release failed the run on its last attempt; the worker lost the
  // answer and sent it again: "not leased" would say it was never applied.
  auto applied = [](bool last) {
    ReleaseHist h;
    h.report(absl::Seconds(12), RunStatus::kStopped, 0, "worker draining");
    h.release(absl::Seconds(12) + absl::Milliseconds(5), last);
    return h;
  };
  for (bool last : {false, true}) {
    ReleaseHist refused = applied(last);
    refused.report(absl::Seconds(14), RunStatus::kStopped, 0, "worker draining",
                   WriteVerdict::kNotLeased);
    EXPECT_EQ(refused.fired().count(std::string(kTruthful)), 1u) << last;
    ReleaseHist accepted = applied(last);
    accepted.report(absl::Seconds(14), RunStatus::kStopped, 0, "worker draining",
                    WriteVerdict::kAccepted);
    EXPECT_EQ(accepted.fired().count(std::string(kTruthful)), 0u) << last;
  }
  // Claimed again (token 2) before the copy's answer: stale is the truth.
  ReleaseHist moved = applied(false);
  moved.r = granted(moved.r, 2, moved.t0 + absl::Seconds(13));
  moved.commit(absl::Seconds(13), kNode, moved.r);
  moved.report(absl::Seconds(14), RunStatus::kStopped, 0, "worker draining",
               WriteVerdict::kStaleToken);
  EXPECT_EQ(moved.fired().count(std::string(kTruthful)), 0u);
}

}  // namespace
}  // namespace kairos::sim
