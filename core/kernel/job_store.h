// JobStore: the kernel's transaction bodies.
//
// Purpose. Every durable state change of jobs, runs, leases and leadership is
// one of the bodies below, run through Storage::transact() by the scheduler
// node (or directly by tests). A body reads and writes only through its Txn,
// resets its output slot at the start (a store may run it more than once), and
// reports what it changed as Events in its output. The caller records those
// events, and acts on the output, only when the outcome is kCommitted.
//
// Idempotency under "unknown" (see storage.h). Each body is safe to run again
// after an unknown outcome:
// - create: same id + same spec while active -> success, nothing written.
// - cancel: cancelling a cancelled job -> success.
// - dispatch: re-reads the due index; the run key (job, incarnation, nominal)
//   is the idempotency key, so an occurrence never gets a second run.
// - claim: a grant whose outcome is unknown is never handed to a worker; the
//   lease just lapses and the reaper makes the run claimable again.
// - renew/complete: keyed by (run, token); a completion already recorded with
//   the same token and outcome answers "accepted" again.
//
// Fencing. Tokens come from the per-job counter T|id (token_hw + 1), which
// never goes backwards (it survives cancel and re-create). Renew and complete
// are accepted only with the run's current token. Leader bodies (dispatch,
// reap) first check the shard's leader record: holder, epoch and expiry by the
// store clock; otherwise they abort with FailedPrecondition naming the stale
// epoch.
//
// Determinism. No clocks (only Txn::now()), no hash-order iteration.
//
// Layout. One class, its bodies split by topic: job_store_jobs.cc (validation,
// create/get/list/cancel), _leadership.cc, _dispatch.cc (dispatch, ledger,
// retention), _leases.cc (claim/renew/complete/reap), _control.cc (pause,
// resume, update, apply, trigger, ledger and runs queries), and
// _planted_bugs.cc (every PlantedBugs decision point). Every run transition
// goes through write_run (run_lifecycle.h), which owns the run's ready-queue,
// lease-expiry and open-run entries; the misfire rule is the pure function of
// misfire.h.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/kernel/misfire.h"
#include "core/kernel/planted_bugs.h"
#include "core/kernel/policy.h"
#include "core/kernel/records.h"
#include "core/kernel/run_ref.h"
#include "core/ports/event_log.h"
#include "core/ports/runner.h"
#include "core/ports/storage.h"

namespace kairos {

namespace job_store_internal {
struct OpenRuns;
}  // namespace job_store_internal

// Limits checked at the API boundary.
inline constexpr std::size_t kMaxJobIdSize = 200;
inline constexpr std::size_t kMaxWorkerIdSize = 200;
// Node records (keys::node): how many a membership read looks at, and how
// long an expired one is kept (shown as expired) before it is removed.
inline constexpr std::size_t kMaxNodeRecords = 1024;
inline constexpr absl::Duration kNodeRecordRetention = absl::Hours(1);
inline constexpr std::size_t kMaxDetailSize = 4096;

// Validates a job spec (schedule compiles, payload, policy ranges, id shape).
// Errors name the field, e.g. "policy.priority: must be in [0, 9], got 12".
absl::Status validate_job_spec(const JobSpec& spec);
absl::Status validate_job_id(std::string_view id);

// Preconditions (HTTP If-Match). A job record's `generation` is the version
// of the record as the API shows it: every committed change a client can see
// (spec update, pause, resume, cancel, re-creation after a cancel) adds one,
// and it never goes back for an id. The control bodies (pause, resume,
// update, apply, cancel) take an optional expected generation, checked in the
// same transaction as the write: when given and the job is at another
// generation, the body writes nothing and fails with generation_mismatch().
// A request that is already in effect (pausing a paused job, an update that
// changes nothing, cancelling a cancelled job) succeeds without the check,
// since nothing is written either way; this is what keeps a retry after an
// unknown outcome idempotent (the first try bumped the generation, the retry
// finds its own change in effect).
//
// The error: FailedPrecondition "generation: expected E, job 'id' is at A"
// (or "... does not exist"), carrying the payload kGenerationMismatchPayload
// whose value is the job's current generation in decimal ("" when the job
// does not exist), so callers can tell it apart from other
// FailedPrecondition errors (e.g. a cancelled job).
inline constexpr std::string_view kGenerationMismatchPayload =
    "type.kairos.dev/kairos.GenerationMismatch";
// `actual` nullopt: the job does not exist.
absl::Status generation_mismatch(std::string_view job_id, std::uint64_t expected,
                                 std::optional<std::uint64_t> actual);
// True exactly for errors made by generation_mismatch() (the payload is kept
// when the status travels through Storage and SchedulerNode unchanged).
bool is_generation_mismatch(const absl::Status& status);
// OK when `expected` is empty or equals `actual`; otherwise
// generation_mismatch().
absl::Status check_generation(std::string_view job_id, std::optional<std::uint64_t> expected,
                              std::optional<std::uint64_t> actual);

// Store-wide policy knobs (not per job). Defaults in docs/POLICIES.md.
struct PolicyOptions {
  // Ledger retention per job id: keep at most `ledger_keep` records and none
  // older than `ledger_max_age` (records whose run is still open are kept).
  std::uint32_t ledger_keep = 1000;
  absl::Duration ledger_max_age = absl::Hours(24 * 30);
  // Pruning work per job per dispatch (bounded: dispatch never stalls).
  std::uint32_t prune_budget = 8;
  // No-starvation rule of the claim queue: a run ready for at least this long
  // is served before any run that became ready after it, whatever the
  // priorities.
  absl::Duration starvation_bound = absl::Seconds(60);
  // Misfire scan: at most this many missed occurrences are examined per due
  // entry per dispatch transaction (larger backlogs continue next pass).
  std::uint32_t misfire_chunk = 2000;
};
absl::Status validate(const PolicyOptions& o);

// A leader's credentials for one shard.
struct LeaderToken {
  std::string node;
  std::uint64_t epoch = 0;
};

struct CreateResult {
  JobRecord job;
  bool created = false;  // false: an identical job already existed
  std::vector<Event> events;
};
struct CancelResult {
  JobRecord job;
  bool was_active = false;
  std::uint32_t cancelled_runs = 0;  // ready runs withdrawn
  std::uint32_t running_runs = 0;    // leased runs left to finish
  std::vector<Event> events;
};
struct ListResult {
  std::vector<JobRecord> jobs;
  std::string next_page_token;  // empty when there is no further page
};

// Job control.
struct ControlResult {
  JobRecord job;
  bool changed = false;              // false: the request was already in effect
  bool created = false;              // apply only: a new incarnation was created
  std::uint32_t withdrawn_runs = 0;  // reschedule: not-yet-claimed runs withdrawn
  std::vector<Event> events;
};
using SpecMutation = std::function<absl::Status(JobSpec&)>;

// Batch apply (POST /v1/jobs:batch): every spec create-or-updated as
// apply() does, all in one transaction, all or nothing.
inline constexpr std::size_t kMaxBatchSize = 1000;
struct BatchItemError {
  std::size_t index = 0;  // position of the spec in the batch
  absl::Status status;    // its error; fields named relative to the job ("policy.priority")
};
struct BatchResult {
  std::vector<ControlResult> items;    // committed: one per spec, same order
  std::vector<BatchItemError> errors;  // refused: the failing items, by index
  // Every item's events, in item order (the items' own lists are left empty).
  std::vector<Event> events;
};
// Checks a batch without a store: its size (1..kMaxBatchSize), every spec
// (validate_job_spec after normalize_spec) and that no id appears twice.
// Every failing item is reported in `errors` (index order), not just the
// first; an empty or oversized batch reports no item and returns its error.
// OK iff the batch may be applied; otherwise InvalidArgument naming the
// first failing item ("jobs[3]: policy.priority: ...") and how many failed.
absl::Status validate_batch(const std::vector<JobSpec>& specs, std::vector<BatchItemError>* errors);

struct TriggerArgs {
  std::string job_id;
  // Chosen once by the caller and kept across retries of the same request:
  // it makes the body idempotent under kUnknown (the manual run's nominal time
  // is derived from `requested_at`, and a run carrying this id is reused).
  std::uint64_t trigger_id = 0;
  absl::Time requested_at;
  bool force = false;  // ignore the overlap policy
};
struct TriggerResult {
  RunRecord run;
  bool created = false;  // false: this trigger's run already existed
  std::vector<Event> events;
};

struct LedgerQuery {
  std::string job_id;
  // Records whose occurrences [nominal, through] meet [from, to): those that
  // start in it, and one that starts before `from` and reaches into it.
  absl::Time from = absl::InfinitePast();
  absl::Time to = absl::InfiniteFuture();
  std::size_t limit = 1000;
};
struct LedgerResult {
  std::vector<LedgerRecord> records;
  bool more = false;
};
struct RunsQuery {
  std::string job_id;
  std::uint64_t incarnation = 0;  // 0: the job's current incarnation
  absl::Time from = absl::InfinitePast();
  std::size_t limit = 1000;
};
struct RunsResult {
  std::vector<RunRecord> runs;
  bool more = false;
};

struct LeadershipResult {
  enum class Kind : std::uint8_t { kAcquired, kRenewed, kHeldByOther };
  Kind kind = Kind::kHeldByOther;
  LeaderRecord record;    // the record after the body
  LeaderRecord previous;  // before (kAcquired: whom we replaced)
  std::vector<Event> events;
  // kHeldByOther: how long (store clock) the other holder's lease still runs;
  // trying again sooner cannot succeed.
  absl::Duration held_for = absl::ZeroDuration();
};

// A node's announcement (JobStore::announce) and the membership it saw.
struct MembershipResult {
  NodeRecord self;  // this node's record as written
  // Every node record that decodes, in id order (this node's included, as
  // written; expired ones too: compare expiry with `now`).
  std::vector<NodeRecord> nodes;
  std::uint32_t live = 0;  // records with expiry > now, this node's included
  // Shards whose leader record is absent or expired at `now`.
  std::vector<std::uint32_t> free_shards;
  // The others (live record), in shard order, with their holder.
  std::vector<std::pair<std::uint32_t, std::string>> held;
  std::uint32_t undecodable = 0;  // node records passed over
  absl::Time now;                 // Txn::now() of the body
  std::vector<Event> events;      // node.pruned, one per record removed
};

struct DispatchResult {
  std::vector<RunRecord> dispatched;  // runs created by this body
  std::vector<RunRecord> to_create;   // non_atomic_dispatch only: second txn's work
  std::uint32_t scanned = 0;
  bool more = false;  // the scan hit its limit; call again
  // How long (store clock) until the shard's next due entry, when it has
  // one: the leader can wake for it instead of waiting for its next poll.
  std::optional<absl::Duration> next_due_in;
  std::vector<Event> events;
  // A stored record this body could not decode: the job it belongs to, its
  // key (raw bytes) and the decode error.
  struct Undecodable {
    std::string job_id;
    std::string key;
    std::string error;
  };
  // Job records that did not decode: their due entries were left in place
  // and passed over, and the rest of the shard was served.
  std::vector<Undecodable> undecodable;
  // Set when the body aborted because a record read while dispatching one
  // job (a run or ledger record) did not decode: the caller passes that job
  // over (skip_jobs) and runs the body again.
  std::optional<Undecodable> poisoned;
};

struct Grant {
  RunRecord run;  // after the claim: leased, with token and lease_expiry
  Payload payload;
  absl::Duration timeout;
};
// Runner kinds a worker accepts, as a bitmask of payload kinds: bit 0 a
// command, bit 1 an HTTP request (the Payload variant's index). 0 means
// nothing and is refused at every boundary (wire decode, WorkerConfig).
inline constexpr std::uint8_t kAcceptCommand = 1;
inline constexpr std::uint8_t kAcceptHttp = 2;
inline constexpr std::uint8_t kAcceptAll = kAcceptCommand | kAcceptHttp;
inline std::uint8_t accept_bit(const Payload& p) {
  return static_cast<std::uint8_t>(1u << p.index());
}
// At most this many ready runs of kinds the claimer does not accept are
// passed over per claim transaction (see JobStore::claim).
inline constexpr std::uint32_t kClaimSkipBudget = 512;

struct ClaimArgs {
  std::string worker;
  std::uint32_t max_runs = 1;
  absl::Duration ttl;
  std::uint32_t first_shard = 0;      // where the shard rotation starts
  std::uint8_t accepts = kAcceptAll;  // payload kinds granted (1..kAcceptAll)
};
struct ClaimResult {
  std::vector<Grant> grants;
  std::vector<Event> events;
  // Ready runs whose run, job or counters record did not decode: left ready,
  // passed over (the scan went on past them) and reported here, so one bad
  // record never stops a shard's claims.
  std::vector<DispatchResult::Undecodable> undecodable;
};

enum class WriteVerdict : std::uint8_t {
  kAccepted,
  kStaleToken,   // a newer token was granted (or the run was re-queued)
  kLeaseLapsed,  // the token is current but the lease expired (renew only)
  kNotLeased,    // the run is ready/cancelled/finished under another outcome
  kUnknownRun,
};
std::string_view to_string(WriteVerdict v);

struct RenewVerdict {
  WriteVerdict verdict = WriteVerdict::kUnknownRun;
  absl::Time lease_expiry;  // store clock, when accepted
  std::string reason;
};
struct RenewResult {
  std::vector<RenewVerdict> verdicts;  // one per item, same order
  std::vector<Event> events;
  // Items whose run record did not decode: refused (kUnknownRun, nothing
  // written) and reported here; the other items are served.
  std::vector<DispatchResult::Undecodable> undecodable;
};

struct CompleteVerdict {
  WriteVerdict verdict = WriteVerdict::kUnknownRun;
  std::string reason;
};
struct CompleteResult {
  std::vector<CompleteVerdict> verdicts;
  std::vector<Event> events;
  // Items whose run record, or whose job record when the report would be
  // applied, did not decode: refused (kUnknownRun, nothing written for the
  // item) and reported here; the other items are served.
  std::vector<DispatchResult::Undecodable> undecodable;
};

// release_abandoned: what became of the run.
struct ReleaseResult {
  // kAccepted: the attempt was ended as a lapse (the run is ready again, or
  // failed on its last attempt, or withdrawn when its job is gone);
  // kStaleToken / kNotLeased / kUnknownRun: nothing was written.
  WriteVerdict verdict = WriteVerdict::kUnknownRun;
  RunState state = RunState::kReady;  // the run's state after the body
  std::string reason;                 // why nothing was written
  std::vector<Event> events;
};

struct ReapResult {
  std::vector<RunId> requeued;
  std::uint32_t scanned = 0;
  bool more = false;
  std::vector<Event> events;
  // Job records that did not decode: their lapsed runs stay leased and their
  // cancelled-job sweep entries stay in place, passed over, and the rest of
  // the shard was reaped (one bad record must not stop a shard's reaper).
  std::vector<DispatchResult::Undecodable> undecodable;
};

class JobStore {
 public:
  JobStore(std::uint32_t shard_count, PlantedBugs bugs = {}, PolicyOptions options = {});

  std::uint32_t shard_count() const { return shard_count_; }
  std::uint32_t shard_of(std::string_view job_id) const;
  const PlantedBugs& bugs() const { return bugs_; }
  const PolicyOptions& options() const { return options_; }

  // Records the shard count in the store metadata; FailedPrecondition if the
  // store was initialised with a different count.
  absl::Status init(Txn& txn) const;

  // Jobs. `spec` must have passed validate_job_spec (checked again here).
  absl::Status create(Txn& txn, const JobSpec& spec, CreateResult* out) const;
  absl::Status get(Txn& txn, std::string_view id, std::optional<JobRecord>* out) const;
  absl::Status list(Txn& txn, std::string_view page_token, std::size_t limit,
                    ListResult* out) const;
  // Filtered listing: scans at most 10 x limit jobs per page; the page token
  // continues after the last job scanned (a page may hold fewer than `limit`).
  absl::Status list(Txn& txn, std::string_view page_token, std::size_t limit,
                    const JobFilter& filter, ListResult* out) const;

  // Job control. NotFound for an unknown id; FailedPrecondition for a
  // cancelled job. Each is idempotent (repeating it changes nothing).
  // `expected_generation`: the If-Match precondition (see
  // check_generation above); pause and resume bump the generation when they
  // change the job.
  absl::Status pause(Txn& txn, std::string_view id, ControlResult* out,
                     std::optional<std::uint64_t> expected_generation = std::nullopt) const;
  absl::Status resume(Txn& txn, std::string_view id, ControlResult* out,
                      std::optional<std::uint64_t> expected_generation = std::nullopt) const;
  // Applies `mutate` to the current spec and stores the result (validated)
  // in place, same incarnation. A schedule change moves the due entry and
  // withdraws the job's not-yet-claimed scheduled runs (ledger: cancelled,
  // "rescheduled"); a priority change moves queued runs to the new band.
  // The generation is checked after `mutate` ran: an update that changes
  // nothing succeeds whatever the generation.
  absl::Status update(Txn& txn, std::string_view id, const SpecMutation& mutate, ControlResult* out,
                      std::optional<std::uint64_t> expected_generation = std::nullopt) const;
  // Create-or-update by id: creates when absent or cancelled, otherwise
  // update() to `spec`; an unchanged spec changes nothing. With an expected
  // generation: an absent job is a mismatch (nothing to match); a cancelled
  // one is re-created only when the expected generation is its tombstone's.
  absl::Status apply(Txn& txn, const JobSpec& spec, ControlResult* out,
                     std::optional<std::uint64_t> expected_generation = std::nullopt) const;
  // All-or-nothing batch: validate_batch(), then apply() of every spec in
  // order in this one transaction. When any spec is invalid or refused (an
  // apply error, e.g. the store refuses it), the body returns an error, so
  // the transaction writes nothing; `out->errors` names the failing items
  // (every invalid one when validation failed, else the one refused), and
  // the returned status names the first (code kept from the item's error:
  // InvalidArgument for a bad spec). Idempotent like apply(): re-running a
  // batch that committed changes nothing.
  absl::Status apply_batch(Txn& txn, const std::vector<JobSpec>& specs, BatchResult* out) const;
  // A manual run (RunKind::kManual) with its own idempotency key. Respects
  // the overlap policy unless args.force (FailedPrecondition when it refuses).
  absl::Status trigger(Txn& txn, const TriggerArgs& args, TriggerResult* out) const;
  absl::Status ledger(Txn& txn, const LedgerQuery& q, LedgerResult* out) const;
  absl::Status runs(Txn& txn, const RunsQuery& q, RunsResult* out) const;
  // NotFound when the id never existed. Cancelling bumps the generation;
  // cancelling a cancelled job succeeds without the generation check.
  absl::Status cancel(Txn& txn, std::string_view id, CancelResult* out,
                      std::optional<std::uint64_t> expected_generation = std::nullopt) const;
  absl::Status get_run(Txn& txn, const RunId& id, std::optional<RunRecord>* out) const;

  // Leadership of `shard` for `node`. `known_epoch` is the epoch the node
  // believes it holds (or tried to acquire, after an unknown outcome), 0 for
  // none. Renews when the record names this node and that epoch; acquires
  // (epoch + 1) when the record is absent, expired or names this node with
  // another epoch (a restarted node); otherwise reports the holder.
  absl::Status acquire_or_renew(Txn& txn, std::uint32_t shard, std::string_view node,
                                std::uint64_t known_epoch, absl::Duration ttl,
                                LeadershipResult* out) const;
  // Read-only cluster view: the leader record of every shard that has one,
  // in shard order (a shard never led is absent), as stored: an expired
  // record (expiry <= Txn::now()) is returned too, so compare with the
  // store's now. Writes nothing; fails only on an undecodable record.
  absl::Status leaders(Txn& txn, std::vector<std::pair<std::uint32_t, LeaderRecord>>* out) const;
  // Read-only: how many due entries of `shard` are due by the store's now
  // (the dispatch backlog, whoever leads the shard), counted up to `cap`:
  // `*count` is min(due, cap), `*capped` says whether there were more.
  // Reads at most cap + 1 keys.
  void due_backlog(Txn& txn, std::uint32_t shard, std::uint64_t cap, std::uint64_t* count,
                   bool* capped) const;
  // Gives leadership of `shard` up: when the record still names `leader`
  // (node and epoch) and has not expired, its expiry becomes the store's now,
  // so every later write under that epoch fails the leader gate and another
  // node may acquire it (at epoch + 1) at once. Otherwise (lapsed, or taken
  // over) nothing is written. `*released` says which. The caller must have
  // stopped dispatching under the epoch first (SchedulerNode does).
  absl::Status release_leadership(Txn& txn, std::uint32_t shard, const LeaderToken& leader,
                                  bool* released, std::vector<Event>* events) const;
  // Announces `node`: writes its node record with expiry = now + ttl
  // (started = now when `first`, else kept from the stored record), removes
  // records expired for longer than kNodeRecordRetention, and reports the
  // membership and the free shards (MembershipResult). A node record that
  // does not decode is passed over (counted), never fatal; at most
  // kMaxNodeRecords records are read.
  absl::Status announce(Txn& txn, std::string_view node, bool first, absl::Duration ttl,
                        MembershipResult* out) const;
  // Withdraws `node` from the membership (a graceful leave): its record, if
  // present, live and decodable, gets expiry = the store's now, so the other
  // nodes count one live node fewer at their next announcement. `*departed`
  // says whether a record was written. The caller must have released or
  // stopped leading every shard first (SchedulerNode::leave does).
  absl::Status depart(Txn& txn, std::string_view node, bool* departed,
                      std::vector<Event>* events) const;
  // Read-only: the node records that decode, in id order (as announce).
  absl::Status nodes(Txn& txn, std::vector<NodeRecord>* out) const;
  // OK when `leader` holds `shard` now (store clock); else FailedPrecondition
  // "stale epoch ...".
  absl::Status check_leader(Txn& txn, std::uint32_t shard, const LeaderToken& leader) const;

  // Leader only: turns due entries (due_at <= now) into ready runs, at most
  // `limit` entries. A due entry that does not decode, whose job record does
  // not decode, or whose job is in `skip_jobs`, is left in place and passed
  // over (it never counts
  // against `limit` and never makes the shard look due now): one bad record
  // never stops the other jobs of its shard.
  absl::Status dispatch(Txn& txn, std::uint32_t shard, const LeaderToken& leader, std::size_t limit,
                        DispatchResult* out,
                        const std::set<std::string>* skip_jobs = nullptr) const;
  // Second half of non_atomic_dispatch, and the unknown_as_failure re-dispatch
  // (idempotent == false overwrites an existing run).
  absl::Status create_runs(Txn& txn, std::uint32_t shard, const LeaderToken& leader,
                           const std::vector<RunRecord>& runs, bool idempotent,
                           DispatchResult* out) const;
  // Leader only: lapsed leases (expiry <= now) become ready again. A lapsed
  // lease whose run or job record does not decode stays leased, is reported
  // (ReapResult::undecodable) and passed over.
  absl::Status reap(Txn& txn, std::uint32_t shard, const LeaderToken& leader, std::size_t limit,
                    ReapResult* out) const;

  // Worker-facing (any node may serve them; tokens fence them).
  //
  // claim: grants up to max_runs ready runs, never one whose job's payload
  // kind is not in args.accepts; such a run is left exactly as it was
  // (ready, same queue entry) for another worker. Work stays bounded: with a
  // filter, each band scan reads at most the runs still wanted plus what is
  // left of kClaimSkipBudget, and every run passed over spends one unit of
  // that budget, so a claim passes over at most kClaimSkipBudget runs and
  // reads at most max_runs + kClaimSkipBudget entries per band scan. Accepted runs behind
  // unaccepted ones are found as long as fewer than kClaimSkipBudget unaccepted runs sit before
  // them in their band of their shard; the no-starvation pass (oldest first
  // across bands) runs first and draws on the same budget. Behind a longer
  // run of unaccepted runs, an accepted run waits until workers of the
  // other kind drain the head (documented limit: the ready queue is not
  // indexed by kind). With every kind accepted (the default) the body is
  // exactly the unfiltered one. A ready run whose run, job or counters
  // record does not decode is left ready, reported (ClaimResult::undecodable)
  // and passed over: it spends no budget and takes no run's place (the band
  // scan goes on past it), so the rest of its shard is still claimed.
  //
  // renew and complete judge each item alone: an item whose run record (for
  // a completion to apply, also its job record) does not decode is refused
  // with kUnknownRun, nothing is written for it, it is reported
  // (undecodable) and the other items are served.
  absl::Status claim(Txn& txn, const ClaimArgs& args, ClaimResult* out) const;
  absl::Status renew(Txn& txn, std::string_view worker, const std::vector<RenewItem>& items,
                     absl::Duration ttl, RenewResult* out) const;
  absl::Status complete(Txn& txn, std::string_view worker, const std::vector<CompleteItem>& items,
                        CompleteResult* out) const;
  // Hands back a run whose holder is known to be over (its process died and
  // everything it started is proven gone: a restarted server's own runs),
  // without waiting for the lease. Fenced like renew/complete: only when the
  // run is leased under exactly `token` does it end the attempt, exactly as
  // the reaper's lapse does (same attempt accounting and retry rule, event
  // run.lease_lapsed with `reason`), and the run is claimable at once.
  // Otherwise (another token, not leased, no such run) it writes nothing, so
  // a repeated call, or one racing another node's reaper, is harmless. Any
  // node may serve it; no leadership is needed.
  absl::Status release_abandoned(Txn& txn, const RunId& run, std::uint64_t token,
                                 std::string_view reason, ReleaseResult* out) const;

 private:
  // create() and apply() of a spec already normalized (normalize_spec) and
  // valid (validate_job_spec): apply_batch validates each spec once.
  absl::Status create_normalized(Txn& txn, const JobSpec& spec, CreateResult* out) const;
  absl::Status apply_normalized(Txn& txn, const JobSpec& spec, ControlResult* out,
                                std::optional<std::uint64_t> expected_generation) const;
  absl::Status leader_gate(Txn& txn, std::uint32_t shard, const LeaderToken& leader) const;
  // The lapse of a leased run's attempt (the reaper's, and release_abandoned's):
  // withdrawn when its job no longer accepts it, else re-queued at once or
  // failed on its last attempt. `reason`, when not empty, is added to the
  // run.lease_lapsed event.
  absl::Status lapse(Txn& txn, RunRecord& run, absl::Time now, std::string_view reason,
                     std::vector<Event>& events) const;
  absl::Status create_run_if_absent(Txn& txn, const RunRecord& run, bool idempotent,
                                    DispatchResult* out) const;
  struct Occ;
  absl::Status dispatch_entry(Txn& txn, std::uint32_t shard, const std::string& due_key,
                              absl::Time due_at, JobRecord& job, absl::Time nominal,
                              DispatchResult* out) const;
  absl::Status fire(Txn& txn, std::uint32_t shard, JobRecord& job, const Occ& occ,
                    DispatchResult* out) const;
  absl::StatusOr<std::uint64_t> apply_misfire(Txn& txn, std::uint32_t shard, JobRecord& job,
                                              const MisfireInput& in, const MisfireDecision& d,
                                              absl::Time ready_at, DispatchResult* out) const;
  // Ledger retention for one job, oldest first (up to prune_budget records).
  // A ledger or run record that does not decode fails it with DataLoss; with
  // `bad`, it instead ends the pruning there (what was pruned before it
  // stays pruned), is stored in *bad and OK is returned.
  absl::Status prune(Txn& txn, JobRecord& job, std::vector<Event>& events,
                     std::optional<DispatchResult::Undecodable>* bad = nullptr) const;
  absl::Status record_range(Txn& txn, JobRecord& job, const std::vector<Fire>& fires, std::size_t b,
                            std::size_t e, LedgerOutcome outcome, absl::Time run_nominal,
                            std::string_view detail, std::vector<Event>& events) const;
  absl::Status sweep_cancelled(Txn& txn, std::uint32_t shard, ReapResult* out) const;
  absl::Status close_overdue(Txn& txn, JobRecord& job, std::string_view why,
                             std::vector<Event>& events) const;
  absl::Status put_ledger(Txn& txn, JobRecord& job, const LedgerRecord& rec,
                          std::vector<Event>& events) const;

  // Planted-bug decision points (job_store_planted_bugs.cc): each is the
  // clean behaviour unless its PlantedBugs switch is set.
  bool planted_skips_epoch_check() const;
  // The epoch an acquisition takes over `previous` with (previous + 1).
  std::uint64_t next_epoch(const LeaderRecord& previous, bool had_record) const;
  bool planted_reaper_off() const;
  absl::StatusOr<job_store_internal::OpenRuns> open_runs_for_overlap(Txn& txn,
                                                                     const JobRecord& job) const;
  absl::Status create_dispatched_run(Txn& txn, const RunRecord& run, DispatchResult* out) const;
  bool catch_up_bounded() const;
  struct GrantToken {
    std::uint64_t token = 0;
    std::uint64_t high_water = 0;  // the job's token mark after the grant
    bool reused = false;           // reuse_token: the run's old token
  };
  absl::StatusOr<GrantToken> grant_token(Txn& txn, const RunRecord& run) const;
  bool token_refused(std::uint64_t current, std::uint64_t presented) const;
  bool planted_ignores_fencing() const;
  bool planted_completes_requeued(const RunRecord& run) const;
  absl::Duration retry_backoff(const JobPolicy& policy, const RunRecord& run) const;

  std::uint32_t shard_count_;
  PlantedBugs bugs_;
  PolicyOptions options_;
};

// Events carry the run identity in these fields.
Event run_event(std::string_view kind, const RunRecord& run);

}  // namespace kairos
