// Scenario: the declarative description of one simulation, and its text
// format (documented in docs/SIMULATION.md, "Scenario files").
//
// A scenario file is line based: one directive per line, `#` starts a
// comment, blank lines are ignored. A directive is a keyword followed by
// positional words and key=value attributes; a value with spaces is written in
// double quotes. Durations use the project's one grammar (core/base/duration.h:
// "90s", "1h30m", "250ms"); a signed duration (clock offsets and jumps) may
// start with '-'; a range is `<duration>..<duration>`; rates are integers
// per mille. parse_scenario() is a pure function of its text (fuzz-friendly);
// every error names the file, the line and what was expected:
//   "scenarios/x.scenario:7: network: loss: expected an integer per-mille
//    rate 0..1000, got \"5%\""
// format_scenario() writes the canonical text; parse(format(s)) == s (for
// millisecond-resolution durations, the grammar's unit). Each directive is
// one entry of one table (scenario_directives()), its parse and its format
// side by side.
//
// Job lines carry the job policy and a per-job run profile as
// attributes (`misfire=catch-up catch-up-max=5 run=20s..40s fail=300`);
// each is range-checked, and the whole job is then put through the kernel's
// validate_job_spec(), so a scenario the kernel would refuse does not parse.
// `pause`, `reschedule` and `trigger` lines are job control requests the
// workload sends (sim/scenario/workload.h). `expect` lines state what each
// run must show (sim/oracle/expectation.h); the checker judges them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/kernel/job_store.h"
#include "core/kernel/records.h"
#include "core/kernel/scheduler_node.h"
#include "sim/oracle/expectation.h"
#include "sim/world/sim_network.h"
#include "sim/world/sim_runner.h"
#include "sim/world/sink.h"
#include "sim/world/store_service.h"

namespace kairos::sim {

struct Topology {
  std::uint32_t schedulers = 3;
  std::uint32_t workers = 4;
  std::uint32_t shards = 4;
  std::uint32_t slots = 32;  // runs one worker executes at once (max_concurrent)
  // Workers are `kairos server`'s embedded ones: a worker restarted after a
  // crash first hands back the runs its dead process was executing
  // (JobStore::release_abandoned, as the server does at startup once their
  // job groups are proven over), then starts.
  bool handback = false;
  friend bool operator==(const Topology&, const Topology&) = default;
};

// Timing configuration handed to the kernel (sim/world/kernel_nodes.h).
struct Timing {
  absl::Duration poll = absl::Seconds(1);
  absl::Duration lease = absl::Seconds(10);
  absl::Duration job_timeout = absl::Seconds(30);
  std::uint32_t max_attempts = 3;
  // Time quantisation (`quantum=D`; 0: off): every random delay the world
  // draws -- a message's network delay, the store's service time, a simulated
  // run's duration -- and the workload's create and first-fire times are
  // rounded up to a multiple of it. With the timing values and fault times on
  // the grid too (and no clock offset or drift), commits, ticks and lease
  // and leader expiries land on the same microseconds, so exact ties (a
  // reaper at the very expiry, a renewal arriving at it, a leader taking a
  // lease the instant it expires) are common instead of almost never.
  absl::Duration quantum = absl::ZeroDuration();
  friend bool operator==(const Timing&, const Timing&) = default;
};

// The kernel's work bounds a scenario may set (`kernel-policy
// ledger-keep=N ledger-max-age=D prune-budget=N misfire-chunk=N
// dispatch-batch=N`): ledger retention and the misfire scan's chunk of the
// store bodies (PolicyOptions, core/kernel/job_store.h) and the scheduler
// node's due entries per dispatch transaction (SchedulerNodeConfig).
// Unset fields keep the kernel's defaults, so a scenario without the line
// runs the kernel exactly as before; small values make retention prune, a
// misfire backlog be capped and a dispatch pass continue past passed-over
// entries within a simulated hour.
struct KernelPolicy {
  std::uint32_t ledger_keep = kairos::PolicyOptions{}.ledger_keep;
  absl::Duration ledger_max_age = kairos::PolicyOptions{}.ledger_max_age;
  std::uint32_t prune_budget = kairos::PolicyOptions{}.prune_budget;
  std::uint32_t misfire_chunk = kairos::PolicyOptions{}.misfire_chunk;
  std::uint32_t dispatch_batch = kairos::SchedulerNodeConfig{}.dispatch_batch;
  std::uint32_t reap_batch = kairos::SchedulerNodeConfig{}.reap_batch;
  friend bool operator==(const KernelPolicy&, const KernelPolicy&) = default;
};
// `defaults` with the knobs of `k` applied (the starvation bound is not a knob).
kairos::PolicyOptions policy_options(const KernelPolicy& k, kairos::PolicyOptions defaults = {});

struct ClockSpec {
  std::string node;  // a selector
  absl::Duration offset = absl::ZeroDuration();
  std::int64_t drift_ppm = 0;
  friend bool operator==(const ClockSpec&, const ClockSpec&) = default;
};

// One `job` line: `count` jobs of one kind, with the policy (
// docs/POLICIES.md) and the simulated execution profile they share.
struct JobSpec {
  enum class Kind : std::uint8_t { kCron, kOnce, kInterval };
  Kind kind = Kind::kInterval;
  std::uint32_t count = 1;
  std::string expr;                         // kCron
  std::string zone = "UTC";                 // kCron
  absl::Duration every = absl::Minutes(1);  // kInterval
  absl::Duration within = absl::Hours(1);   // kOnce: spread over [0, within)
  // The policy attributes: JobPolicy's defaults where the line is silent.
  // Three fields are NOT read from `policy`: timeout and max_attempts come
  // from `timeout` / `max_attempts` below (absent: the scenario's `timing`
  // line), and the priority from [priority_min, priority_max] (each job
  // draws one from the seed when the range is wider than one value). Use
  // job_policy() for the resolved policy.
  kairos::JobPolicy policy;
  std::optional<absl::Duration> timeout;
  std::optional<std::uint32_t> max_attempts;
  std::int32_t priority_min = kairos::JobPolicy{}.priority;
  std::int32_t priority_max = kairos::JobPolicy{}.priority;
  // The run profile of this line's jobs; absent fields: the `runner` line.
  JobRunProfile run;
  bool recurring() const { return kind != Kind::kOnce; }
  friend bool operator==(const JobSpec&, const JobSpec&) = default;
};

// The policy a job of line `j` is created with, priority `priority`
// (normally drawn from [j.priority_min, j.priority_max]).
kairos::JobPolicy job_policy(const JobSpec& j, const Timing& timing, std::int32_t priority);

// `cancel count=N at=D [job=K] [recreate=D]`: cancels `count` distinct
// recurring jobs (of job line `job`, 1-based; 0: of all); with `recreate`,
// each is created again under the same id with the same spec that long
// after its cancel was acknowledged -- a new incarnation while the old one's
// leased runs may still be executing.
struct CancelSpec {
  std::uint32_t count = 1;
  absl::Duration at = absl::ZeroDuration();
  std::uint32_t job = 0;
  std::optional<absl::Duration> recreate_after;
  friend bool operator==(const CancelSpec&, const CancelSpec&) = default;
};

// A job-control directive: `pause`, `reschedule` or `trigger` of
// `count` distinct recurring jobs at `at` (since the start), chosen among the
// jobs of job line `job` (1-based) or, when 0, among all recurring jobs.
struct ControlSpec {
  enum class Op : std::uint8_t { kPause, kReschedule, kTrigger };
  Op op = Op::kPause;
  absl::Duration at = absl::ZeroDuration();
  std::uint32_t count = 1;
  std::uint32_t job = 0;
  // kPause: each job is resumed this long after `at`; absent: never.
  std::optional<absl::Duration> resume_after;
  // kReschedule: the new schedule, an interval (`every` > 0; it starts one
  // period after `at`) or a cron expression (`expr`) in `zone`.
  absl::Duration every = absl::ZeroDuration();
  std::string expr;
  std::string zone = "UTC";
  // kTrigger: `repeat` triggers of each job, `spacing` apart from `at`,
  // forced past the overlap policy when `force` (trigger_job(force=true)).
  std::uint32_t repeat = 1;
  absl::Duration spacing = absl::ZeroDuration();
  bool force = false;
  friend bool operator==(const ControlSpec&, const ControlSpec&) = default;
};
std::string_view to_string(ControlSpec::Op op);

enum class FaultKind : std::uint8_t {
  kPause,         // node stalls for `length`
  kCrash,         // node crashes; restarts after `length` (0: never)
  kCrashAt,       // node crashes when it next reaches crash point `point`
  kPartition,     // node <-> peer cut for `length`
  kOneWay,        // node -> peer cut for `length`
  kIsolate,       // node cut from everyone for `length`
  kSwizzle,       // slow nodes one by one, heal in another order, over `length`
  kNet,           // message faults (loss/duplicate/replay) for `length`
  kStoreOutage,   // store answers unavailable for `length`
  kStoreSlow,     // store adds `amount` per request for `length`
  kStoreCrash,    // store crashes; restarts after `length`
  kClockJump,     // node's clock steps by `amount` (signed)
  kClockDrift,    // node's clock drift set to `drift` ppm
  kSinkFaults,    // sink error/timeout rates for `length`
  kFleetRestart,  // every scheduler and worker crashes, restarts after `length`
  // The stored record of job `job` stops decoding (its version byte is
  // flipped, as a bad disk or a foreign writer would); never healed. Named
  // scenarios only: not in kAllFaultKinds (the swarm mix), not a swarm kind.
  kCorruptRecord,
  // A scheduler stops gracefully: it leaves (SchedulerNode::leave: releases
  // its shards, withdraws its node record), then its process stops;
  // restarts after `length` (0: never). Named scenarios only, as above.
  kLeave,
  // A worker stops gracefully, as `kairos worker` does on SIGTERM: it drains
  // (Worker::drain: claims nothing new, hands back grants still arriving,
  // lets its running attempts finish and report), then its process stops;
  // restarts after `length` (0: never). Named scenarios only, as above.
  kDrain,
  // A worker is stopped at once, as a second signal stops `kairos worker`:
  // Worker::stop() (its running attempts abandoned), what its event loop had
  // already queued still runs, then the process exits; restarts after
  // `length` (0: never). Named scenarios only, as above.
  kStop,
};
std::string_view to_string(FaultKind kind);
bool parse_fault_kind(std::string_view text, FaultKind* out);
inline constexpr FaultKind kAllFaultKinds[] = {
    FaultKind::kPause,       FaultKind::kCrash,      FaultKind::kCrashAt,     FaultKind::kPartition,
    FaultKind::kOneWay,      FaultKind::kIsolate,    FaultKind::kSwizzle,     FaultKind::kNet,
    FaultKind::kStoreOutage, FaultKind::kStoreSlow,  FaultKind::kStoreCrash,  FaultKind::kClockJump,
    FaultKind::kClockDrift,  FaultKind::kSinkFaults, FaultKind::kFleetRestart};

// The records of a job a corrupt-record fault can make undecodable
// (`record=`, default job): its job record, its counters, its due entry,
// every run record of it (every incarnation, every state) or every ledger
// record of it.
inline constexpr std::string_view kCorruptibleRecords[] = {"job", "counters", "due",
                                                           "run", "ledger",   "node"};

struct FaultSpec {
  FaultKind kind = FaultKind::kPause;
  absl::Duration at = absl::ZeroDuration();  // since the start
  absl::Duration length = absl::ZeroDuration();
  std::string node = "any";  // selector
  std::string peer;          // selector (partition, one-way)
  absl::Duration amount = absl::ZeroDuration();
  std::int64_t drift_ppm = 0;
  std::string point;                                  // crash-at
  std::uint32_t loss = 0, duplicate = 0, replay = 0;  // net
  std::uint32_t error = 0, timeout = 0;               // sink-faults
  std::string job;                                    // corrupt-record
  // corrupt-record: which of the job's records (kCorruptibleRecords), or
  // "node": every scheduler's membership record (no job).
  std::string record;
  // drain: the drain timeout (`kairos worker --drain-timeout`): once it
  // passes with attempts still running, Worker::stop_running stops them.
  std::optional<absl::Duration> drain_timeout;
  friend bool operator==(const FaultSpec&, const FaultSpec&) = default;
};

// The client's reads (`reads every=D page=N`): every D it reads through the
// job API (one job, a full paged listing of page size N, a job's ledger or
// its runs, the cluster view) and checks each answer against what it was
// told before sending (sim/scenario/workload.h). Off when `every` is zero.
struct ReadSpec {
  absl::Duration every = absl::ZeroDuration();
  std::uint32_t page = 7;
  friend bool operator==(const ReadSpec&, const ReadSpec&) = default;
};

// The client's boundary inputs (`inputs every=D`): every D it sends one
// request whose input sits exactly at a documented limit of the job API or
// one past it (a label value's length, a list page size, a policy number,
// a job id's length, ...), cycling through a fixed list, and records the
// answer (sim/scenario/workload.h, "Inputs"). Off when `every` is zero.
struct InputSpec {
  absl::Duration every = absl::ZeroDuration();
  friend bool operator==(const InputSpec&, const InputSpec&) = default;
};

// The client's filtered listings and bounded queries (`queries every=D
// page=N`): every D a listing with a namespace and/or label selector paged
// by N, a job's runs walked in pages of N by their lower bound, or a job's
// ledger in a [from, to) window (sim/scenario/workload.h, "Queries"). With
// it, the workload's jobs carry a namespace and labels to filter on. Off
// when `every` is zero.
struct QuerySpec {
  absl::Duration every = absl::ZeroDuration();
  std::uint32_t page = 3;
  friend bool operator==(const QuerySpec&, const QuerySpec&) = default;
};

// The client's batches (`batches every=D`): every D one jobs:batch request
// (JobStore::apply_batch through SchedulerNode::apply_jobs) or one
// conditional apply, cycling through a fixed list -- valid batches of
// creates and updates, a bad item among good ones, several bad items,
// duplicate ids, the empty batch, kMaxBatchSize items and one more, apply
// with a matching, stale or absent If-Match and over a tombstone -- on jobs
// of its own that never fire (sim/scenario/workload.h, "Batches"). Off when
// `every` is zero.
struct BatchSpec {
  absl::Duration every = absl::ZeroDuration();
  friend bool operator==(const BatchSpec&, const BatchSpec&) = default;
};

// The client's in-place updates (`updates every=D`): every D, from D on
// until two minutes before the quiet tail, one JobStore::update of a
// recurring workload job (with runs in flight) planned as a control request
// (one at a time per job, If-Match): a priority and label change, the same
// with a stale generation, a no-op with a wrong generation, an id change
// (sim/scenario/workload.h, "Updates"). Off when `every` is zero.
struct UpdateSpec {
  absl::Duration every = absl::ZeroDuration();
  friend bool operator==(const UpdateSpec&, const UpdateSpec&) = default;
};

// Random faults drawn per seed (swarm testing).
struct RandomFaults {
  std::uint32_t per_hour = 0;
  std::vector<FaultKind> kinds;
  absl::Duration min_length = absl::Seconds(1);
  absl::Duration max_length = absl::Seconds(30);
  // How long a drawn clock jump lasts before the node's clock is stepped
  // back by the same amount (as NTP corrects a stepped clock); zero: until
  // the quiet-tail heal. `swarm ... jumps-last=D`.
  absl::Duration jump_length = absl::ZeroDuration();
  friend bool operator==(const RandomFaults&, const RandomFaults&) = default;
};

struct Scenario {
  std::string name = "unnamed";
  std::string description;
  absl::Time start = absl::FromUnixSeconds(1767225600);  // 2026-01-01T00:00:00Z
  absl::Duration duration = absl::Hours(1);
  absl::Duration quiet_tail = absl::Minutes(5);
  Topology topology;
  Timing timing;
  KernelPolicy kernel_policy;
  NetworkConfig network;
  StoreConfig store;
  SinkConfig sink;
  RunnerConfig runner;
  std::vector<ClockSpec> clocks;
  std::vector<JobSpec> jobs;
  std::vector<CancelSpec> cancels;
  std::vector<ControlSpec> controls;  // in file order
  ReadSpec reads;
  InputSpec inputs;
  QuerySpec queries;
  BatchSpec batches;
  UpdateSpec updates;
  std::vector<FaultSpec> faults;
  RandomFaults random_faults;
  // Invariants switched off by `ignore NAME` (all are on by default).
  std::vector<std::string> ignored;
  // What each run must show (`expect FACT OP N [job=K]`), in file order.
  std::vector<Expectation> expectations;
  friend bool operator==(const Scenario&, const Scenario&) = default;
};

// Parses scenario text. `filename` only labels errors.
absl::StatusOr<Scenario> parse_scenario(std::string_view text, std::string_view filename);
// Reads and parses a file.
absl::StatusOr<Scenario> load_scenario(const std::string& path);
// The canonical text of `s`.
std::string format_scenario(const Scenario& s);

// The directives of the language, in canonical order: each is one entry of
// one table in sim/scenario/scenario.cc holding its keywords, its parse and
// its format side by side. `sample` is canonical text of the directive (one
// line per use; parse then format gives it back), for the round-trip test.
struct ScenarioDirective {
  std::vector<std::string_view> keywords;  // `pause`, `reschedule`, `trigger` share one entry
  std::string_view sample;
};
std::vector<ScenarioDirective> scenario_directives();

// Node selectors: "scheduler-K", "worker-K" (1-based), "store", "sink",
// "client", "any", "any-worker", "any-scheduler", "leader". Checks the syntax
// and, for indexed names, the range against `t`.
bool valid_selector(std::string_view selector, const Topology& t);

}  // namespace kairos::sim
