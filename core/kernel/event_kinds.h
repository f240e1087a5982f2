// Event kinds: every kind of Event (core/ports/event_log.h) the kernel
// records, as named constants, and kAllEventKinds, the registry of them.
//
// A kind is a dotted "subject.what" word with static storage (Event::kind is
// a string_view); the kinds are the kernel's stable vocabulary, matched by
// the simulator's recorder and checker (sim/oracle/), its coverage marks
// (sim/world/cluster.cc) and the operators' logs. Consumers compare against
// these constants, never against literals, so a renamed kind fails to
// compile instead of silently never matching. A kind the kernel starts
// recording is added here and to kAllEventKinds (tests check that every kind
// a simulated run records is registered).
#pragma once

#include <array>
#include <string_view>

namespace kairos::event_kinds {

// --- Jobs (the job API, core/kernel/job_store.cc) ---------------------------
inline constexpr std::string_view kJobCreated = "job.created";
inline constexpr std::string_view kJobCancelled = "job.cancelled";
inline constexpr std::string_view kJobPaused = "job.paused";
inline constexpr std::string_view kJobResumed = "job.resumed";
inline constexpr std::string_view kJobUpdated = "job.updated";
inline constexpr std::string_view kJobTriggered = "job.triggered";

// --- Runs (core/kernel/job_store.cc) -----------------------------------------
inline constexpr std::string_view kRunDispatched = "run.dispatched";
inline constexpr std::string_view kRunClaimed = "run.claimed";
inline constexpr std::string_view kRunRenewed = "run.renewed";
inline constexpr std::string_view kRunReleased = "run.released";
inline constexpr std::string_view kRunCompleted = "run.completed";
inline constexpr std::string_view kRunCancelled = "run.cancelled";
inline constexpr std::string_view kRunPromoted = "run.promoted";
inline constexpr std::string_view kRunLeaseLapsed = "run.lease_lapsed";
inline constexpr std::string_view kRunRetryScheduled = "run.retry_scheduled";

// --- Fencing: writes refused (job_store.cc, scheduler_node.cc) ---------------
inline constexpr std::string_view kWriteRejectedStaleToken = "write.rejected_stale_token";
inline constexpr std::string_view kWriteRejectedStaleEpoch = "write.rejected_stale_epoch";

// --- Policy decisions and the ledger (core/kernel/job_store.cc) -------------
inline constexpr std::string_view kMisfireDecided = "misfire.decided";
inline constexpr std::string_view kLedgerRecorded = "ledger.recorded";
inline constexpr std::string_view kLedgerUpdated = "ledger.updated";
inline constexpr std::string_view kLedgerPruned = "ledger.pruned";

// --- Leadership (job_store.cc, scheduler_node.cc) ----------------------------
inline constexpr std::string_view kLeaderAcquired = "leader.acquired";
inline constexpr std::string_view kLeaderLost = "leader.lost";
// A leader gave a shard up (rebalancing): its record expires at the store's
// now, so another node may acquire it at once.
inline constexpr std::string_view kLeaderReleased = "leader.released";
// A node record expired for longer than kNodeRecordRetention was removed.
inline constexpr std::string_view kNodePruned = "node.pruned";
// A node left the membership on purpose (JobStore::depart): its record
// expired at the store's now.
inline constexpr std::string_view kNodeDeparted = "node.departed";

// --- Scheduler nodes (core/kernel/scheduler_node.cc) -------------------------
inline constexpr std::string_view kNodeStarted = "node.started";
inline constexpr std::string_view kNodeInitFailed = "node.init_failed";
inline constexpr std::string_view kNodeClockSkew = "node.clock_skew";
inline constexpr std::string_view kNodeClockOk = "node.clock_ok";
inline constexpr std::string_view kWireMalformed = "wire.malformed";
// A stored record that does not decode; recorded once per key per node, which
// then reports itself degraded (SchedulerNode::health()).
inline constexpr std::string_view kRecordUndecodable = "record.undecodable";
// A transaction body failed in a way the node does not handle (not a stale
// epoch): logged with the body's name and status instead of dropped.
inline constexpr std::string_view kTxnFailed = "txn.failed";

// --- Workers (core/kernel/worker.cc) -----------------------------------------
inline constexpr std::string_view kWorkerStarted = "worker.started";
inline constexpr std::string_view kWorkerRunStarted = "worker.run_started";
inline constexpr std::string_view kWorkerGrantExpired = "worker.grant_expired";
inline constexpr std::string_view kWorkerLeaseDeadline = "worker.lease_deadline";
inline constexpr std::string_view kWorkerLeaseLost = "worker.lease_lost";
inline constexpr std::string_view kWorkerRunTimeout = "worker.run_timeout";
inline constexpr std::string_view kWorkerReportAccepted = "worker.report_accepted";
inline constexpr std::string_view kWorkerReportRejected = "worker.report_rejected";
inline constexpr std::string_view kWorkerReportDropped = "worker.report_dropped";
inline constexpr std::string_view kWorkerReportAbandoned = "worker.report_abandoned";

// Every kind above, once.
inline constexpr std::array kAllEventKinds = {
    kJobCreated,
    kJobCancelled,
    kJobPaused,
    kJobResumed,
    kJobUpdated,
    kJobTriggered,
    kRunDispatched,
    kRunClaimed,
    kRunRenewed,
    kRunReleased,
    kRunCompleted,
    kRunCancelled,
    kRunPromoted,
    kRunLeaseLapsed,
    kRunRetryScheduled,
    kWriteRejectedStaleToken,
    kWriteRejectedStaleEpoch,
    kMisfireDecided,
    kLedgerRecorded,
    kLedgerUpdated,
    kLedgerPruned,
    kLeaderAcquired,
    kLeaderLost,
    kLeaderReleased,
    kNodePruned,
    kNodeDeparted,
    kNodeStarted,
    kNodeInitFailed,
    kNodeClockSkew,
    kNodeClockOk,
    kWireMalformed,
    kRecordUndecodable,
    kTxnFailed,
    kWorkerStarted,
    kWorkerRunStarted,
    kWorkerGrantExpired,
    kWorkerLeaseDeadline,
    kWorkerLeaseLost,
    kWorkerRunTimeout,
    kWorkerReportAccepted,
    kWorkerReportRejected,
    kWorkerReportDropped,
    kWorkerReportAbandoned,
};

// Whether `kind` is in kAllEventKinds.
constexpr bool is_event_kind(std::string_view kind) {
  for (std::string_view k : kAllEventKinds)
    if (k == kind) return true;
  return false;
}

}  // namespace kairos::event_kinds
