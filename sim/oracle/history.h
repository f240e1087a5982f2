// History: everything the checker may look at after a run, and the recorder
// that turns the store's commits into compact facts.
//
// The checker judges a run only from this record: sink attempts, the store's
// commits (order, fate, and what they wrote to the run, leader and due
// tables), the store's final contents, the node event logs, what the
// workload's client was told (jobs created, cancels acknowledged), and when
// faults were active. It never asks the code under test anything.
//
// Store facts. The store service calls FactRecorder::observe() for every
// applied writing commit, in commit order. Each write of a run record (R) or
// leader record (L) becomes one fact, decoded with core/kernel/records.h (the data
// format, not the kernel's decisions). Facts keep the index of their commit,
// so the checker can skip commits that a store crash later rolled back and
// replay the rest in serialization order. Strings are interned to keep a
// day-long history small.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/base/stable_hash.h"
#include "core/kernel/job_store.h"
#include "core/kernel/records.h"
#include "core/ports/event_log.h"
#include "core/twins/memory_storage.h"
#include "sim/oracle/expectation.h"
#include "sim/world/sink.h"
#include "sim/world/store_service.h"
#include "sim/world/world.h"

namespace kairos::sim {

// Interns strings to dense indices (lookups only; never iterated). Each
// string is kept once: the index views the stored names, which a deque never
// moves.
class Interner {
 public:
  std::uint32_t id(std::string_view s);
  // kNone when `s` was never interned.
  std::uint32_t find(std::string_view s) const;
  const std::string& name(std::uint32_t id) const { return names_[id]; }
  std::size_t size() const { return names_.size(); }
  static constexpr std::uint32_t kNone = 0xffffffffu;

 private:
  absl::flat_hash_map<absl::string_view, std::uint32_t> ids_;
  std::deque<std::string> names_;
};

// One write of a run record. (A day-long history has millions: the fields
// are laid out without padding, the wide ones first.)
struct RunFact {
  std::uint64_t commit = 0;  // StoreCommit::index
  std::uint64_t incarnation = 0;
  std::uint64_t token = 0;
  std::int64_t store_us = 0;  // Txn::now() of the commit
  std::int64_t due_us = 0;
  std::int64_t lease_expiry_us = 0;
  // What the policy invariants read.
  std::int64_t ready_us = 0;  // RunRecord::ready_at (claimable from; retries: end of backoff)
  // A leased write: the owner's own clock at the true time of the commit
  // (the simulator reads it; 0 when not leased or the owner is not a node).
  std::int64_t owner_clock_us = 0;
  std::uint32_t run = 0;       // interned idempotency key
  std::uint32_t job = 0;       // interned job id
  std::uint32_t owner = 0;     // interned worker id ("" when none)
  NodeId client = kWorldNode;  // the node whose transaction wrote it
  std::uint32_t shard = 0;
  std::uint32_t attempt = 0;
  // When the latest attempt ended as a worker reports it (succeeded,
  // failed, failed-permanent, timed-out, released): its index in
  // FactRecorder::reported_ends(); kNoEnd otherwise.
  static constexpr std::uint32_t kNoEnd = 0xffffffffu;
  std::uint32_t reported_end = kNoEnd;
  RunState state = RunState::kReady;
  std::int8_t priority = 0;
  bool manual = false;                         // RunKind::kManual
  AttemptEnd last_end = AttemptEnd::kRunning;  // how the latest attempt ended (none: kRunning)
};

// What a run record written with a reported end (RunFact::reported_end)
// says of it: the latest attempt's token and exit code, and the run's
// outcome, exit code and detail.
struct ReportedEnd {
  std::uint64_t token = 0;        // the latest attempt's
  std::int32_t attempt_exit = 0;  // the latest attempt's exit code
  RunStatus outcome = RunStatus::kFailed;
  std::int32_t exit_code = 0;
  std::uint32_t detail = 0;  // interned
};

// A completion report as a worker's process sent it (answered = false), or
// the verdict of the first answer to it as the worker handled it
// (sim/world/lease_tap.h).
struct ReportFact {
  std::uint32_t run = 0;  // interned idempotency key
  std::uint64_t token = 0;
  RunStatus outcome = RunStatus::kFailed;
  std::int32_t exit_code = 0;
  std::uint32_t detail = 0;  // interned (the whole detail the worker sent)
  bool answered = false;
  // Answered with an error message (the node could not decide): no verdict.
  bool error = false;
  std::uint64_t request = 0;  // the id of the request that carried it (a worker's own)
  WriteVerdict verdict = WriteVerdict::kAccepted;  // answered, not error, only
  std::uint32_t reason = 0;                        // interned; answered only (empty: none)
  NodeId worker = kWorldNode;
  absl::Time at;  // true time of the send or the handling
};

// One write of a shard's leader record.
struct LeaderFact {
  std::uint64_t commit = 0;
  std::uint32_t shard = 0;
  std::uint32_t holder = 0;  // interned node name
  std::uint64_t epoch = 0;
  std::int64_t store_us = 0;
  std::int64_t expiry_us = 0;
};

// A node's record that it committed a completion, renewal or release
// ("run.completed", "run.renewed", "run.released"): which worker asked, and
// the run's token at that commit. Kept compactly for every run.
struct WriteFact {
  enum class Kind : std::uint8_t { kCompleted, kRenewed, kReleased };
  Kind kind = Kind::kCompleted;
  std::uint32_t job = 0;     // interned
  std::uint32_t worker = 0;  // interned
  std::uint32_t run = 0;     // interned idempotency key
  std::uint64_t token = 0;
  absl::Time at;  // true time it was recorded
};
std::string_view to_string(WriteFact::Kind kind);

// A recorded policy decision about occurrences [from, through] of a job
// (the occurrence ledger): fired or coalesced into the run at `run_nominal`, or
// decided without a run (skipped, paused, ...). From a "ledger.recorded"
// event, or from a ledger record (H|id|nominal|inc) written by a commit,
// which survives a lost reply.
struct LedgerFact {
  static constexpr std::uint64_t kFromEvent = ~std::uint64_t{0};
  std::uint64_t commit = kFromEvent;  // the writing commit, for key facts
  std::uint32_t job = 0;              // interned
  std::uint64_t incarnation = 0;
  absl::Time from, through;
  std::uint32_t outcome = 0;  // interned
  std::optional<absl::Time> run_nominal;
  // Key facts only (commit != kFromEvent): the record's fields and the store
  // time of the commit that wrote it.
  absl::Time fire_at = absl::InfinitePast();
  std::int64_t store_us = 0;
  std::uint32_t detail = 0;  // interned
};

// One write of a ledger record (H|id|nominal|incarnation), put or erased, in
// the order of the commits' operations: what ledger retention is judged
// from (a put of an existing key rewrites it; the body's prune erases).
struct LedgerOp {
  std::uint64_t commit = 0;
  bool erase = false;
  std::uint32_t job = 0;  // interned
  absl::Time nominal;
  std::uint64_t incarnation = 0;
  // Puts only: the record's fields retention reads.
  LedgerOutcome outcome = LedgerOutcome::kFired;
  absl::Time run_nominal = absl::InfinitePast();
  absl::Time recorded_at = absl::InfinitePast();  // store clock
  std::int64_t store_us = 0;                      // Txn::now() of the commit (puts and erases)
};

// The ledger count a job record write stored (JobRecord::ledger_count: the
// live ledger records of its id, all incarnations, which retention prunes
// by): kept for a job's first write, a write whose count differs from the
// one before, and a write in a commit that also wrote or erased a ledger
// record of that id.
struct LedgerCountFact {
  std::uint64_t commit = 0;
  std::uint32_t job = 0;  // interned
  std::uint64_t count = 0;
};

// A worker stopping a run at its own-clock lease deadline
// ("worker.lease_deadline"): the run, the token it held, the true time and
// the worker's clock then (the deadline, to within one timer rounding).
struct DeadlineFact {
  std::uint32_t run = 0;  // interned idempotency key
  std::uint64_t token = 0;
  absl::Time at;     // true time
  absl::Time local;  // the worker's clock
};

// A job record (J) write that changes what job control decides: the job's
// first record of an incarnation, one whose pause flag, schedule or
// generation differs from the record written before it, or an active record
// that says paused and names a next due time (the recorder keeps only those;
// every dispatch rewrites the record), or whose spec differs (an update).
struct JobFact {
  std::uint64_t commit = 0;
  std::uint32_t job = 0;  // interned
  std::uint64_t incarnation = 0;
  std::uint64_t generation = 0;  // JobRecord::generation (the API's ETag)
  bool paused = false;
  bool schedule_changed = false;  // same incarnation as before, another schedule
  // An active record that says paused yet names a next due time
  // (JobRecord::next_due_at): the due entry a pause removes.
  bool paused_with_due = false;
  std::uint64_t spec_digest = 0;  // spec_digest(record.spec): what was stored
  std::int32_t priority = 0;      // record.spec.policy.priority
  bool cancelled = false;         // the record says cancelled (JobState::kCancelled)
  std::int64_t store_us = 0;      // Txn::now() of the commit
  // JobRecord::next_due_at in microseconds, kNoDue when it has none.
  static constexpr std::int64_t kNoDue = std::numeric_limits<std::int64_t>::min();
  std::int64_t next_due_us = kNoDue;
};

// A digest of a job spec as the record codec stores it (core/kernel/records.h:
// times and durations in whole microseconds, so a spec and its normalised
// form digest alike): the stable hash of a job record holding only `spec`.
// The client records the digest of what it sent; the recorder that of what
// the store holds.
inline std::uint64_t spec_digest(const kairos::JobSpec& spec) {
  kairos::JobRecord r;
  r.spec = spec;
  return stable_hash(encode(r));
}

// A worker's record that it stopped an attempt it was running: its lease
// refused on renewal ("worker.lease_lost") or the job's own timeout reached
// ("worker.run_timeout"); with the DeadlineFacts, the moments from which the
// worker itself says the attempt of (run, token) no longer runs.
struct StopFact {
  enum class Kind : std::uint8_t { kLeaseLost, kTimedOut };
  Kind kind = Kind::kLeaseLost;
  std::uint32_t run = 0;  // interned idempotency key
  std::uint64_t token = 0;
  absl::Time at;  // true time
};

// A worker settling a report (events "worker.report_accepted", "_rejected",
// "_dropped", "_abandoned"): the node answered it definitely, or the worker
// gave it up (its lease lost or past its deadline, or its retries spent).
struct ReportSettledFact {
  enum class Kind : std::uint8_t { kAccepted, kRejected, kDropped, kAbandoned };
  Kind kind = Kind::kAccepted;
  std::uint32_t run = 0;  // interned idempotency key
  std::uint64_t token = 0;
  // The event's "reason" field, interned (kinds that carry one).
  bool has_reason = false;
  std::uint32_t reason = 0;
  absl::Time at;  // true time
};

// A node reporting a stored record undecodable (event "record.undecodable":
// the job whose record it is, the operation that met it).
struct UndecodableFact {
  std::uint32_t job = 0;  // interned job id
  std::uint32_t op = 0;   // interned
  std::uint32_t key = 0;  // interned (the key as the event prints it)
  absl::Time at;          // true time
};

// A scheduler handling the store's refusal of a leader write as made under
// a stale epoch (event "write.rejected_stale_epoch": shard, epoch, node).
struct StaleEpochFact {
  std::uint32_t node = 0;  // interned node id
  std::uint32_t shard = 0;
  std::uint64_t epoch = 0;
  absl::Time at;  // true time
};

// A scheduler's departure (JobStore::depart, at the end of a graceful
// leave): an applied write of its node record (N|id) that ends the record
// at or before that commit's store time. `node_clock_us` is the departing
// node's own clock at the commit's true instant, read by the simulator (0
// when the node is not a simulated node).
struct DepartFact {
  std::uint64_t commit = 0;
  std::uint32_t node = 0;  // interned node id
  std::int64_t store_us = 0;
  std::int64_t node_clock_us = 0;
};

class FactRecorder {
 public:
  void observe(const StoreCommit& commit, const std::vector<WriteOp>& ops);
  // Keeps the WriteFact of a completion/renewal/release event, the
  // LedgerFact of a policy decision, the DeadlineFact of a worker's lease
  // deadline, the StopFact of a worker stopping an attempt and the
  // ReportSettledFact of a worker's report answered or given up; ignores
  // other events.
  void observe_event(const Event& event, absl::Time at);
  const std::vector<RunFact>& runs() const { return runs_; }
  const std::vector<ReportedEnd>& reported_ends() const { return reported_ends_; }
  const std::vector<LeaderFact>& leaders() const { return leaders_; }
  const std::vector<WriteFact>& writes() const { return writes_; }
  const std::vector<LedgerFact>& ledger() const { return ledger_; }
  const std::vector<DeadlineFact>& deadlines() const { return deadlines_; }
  const std::vector<StopFact>& stops() const { return stops_; }
  const std::vector<JobFact>& job_changes() const { return job_changes_; }
  const std::vector<ReportSettledFact>& settled() const { return settled_; }
  const std::vector<DepartFact>& departs() const { return departs_; }
  const std::vector<StaleEpochFact>& stale_epochs() const { return stale_epochs_; }
  const std::vector<UndecodableFact>& undecodables() const { return undecodables_; }
  std::vector<DepartFact>& mutable_departs() { return departs_; }
  const std::vector<LedgerOp>& ledger_ops() const { return ledger_ops_; }
  const std::vector<LedgerCountFact>& ledger_counts() const { return ledger_counts_; }
  // Departures: node-record writes that end the record (JobStore::depart).
  // Erasures of run records: (commit, interned idempotency key), in order.
  const std::vector<std::pair<std::uint64_t, std::uint32_t>>& run_erases() const {
    return run_erases_;
  }
  // The run facts, writable: the recorder's owner stamps owner_clock_us.
  std::vector<RunFact>& mutable_runs() { return runs_; }
  Interner& strings() { return strings_; }
  const Interner& strings() const { return strings_; }

 private:
  std::vector<RunFact> runs_;
  std::vector<ReportedEnd> reported_ends_;
  std::vector<LeaderFact> leaders_;
  std::vector<WriteFact> writes_;
  std::vector<LedgerFact> ledger_;
  std::vector<DeadlineFact> deadlines_;
  std::vector<StopFact> stops_;
  std::vector<JobFact> job_changes_;
  std::vector<ReportSettledFact> settled_;
  std::vector<DepartFact> departs_;
  std::vector<StaleEpochFact> stale_epochs_;
  std::vector<UndecodableFact> undecodables_;
  std::vector<LedgerOp> ledger_ops_;
  std::vector<LedgerCountFact> ledger_counts_;
  std::vector<std::pair<std::uint64_t, std::uint32_t>> run_erases_;
  struct JobState {
    std::uint64_t incarnation = 0;
    std::uint64_t generation = 0;
    bool paused = false;
    ScheduleSpec schedule;
    kairos::JobSpec spec;
    std::uint64_t ledger_count = 0;
    bool counted = false;
  };
  std::map<std::uint32_t, JobState> job_state_;  // by interned job id: the last record seen
  Interner strings_;
  void observe_ledger_erase(std::uint64_t commit, std::int64_t store_us, std::string_view key);
};

// One attempt as the simulated process executed it: from the runner's start
// to the moment it stopped executing (it finished, was stopped, or its node
// crashed), in true time and by the store's clock at those instants. An
// attempt still executing when the run ends has end = InfiniteFuture.
//
// The worker's own clock at both instants, and the grant the attempt started
// from, as the worker's process received it: its clock when it sent the
// claim that the grant answers and the lease length the grant carries
// (grant_sent = InfinitePast when the attempt did not start while the worker
// handled a claim answer).
struct Execution {
  std::uint32_t run = 0;  // interned idempotency key
  std::uint32_t job = 0;  // interned job id
  std::uint64_t token = 0;
  NodeId node = kWorldNode;  // the worker
  absl::Time start, end = absl::InfiniteFuture();
  std::int64_t start_store_us = 0, end_store_us = 0;
  absl::Time start_local, end_local = absl::InfiniteFuture();  // the worker's clock
  absl::Time grant_sent = absl::InfinitePast();                // the worker's clock
  absl::Duration grant_ttl = absl::ZeroDuration();
};

// The store's refusal of a lease renewal, as the worker's process handled it:
// the first answer to one of its renewal requests (an answer the worker is
// still waiting for) named (run, token) with a verdict other than accepted.
// `sent` and `local` are the worker's clock at the request's send and at the
// handling; `at` the true time of the handling.
struct LeaseRefusal {
  std::uint32_t run = 0;  // interned idempotency key
  std::uint64_t token = 0;
  NodeId node = kWorldNode;  // the worker
  absl::Time at, sent_at;    // true time of the handling and of the send
  absl::Time sent, local;    // the worker's clock then
};

// When a node's own timekeeping was outside what the kernel assumes: paused
// (its events deferred), its clock stepped, or its rate changed or
// configured beyond the kernel's max drift. The true-time execution rules
// exempt what these cover.
struct NodeWindow {
  NodeId node = kWorldNode;
  absl::Time from, to;  // true time
  std::string what;
};

// A worker's graceful drain (fault drain, Worker::drain), as the simulator
// drove it: when the draining process started, when drain() was called, when
// the `drained` callback ran (then the process stops), and when the
// process stopped otherwise (a crash, fault stop). True times.
struct DrainFact {
  NodeId node = kWorldNode;
  absl::Time process_start;
  absl::Time began;
  absl::Time completed = absl::InfiniteFuture();
  absl::Time ended = absl::InfiniteFuture();  // the process stopped (by any cause)
  // The callback ran after the worker had been stopped (Worker::stop).
  bool completed_after_stop = false;
};

// A node's process started (the first start, or a restart after a crash,
// leave or drain). True time.
struct ProcessStart {
  NodeId node = kWorldNode;
  absl::Time at;
};
// A node's process ended (a crash, a stop, the end of a drain or a leave):
// what it held in memory (a worker's unsent reports) died with it. True time.
using ProcessEnd = ProcessStart;

struct NodeEvent {
  absl::Time at;  // true time
  NodeId node = kWorldNode;
  Event event;  // event.at is the node's clock
};

// An occurrence the workload's schedule says must fire.
struct Occurrence {
  std::string job;
  std::uint64_t incarnation = 0;
  absl::Time nominal;
  absl::Time due;
};

// What the client knows of one job it created (the checker's ground truth
// for the policy invariants): the incarnation and store-clock
// creation time create_job answered, the policy it asked for (the workload
// never changes a policy after creation), and the longest one attempt of the
// job can execute (its simulated duration range, capped by its timeout).
struct ClientJob {
  std::string id;
  std::uint64_t incarnation = 0;
  absl::Time created_at;  // store clock
  kairos::JobPolicy policy;
  bool recurring = false;
  absl::Duration longest_run = absl::ZeroDuration();
  // The client sent it a forced trigger (`trigger ... force=yes`): force
  // overrides the overlap policy, so that policy no longer bounds its runs.
  bool forced = false;
};

// A cancel the client saw acknowledged.
struct CancelAck {
  std::string job;
  std::uint64_t incarnation = 0;
  absl::Time acked;  // true time the client got the answer
};

// Records the corrupt-record fault made undecodable: job `job`'s (its job
// record, counters, due entry, run or ledger records), from `at` (true time)
// on, written by the store's commit number `commit` (StoreCommit::index).
struct CorruptedRecord {
  std::string job;
  absl::Time at;
  std::uint64_t commit = 0;
};

struct FaultWindow {
  absl::Time from, to;  // true time, to >= from
  std::string what;
};

// A probe of shard leadership (sim/world/cluster.cc, once a second) that
// found a live scheduler leading more than ceil(shards / live) shards: the
// candidates the leadership-balanced rule judges. `live` counts the
// schedulers up, not paused, running and with a sane clock; `since` is when
// that set last changed.
struct BalanceSample {
  absl::Time at;  // true time
  absl::Time since;
  std::uint32_t live = 0;
  std::uint32_t leads = 0;  // the most shards one live scheduler led
  std::string node;         // that scheduler
};

// The live schedulers (as BalanceSample counts them) from `at` until the
// next change: one entry per change of the set, probed once a second.
struct LiveSet {
  absl::Time at;  // true time of the probe that saw the set
  std::vector<std::string> nodes;
};

// The timeliness bounds (docs/SIMULATION.md, "Bounds"), computed from the
// scenario's configuration.
struct Bounds {
  absl::Duration start = absl::ZeroDuration();   // due -> first grant, fault-free
  absl::Duration settle = absl::ZeroDuration();  // a fault's after-effects
  absl::Duration done = absl::ZeroDuration();    // due or heal -> terminal
  // One attempt's overhead besides the job's own run time (claim, report,
  // backoffs); done_bound() adds a job's run time and retry policy to it.
  absl::Duration attempt_overhead = absl::ZeroDuration();
  bool check_start = true;  // false when the base configuration is never fault-free
  // One store round trip, fault-free (network both ways, service, sync).
  absl::Duration round_trip = absl::ZeroDuration();
};

struct History {
  absl::Time start;
  absl::Time end;
  absl::Duration quiet_tail;
  const std::vector<SinkAttempt>* sink = nullptr;
  const std::vector<StoreCommit>* commits = nullptr;
  const MemoryStorage::Map* final_store = nullptr;  // null: skip replay and final-state checks
  bool commits_have_ops = false;
  // Node events: all of them when the scenario records writes, else the
  // client's only (the facts keep the rest compactly).
  const std::vector<NodeEvent>* events = nullptr;
  const FactRecorder* facts = nullptr;
  const std::vector<std::string>* node_names = nullptr;  // by NodeId
  // Occurrences that must reach a terminal state (due before end - quiet_tail).
  const std::vector<Occurrence>* expected = nullptr;
  // The occurrences of each cancelled incarnation the client's schedule made
  // certain before the cancel was answered; those due by the cancel's commit
  // (store clock) must each have a ledger outcome (P1).
  const std::vector<Occurrence>* cancelled_due = nullptr;
  const std::vector<CancelAck>* cancels = nullptr;
  // Every job whose create was acknowledged.
  const std::vector<ClientJob>* jobs = nullptr;
  // The kernel's no-starvation bound (PolicyOptions::starvation_bound).
  absl::Duration starvation_bound = absl::Seconds(60);
  // The kernel's ledger retention (PolicyOptions: ledger_keep,
  // ledger_max_age, prune_budget), from the scheduler config.
  std::uint32_t ledger_keep = PolicyOptions{}.ledger_keep;
  absl::Duration ledger_max_age = PolicyOptions{}.ledger_max_age;
  std::uint32_t prune_budget = PolicyOptions{}.prune_budget;
  const std::vector<FaultWindow>* faults = nullptr;
  // Records made undecodable (corrupt-record faults), in time order. The
  // occurrences of these jobs due from then on are not in `expected`.
  const std::vector<CorruptedRecord>* corrupted = nullptr;
  Bounds bounds;
  // True-time execution (the simulated runners), and when a node's own time
  // was not what the kernel assumes.
  const std::vector<Execution>* executions = nullptr;
  const std::vector<NodeWindow>* time_faults = nullptr;
  // Renewal refusals the workers handled (null: none recorded).
  const std::vector<LeaseRefusal>* refusals = nullptr;
  // Completion reports the workers sent and the answers they handled (null:
  // none recorded).
  const std::vector<ReportFact>* reports = nullptr;
  NodeId store_node = kWorldNode;
  // The kernel's lease assumptions (LeaseConfig): a holder's clock runs at
  // most max_drift_ppm slow and stops `margin` inside its lease.
  std::int64_t max_drift_ppm = 0;
  absl::Duration lease_margin = absl::ZeroDuration();
  // How long a worker waits for the answer to a request (LeaseConfig::rpc_timeout).
  absl::Duration rpc_timeout = absl::ZeroDuration();
  // The leader lease's renew period (LeaseConfig::leader_renew_period) and
  // the store client's timeout (StoreConfig::client_timeout): a node learns a
  // commit's fate within it. Zero period: leader-renews-on-cadence not judged.
  absl::Duration leader_renew_period = absl::ZeroDuration();
  absl::Duration store_client_timeout = absl::ZeroDuration();
  // What the scenario states its run must show, and the coverage marks the
  // run hit (how often each).
  const std::vector<Expectation>* expectations = nullptr;
  const std::map<std::string, std::uint64_t, std::less<>>* marks = nullptr;
  // Leadership balance (null: not probed); the shard count and leader lease.
  const std::vector<BalanceSample>* balance = nullptr;
  const std::vector<LiveSet>* live_sets = nullptr;
  std::uint32_t shard_count = 0;
  absl::Duration leader_ttl = absl::ZeroDuration();
  // Worker drains (null: none driven). A worker settles each report (answered
  // or given up after its retries) within `report_bound` of its attempt's
  // end: max_report_attempts x (rpc_timeout + retry_backoff_max); a drain
  // completes within it of its last attempt's end.
  const std::vector<DrainFact>* drains = nullptr;
  absl::Duration report_bound = absl::ZeroDuration();
  // Every process start of every node, in time order (null: not recorded).
  const std::vector<ProcessStart>* process_starts = nullptr;
  // Every process end of a scheduler or worker, in time order (null: not
  // recorded; reports-settle is then not judged).
  const std::vector<ProcessEnd>* process_ends = nullptr;
};

}  // namespace kairos::sim
