// SchedulerNode: one Kairos scheduler process's logic, as an object.
//
// Purpose. A node elects itself leader of the shards it can get (through the
// store's leader records), runs the dispatch and reaper loops of the shards
// it leads, serves workers' claim / renew / complete requests (any node may
// serve them: fencing tokens, not leadership, protect those) and the job API.
// The production binary and the simulator run this same class; many nodes
// live in one process (no globals, no statics with mutable state).
//
// Loop. Everything runs on the node's event loop (Timers). Every
// poll_interval the node: (1) renews its leader leases, and tries to acquire
// a shard held by another only once that holder's lease could have lapsed;
// (2) for each shard it leads, runs a dispatch transaction (again at once
// while the batch was full) and a reaper transaction; (3) retries parked
// long-poll claims. A dispatch also reports when the shard's next due entry
// comes; if that is before the next poll the node wakes for it, so a fire is
// late by a store round trip rather than by up to a poll interval. At most
// one transaction of each kind per shard is in flight.
//
// Commit outcomes. Nothing is acknowledged to a client or worker unless the
// transaction that made it true reported kCommitted:
// - dispatch/reap unknown: nothing to do; the next tick re-reads the index and
//   the run key makes a re-dispatch idempotent.
// - claim unknown: the grants are never sent; the leases lapse and the runs
//   are re-queued with a higher token.
// - renew/complete/create/cancel unknown or conflict: the idempotent body is
//   retried (bounded, jittered backoff) until a definite outcome; then the
//   answer, or an error message the caller retries.
// - leader renew unknown: leadership is not extended (the local deadline
//   still runs out); the epoch it may have written is remembered so the next
//   renewal can adopt it.
// A leader body that finds a newer epoch aborts (FailedPrecondition, "stale
// epoch"); the node records write.rejected_stale_epoch and stops leading.
// Any other abort of a leader, dispatch or reaper body is recorded as
// txn.failed (the body's name and status), never dropped.
//
// Undecodable records. A job record that does not decode is passed over by
// dispatch (its due entry stays in place; the other jobs of the shard are
// served in the same pass); a run or ledger record that does not decode while
// one job is dispatched aborts that dispatch, and the node passes that job
// over from then on (until restart) and dispatches again at once. Either way
// the node records record.undecodable once per key and reports itself
// degraded (health()).
//
// Membership and rebalancing. Every leader_renew_period the node announces
// itself (JobStore::announce: its node record, lease leader_ttl by the
// store's clock) and reads the node records back. With L live nodes its fair
// share is ceil(shards / L): it acquires a shard only while it leads (or is
// acquiring) fewer, and before its first announcement commits it acquires
// none. A node leading more than its share gives up the excess, highest
// shard numbers first (deterministic): it stops dispatching the shard at
// once (leader.lost, reason "rebalance"), waits until no leader, dispatch or
// reaper transaction of the shard is in flight, then releases the record
// (JobStore::release_leadership, fenced by its epoch). A release whose
// outcome is not definite is retried until the local deadline passes, after
// which the lease simply lapses. Shards the announcement finds free (no
// record, or expired) are tried at the node's next step at once, and so are,
// every tick, the shards a node over its share will give up (by the same
// rule: its highest-numbered ones), so a handover takes about one poll.
//
// Leadership by the node's own clock. The node acts as leader of a shard only
// until sent + leader_ttl x (1 - max_drift) - margin after it sent the last
// successful acquire/renew; the store's epoch check is what makes a late
// write harmless, the local deadline only avoids useless ones.
//
// Events/metrics. Every committed state change is recorded to the EventLog
// (kinds in docs/ARCHITECTURE.md, each with a "node" field) and counted in Metrics
// as kairos_<kind with '.' -> '_'>_total, e.g. kairos_run_claimed_total. The
// node also keeps the operator series of node_metrics.h (runs by outcome,
// due backlog per shard, dispatch and fire lateness, transaction latency);
// it only writes them, so they never change what it does.
//
// stop() is a crash: timers are cancelled, in-memory state is dropped, and
// callbacks still in flight (store results, runner outcomes) are ignored. A
// new instance with the same node id is a restart.
//
// Lifetime. Transaction bodies the node handed to the Storage refer to the
// node (its JobStore and config). Destroy the node only after the store has
// run or dropped every body it queued: stop() the node, then drain or destroy
// the store, then destroy the node (prod/cli/server_command.cc does exactly this).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/kernel/job_store.h"
#include "core/kernel/lease_config.h"
#include "core/kernel/node_metrics.h"
#include "core/kernel/node_support.h"
#include "core/kernel/planted_bugs.h"
#include "core/kernel/wire.h"
#include "core/ports/clock.h"
#include "core/ports/event_log.h"
#include "core/ports/metrics.h"
#include "core/ports/random.h"
#include "core/ports/storage.h"
#include "core/ports/timers.h"
#include "core/ports/transport.h"

namespace kairos {

// What a health endpoint reports: a degraded node still serves, but an
// operator should look (the reason says why).
struct NodeHealth {
  bool degraded = false;
  std::string reason;                     // the latest cause; empty when healthy
  std::uint64_t undecodable_records = 0;  // distinct keys seen
  std::uint64_t failed_txns = 0;          // unexpected aborts (txn.failed)
};

// What GET /v1/cluster shows: who leads which shard, by the store's records,
// and the store's clock at the read, so lease expiries can be shown as "in 4s"
// or "expired".
struct ClusterView {
  std::uint32_t shard_count = 0;
  // Shards with a leader record, in shard order (expired ones included).
  std::vector<std::pair<std::uint32_t, LeaderRecord>> leaders;
  // The node records, in id order (expired ones included: live means
  // expiry > now).
  std::vector<NodeRecord> nodes;
  // By shard: due entries due by `now` not yet dispatched, counted up to
  // kBacklogCap (`capped`: more than that).
  struct Backlog {
    std::uint64_t due = 0;
    bool capped = false;
  };
  static constexpr std::uint64_t kBacklogCap = 10'000;
  std::vector<Backlog> backlog;
  absl::Time now;  // Txn::now() of the read
};

struct SchedulerNodeConfig {
  std::string node_id;
  std::uint32_t shard_count = 8;
  absl::Duration poll_interval = absl::Microseconds(lease_defaults::kPollIntervalUs);
  LeaseConfig lease;
  std::uint32_t dispatch_batch = 256;
  std::uint32_t reap_batch = 256;
  std::uint32_t max_claim_batch = 64;
  absl::Duration max_claim_wait = absl::Seconds(30);
  // Bounded retries of idempotent bodies after conflict/unknown/unavailable.
  std::uint32_t max_txn_attempts = 6;
  absl::Duration retry_backoff_base = absl::Milliseconds(20);
  absl::Duration retry_backoff_max = absl::Seconds(1);
  PlantedBugs bugs;
  // Policy knobs of the store bodies (ledger retention, starvation bound).
  PolicyOptions policy;
  // Clock sanity: each tick the node reads the store's clock in a
  // read-only transaction; when Txn::now() falls outside
  // [sent - max_clock_skew, received + max_clock_skew] (node clock, so the
  // round trip is allowed for) the node stops leading and claiming, records
  // node.clock_skew, and resumes (node.clock_ok) once a probe is within bound.
  absl::Duration max_clock_skew = absl::Seconds(10);
  // Simulator only; empty in production. Called at each named crash point
  // (docs/SIMULATION.md); true means the process has just crashed there and
  // the handler returns at once, so nothing after the point runs.
  std::function<bool(std::string_view point)> crash_point;
};
// Errors name the field ("node.shard_count: ...").
absl::Status validate(const SchedulerNodeConfig& config);

class SchedulerNode {
 public:
  SchedulerNode(const Clock& clock, Timers& timers, Storage& storage, Transport& transport,
                Random& random, EventLog& events, Metrics& metrics, SchedulerNodeConfig config);
  ~SchedulerNode();
  SchedulerNode(const SchedulerNode&) = delete;
  SchedulerNode& operator=(const SchedulerNode&) = delete;

  // Installs the transport handler and starts the tick loop (the first tick
  // is posted at once; it first records the shard count in the store).
  void start();
  // Crash: see the file comment. start() may not be called again; construct
  // a new node to restart.
  void stop();
  // Graceful leave, before a planned stop: the node stops acquiring and
  // renewing, stops dispatching every shard it leads, releases each one once
  // nothing of it is in flight (as a rebalancing handover does), then
  // withdraws its node record (JobStore::depart), so the other nodes take its
  // shards over at their next announcement instead of after a lease lapse.
  // It goes on serving claims, renewals and reports (fenced by tokens, not by
  // leadership). `done` runs once, on the node's loop, when the record is
  // withdrawn or that transaction failed (the record then lapses by itself
  // within a leader lease); stop() afterwards as usual. Called at most once.
  void leave(std::function<void()> done);
  bool leaving() const { return leaving_; }
  bool running() const { return started_ && !stopped_; }

  // Job API. `done` runs on the loop after a definite outcome (or an error
  // after the bounded retries: kUnavailable, "outcome unknown").
  // An empty spec.id gets a generated one ("job-" + 16 hex digits from Random).
  void create_job(JobSpec spec, std::function<void(absl::StatusOr<CreateResult>)> done);
  void get_job(std::string id, std::function<void(absl::StatusOr<std::optional<JobRecord>>)> done);
  void list_jobs(std::string page_token, std::size_t limit,
                 std::function<void(absl::StatusOr<ListResult>)> done);
  void cancel_job(std::string id, std::function<void(absl::StatusOr<CancelResult>)> done);
  // Job control, same style (definite outcome or an error; retrying
  // the same request is safe: every body is idempotent).
  void list_jobs(std::string page_token, std::size_t limit, JobFilter filter,
                 std::function<void(absl::StatusOr<ListResult>)> done);
  void pause_job(std::string id, std::function<void(absl::StatusOr<ControlResult>)> done);
  void resume_job(std::string id, std::function<void(absl::StatusOr<ControlResult>)> done);
  // The same with an If-Match precondition: `expected_generation`, when set,
  // must be the job's generation at the write, else the request fails with
  // is_generation_mismatch() (job_store.h) and nothing is written. A request
  // already in effect succeeds without the check (retries stay idempotent).
  void pause_job(std::string id, std::optional<std::uint64_t> expected_generation,
                 std::function<void(absl::StatusOr<ControlResult>)> done);
  void resume_job(std::string id, std::optional<std::uint64_t> expected_generation,
                  std::function<void(absl::StatusOr<ControlResult>)> done);
  void cancel_job(std::string id, std::optional<std::uint64_t> expected_generation,
                  std::function<void(absl::StatusOr<CancelResult>)> done);
  // General in-place change (PATCH): `mutate` edits a copy of the current
  // spec inside the transaction (it may run more than once, so it must be a
  // pure function of its input); the result is validated and stored as
  // JobStore::update does. An update that changes nothing writes nothing.
  void update_job(std::string id, SpecMutation mutate,
                  std::optional<std::uint64_t> expected_generation,
                  std::function<void(absl::StatusOr<ControlResult>)> done);
  void apply_job(JobSpec spec, std::optional<std::uint64_t> expected_generation,
                 std::function<void(absl::StatusOr<ControlResult>)> done);
  // Changes schedule, zone or run time; the due entry and not-yet-claimed
  // runs follow atomically.
  void reschedule_job(std::string id, ScheduleSpec schedule,
                      std::function<void(absl::StatusOr<ControlResult>)> done);
  // The same with an If-Match precondition (as pause_job above).
  void reschedule_job(std::string id, ScheduleSpec schedule,
                      std::optional<std::uint64_t> expected_generation,
                      std::function<void(absl::StatusOr<ControlResult>)> done);
  void update_policy(std::string id, JobPolicy policy,
                     std::function<void(absl::StatusOr<ControlResult>)> done);
  // Create-or-update by id; re-applying an unchanged spec changes nothing.
  void apply_job(JobSpec spec, std::function<void(absl::StatusOr<ControlResult>)> done);
  // All-or-nothing batch apply (JobStore::apply_batch) in one transaction.
  // `done` gets OK and result.items (one per spec, in order) when committed;
  // otherwise the error and, when items were at fault, result.errors naming
  // every failing item by index (validation runs before any transaction, so
  // a batch with invalid specs never reaches the store). Store trouble after
  // the bounded retries is kUnavailable as for every job API call (retrying
  // the same batch is safe: apply is idempotent).
  void apply_jobs(std::vector<JobSpec> specs,
                  std::function<void(absl::Status status, BatchResult result)> done);
  // A manual run with its own idempotency key; `force` ignores the overlap
  // policy. The trigger id is drawn once, so internal retries are idempotent.
  void trigger_job(std::string id, bool force,
                   std::function<void(absl::StatusOr<TriggerResult>)> done);
  void get_ledger(LedgerQuery query, std::function<void(absl::StatusOr<LedgerResult>)> done);
  void list_runs(RunsQuery query, std::function<void(absl::StatusOr<RunsResult>)> done);

  // The cluster view, read in one read-only transaction (JobStore::leaders
  // plus Txn::now()); retried like every job API read.
  void get_cluster(std::function<void(absl::StatusOr<ClusterView>)> done);

  // The transport's `peer` is gone for good (its connection closed; the id
  // is never reused): its parked claims, which nobody could receive an
  // answer to, are dropped, so no run is granted into the void to sit
  // leased until its lease lapses. A claim whose transaction is already in
  // flight is answered as usual (its grants then lapse).
  void forget_peer(PeerId peer);

  // Introspection (tests, simulator, health endpoint).
  const std::string& id() const { return config_.node_id; }
  const SchedulerNodeConfig& config() const { return config_; }
  const JobStore& store() const { return store_; }
  bool leads(std::uint32_t shard) const;
  std::uint64_t epoch(std::uint32_t shard) const;  // 0 when not leading
  std::size_t parked_claims() const { return parked_.size(); }
  // Live nodes by the latest committed announcement (this one included); 0
  // before the first.
  std::uint32_t live_nodes() const { return live_nodes_; }
  // ceil(shards / live_nodes()); 0 before the first announcement.
  std::uint32_t fair_share() const;
  // False while the node's clock is outside max_clock_skew of the store's.
  bool clock_sane() const { return !clock_skewed_; }
  // Degraded once a stored record did not decode (see the file comment).
  const NodeHealth& health() const { return health_; }
  // Runs one tick now (in addition to the periodic ones).
  void tick();

 private:
  bool crashed_at(std::string_view point) const {
    return config_.crash_point && config_.crash_point(point);
  }
  struct ShardState {
    bool leader = false;
    std::uint64_t epoch = 0;
    std::uint64_t pending_epoch = 0;  // tried to acquire, outcome unknown
    absl::Time leading_until = absl::InfinitePast();
    absl::Time renew_at = absl::InfinitePast();
    // Not leading: the other holder's lease runs (by this node's clock) until
    // about then, so acquisition is not tried before it.
    absl::Time acquire_at = absl::InfinitePast();
    // The last announcement found no live holder: the tick spends its
    // acquire budget here before probing shards another node holds.
    bool known_free = false;
    // The highest epoch this node has led the shard under: epochs it uses
    // only grow (the store's epoch never goes back).
    std::uint64_t highest_epoch = 0;
    bool leader_txn = false;
    bool dispatch_txn = false;
    bool reap_txn = false;
    // Armed after a dispatch when the shard's next due entry comes before
    // the next poll, so a fire is not up to one poll interval late.
    std::optional<TimerId> wake_timer;
    // Jobs dispatch passes over: one of their records did not decode.
    std::set<std::string> skip_jobs;
    // Given up by rebalancing: the epoch still to be released (0: none).
    std::uint64_t release_epoch = 0;
    bool release_txn = false;
    bool release_retry = false;  // a retry of release_step is armed
    // By the latest announcement, a live node over its fair share holds this
    // shard among those it gives up: probed every tick, not once per lease.
    bool contested = false;
    std::string contested_by;  // that node, while `contested`
  };
  struct Parked {
    PeerId peer = 0;
    wire::ClaimRequest request;
    absl::Time deadline;
    bool in_flight = false;
  };
  using Alive = std::shared_ptr<bool>;

  void schedule_tick();
  void probe_clock();
  template <typename R>
  void run_control(std::string_view op, std::function<absl::Status(Txn&, R*)> body,
                   std::function<void(absl::StatusOr<R>)> done, bool read_only = false);
  void on_message(PeerId from, std::string_view bytes);
  void leadership_step(std::uint32_t shard);
  // Shards this node leads or is acquiring, those it is giving up aside.
  std::uint32_t held_shards() const;
  // Acquire only below the fair share: the budget of acquisitions.
  void reset_acquire_budget();
  // Tries the shards the last announcement found free (within the budget).
  void acquire_free_shards();
  void lose_leadership(std::uint32_t shard, std::string_view reason);
  void announce();
  void rebalance();
  void release_step(std::uint32_t shard);
  void run_dispatch(std::uint32_t shard);
  void wake_for_due(std::uint32_t shard, absl::Duration in);
  void run_reap(std::uint32_t shard);
  void serve_parked();
  void try_claim(std::uint64_t key);
  void handle_renew(PeerId from, wire::RenewRequest request);
  void handle_complete(PeerId from, wire::CompleteRequest request);
  void handle_claim_with_reports(PeerId from, wire::ClaimRequest request);
  // Records a worker's completion reports, and with `claim` takes that claim
  // in the same transaction; answers with a CompleteResponse, or with a
  // ClaimResponse when it claimed.
  void serve_reports(PeerId from, std::uint64_t request_id, std::string worker,
                     std::vector<CompleteItem> reports, std::optional<ClaimArgs> claim);
  // What every claim answer is checked for and how its grants and verdicts
  // go on the wire.
  void check_grants(const std::vector<Grant>& grants, std::uint32_t max_runs,
                    std::string_view worker) const;
  std::vector<wire::WireGrant> wire_grants(std::vector<Grant>& grants) const;
  static std::vector<wire::WireVerdict> wire_verdicts(std::vector<CompleteVerdict>& verdicts);
  // Planted-bug paths (PlantedBugs): each runs only when its switch is set.
  void planted_redispatch_after_unknown(std::uint32_t shard, const LeaderToken& token,
                                        const std::vector<RunRecord>& dispatched);
  void planted_create_runs_separately(std::uint32_t shard, const LeaderToken& token,
                                      const std::vector<RunRecord>& to_create);
  // `answer_failed` sends the planted answer: every report "failed".
  void planted_complete_unknown_as_failure(TxnBody body, std::function<void(TxnResult)> reply,
                                           std::function<void()> answer_failed);
  static std::vector<wire::WireVerdict> planted_failed_verdicts(std::size_t n);
  void send(PeerId to, const wire::Message& message);
  void record(Event event);
  void record_all(std::vector<Event>& events);
  void count_txn(std::string_view op, const TxnResult& result);
  // Metrics only (node_metrics.h): never read back by the node.
  void set_backlog(std::uint32_t shard, std::int64_t due);
  void observe_fire_lateness(const std::vector<Grant>& grants);
  // A leader body under `epoch` was refused by the epoch check: recorded,
  // and the leadership dropped if it is still that epoch's.
  void on_stale_epoch(std::uint32_t shard, std::uint64_t epoch, std::string_view op,
                      const absl::Status& status);
  // An abort the node has no handling for: recorded as txn.failed.
  void on_failed(std::uint32_t shard, std::string_view op, const absl::Status& status);
  // record.undecodable, once per key; the node is degraded from then on.
  void on_undecodable(std::uint32_t shard, std::string_view op,
                      const DispatchResult::Undecodable& bad);
  // on_undecodable for each record a worker-facing body (claim, renew,
  // complete) passed over; the shard is the job's.
  void report_undecodable(std::string_view op, const std::vector<DispatchResult::Undecodable>& bad);
  absl::Duration backoff(std::uint32_t attempt);
  // Runs `body` once and hands its result to `done` (unless the node crashed
  // meanwhile), counting it in kairos_txn_total under `op`; kUncounted (the
  // clock probe, the planted-bug follow-ups) is not counted.
  static constexpr std::string_view kUncounted = {};
  void transact_once(std::string_view op, TxnBody body, std::function<void(TxnResult)> done,
                     TxnMode mode = TxnMode::kReadWrite);
  // Runs `body` until a definite outcome (committed/aborted), retrying
  // conflict, unavailable and unknown up to max_txn_attempts with backoff.
  void transact_retrying(std::string_view op, TxnBody body, std::function<void(TxnResult)> done,
                         TxnMode mode = TxnMode::kReadWrite, std::uint32_t attempt = 1);

  const Clock& clock_;
  Timers& timers_;
  Storage& storage_;
  Transport& transport_;
  Random& random_;
  EventLog& events_;
  Metrics& metrics_;
  EventCounters event_counters_{metrics_};  // per-kind counters of record()
  // kairos_runs_total{outcome=...} of record(), by outcome.
  LabelledCounters run_outcome_counters_{metrics_, node_metrics::kRuns, "outcome"};
  SchedulerNodeConfig config_;
  JobStore store_;

  Alive alive_;
  bool started_ = false;
  bool stopped_ = false;
  bool initialized_ = false;
  bool init_txn_ = false;
  std::optional<TimerId> tick_timer_;
  std::vector<ShardState> shards_;
  std::uint32_t claim_rotation_ = 0;
  std::uint64_t next_parked_ = 0;
  std::map<std::uint64_t, Parked> parked_;  // by arrival order
  bool clock_skewed_ = false;
  bool clock_probe_txn_ = false;
  // Membership (see "Membership and rebalancing").
  bool leaving_ = false;
  bool depart_txn_ = false;
  std::function<void()> leave_done_;  // until the departure is written
  void finish_leave();
  bool announce_txn_ = false;
  bool announced_ = false;  // a first announcement committed
  absl::Time announce_at_ = absl::InfinitePast();
  std::uint32_t live_nodes_ = 0;
  // Acquisitions this tick may still start (fair share less held shards).
  std::uint32_t acquire_budget_ = 0;
  NodeHealth health_;
  std::set<std::string> undecodable_keys_;  // recorded already
};

}  // namespace kairos
