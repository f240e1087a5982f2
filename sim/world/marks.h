// Coverage marks: the names of the "sometimes" probes the simulator's
// components hit (World::mark) when a rare branch runs. docs/SIMULATION.md,
// "Coverage marks", explains each. A CI batch must hit every required mark at
// least once (`--require-marks`); a scenario may state how often a mark must
// be hit in each of its runs (`expect NAME OP N`, sim/oracle/expectation.h),
// which accepts exactly the names listed here and `fault.KIND`.
#pragma once

#include <string_view>

namespace kairos::sim {

// Marks a CI batch must hit at least once.
inline constexpr std::string_view kRequiredMarks[] = {
    "store.unknown-applied",
    "store.unknown-not-applied",
    "store.lost-unsynced",
    "sink.stale-token-rejected",
    "sink.deduplicated",
    "kernel.lease-lapsed",
    "kernel.lease-stolen-after-pause",
    "kernel.stale-completion-rejected",
    "kernel.stale-epoch-rejected",
    "kernel.leader-failover",
    "kernel.ready-run-withdrawn",
    "worker.stopped-at-lease-deadline",
    "net.replayed",
    "net.duplicated",
    "net.worker-connection-closed",
    "kernel.parked-claim-forgotten",
    "crash-point.dispatch-after-commit-before-reply",
    "crash-point.claim-after-commit",
    "crash-point.effect-before-complete",
    "crash-point.complete-after-commit-before-ack",
    "crash-point.leader-after-elect",
    // Every policy decision and job control operation is exercised.
    "policy.misfire-run-once",
    "policy.misfire-catch-up",
    "policy.misfire-skip",
    "policy.ledger-coalesced",
    "policy.ledger-late",
    "policy.ledger-skipped_misfire",
    "policy.ledger-skipped_overlap",
    "policy.ledger-paused",
    "policy.overlap-queued",
    "policy.queued-run-promoted",
    "policy.retry-scheduled",
    "policy.failed-after-retries",
    "policy.starved-run-served",
    "policy.manual-run",
    "policy.resumed",
    "policy.rescheduled",
    "kernel.clock-skew-fenced",
};

// Marks that are reported but not required of a batch (besides `fault.KIND`,
// one per applied fault kind).
inline constexpr std::string_view kOtherMarks[] = {
    // Rebalancing: a node gave a shard up to spread leadership (leader.lost
    // "rebalance"), and released its record so another acquires at once.
    "kernel.leader-rebalanced",
    "kernel.leader-released",
    // A scheduler left gracefully (fault leave): its node record withdrawn.
    "kernel.node-departed",
    "kernel.stale-renewal-rejected",
    "kernel.run-released",
    // A restarted worker (topology handback=yes) handed back a run its dead
    // process held, before the lease expired (run.lease_lapsed
    // reason=worker_restart).
    "kernel.run-handed-back",
    // A hand-back the store refused: the lease had lapsed and the run moved
    // on (re-queued, re-granted or over) before the worker came back.
    "kernel.handback-refused",
    "worker.lease-lost",
    // A claim carrying completion reports was answered with an error (its
    // node's clock outside the tolerated skew, say): the reports are sent
    // again after a backoff, to the next node.
    "worker.carried-reports-refused",
    "policy.ledger-cancelled-before-dispatch",
    "crash-point.dispatch-before-commit",
    "runner.fenced-by-sink",
    "sink.timeout-applied",
    "sink.timeout-not-applied",
    "client.stale-control-refused",
    "client.read-checked",
    "client.list-paged",
    "client.input-refused",
    "client.input-accepted-at-limit",
    "client.list-filtered",
    "client.query-bounded",
    "client.ledger-reaching",
    // Batches and updates (`batches`, `updates`): a batch refused as a
    // whole, one applied with a changed item, one of kMaxBatchSize items
    // applied, an apply refused for its If-Match, an update applied, one
    // refused for a stale If-Match, one answered unchanged.
    "client.batch-refused",
    "client.batch-applied",
    "client.batch-at-limit",
    "client.apply-mismatch",
    "client.update-applied",
    "client.update-stale-refused",
    "client.update-unchanged",
    "kernel.ledger-pruned",
    "policy.misfire-capped",
    // The reaper passed a lapsed lease over: its job's record does not
    // decode (record.undecodable op=reap).
    "kernel.reap-passed-over",
    // A claim passed a ready run over: its run, job or counters record does
    // not decode (record.undecodable op=claim).
    "kernel.claim-passed-over",
    // Dispatch passed a job over: its due entry or job record does not
    // decode, or a record read while dispatching it (record.undecodable
    // op=dispatch).
    "kernel.dispatch-passed-over",
    // A renewal or completion was refused: its run (or job) record does not
    // decode (record.undecodable op=renew or op=complete).
    "kernel.report-refused-undecodable",
    // A worker's drain completed (fault drain): its `drained` callback ran.
    "worker.drained",
    // A drain's timeout passed with the worker still draining (fault drain
    // drain-timeout=D): Worker::stop_running stopped what still ran.
    "worker.drain-timed-out",
    // A claim met a ready run of a job no longer active (cancelled with more
    // open runs than its cancel withdraws at once) and withdrew it.
    "kernel.claim-withdrew-inactive",
    // A cancel or reschedule closed a backlog longer than close_overdue
    // lists with one uncounted range record.
    "kernel.backlog-uncounted",
    // A control request, cancel or re-create answered DataLoss (a record of
    // its job does not decode: client.request_undecodable).
    "client.request-undecodable",
};

}  // namespace kairos::sim
