// Invariant names: the one table of every invariant the checker judges, each
// with its stable name (used by `ignore NAME` in scenario files, in violation
// reports and by the planted-bug tests) and a one-line statement of what must
// hold, numbered as in docs/SIMULATION.md, "Invariants". The checker's
// registry (sim/oracle/checker.cc) is built from this table in its order, and
// every finding is recorded under a name from it (Findings checks that), so a
// name cannot be reported that is not listed here.
#pragma once

#include <array>
#include <string_view>

namespace kairos::sim {

struct InvariantInfo {
  std::string_view name;
  std::string_view description;
};

namespace inv {
inline constexpr std::string_view kOccurrencesComplete = "occurrences-complete";
inline constexpr std::string_view kEffectPerSuccess = "effect-per-success";
inline constexpr std::string_view kSinkOneEffectPerKey = "sink-one-effect-per-key";
inline constexpr std::string_view kSinkOneAttemptPerToken = "sink-one-attempt-per-token";
inline constexpr std::string_view kRunCreatedOnce = "run-created-once";
inline constexpr std::string_view kSingleValidLease = "single-valid-lease";
inline constexpr std::string_view kTokensIncrease = "tokens-increase";
inline constexpr std::string_view kEpochsIncrease = "epochs-increase";
inline constexpr std::string_view kNoStaleLeaderWrites = "no-stale-leader-writes";
inline constexpr std::string_view kNoStaleTokenWrites = "no-stale-token-writes";
inline constexpr std::string_view kCancelStopsRuns = "cancel-stops-runs";
inline constexpr std::string_view kTimeliness = "timeliness";
inline constexpr std::string_view kAckedCommitsDurable = "acked-commits-durable";
inline constexpr std::string_view kNotBeforeDue = "not-before-due";
inline constexpr std::string_view kCorruptionContained = "corruption-contained";
inline constexpr std::string_view kUndecodableOnlyWhereCorrupted =
    "undecodable-only-where-corrupted";
// The report rules (sim/oracle/report_checks.cc).
inline constexpr std::string_view kRunsRecordReports = "runs-record-reports";
inline constexpr std::string_view kReportVerdictsTruthful = "report-verdicts-truthful";
inline constexpr std::string_view kReportEventsTruthful = "report-events-truthful";
inline constexpr std::string_view kReportsAbandonedUnanswered = "reports-abandoned-unanswered";
inline constexpr std::string_view kJobEventsTruthful = "job-events-truthful";
// The policy invariants (sim/oracle/policy_checks.cc).
inline constexpr std::string_view kLedgerOneOutcome = "ledger-one-outcome";
inline constexpr std::string_view kAttemptsBounded = "attempts-bounded";
inline constexpr std::string_view kRetryBackoff = "retry-backoff";
inline constexpr std::string_view kOverlapRespected = "overlap-respected";
inline constexpr std::string_view kCatchUpBounded = "catch-up-bounded";
inline constexpr std::string_view kMisfireThreshold = "misfire-threshold";
inline constexpr std::string_view kPriorityOrder = "priority-order";
inline constexpr std::string_view kOverlapReachesLimit = "overlap-reaches-limit";
inline constexpr std::string_view kAttemptsCounted = "attempts-counted";
// Ledger retention (sim/oracle/retention_checks.cc).
inline constexpr std::string_view kLedgerRetention = "ledger-retention";
inline constexpr std::string_view kLedgerCountMatches = "ledger-count-matches";
// The job-control rules (sim/oracle/control_checks.cc).
inline constexpr std::string_view kPausedFiresNothing = "paused-fires-nothing";
inline constexpr std::string_view kRescheduleWithdrawsUnclaimed = "reschedule-withdraws-unclaimed";
inline constexpr std::string_view kGenerationMovesWithChanges = "generation-moves-with-changes";
// The true-time execution rules (sim/oracle/execution_checks.cc).
inline constexpr std::string_view kExecutionWithinLease = "execution-within-lease";
inline constexpr std::string_view kExecutionsNeverOverlap = "executions-never-overlap";
inline constexpr std::string_view kDeadlineInsideLease = "deadline-inside-lease";
inline constexpr std::string_view kReaperWaitsForExpiry = "reaper-waits-for-expiry";
inline constexpr std::string_view kRenewalWithinLease = "renewal-within-lease";
inline constexpr std::string_view kLeaderWritesWithinLease = "leader-writes-within-lease";
inline constexpr std::string_view kHandbackAfterHolderDied = "handback-after-holder-died";
inline constexpr std::string_view kLeaderRenewsOnCadence = "leader-renews-on-cadence";
inline constexpr std::string_view kGrantStartedWithinDeadline = "grant-started-within-deadline";
inline constexpr std::string_view kLeaseLossStopsExecution = "lease-loss-stops-execution";
inline constexpr std::string_view kLeaderActsWithinOwnDeadline = "leader-acts-within-own-deadline";
inline constexpr std::string_view kFencedLeaderStops = "fenced-leader-stops";
// Cluster membership (docs/SIMULATION.md, "Cluster membership and rebalancing").
inline constexpr std::string_view kLeadershipBalanced = "leadership-balanced";
inline constexpr std::string_view kReleasedShardsTakenOver = "released-shards-taken-over";
// Graceful stops: a worker's drain, a scheduler's leave (sim/oracle/shutdown_checks.cc).
inline constexpr std::string_view kDrainStartsNothing = "drain-starts-nothing";
inline constexpr std::string_view kDrainCompletes = "drain-completes";
inline constexpr std::string_view kDrainLosesNothing = "drain-loses-nothing";
inline constexpr std::string_view kReportsSettle = "reports-settle";
inline constexpr std::string_view kLeaveReleasesBeforeDepart = "leave-releases-before-depart";
// The client's reads (sim/scenario/workload.h, "Reads").
inline constexpr std::string_view kReadsSeeAcknowledgedWrites = "reads-see-acknowledged-writes";
// The client's boundary inputs and queries (sim/oracle/query_checks.cc).
inline constexpr std::string_view kInputsWithinDocumentedLimits = "inputs-within-documented-limits";
inline constexpr std::string_view kQueriesMatchTheModel = "queries-match-the-model";
// The client's batches and in-place updates (sim/oracle/batch_checks.cc).
inline constexpr std::string_view kBatchesAllOrNothing = "batches-all-or-nothing";
inline constexpr std::string_view kUpdatesFollowIfMatch = "updates-follow-if-match";
// The scenario's own expectations (sim/oracle/expectations.cc).
inline constexpr std::string_view kExpectationsMet = "expectations-met";
}  // namespace inv

// Every invariant, in the order the checker runs and reports them.
inline constexpr std::array kInvariants = {
    InvariantInfo{inv::kOccurrencesComplete,
                  "(1) every occurrence due before the quiet tail reaches a terminal state"},
    InvariantInfo{inv::kEffectPerSuccess,
                  "(2) every succeeded occurrence has exactly one accepted sink effect"},
    InvariantInfo{inv::kSinkOneEffectPerKey,
                  "(2) at most one accepted sink effect per idempotency key"},
    InvariantInfo{inv::kSinkOneAttemptPerToken,
                  "(2) at most one token-valid sink attempt per (idempotency key, fencing token)"},
    InvariantInfo{
        inv::kRunCreatedOnce,
        "(2) an occurrence's run is created once; its token never decreases; terminal is final"},
    InvariantInfo{inv::kSingleValidLease, "(3) at most one valid lease per run at any instant"},
    InvariantInfo{inv::kTokensIncrease,
                  "(4) fencing tokens strictly increase per job, across incarnations"},
    InvariantInfo{inv::kEpochsIncrease, "(4) leader epochs strictly increase per shard"},
    InvariantInfo{inv::kNoStaleLeaderWrites,
                  "(5) runs are created only by the shard's current, unexpired leader"},
    InvariantInfo{inv::kNoStaleTokenWrites,
                  "(5) no completion, renewal or release commits with a stale token"},
    InvariantInfo{inv::kCancelStopsRuns,
                  "(6) no run is created or granted after its cancel was acknowledged"},
    InvariantInfo{inv::kTimeliness,
                  "(7) fault-free occurrences start within the start bound; after faults heal "
                  "every due occurrence completes within the completion bound"},
    InvariantInfo{inv::kAckedCommitsDurable,
                  "(8) every commit reported kCommitted survives crashes, and replaying the "
                  "durable commits reproduces the store"},
    InvariantInfo{inv::kNotBeforeDue,
                  "(9) no run is dispatched or granted before its due time (store clock)"},
    InvariantInfo{inv::kCorruptionContained,
                  "(10) a record that does not decode stalls at most its own job, from the "
                  "moment it stopped decoding: every other occurrence due after the first "
                  "corruption is dispatched unless its own job was corrupted by its due time"},
    InvariantInfo{inv::kUndecodableOnlyWhereCorrupted,
                  "(10b) a request is refused, or a node reports a record undecodable, only "
                  "when a record of that job had been made undecodable before"},
    InvariantInfo{inv::kRunsRecordReports,
                  "(11) a completion the store applies records the outcome, exit code and "
                  "detail its worker reported, on the attempt the report's token names; a "
                  "release only ends an attempt its worker handed back (a stopped report)"},
    InvariantInfo{inv::kReportVerdictsTruthful,
                  "(12) once the store applied a report, no copy of it is answered refused while "
                  "the run still stands as that report left it"},
    InvariantInfo{inv::kReportEventsTruthful,
                  "(13) a worker's report_accepted / report_rejected event states the verdict, "
                  "and a refusal's reason, of the answer its process handled"},
    InvariantInfo{inv::kReportsAbandonedUnanswered,
                  "(14) a worker abandons a report only when no answer, verdict or error, "
                  "reached its last send of it"},
    InvariantInfo{inv::kJobEventsTruthful,
                  "(15) a job.created / job.updated / job.resumed event names the next due time "
                  "of the job record its commit wrote, or none when it has none; a "
                  "run.retry_scheduled event states the documented backoff window and delay; a "
                  "misfire.decided event names the job's policy and threshold"},
    InvariantInfo{inv::kLedgerOneOutcome,
                  "(P1) every occurrence that became due has exactly one ledger outcome"},
    InvariantInfo{inv::kAttemptsBounded,
                  "(P2) no run is granted more often than its job's max_attempts"},
    InvariantInfo{
        inv::kRetryBackoff,
        "(P3) a failed attempt's retry becomes ready exactly its documented backoff after the "
        "failure: base(k) less the run's jitter cut, within [base - jitter, base]"},
    InvariantInfo{inv::kOverlapRespected,
                  "(P4) a job's unfinished runs never exceed what its overlap policy allows"},
    InvariantInfo{inv::kCatchUpBounded,
                  "(P5) catch-up keeps exactly catch_up_max of a backlog and starts one late run "
                  "per spacing, no sooner and (fault-free) no later"},
    InvariantInfo{inv::kMisfireThreshold,
                  "(P6) on-time, late and misfire outcomes match the threshold and the policy"},
    InvariantInfo{inv::kPriorityOrder,
                  "(P7) a claim serves a shard's due runs starved-first, then by priority, FIFO"},
    InvariantInfo{inv::kOverlapReachesLimit,
                  "(P8) an occurrence is refused or queued for overlap only when its job has as "
                  "many unfinished runs as the policy allows"},
    InvariantInfo{inv::kAttemptsCounted,
                  "(P9) the n-th grant of a run is attempt n (lapses and releases count), and a "
                  "retryable failure ends a live job's run only on attempt max_attempts"},
    InvariantInfo{inv::kLedgerRetention,
                  "(P12) retention prunes a job's oldest ledger records only past ledger_keep or "
                  "ledger_max_age and never past an open run, and stops short of its budget only "
                  "inside both bounds"},
    InvariantInfo{inv::kLedgerCountMatches,
                  "(P14) every job record's ledger count, as written and at the end, is the "
                  "number of ledger records its id holds"},
    InvariantInfo{inv::kPausedFiresNothing,
                  "(P10) no scheduled run of a job is created while its record says paused, "
                  "and a paused record names no next due time"},
    InvariantInfo{inv::kRescheduleWithdrawsUnclaimed,
                  "(P11) a schedule change withdraws, in its own commit, every run of the job "
                  "not yet claimed"},
    InvariantInfo{inv::kGenerationMovesWithChanges,
                  "(P13) within an incarnation a job's generation never goes back, and every "
                  "change of its pause flag or schedule raises it"},
    InvariantInfo{inv::kExecutionWithinLease,
                  "(T1) no attempt executes (true time) after its lease expired by the store's "
                  "clock, unless its worker was paused or its clock outside the bound"},
    InvariantInfo{inv::kExecutionsNeverOverlap,
                  "(T2) no two attempts of one run execute at overlapping true times"},
    InvariantInfo{inv::kDeadlineInsideLease,
                  "(T3) a worker's own-clock lease deadline lies a margin inside its lease under "
                  "the configured max drift"},
    InvariantInfo{inv::kReaperWaitsForExpiry,
                  "(T4) the reaper re-queues or fails a leased run only after its lease expired "
                  "by the store's clock"},
    InvariantInfo{inv::kRenewalWithinLease,
                  "(T8) a renewal extends a lease only at a store time before its expiry"},
    InvariantInfo{inv::kLeaderWritesWithinLease,
                  "(T5) a leader body's lapses and dispatch decisions commit by the shard's "
                  "leader before its lease expiry (store clock)"},
    InvariantInfo{inv::kHandbackAfterHolderDied,
                  "(T9) a lease ends before its expiry only by a hand-back of its holder's node, "
                  "from a process started after the grant, with no execution of it still "
                  "running"},
    InvariantInfo{inv::kLeaderRenewsOnCadence,
                  "(T10) a leader renews its lease no more often than its renew period: an "
                  "acknowledged leader write is renewed at least period / (1 + max drift) less "
                  "the store client's timeout later"},
    InvariantInfo{inv::kGrantStartedWithinDeadline,
                  "(T6) a worker starts a grant only before its own-clock deadline: its clock at "
                  "the claim's send plus the lease less max drift and margin"},
    InvariantInfo{inv::kLeaseLossStopsExecution,
                  "(T7) an attempt executes no more once its worker handled a refused renewal or "
                  "recorded its lease lost, its deadline passed or its timeout"},
    InvariantInfo{inv::kLeaderActsWithinOwnDeadline,
                  "(T11) a leader sends a dispatch or reap only before its own-clock deadline: "
                  "its clock at an acknowledged leadership write's send plus the leader lease "
                  "less max drift and margin"},
    InvariantInfo{inv::kFencedLeaderStops,
                  "(T12) once a scheduler was refused a leader write as made under a stale "
                  "epoch, it sends none under that shard and epoch again (a later refusal is "
                  "one already in flight: within the store client's timeout)"},
    InvariantInfo{inv::kLeadershipBalanced,
                  "(C1) three leader leases after the live schedulers last changed (and after "
                  "every fault), no live scheduler leads more than ceil(shards / live) shards"},
    InvariantInfo{inv::kReleasedShardsTakenOver,
                  "(C2) a shard its leader released is acquired within an announce period and "
                  "a start bound, while another scheduler stays live and no other fault is near"},
    InvariantInfo{inv::kDrainStartsNothing,
                  "(W1) once a worker's drain began, the draining process starts no attempt"},
    InvariantInfo{inv::kDrainCompletes,
                  "(W2) a drain completes within the worker's report bound of its last "
                  "attempt's end (faults healed), and never after the worker was stopped"},
    InvariantInfo{inv::kDrainLosesNothing,
                  "(W3) when a drain completes nothing of the worker runs, and every attempt it "
                  "ran is settled: its outcome in the store, or its report answered or given up"},
    InvariantInfo{inv::kReportsSettle,
                  "(16) a worker settles the report of every attempt it ran to the end "
                  "(answered, dropped or given up) within its report bound (faults healed), "
                  "unless its process ended first"},
    InvariantInfo{inv::kLeaveReleasesBeforeDepart,
                  "(L1) a leaving scheduler withdraws its node record only after releasing the "
                  "shards it led (no leader record names it with more lease left than its own "
                  "deadline keeps back)"},
    InvariantInfo{inv::kReadsSeeAcknowledgedWrites,
                  "(R1) a read through the job API sees every write acknowledged before it was "
                  "sent, and a listing, ledger or runs answer holds nothing twice"},
    InvariantInfo{inv::kInputsWithinDocumentedLimits,
                  "(R2) a job API input one past a documented limit is refused with "
                  "InvalidArgument and writes nothing; one exactly at the limit is accepted"},
    InvariantInfo{inv::kQueriesMatchTheModel,
                  "(R3) a filtered listing, a bounded runs walk and a ledger window return "
                  "exactly what matches: sorted, within limit and bounds, nothing missing"},
    InvariantInfo{inv::kBatchesAllOrNothing,
                  "(R4) a batch with an invalid item is refused whole, naming it, and stores "
                  "nothing; a valid one stores exactly its specs in one commit; If-Match holds"},
    InvariantInfo{inv::kUpdatesFollowIfMatch,
                  "(R5) an update under a stale generation is refused and stores nothing; an "
                  "accepted one moves the generation and stores the spec asked for; runs follow "
                  "a new priority"},
    InvariantInfo{inv::kExpectationsMet,
                  "(S) every `expect` line of the scenario holds on the run: what it exists to "
                  "show happened"},
};

// Whether `name` is in kInvariants.
constexpr bool is_registered_invariant(std::string_view name) {
  for (const InvariantInfo& i : kInvariants)
    if (i.name == name) return true;
  return false;
}

}  // namespace kairos::sim
