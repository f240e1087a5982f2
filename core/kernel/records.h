// Store records: the values kept under the keys of core/kernel/keyspace.h.
//
// Each record is encoded with a leading version byte (kRecordVersion) and the
// fields in a fixed order (core/base/codec.h). Decoding is strict: an unknown
// version, a truncated field, an out-of-range enum or trailing bytes is an
// error naming the record and the field. A record that fails to decode means
// the store holds something Kairos did not write; callers treat it as a
// corrupt-store error (kAborted with kDataLoss), never as "absent".
//
// Times are kept at microsecond resolution (the store's and the wire's unit);
// job specs are normalised to it at the API boundary (normalize_spec) so an
// identical create compares equal after a round trip through the store.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/ports/payload.h"
#include "core/ports/runner.h"
#include "core/schedule/schedule.h"

namespace kairos {

class ByteWriter;
class ByteReader;

// 2: policies, ledger, attempts, namespace/labels. 3: an attempt's captured
// output. Records are written as version 3; version-2 records still decode
// (their attempts' output is empty), so a store written by the previous
// release works without a migration. Version-1 records are rejected with
// DataLoss naming the version.
inline constexpr std::uint8_t kRecordVersion = 3;
inline constexpr std::uint8_t kOldestRecordVersion = 2;

// Per-job policies. Exact meanings, defaults and worked timelines are in
// docs/POLICIES.md; the decisions themselves live in core/kernel/policy.h and the
// JobStore bodies (dispatch, complete, reap, claim).
enum class MisfirePolicy : std::uint8_t { kRunOnce, kCatchUp, kSkip };
enum class OverlapPolicy : std::uint8_t { kSkip, kQueue, kAllow };

inline constexpr std::int32_t kMinPriority = 0;
inline constexpr std::int32_t kMaxPriority = 9;

struct JobPolicy {
  std::uint32_t max_attempts = 3;
  absl::Duration retry_initial = absl::Seconds(10);
  std::uint32_t retry_multiplier_percent = 200;  // x2.00 per attempt
  absl::Duration retry_max = absl::Minutes(5);
  absl::Duration timeout = absl::Hours(1);  // per-run; separate from the lease
  MisfirePolicy misfire = MisfirePolicy::kRunOnce;
  absl::Duration misfire_threshold = absl::Seconds(60);
  std::uint32_t catch_up_max = 10;
  OverlapPolicy overlap = OverlapPolicy::kSkip;
  std::uint32_t max_concurrent = 1;
  std::int32_t priority = 5;  // kMinPriority..kMaxPriority; higher is served first
  // Retry jitter: the delay is drawn (deterministically from the run identity
  // and attempt) from [base x (100 - j) / 100, base].
  std::uint32_t retry_jitter_percent = 20;
  // catch-up: at most one catch-up run is made due per this spacing.
  absl::Duration catch_up_spacing = absl::Seconds(10);
  friend bool operator==(const JobPolicy&, const JobPolicy&) = default;
};

inline constexpr std::size_t kMaxNamespaceSize = 63;
// A scheduler node's id (SchedulerNodeConfig::node_id, NodeRecord::id).
inline constexpr std::size_t kMaxNodeIdSize = 200;
inline constexpr std::size_t kMaxLabels = 32;
inline constexpr std::size_t kMaxLabelKeySize = 63;
inline constexpr std::size_t kMaxLabelValueSize = 253;

// What a user submits.
struct JobSpec {
  std::string id;
  ScheduleSpec schedule;
  Payload payload;
  JobPolicy policy;
  std::string ns = "default";                 // namespace
  std::map<std::string, std::string> labels;  // ordered: deterministic
  friend bool operator==(const JobSpec&, const JobSpec&) = default;
};

enum class JobState : std::uint8_t { kActive, kCancelled };
std::string_view to_string(JobState s);

// J|id
struct JobRecord {
  JobSpec spec;
  std::uint64_t incarnation = 0;
  JobState state = JobState::kActive;
  absl::Time created_at;  // store clock
  // The due-index entry this job currently owns (D|shard|next_due_at|id), if
  // any: cancel and dispatch use it to find the entry without a scan.
  std::optional<absl::Time> next_due_at;
  absl::Time next_nominal = absl::InfinitePast();
  absl::Time cancelled_at = absl::InfinitePast();
  // Job control. While paused the job owns no due entry; its
  // next_nominal is kept and resume re-inserts it (the misfire policy then
  // decides what the missed occurrences become; those not fired are recorded
  // as kPaused when they fell in [paused_at, resumed_at)).
  bool paused = false;
  absl::Time paused_at = absl::InfinitePast();
  absl::Time resumed_at = absl::InfinitePast();
  // The version of the record as the API shows it (the ETag): +1 on every
  // committed spec change, pause, resume and cancel; a re-created job
  // continues from its tombstone's generation, so it never goes back.
  std::uint64_t generation = 1;
  absl::Time updated_at = absl::InfinitePast();
  // Ledger bookkeeping: live ledger records of this id (all incarnations),
  // and occurrences coalesced by run-once in earlier chunks of a backlog not
  // yet attributed to a run.
  std::uint64_t ledger_count = 0;
  std::uint64_t backlog = 0;
  friend bool operator==(const JobRecord&, const JobRecord&) = default;
};

// T|id: high-water marks that survive deletion of the id.
struct JobCounters {
  std::uint64_t incarnation_hw = 0;
  std::uint64_t token_hw = 0;
  friend bool operator==(const JobCounters&, const JobCounters&) = default;
};

// The occurrence identity and idempotency key of a run.
struct RunId {
  std::string job_id;
  std::uint64_t incarnation = 0;
  absl::Time nominal;
  friend bool operator==(const RunId&, const RunId&) = default;
  friend bool operator<(const RunId& a, const RunId& b) {
    if (a.job_id != b.job_id) return a.job_id < b.job_id;
    if (a.incarnation != b.incarnation) return a.incarnation < b.incarnation;
    return a.nominal < b.nominal;
  }
};
// "job-id/incarnation/nominal-micros": what Runner passes to the job as
// KAIROS_IDEMPOTENCY_KEY.
std::string idempotency_key(const RunId& id);

// kWaiting (overlap `queue`): created but held back until the
// job's unfinished runs finish; not on the ready queue.
enum class RunState : std::uint8_t { kReady, kLeased, kSucceeded, kFailed, kCancelled, kWaiting };
std::string_view to_string(RunState s);
inline bool is_terminal(RunState s) {
  return s == RunState::kSucceeded || s == RunState::kFailed || s == RunState::kCancelled;
}

enum class RunKind : std::uint8_t { kScheduled, kManual };
std::string_view to_string(RunKind k);

// How one attempt (one grant) ended.
enum class AttemptEnd : std::uint8_t {
  kRunning,
  kSucceeded,
  kFailed,
  kFailedPermanent,
  kTimedOut,
  kReleased,  // the worker gave it back (stopped at its lease deadline)
  kLapsed,    // the lease lapsed (worker crashed, stalled or partitioned)
};
std::string_view to_string(AttemptEnd e);

struct AttemptRecord {
  std::uint32_t attempt = 0;
  std::uint64_t token = 0;
  std::string worker;
  absl::Time claimed_at = absl::InfinitePast();
  absl::Time finished_at = absl::InfinitePast();
  AttemptEnd end = AttemptEnd::kRunning;
  std::int32_t exit_code = 0;
  // What the attempt printed (RunOutcome::output, at most kMaxRunOutputSize
  // bytes), as its worker reported it; empty while running, for attempts
  // that ended without a report (lapsed, released) and in version-2 records.
  std::string output;
  friend bool operator==(const AttemptRecord&, const AttemptRecord&) = default;
};

// R|id|incarnation|nominal
struct RunRecord {
  RunId id;
  std::uint32_t shard = 0;
  absl::Time due_at;          // when the occurrence fired (after jitter)
  std::uint32_t attempt = 1;  // 1-based; +1 on every re-grant after a lapse
  RunState state = RunState::kReady;
  std::int32_t priority = 5;
  absl::Time ready_at;      // key time of its Q entry while ready
  std::uint64_t token = 0;  // current (latest granted) fencing token; 0: never granted
  std::string owner;        // worker id while leased
  absl::Time lease_expiry = absl::InfinitePast();  // store clock, while leased
  absl::Time dispatched_at;
  absl::Time claimed_at = absl::InfinitePast();
  absl::Time finished_at = absl::InfinitePast();
  RunStatus outcome = RunStatus::kFailed;  // meaningful when terminal (not cancelled)
  std::int32_t exit_code = 0;
  std::string detail;
  // Manual runs, misfire accounting, retries and attempt history.
  RunKind kind = RunKind::kScheduled;
  absl::Duration lateness;              // dispatched_at - fire time (0 for manual)
  std::uint32_t stands_for = 1;         // occurrences this run stands for (run-once)
  std::uint64_t trigger_id = 0;         // manual runs: the request's id (idempotency)
  absl::Duration last_retry_delay;      // backoff chosen after the latest failure
  std::vector<AttemptRecord> attempts;  // one per grant, oldest first
  friend bool operator==(const RunRecord&, const RunRecord&) = default;
};

// What became of one scheduled occurrence (or a range of them).
enum class LedgerOutcome : std::uint8_t {
  kFired,           // a run was created on time (within the misfire threshold)
  kLate,            // a run was created past the misfire threshold (catch-up/run-once)
  kMovedDst,        // fired, at a time moved by a DST gap rule
  kSkippedOverlap,  // not run: the overlap policy refused it
  kCoalesced,       // misfired, folded into a later run (run-once)
  kSkippedMisfire,  // misfired, skipped (skip, or beyond the catch-up bound)
  kCancelled,       // its run was withdrawn before being claimed (cancel/reschedule)
  kPaused,          // fell while the job was paused and was not run
  kManual,          // not an occurrence: a manual trigger (run_nominal = its run)
};
std::string_view to_string(LedgerOutcome o);
// True when the record's occurrence got a run of its own.
inline bool has_own_run(LedgerOutcome o) {
  return o == LedgerOutcome::kFired || o == LedgerOutcome::kLate || o == LedgerOutcome::kMovedDst ||
         o == LedgerOutcome::kManual;
}

// H|id|nominal|incarnation: one record per occurrence, or per range of
// consecutive occurrences with one outcome (count > 1, through = last
// nominal), so a backlog of a million missed occurrences costs a few records.
struct LedgerRecord {
  std::uint64_t incarnation = 0;
  absl::Time nominal;  // first occurrence of the record
  absl::Time through;  // last occurrence (== nominal when count == 1)
  // Occurrences in [nominal, through]; 0 for a range too long to count
  // (close_overdue over a backlog longer than it lists).
  std::uint64_t count = 1;
  LedgerOutcome outcome = LedgerOutcome::kFired;
  absl::Time fire_at;                             // when the (first) occurrence was due
  absl::Time run_nominal = absl::InfinitePast();  // the run standing for it, if any
  absl::Duration lateness;                        // decision time - fire_at
  absl::Time recorded_at;                         // store clock
  std::string detail;
  friend bool operator==(const LedgerRecord&, const LedgerRecord&) = default;
};

// L|shard
struct LeaderRecord {
  std::string holder;
  std::uint64_t epoch = 0;
  absl::Time expiry = absl::InfinitePast();  // store clock
  friend bool operator==(const LeaderRecord&, const LeaderRecord&) = default;
};

// N|id: a scheduler node's announcement. The node renews it (expiry = the
// store's now + the node lease) while it runs; a record whose expiry has
// passed (store clock) names a node that is gone or cut off. `started` is the
// store's clock at the first announcement of this run of the node (a
// restart under the same id starts it again).
struct NodeRecord {
  std::string id;
  absl::Time started = absl::InfinitePast();  // store clock
  absl::Time expiry = absl::InfinitePast();   // store clock
  friend bool operator==(const NodeRecord&, const NodeRecord&) = default;
};

// Value of a D entry: which incarnation and occurrence it stands for.
struct DueEntry {
  std::uint64_t incarnation = 0;
  absl::Time nominal;
  friend bool operator==(const DueEntry&, const DueEntry&) = default;
};

void encode_job_policy(ByteWriter& w, const JobPolicy& p);
absl::StatusOr<JobPolicy> decode_job_policy(ByteReader& r);

std::string encode(const JobRecord& r);
std::string encode(const JobCounters& r);
std::string encode(const RunRecord& r);
std::string encode(const LeaderRecord& r);
std::string encode(const NodeRecord& r);
std::string encode(const DueEntry& r);
std::string encode(const LedgerRecord& r);
absl::StatusOr<JobRecord> decode_job(std::string_view bytes);
absl::StatusOr<JobCounters> decode_counters(std::string_view bytes);
absl::StatusOr<RunRecord> decode_run(std::string_view bytes);
absl::StatusOr<LeaderRecord> decode_leader(std::string_view bytes);
// Strict: the id must be 1..kMaxNodeIdSize bytes and started <= expiry.
absl::StatusOr<NodeRecord> decode_node(std::string_view bytes);
absl::StatusOr<DueEntry> decode_due(std::string_view bytes);
absl::StatusOr<LedgerRecord> decode_ledger(std::string_view bytes);

// Truncates every time and duration in a spec to whole microseconds.
JobSpec normalize_spec(JobSpec spec);

}  // namespace kairos
