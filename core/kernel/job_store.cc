#include "core/kernel/job_store.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/base/absl_compat.h"
#include "core/base/check.h"
#include "core/base/key_codec.h"
#include "core/base/stable_hash.h"
#include "core/kernel/keyspace.h"
#include "core/schedule/schedule.h"

namespace kairos {

std::string_view to_string(WriteVerdict v) {
  switch (v) {
    case WriteVerdict::kAccepted:
      return "accepted";
    case WriteVerdict::kStaleToken:
      return "stale_token";
    case WriteVerdict::kLeaseLapsed:
      return "lease_lapsed";
    case WriteVerdict::kNotLeased:
      return "not_leased";
    case WriteVerdict::kUnknownRun:
      return "unknown_run";
  }
  return "?";
}

Event run_event(std::string_view kind, const RunRecord& run) {
  Event e;
  e.kind = kind;
  e.with("job", run.id.job_id)
      .with("incarnation", run.id.incarnation)
      .with("nominal", run.id.nominal)
      .with("attempt", static_cast<std::uint64_t>(run.attempt))
      .with("token", run.token)
      .with("shard", static_cast<std::uint64_t>(run.shard));
  return e;
}

namespace {

absl::Status invalid(std::string_view field, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(absl_sv(field), ": ", absl_sv(what)));
}

bool finite_nonneg(absl::Duration d) {
  return d >= absl::ZeroDuration() && d != absl::InfiniteDuration();
}

// The first occurrence of a freshly created job: the first fire strictly after
// `now - 1us` (so a fire at exactly `now` counts), except that a one-off in
// the past still fires once (late; issue 6's misfire policy decides more).
std::optional<Fire> first_fire(const Schedule& s, absl::Time now) {
  if (s.spec().kind == ScheduleSpec::Kind::kOnce) return s.next_after(absl::InfinitePast());
  return s.next_after(now - absl::Microseconds(1));
}

template <typename T>
absl::StatusOr<std::optional<T>> read(Txn& txn, const std::string& key,
                                      absl::StatusOr<T> (*decode)(std::string_view)) {
  auto v = txn.get(key);
  if (!v) return std::optional<T>();
  KAIROS_ASSIGN_OR_RETURN(T rec, decode(*v));
  return std::optional<T>(std::move(rec));
}

absl::StatusOr<JobCounters> read_counters(Txn& txn, std::string_view id) {
  KAIROS_ASSIGN_OR_RETURN(auto c, read<JobCounters>(txn, keys::counters(id), decode_counters));
  return c.value_or(JobCounters{});
}

void put_run(Txn& txn, const RunRecord& run) { txn.put(keys::run(run.id), encode(run)); }

Event ledger_event(std::string_view kind, std::string_view job_id, const LedgerRecord& l) {
  Event e;
  e.kind = kind;
  e.with("job", std::string(job_id))
      .with("incarnation", l.incarnation)
      .with("nominal", l.nominal)
      .with("through", l.through)
      .with("count", l.count)
      .with("outcome", std::string(to_string(l.outcome)))
      .with("fire_at", l.fire_at)
      .with("lateness", l.lateness);
  if (l.run_nominal != absl::InfinitePast()) e.with("run_nominal", l.run_nominal);
  if (!l.detail.empty()) e.with("detail", l.detail);
  return e;
}

// Closes the latest attempt of `run` (if it is still running).
void close_attempt(RunRecord& run, AttemptEnd end, absl::Time now, std::int32_t exit_code = 0) {
  if (run.attempts.empty() || run.attempts.back().end != AttemptEnd::kRunning) return;
  run.attempts.back().end = end;
  run.attempts.back().finished_at = now;
  run.attempts.back().exit_code = exit_code;
}

AttemptEnd attempt_end(RunStatus s) {
  switch (s) {
    case RunStatus::kSucceeded:
      return AttemptEnd::kSucceeded;
    case RunStatus::kFailed:
      return AttemptEnd::kFailed;
    case RunStatus::kFailedPermanent:
      return AttemptEnd::kFailedPermanent;
    case RunStatus::kTimedOut:
      return AttemptEnd::kTimedOut;
    case RunStatus::kStopped:
      return AttemptEnd::kReleased;
  }
  return AttemptEnd::kFailed;
}

// The ledger record of a scheduled run's own occurrence becomes kCancelled.
void cancel_ledger(Txn& txn, const RunRecord& run, std::string_view why,
                   std::vector<Event>& events) {
  if (run.kind != RunKind::kScheduled) return;
  const std::string key = keys::ledger(run.id.job_id, run.id.nominal, run.id.incarnation);
  auto v = txn.get(key);
  if (!v) return;
  auto rec = decode_ledger(*v);
  if (!rec.ok() || !has_own_run(rec->outcome)) return;
  const std::string previous(to_string(rec->outcome));
  rec->outcome = LedgerOutcome::kCancelled;
  rec->detail = std::string(why);
  txn.put(key, encode(*rec));
  events.push_back(ledger_event("ledger.updated", run.id.job_id, *rec).with("previous", previous));
}

// Withdraws a run that is not running (ready or waiting; a leased one only
// when the reaper finds its lease lapsed after a cancel): state cancelled,
// off the queue and the open set; its occurrence's ledger record says so.
void withdraw(Txn& txn, RunRecord& run, absl::Time now, std::vector<Event>& events,
              std::string_view why) {
  if (run.state == RunState::kReady)
    txn.erase(keys::ready(run.shard, run.priority, run.ready_at, run.id));
  if (run.state == RunState::kLeased) {
    txn.erase(keys::expiry(run.shard, run.lease_expiry, run.id));
    close_attempt(run, AttemptEnd::kLapsed, now);
  }
  const bool never_started = run.token == 0;
  run.state = RunState::kCancelled;
  run.owner.clear();
  run.finished_at = now;
  txn.erase(keys::open_run(run.id));
  put_run(txn, run);
  events.push_back(run_event("run.cancelled", run).with("reason", std::string(why)));
  if (never_started) cancel_ledger(txn, run, why, events);
}

bool job_accepts(const std::optional<JobRecord>& job, const RunId& id) {
  return job && job->state == JobState::kActive && job->incarnation == id.incarnation;
}

// Unfinished runs of one incarnation, split by whether they are active
// (ready, incl. a pending retry, or leased) or waiting (overlap `queue`).
struct OpenRuns {
  std::uint32_t active = 0;
  std::uint32_t waiting = 0;
  std::optional<RunRecord> first_waiting;
  std::vector<RunRecord> runs;
};
absl::StatusOr<OpenRuns> open_runs(Txn& txn, std::string_view id, std::uint64_t inc) {
  OpenRuns o;
  const keys::Range r = keys::open_runs_of(id, inc);
  for (const auto& kv : txn.scan(r.begin, r.end, 10'000)) {
    KAIROS_ASSIGN_OR_RETURN(RunId rid, keys::parse_open(kv.key));
    KAIROS_ASSIGN_OR_RETURN(auto run, read<RunRecord>(txn, keys::run(rid), decode_run));
    if (!run)
      return absl::DataLossError(absl::StrCat("open-run entry without run ", idempotency_key(rid)));
    if (run->state == RunState::kWaiting) {
      ++o.waiting;
      if (!o.first_waiting) o.first_waiting = *run;
    } else if (!is_terminal(run->state)) {
      ++o.active;
    }
    o.runs.push_back(std::move(*run));
  }
  return o;
}

// How many runs the overlap policy lets be active at once.
std::uint32_t overlap_cap(const JobPolicy& p) {
  return p.overlap == OverlapPolicy::kAllow ? p.max_concurrent : 1;
}

// When a run of the job has left the active set: a waiting run (overlap
// `queue`) becomes ready if the policy now allows it.
absl::Status promote_waiting(Txn& txn, const RunId& finished, absl::Time now,
                             std::vector<Event>& events) {
  KAIROS_ASSIGN_OR_RETURN(auto job, read<JobRecord>(txn, keys::job(finished.job_id), decode_job));
  if (!job_accepts(job, finished)) return absl::OkStatus();
  KAIROS_ASSIGN_OR_RETURN(OpenRuns open, open_runs(txn, finished.job_id, finished.incarnation));
  if (!open.first_waiting || open.active >= overlap_cap(job->spec.policy)) return absl::OkStatus();
  RunRecord run = *open.first_waiting;
  run.state = RunState::kReady;
  run.ready_at = now;
  txn.put(keys::ready(run.shard, run.priority, run.ready_at, run.id), "");
  put_run(txn, run);
  events.push_back(run_event("run.promoted", run).with("after", finished.nominal));
  return absl::OkStatus();
}

// A run is over for good: terminal state, off the open set, its successor
// (if waiting) promoted.
absl::Status finish_run(Txn& txn, RunRecord& run, RunState state, RunStatus outcome,
                        std::int32_t exit_code, std::string detail, absl::Time now,
                        std::string_view worker, std::vector<Event>& events) {
  run.state = state;
  run.outcome = outcome;
  run.exit_code = exit_code;
  run.detail = std::move(detail);
  run.finished_at = now;
  run.owner.clear();
  run.lease_expiry = absl::InfinitePast();
  txn.erase(keys::open_run(run.id));
  put_run(txn, run);
  events.push_back(run_event("run.completed", run)
                       .with("worker", std::string(worker))
                       .with("outcome", std::string(to_string(run.state)))
                       .with("status", static_cast<std::uint64_t>(outcome))
                       .with("exit_code", static_cast<std::int64_t>(exit_code)));
  return promote_waiting(txn, run.id, now, events);
}

// A leased run whose attempt ended without a verdict (lease lapsed, or
// released by its worker): claimable again at once with the next attempt
// number while attempts are left (a crashed worker's run is retried after one
// lease period, not after a backoff); otherwise failed.
absl::Status requeue_or_fail(Txn& txn, RunRecord& run, absl::Time now, AttemptEnd end,
                             std::uint32_t max_attempts, std::vector<Event>& events) {
  txn.erase(keys::expiry(run.shard, run.lease_expiry, run.id));
  close_attempt(run, end, now);
  if (run.attempt >= max_attempts) {
    const std::string worker = run.owner;
    return finish_run(
        txn, run, RunState::kFailed, RunStatus::kFailed, 0,
        absl::StrCat(end == AttemptEnd::kLapsed ? "lease lapsed" : "released",
                     " on the last attempt (", run.attempt, " of ", max_attempts, ")"),
        now, worker, events);
  }
  run.state = RunState::kReady;
  run.owner.clear();
  run.attempt += 1;
  run.ready_at = now;
  run.lease_expiry = absl::InfinitePast();
  txn.put(keys::ready(run.shard, run.priority, run.ready_at, run.id), "");
  put_run(txn, run);
  return absl::OkStatus();
}

absl::Status check_namespace(std::string_view ns) {
  if (ns.empty() || ns.size() > kMaxNamespaceSize)
    return invalid("namespace", absl::StrCat("must be 1..", kMaxNamespaceSize, " bytes"));
  for (char c : ns)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.'))
      return invalid("namespace",
                     absl::StrCat("'", absl_sv(ns), "' may contain only a-z 0-9 - _ ."));
  return absl::OkStatus();
}

absl::Status check_labels(const std::map<std::string, std::string>& labels) {
  if (labels.size() > kMaxLabels)
    return invalid("labels", absl::StrCat("at most ", kMaxLabels, " labels, got ", labels.size()));
  for (const auto& [k, v] : labels) {
    if (k.empty() || k.size() > kMaxLabelKeySize)
      return invalid("labels",
                     absl::StrCat("key '", k, "' must be 1..", kMaxLabelKeySize, " bytes"));
    for (char c : k)
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '_' || c == '.' || c == '/'))
        return invalid("labels",
                       absl::StrCat("key '", k, "' may contain only letters, digits and - _ . /"));
    if (v.size() > kMaxLabelValueSize)
      return invalid(absl::StrCat("labels.", k),
                     absl::StrCat("value must be at most ", kMaxLabelValueSize, " bytes"));
    for (unsigned char c : v)
      if (c < 0x20 || c == 0x7f)
        return invalid(absl::StrCat("labels.", k), "value must not contain control characters");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status validate_job_id(std::string_view id) {
  if (id.empty()) return invalid("id", "must not be empty");
  if (id.size() > kMaxJobIdSize)
    return invalid("id",
                   absl::StrCat("must be at most ", kMaxJobIdSize, " bytes, got ", id.size()));
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.' || c == ':' || c == '/';
    if (!ok)
      return invalid(
          "id", absl::StrCat("'", absl_sv(id), "' may contain only letters, digits and - _ . : /"));
  }
  return absl::OkStatus();
}

absl::Status validate_job_spec(const JobSpec& spec) {
  KAIROS_RETURN_IF_ERROR(validate_job_id(spec.id));
  auto compiled = Schedule::compile(spec.schedule, spec.id);
  if (!compiled.ok()) {
    std::string msg(compiled.status().message());
    if (msg.rfind("schedule", 0) != 0) msg = absl::StrCat("schedule: ", msg);
    return absl::InvalidArgumentError(msg);
  }
  KAIROS_RETURN_IF_ERROR(validate(spec.payload));
  const JobPolicy& p = spec.policy;
  if (p.max_attempts < 1 || p.max_attempts > 100)
    return invalid("policy.max_attempts",
                   absl::StrCat("must be in [1, 100], got ", p.max_attempts));
  if (!finite_nonneg(p.retry_initial))
    return invalid("policy.retry_initial", "must be >= 0 and finite");
  if (p.retry_multiplier_percent < 100 || p.retry_multiplier_percent > 1000)
    return invalid("policy.retry_multiplier_percent",
                   absl::StrCat("must be in [100, 1000], got ", p.retry_multiplier_percent));
  if (!finite_nonneg(p.retry_max) || p.retry_max < p.retry_initial)
    return invalid("policy.retry_max", "must be finite and >= policy.retry_initial");
  if (p.timeout <= absl::ZeroDuration() || p.timeout > absl::Hours(24 * 7))
    return invalid("policy.timeout", "must be in (0, 7d]");
  if (!finite_nonneg(p.misfire_threshold))
    return invalid("policy.misfire_threshold", "must be >= 0 and finite");
  if (p.catch_up_max < 1 || p.catch_up_max > 1000)
    return invalid("policy.catch_up_max",
                   absl::StrCat("must be in [1, 1000], got ", p.catch_up_max));
  if (p.max_concurrent < 1 || p.max_concurrent > 100)
    return invalid("policy.max_concurrent",
                   absl::StrCat("must be in [1, 100], got ", p.max_concurrent));
  if (p.priority < kMinPriority || p.priority > kMaxPriority)
    return invalid("policy.priority", absl::StrCat("must be in [", kMinPriority, ", ", kMaxPriority,
                                                   "], got ", p.priority));
  if (p.retry_jitter_percent > 100)
    return invalid("policy.retry_jitter_percent",
                   absl::StrCat("must be in [0, 100], got ", p.retry_jitter_percent));
  if (!finite_nonneg(p.catch_up_spacing) || p.catch_up_spacing > absl::Hours(24))
    return invalid("policy.catch_up_spacing", "must be in [0, 24h]");
  KAIROS_RETURN_IF_ERROR(check_namespace(spec.ns));
  KAIROS_RETURN_IF_ERROR(check_labels(spec.labels));
  return absl::OkStatus();
}

absl::Status validate(const PolicyOptions& o) {
  if (o.ledger_keep < 1 || o.ledger_keep > 10'000'000)
    return invalid("policy_options.ledger_keep", "must be in [1, 10000000]");
  if (o.ledger_max_age <= absl::ZeroDuration() || o.ledger_max_age == absl::InfiniteDuration())
    return invalid("policy_options.ledger_max_age", "must be positive and finite");
  if (o.prune_budget < 1 || o.prune_budget > 10'000)
    return invalid("policy_options.prune_budget", "must be in [1, 10000]");
  if (o.starvation_bound < absl::ZeroDuration() || o.starvation_bound > absl::Hours(24))
    return invalid("policy_options.starvation_bound", "must be in [0, 24h]");
  if (o.misfire_chunk < 1001 || o.misfire_chunk > 1'000'000)
    return invalid("policy_options.misfire_chunk",
                   "must be in [1001, 1000000] (above the largest catch_up_max)");
  return absl::OkStatus();
}

JobStore::JobStore(std::uint32_t shard_count, PlantedBugs bugs, PolicyOptions options)
    : shard_count_(shard_count), bugs_(bugs), options_(options) {
  KAIROS_CHECK(shard_count >= 1 && shard_count <= keys::kMaxShards);
  const absl::Status s = validate(options_);
  KAIROS_CHECK_MSG(s.ok(), std::string(s.message()).c_str());
}

std::uint32_t JobStore::shard_of(std::string_view job_id) const {
  return static_cast<std::uint32_t>(stable_hash(job_id) % shard_count_);
}

absl::Status JobStore::init(Txn& txn) const {
  const std::string key = keys::shard_count();
  if (auto v = txn.get(key)) {
    KAIROS_ASSIGN_OR_RETURN(auto n, keys::decode_shard_count(*v));
    if (n != shard_count_)
      return absl::FailedPreconditionError(absl::StrCat(
          "shard_count: the store was created with ", n, " shards; this node is configured with ",
          shard_count_, " (the shard count is fixed when the store is created)"));
    return absl::OkStatus();
  }
  txn.put(key, keys::encode_shard_count(shard_count_));
  return absl::OkStatus();
}

absl::Status JobStore::create(Txn& txn, const JobSpec& raw, CreateResult* out) const {
  *out = {};
  const JobSpec spec = normalize_spec(raw);
  KAIROS_RETURN_IF_ERROR(validate_job_spec(spec));
  const absl::Time now = txn.now();
  KAIROS_ASSIGN_OR_RETURN(auto existing, read<JobRecord>(txn, keys::job(spec.id), decode_job));
  if (existing && existing->state == JobState::kActive) {
    if (existing->spec == spec) {
      out->job = *existing;
      return absl::OkStatus();
    }
    return absl::AlreadyExistsError(
        absl::StrCat("job '", spec.id, "' already exists with a different spec (incarnation ",
                     existing->incarnation, "); cancel it first or choose another id"));
  }
  KAIROS_ASSIGN_OR_RETURN(auto schedule, Schedule::compile(spec.schedule, spec.id));
  KAIROS_ASSIGN_OR_RETURN(JobCounters counters, read_counters(txn, spec.id));
  counters.incarnation_hw += 1;
  txn.put(keys::counters(spec.id), encode(counters));

  JobRecord job;
  job.spec = spec;
  job.incarnation = counters.incarnation_hw;
  job.state = JobState::kActive;
  job.created_at = now;
  job.updated_at = now;
  if (existing) job.ledger_count = existing->ledger_count;  // the ledger outlives incarnations
  if (auto fire = first_fire(schedule, now)) {
    job.next_due_at = fire->at;
    job.next_nominal = fire->nominal;
    txn.put(keys::due(shard_of(spec.id), fire->at, spec.id),
            encode(DueEntry{job.incarnation, fire->nominal}));
  }
  txn.put(keys::job(spec.id), encode(job));
  out->job = job;
  out->created = true;
  Event e;
  e.kind = "job.created";
  e.with("job", spec.id).with("incarnation", job.incarnation);
  if (job.next_due_at) e.with("next_due", *job.next_due_at);
  out->events.push_back(std::move(e));
  return absl::OkStatus();
}

absl::Status JobStore::get(Txn& txn, std::string_view id, std::optional<JobRecord>* out) const {
  KAIROS_ASSIGN_OR_RETURN(*out, read<JobRecord>(txn, keys::job(id), decode_job));
  return absl::OkStatus();
}

absl::Status JobStore::get_run(Txn& txn, const RunId& id, std::optional<RunRecord>* out) const {
  KAIROS_ASSIGN_OR_RETURN(*out, read<RunRecord>(txn, keys::run(id), decode_run));
  return absl::OkStatus();
}

absl::Status JobStore::list(Txn& txn, std::string_view page_token, std::size_t limit,
                            ListResult* out) const {
  *out = {};
  if (limit == 0 || limit > 10'000) return invalid("page_size", "must be in [1, 10000]");
  keys::Range range = keys::all_jobs();
  if (!page_token.empty()) {
    KAIROS_RETURN_IF_ERROR(validate_job_id(page_token).ok()
                               ? absl::OkStatus()
                               : invalid("page_token", "is not a token this API returned"));
    range.begin = key_successor(keys::job(page_token));
  }
  auto kvs = txn.scan(range.begin, range.end, limit + 1);
  for (std::size_t i = 0; i < kvs.size() && i < limit; ++i) {
    KAIROS_ASSIGN_OR_RETURN(auto job, decode_job(kvs[i].value));
    out->jobs.push_back(std::move(job));
  }
  if (kvs.size() > limit) out->next_page_token = out->jobs.back().spec.id;
  return absl::OkStatus();
}

absl::Status JobStore::cancel(Txn& txn, std::string_view id, CancelResult* out) const {
  *out = {};
  KAIROS_RETURN_IF_ERROR(validate_job_id(id));
  const absl::Time now = txn.now();
  KAIROS_ASSIGN_OR_RETURN(auto job, read<JobRecord>(txn, keys::job(id), decode_job));
  if (!job) return absl::NotFoundError(absl::StrCat("job '", absl_sv(id), "' not found"));
  out->job = *job;
  if (job->state != JobState::kActive) return absl::OkStatus();  // idempotent
  out->was_active = true;
  KAIROS_RETURN_IF_ERROR(close_overdue(txn, *job, "job cancelled before dispatch", out->events));
  if (job->next_due_at) txn.erase(keys::due(shard_of(id), *job->next_due_at, id));
  job->next_due_at.reset();
  job->state = JobState::kCancelled;
  job->cancelled_at = now;
  txn.put(keys::job(id), encode(*job));
  // Its ledger and runs are removed by the shard's reaper once past
  // ledger_max_age (sweep_cancelled); no dispatch will prune them now.
  txn.put(keys::sweep(shard_of(id), now, id), "");
  // Open runs are few (bounded by the overlap policy); withdraw the ready ones.
  const keys::Range open = keys::open_runs_of(id, job->incarnation);
  for (const auto& kv : txn.scan(open.begin, open.end, 10'000)) {
    KAIROS_ASSIGN_OR_RETURN(RunId rid, keys::parse_open(kv.key));
    KAIROS_ASSIGN_OR_RETURN(auto run, read<RunRecord>(txn, keys::run(rid), decode_run));
    if (!run)
      return absl::DataLossError(absl::StrCat("open-run entry without run ", idempotency_key(rid)));
    if (run->state == RunState::kReady || run->state == RunState::kWaiting) {
      withdraw(txn, *run, now, out->events, "job cancelled");
      ++out->cancelled_runs;
    } else if (run->state == RunState::kLeased) {
      ++out->running_runs;
    }
  }
  out->job = *job;
  Event e;
  e.kind = "job.cancelled";
  e.with("job", std::string(id)).with("incarnation", job->incarnation);
  out->events.push_back(std::move(e));
  return absl::OkStatus();
}

absl::Status JobStore::acquire_or_renew(Txn& txn, std::uint32_t shard, std::string_view node,
                                        std::uint64_t known_epoch, absl::Duration ttl,
                                        LeadershipResult* out) const {
  *out = {};
  KAIROS_CHECK(shard < shard_count_);
  const absl::Time now = txn.now();
  KAIROS_ASSIGN_OR_RETURN(auto current,
                          read<LeaderRecord>(txn, keys::leader(shard), decode_leader));
  LeaderRecord rec = current.value_or(LeaderRecord{});
  out->previous = rec;
  if (current && rec.holder == node && known_epoch != 0 && rec.epoch == known_epoch) {
    rec.expiry = now + ttl;
    out->kind = LeadershipResult::Kind::kRenewed;
  } else if (!current || rec.expiry <= now || rec.holder == node) {
    rec.holder = std::string(node);
    rec.epoch += 1;
    rec.expiry = now + ttl;
    out->kind = LeadershipResult::Kind::kAcquired;
    Event e;
    e.kind = "leader.acquired";
    e.with("shard", static_cast<std::uint64_t>(shard))
        .with("epoch", rec.epoch)
        .with("node", std::string(node))
        .with("previous", out->previous.holder)
        .with("previous_epoch", out->previous.epoch);
    out->events.push_back(std::move(e));
  } else {
    out->kind = LeadershipResult::Kind::kHeldByOther;
    out->record = rec;
    out->held_for = rec.expiry - now;
    return absl::OkStatus();
  }
  txn.put(keys::leader(shard), encode(rec));
  out->record = rec;
  return absl::OkStatus();
}

absl::Status JobStore::check_leader(Txn& txn, std::uint32_t shard,
                                    const LeaderToken& leader) const {
  KAIROS_ASSIGN_OR_RETURN(auto current,
                          read<LeaderRecord>(txn, keys::leader(shard), decode_leader));
  const absl::Time now = txn.now();
  if (current && current->holder == leader.node && current->epoch == leader.epoch &&
      current->expiry > now)
    return absl::OkStatus();
  if (!current)
    return absl::FailedPreconditionError(absl::StrCat("stale epoch ", leader.epoch, " for shard ",
                                                      shard, ": the shard has no leader record"));
  return absl::FailedPreconditionError(
      absl::StrCat("stale epoch ", leader.epoch, " for shard ", shard, " (node '", leader.node,
                   "'): current epoch ", current->epoch, " held by '", current->holder, "'",
                   current->expiry <= now ? " (expired)" : ""));
}

absl::Status JobStore::leader_gate(Txn& txn, std::uint32_t shard, const LeaderToken& leader) const {
  KAIROS_CHECK(shard < shard_count_);
  if (bugs_.skip_epoch_check) return absl::OkStatus();  // planted bug
  return check_leader(txn, shard, leader);
}

absl::Status JobStore::create_run_if_absent(Txn& txn, const RunRecord& run, bool idempotent,
                                            DispatchResult* out) const {
  const std::string rkey = keys::run(run.id);
  if (idempotent && txn.get(rkey)) return absl::OkStatus();  // the idempotency key
  put_run(txn, run);
  if (run.state == RunState::kReady)
    txn.put(keys::ready(run.shard, run.priority, run.ready_at, run.id), "");
  txn.put(keys::open_run(run.id), "");
  out->dispatched.push_back(run);
  out->events.push_back(run_event("run.dispatched", run)
                            .with("due", run.due_at)
                            .with("kind", std::string(to_string(run.kind)))
                            .with("state", std::string(to_string(run.state)))
                            .with("lateness", run.lateness)
                            .with("stands_for", static_cast<std::uint64_t>(run.stands_for))
                            .with("priority", static_cast<std::int64_t>(run.priority)));
  return absl::OkStatus();
}

absl::Status JobStore::put_ledger(Txn& txn, JobRecord& job, const LedgerRecord& rec,
                                  std::vector<Event>& events) const {
  const std::string key = keys::ledger(job.spec.id, rec.nominal, rec.incarnation);
  if (txn.get(key)) return absl::OkStatus();  // already recorded (idempotent)
  txn.put(key, encode(rec));
  ++job.ledger_count;
  events.push_back(ledger_event("ledger.recorded", job.spec.id, rec));
  return absl::OkStatus();
}

// One occurrence the dispatcher decided to run (subject to overlap).
struct JobStore::Occ {
  Fire fire;
  LedgerOutcome outcome = LedgerOutcome::kFired;
  absl::Duration lateness;
  std::uint32_t stands_for = 1;
  absl::Time ready_at;
  bool* created = nullptr;  // out: whether a run was created
};

absl::Status JobStore::fire(Txn& txn, std::uint32_t shard, JobRecord& job, const Occ& o,
                            DispatchResult* out) const {
  const absl::Time now = txn.now();
  const JobPolicy& p = job.spec.policy;
  if (o.created) *o.created = false;
  LedgerRecord led;
  led.incarnation = job.incarnation;
  led.nominal = led.through = o.fire.nominal;
  led.fire_at = o.fire.at;
  led.lateness = o.lateness;
  led.recorded_at = now;
  // The overlap decision.
  KAIROS_ASSIGN_OR_RETURN(OpenRuns open, open_runs(txn, job.spec.id, job.incarnation));
  if (bugs_.overlap_ignored) open = OpenRuns{};  // planted bug: nothing counts as unfinished
  RunState state = RunState::kReady;
  if (open.active >= overlap_cap(p) || open.waiting > 0) {
    if (p.overlap == OverlapPolicy::kQueue && open.waiting == 0) {
      state = RunState::kWaiting;
    } else {
      led.outcome = LedgerOutcome::kSkippedOverlap;
      led.detail = absl::StrCat("overlap ",
                                p.overlap == OverlapPolicy::kSkip    ? "skip"
                                : p.overlap == OverlapPolicy::kQueue ? "queue"
                                                                     : "allow",
                                ": ", open.active, " unfinished, ", open.waiting, " waiting");
      return put_ledger(txn, job, led, out->events);
    }
  }
  RunRecord run;
  run.id = RunId{job.spec.id, job.incarnation, o.fire.nominal};
  run.shard = shard;
  run.due_at = o.fire.at;
  run.attempt = 1;
  run.state = state;
  run.priority = p.priority;
  run.ready_at = o.ready_at;
  run.dispatched_at = now;
  run.kind = RunKind::kScheduled;
  run.lateness = o.lateness;
  run.stands_for = o.stands_for;
  led.outcome = o.outcome;
  led.run_nominal = run.id.nominal;
  if (state == RunState::kWaiting) led.detail = "queued behind an unfinished run (overlap queue)";
  if (bugs_.non_atomic_dispatch) {
    out->to_create.push_back(run);  // planted bug: created by a second txn
  } else {
    KAIROS_RETURN_IF_ERROR(create_run_if_absent(txn, run, /*idempotent=*/true, out));
  }
  if (o.created) *o.created = true;
  return put_ledger(txn, job, led, out->events);
}

// Ledger records for fires[b, e) with one outcome; occurrences that fell
// while the job was paused are recorded as kPaused instead. Lateness is
// judged from max(fire time, job creation), as dispatch does.
absl::Status JobStore::record_range(Txn& txn, JobRecord& job, const std::vector<Fire>& fires,
                                    std::size_t b, std::size_t e, LedgerOutcome outcome,
                                    absl::Time run_nominal, std::string_view detail,
                                    std::vector<Event>& events) const {
  const absl::Time now = txn.now();
  // While the job is still paused (a cancel or reschedule of a paused job)
  // everything since paused_at fell in the pause.
  auto in_pause = [&](const Fire& f) {
    return f.nominal >= job.paused_at && (job.paused || f.nominal < job.resumed_at);
  };
  std::size_t i = b;
  while (i < e) {
    const bool paused = in_pause(fires[i]);
    std::size_t j = i + 1;
    while (j < e && in_pause(fires[j]) == paused) ++j;
    LedgerRecord led;
    led.incarnation = job.incarnation;
    led.nominal = fires[i].nominal;
    led.through = fires[j - 1].nominal;
    led.count = j - i;
    led.outcome = paused ? LedgerOutcome::kPaused : outcome;
    led.fire_at = fires[i].at;
    led.run_nominal = run_nominal;
    const absl::Duration late = now - std::max(fires[i].at, job.created_at);
    led.lateness = late < absl::ZeroDuration() ? absl::ZeroDuration() : late;
    led.recorded_at = now;
    led.detail = paused ? absl::StrCat("fell while the job was paused; ", absl_sv(detail))
                        : std::string(detail);
    KAIROS_RETURN_IF_ERROR(put_ledger(txn, job, led, events));
    i = j;
  }
  return absl::OkStatus();
}

// Occurrences of the job's current schedule from next_nominal whose fire
// time has passed but which were never dispatched (the leader was behind, or
// the job is paused) end here, before a cancel or a schedule change, so every
// occurrence that became due keeps exactly one ledger outcome: kCancelled
// with `why` (kPaused for those that fell while the job was paused). Work is
// bounded: at most kMaxChunks x misfire_chunk occurrences are listed; a
// longer backlog ends with one record through the last due occurrence whose
// count is 0 (not counted).
absl::Status JobStore::close_overdue(Txn& txn, JobRecord& job, std::string_view why,
                                     std::vector<Event>& events) const {
  if (job.next_nominal == absl::InfinitePast()) return absl::OkStatus();
  constexpr int kMaxChunks = 100;
  const absl::Time now = txn.now();
  KAIROS_ASSIGN_OR_RETURN(auto schedule, Schedule::compile(job.spec.schedule, job.spec.id));
  std::optional<Fire> f = schedule.next_after(job.next_nominal - absl::Microseconds(1));
  if (!f || f->nominal != job.next_nominal) {
    Fire only;
    only.nominal = job.next_nominal;
    only.at = job.next_due_at.value_or(job.next_nominal);
    f = only;
  }
  std::vector<Fire> fires;
  for (int chunk = 0; f && f->at <= now; ++chunk) {
    fires.clear();
    for (; f && f->at <= now && fires.size() < options_.misfire_chunk;
         f = schedule.next_after(f->nominal))
      fires.push_back(*f);
    if (chunk + 1 == kMaxChunks && f && f->at <= now) {
      // Too long to list: one uncounted record through the last due one.
      std::optional<Fire> last = schedule.prev_before(now + absl::Microseconds(1));
      while (last && last->at > now) last = schedule.prev_before(last->nominal);
      if (last && last->nominal >= f->nominal) {
        KAIROS_RETURN_IF_ERROR(record_range(txn, job, fires, 0, fires.size(),
                                            LedgerOutcome::kCancelled, absl::InfinitePast(), why,
                                            events));
        LedgerRecord led;
        led.incarnation = job.incarnation;
        led.nominal = f->nominal;
        led.through = last->nominal;
        led.count = 0;
        led.outcome = LedgerOutcome::kCancelled;
        led.fire_at = f->at;
        led.lateness = now - f->at;
        led.recorded_at = now;
        led.detail = absl::StrCat(absl_sv(why), " (backlog too long to count)");
        return put_ledger(txn, job, led, events);
      }
    }
    KAIROS_RETURN_IF_ERROR(record_range(txn, job, fires, 0, fires.size(), LedgerOutcome::kCancelled,
                                        absl::InfinitePast(), why, events));
  }
  return absl::OkStatus();
}

absl::Status JobStore::dispatch_entry(Txn& txn, std::uint32_t shard, const std::string& due_key,
                                      absl::Time due_at, JobRecord& job, absl::Time nominal,
                                      DispatchResult* out) const {
  (void)due_key;
  const absl::Time now = txn.now();
  const JobPolicy& p = job.spec.policy;
  KAIROS_ASSIGN_OR_RETURN(auto schedule, Schedule::compile(job.spec.schedule, job.spec.id));
  // The fire this entry stands for; its real fire time (due_at may be later:
  // catch-up spacing).
  Fire first;
  if (auto f = schedule.next_after(nominal - absl::Microseconds(1)); f && f->nominal == nominal) {
    first = *f;
  } else {
    first.at = due_at;
    first.nominal = nominal;
  }
  // An occurrence cannot be missed before the job existed (a one-off created
  // with a time in the past is judged from its creation).
  auto lateness_of = [&](const Fire& f) {
    const absl::Duration d = now - std::max(f.at, job.created_at);
    return d < absl::ZeroDuration() ? absl::ZeroDuration() : d;
  };
  auto misfired = [&](const Fire& f) { return lateness_of(f) > p.misfire_threshold; };
  auto on_time_outcome = [](const Fire& f) {
    return f.note == DstNote::kGapShifted ? LedgerOutcome::kMovedDst : LedgerOutcome::kFired;
  };
  auto set_next = [&](std::optional<Fire> next, absl::Time at) {
    if (next) {
      job.next_due_at = at;
      job.next_nominal = next->nominal;
      txn.put(keys::due(shard, at, job.spec.id), encode(DueEntry{job.incarnation, next->nominal}));
      if (at <= now) out->more = true;  // due already: the next pass takes it
    } else {
      job.next_due_at.reset();
      job.next_nominal = absl::InfinitePast();
    }
  };
  auto record_range = [&](const std::vector<Fire>& fires, std::size_t b, std::size_t e,
                          LedgerOutcome outcome, absl::Time run_nominal, std::string detail) {
    return this->record_range(txn, job, fires, b, e, outcome, run_nominal, detail, out->events);
  };

  if (!misfired(first)) {
    Occ o;
    o.fire = first;
    o.outcome = on_time_outcome(first);
    o.lateness = lateness_of(first);
    o.stands_for = static_cast<std::uint32_t>(std::min<std::uint64_t>(1 + job.backlog, UINT32_MAX));
    o.ready_at = due_at;
    job.backlog = 0;
    KAIROS_RETURN_IF_ERROR(fire(txn, shard, job, o, out));
    auto next = schedule.next_after(nominal);
    set_next(next, next ? next->at : absl::InfinitePast());
    return absl::OkStatus();
  }

  // Misfire: the occurrences due by now, oldest first, at most one chunk.
  std::vector<Fire> due{first};
  bool capped = false;
  for (;;) {
    auto n = schedule.next_after(due.back().nominal);
    if (!n || n->at > now) break;
    if (due.size() >= options_.misfire_chunk) {
      capped = true;
      break;
    }
    due.push_back(*n);
  }
  std::size_t m = 0;  // misfired prefix (fire times increase)
  while (m < due.size() && misfired(due[m])) ++m;
  const std::string policy_name = p.misfire == MisfirePolicy::kRunOnce   ? "run-once"
                                  : p.misfire == MisfirePolicy::kCatchUp ? "catch-up"
                                                                         : "skip";
  Event decision;
  decision.kind = "misfire.decided";
  decision.with("job", job.spec.id)
      .with("incarnation", job.incarnation)
      .with("nominal", first.nominal)
      .with("policy", policy_name)
      .with("lateness", lateness_of(first))
      .with("threshold", p.misfire_threshold)
      .with("due", static_cast<std::uint64_t>(due.size()))
      .with("misfired", static_cast<std::uint64_t>(m))
      .with("capped", static_cast<std::uint64_t>(capped ? 1 : 0));
  std::uint64_t fired = 0, skipped = 0, coalesced = 0;
  std::optional<Fire> next_fire;
  absl::Time next_at;

  if (p.misfire == MisfirePolicy::kRunOnce) {
    if (capped) {
      KAIROS_RETURN_IF_ERROR(record_range(due, 0, due.size(), LedgerOutcome::kCoalesced,
                                          absl::InfinitePast(), "run-once: backlog, run follows"));
      job.backlog += due.size();
      coalesced = due.size();
      next_fire = schedule.next_after(due.back().nominal);
    } else {
      const Fire& last = due.back();
      bool created = false;
      Occ o;
      o.fire = last;
      o.outcome = misfired(last) ? LedgerOutcome::kLate : on_time_outcome(last);
      o.lateness = lateness_of(last);
      o.stands_for =
          static_cast<std::uint32_t>(std::min<std::uint64_t>(due.size() + job.backlog, UINT32_MAX));
      o.ready_at = due_at;
      o.created = &created;
      KAIROS_RETURN_IF_ERROR(fire(txn, shard, job, o, out));
      fired = created ? 1 : 0;
      coalesced = due.size() - 1;
      KAIROS_RETURN_IF_ERROR(record_range(
          due, 0, due.size() - 1, LedgerOutcome::kCoalesced,
          created ? last.nominal : absl::InfinitePast(),
          absl::StrCat("run-once: ", due.size() + job.backlog, " occurrences, one run")));
      job.backlog = 0;
      next_fire = schedule.next_after(last.nominal);
    }
    if (next_fire) next_at = next_fire->at;
  } else if (p.misfire == MisfirePolicy::kSkip) {
    KAIROS_RETURN_IF_ERROR(record_range(due, 0, m, LedgerOutcome::kSkippedMisfire,
                                        absl::InfinitePast(), "skip: past the misfire threshold"));
    skipped = m;
    job.backlog = 0;
    next_fire =
        m < due.size() ? std::optional<Fire>(due[m]) : schedule.next_after(due.back().nominal);
    if (next_fire) next_at = next_fire->at;
  } else {  // catch-up
    job.backlog = 0;
    const bool bounded = !bugs_.unbounded_catch_up;
    std::size_t excess = 0;
    if (bounded && capped) {
      excess = due.size() - p.catch_up_max;  // all beyond the bound (more remain)
    } else if (bounded && due.size() > p.catch_up_max) {
      excess = due.size() - p.catch_up_max;
    }
    KAIROS_RETURN_IF_ERROR(
        record_range(due, 0, excess, LedgerOutcome::kSkippedMisfire, absl::InfinitePast(),
                     absl::StrCat("catch-up: beyond the bound of ", p.catch_up_max)));
    skipped = excess;
    if (capped && bounded) {
      next_fire = due[excess];
      next_at = next_fire->at;
    } else {
      const Fire& f = due[excess];
      bool created = false;
      Occ o;
      o.fire = f;
      o.outcome = misfired(f) ? LedgerOutcome::kLate : on_time_outcome(f);
      o.lateness = lateness_of(f);
      o.ready_at = due_at;
      o.created = &created;
      KAIROS_RETURN_IF_ERROR(fire(txn, shard, job, o, out));
      fired = created ? 1 : 0;
      next_fire = excess + 1 < due.size() ? std::optional<Fire>(due[excess + 1])
                                          : schedule.next_after(f.nominal);
      if (next_fire) {
        next_at = next_fire->at;
        // Rate limit: a next occurrence that is already due waits the spacing.
        if (bounded && next_at <= now) next_at = std::max(next_at, now + p.catch_up_spacing);
      }
    }
  }
  decision.with("fired", fired).with("skipped", skipped).with("coalesced", coalesced);
  if (next_fire) decision.with("next_due", next_at);
  out->events.push_back(std::move(decision));
  set_next(next_fire, next_at);
  return absl::OkStatus();
}

absl::Status JobStore::prune(Txn& txn, JobRecord& job, std::vector<Event>& events) const {
  const absl::Time now = txn.now();
  const keys::Range r = keys::ledger_of(job.spec.id);
  std::uint64_t pruned = 0;
  for (std::uint32_t i = 0; i < options_.prune_budget; ++i) {
    const auto oldest = txn.scan(r.begin, r.end, 1);
    if (oldest.empty()) {
      job.ledger_count = 0;
      break;
    }
    KAIROS_ASSIGN_OR_RETURN(LedgerRecord rec, decode_ledger(oldest[0].value));
    const bool over_count = job.ledger_count > options_.ledger_keep;
    const bool over_age = rec.recorded_at + options_.ledger_max_age < now;
    if (!over_count && !over_age) break;
    if (has_own_run(rec.outcome) || rec.outcome == LedgerOutcome::kCancelled) {
      const RunId rid{job.spec.id, rec.incarnation,
                      rec.run_nominal == absl::InfinitePast() ? rec.nominal : rec.run_nominal};
      KAIROS_ASSIGN_OR_RETURN(auto run, read<RunRecord>(txn, keys::run(rid), decode_run));
      if (run && !is_terminal(run->state)) break;  // never prune past an open run
      if (run) txn.erase(keys::run(rid));
    }
    txn.erase(oldest[0].key);
    if (job.ledger_count > 0) --job.ledger_count;
    ++pruned;
  }
  if (pruned > 0) {
    Event e;
    e.kind = "ledger.pruned";
    e.with("job", job.spec.id).with("count", pruned).with("remaining", job.ledger_count);
    events.push_back(std::move(e));
  }
  return absl::OkStatus();
}

absl::Status JobStore::dispatch(Txn& txn, std::uint32_t shard, const LeaderToken& leader,
                                std::size_t limit, DispatchResult* out) const {
  *out = {};
  KAIROS_CHECK(limit > 0);
  KAIROS_RETURN_IF_ERROR(leader_gate(txn, shard, leader));
  const absl::Time now = txn.now();
  const keys::Range range = keys::due_until(shard, now);
  const auto entries = txn.scan(range.begin, range.end, limit);
  out->more = entries.size() == limit;
  for (const auto& kv : entries) {
    ++out->scanned;
    KAIROS_ASSIGN_OR_RETURN(keys::DueKey dk, keys::parse_due(kv.key));
    KAIROS_ASSIGN_OR_RETURN(DueEntry de, decode_due(kv.value));
    KAIROS_ASSIGN_OR_RETURN(auto job, read<JobRecord>(txn, keys::job(dk.job_id), decode_job));
    txn.erase(kv.key);
    if (!job || job->state != JobState::kActive || job->incarnation != de.incarnation ||
        job->next_due_at != dk.due_at || job->paused) {
      continue;  // an orphan entry (cannot arise from these bodies); dropped
    }
    // Decide, create the run(s) and advance the due entry in one transaction.
    KAIROS_RETURN_IF_ERROR(dispatch_entry(txn, shard, kv.key, dk.due_at, *job, de.nominal, out));
    KAIROS_RETURN_IF_ERROR(prune(txn, *job, out->events));
    txn.put(keys::job(dk.job_id), encode(*job));
  }
  const keys::Range all = keys::due_of(shard);
  if (const auto next = txn.scan(all.begin, all.end, 1); !next.empty()) {
    KAIROS_ASSIGN_OR_RETURN(keys::DueKey dk, keys::parse_due(next[0].key));
    out->next_due_in = std::max(absl::ZeroDuration(), dk.due_at - now);
  }
  return absl::OkStatus();
}

absl::Status JobStore::create_runs(Txn& txn, std::uint32_t shard, const LeaderToken& leader,
                                   const std::vector<RunRecord>& runs, bool idempotent,
                                   DispatchResult* out) const {
  *out = {};
  KAIROS_RETURN_IF_ERROR(leader_gate(txn, shard, leader));
  for (const RunRecord& run : runs) {
    KAIROS_ASSIGN_OR_RETURN(auto job, read<JobRecord>(txn, keys::job(run.id.job_id), decode_job));
    if (!job_accepts(job, run.id)) continue;
    KAIROS_RETURN_IF_ERROR(create_run_if_absent(txn, run, idempotent, out));
  }
  return absl::OkStatus();
}

absl::Status JobStore::reap(Txn& txn, std::uint32_t shard, const LeaderToken& leader,
                            std::size_t limit, ReapResult* out) const {
  *out = {};
  KAIROS_CHECK(limit > 0);
  KAIROS_RETURN_IF_ERROR(leader_gate(txn, shard, leader));
  if (bugs_.no_lease_expiry) return absl::OkStatus();  // planted bug
  const absl::Time now = txn.now();
  const keys::Range range = keys::expiry_until(shard, now);
  const auto entries = txn.scan(range.begin, range.end, limit);
  out->more = entries.size() == limit;
  for (const auto& kv : entries) {
    ++out->scanned;
    absl::Time expiry;
    KAIROS_ASSIGN_OR_RETURN(RunId rid, keys::parse_expiry(kv.key, &expiry));
    KAIROS_ASSIGN_OR_RETURN(auto run, read<RunRecord>(txn, keys::run(rid), decode_run));
    if (!run || run->state != RunState::kLeased || run->lease_expiry != expiry) {
      txn.erase(kv.key);  // stale index entry
      continue;
    }
    KAIROS_ASSIGN_OR_RETURN(auto job, read<JobRecord>(txn, keys::job(rid.job_id), decode_job));
    if (!job_accepts(job, rid)) {
      withdraw(txn, *run, now, out->events, "lease lapsed after cancel");
      continue;
    }
    const std::string owner = run->owner;
    const std::uint64_t token = run->token;
    KAIROS_RETURN_IF_ERROR(requeue_or_fail(txn, *run, now, AttemptEnd::kLapsed,
                                           job->spec.policy.max_attempts, out->events));
    if (run->state == RunState::kReady) out->requeued.push_back(rid);
    out->events.push_back(run_event("run.lease_lapsed", *run)
                              .with("worker", owner)
                              .with("lapsed_token", token)
                              .with("expiry", expiry)
                              .with("state", std::string(to_string(run->state))));
  }
  return sweep_cancelled(txn, shard, out->events);
}

// Retention for cancelled jobs, which dispatch no longer prunes: each reaper
// pass takes at most two sweep entries whose cancellation is older than
// ledger_max_age (so every record of the job is too) and prunes up to
// prune_budget records of each (their runs with them); an entry is dropped
// once its job's ledger is empty, or when the id was re-created (its
// dispatches prune it again).
absl::Status JobStore::sweep_cancelled(Txn& txn, std::uint32_t shard,
                                       std::vector<Event>& events) const {
  const absl::Time now = txn.now();
  const keys::Range range = keys::sweep_until(shard, now - options_.ledger_max_age);
  for (const auto& kv : txn.scan(range.begin, range.end, 2)) {
    KAIROS_ASSIGN_OR_RETURN(keys::SweepKey k, keys::parse_sweep(kv.key));
    KAIROS_ASSIGN_OR_RETURN(auto job, read<JobRecord>(txn, keys::job(k.job_id), decode_job));
    if (!job || job->state != JobState::kCancelled || job->cancelled_at != k.cancelled_at) {
      txn.erase(kv.key);
      continue;
    }
    const std::uint64_t before = job->ledger_count;
    KAIROS_RETURN_IF_ERROR(prune(txn, *job, events));
    if (job->ledger_count != before) txn.put(keys::job(k.job_id), encode(*job));
    if (job->ledger_count == 0) txn.erase(kv.key);
  }
  return absl::OkStatus();
}

absl::Status JobStore::claim(Txn& txn, const ClaimArgs& args, ClaimResult* out) const {
  *out = {};
  if (args.max_runs == 0) return absl::OkStatus();
  const absl::Time now = txn.now();
  constexpr std::int32_t kBands = kMaxPriority - kMinPriority + 1;
  // Grants the run behind queue entry `key` (if it is still valid).
  auto take = [&](const std::string& key) -> absl::Status {
    KAIROS_ASSIGN_OR_RETURN(RunId rid, keys::parse_ready(key));
    KAIROS_ASSIGN_OR_RETURN(auto run, read<RunRecord>(txn, keys::run(rid), decode_run));
    if (!run || run->state != RunState::kReady ||
        keys::ready(run->shard, run->priority, run->ready_at, run->id) != key) {
      txn.erase(key);  // stale queue entry
      return absl::OkStatus();
    }
    KAIROS_ASSIGN_OR_RETURN(auto job, read<JobRecord>(txn, keys::job(rid.job_id), decode_job));
    if (!job_accepts(job, rid)) {
      withdraw(txn, *run, now, out->events, "job no longer active");
      return absl::OkStatus();
    }
    KAIROS_ASSIGN_OR_RETURN(JobCounters counters, read_counters(txn, rid.job_id));
    std::uint64_t token;
    if (bugs_.reuse_token && run->token != 0) {
      token = run->token;  // planted bug: a re-grant keeps the old token
    } else {
      token = counters.token_hw + 1;
      KAIROS_CHECK(token > run->token);
      counters.token_hw = token;
      txn.put(keys::counters(rid.job_id), encode(counters));
    }
    txn.erase(key);
    const absl::Duration waited = now - run->ready_at;
    run->state = RunState::kLeased;
    run->owner = args.worker;
    run->token = token;
    run->lease_expiry = now + args.ttl;
    run->claimed_at = now;
    if (run->attempts.size() < 1000) {
      AttemptRecord a;
      a.attempt = run->attempt;
      a.token = token;
      a.worker = args.worker;
      a.claimed_at = now;
      run->attempts.push_back(std::move(a));
    }
    txn.put(keys::expiry(run->shard, run->lease_expiry, run->id), "");
    put_run(txn, *run);
    out->events.push_back(run_event("run.claimed", *run)
                              .with("worker", args.worker)
                              .with("lease_expiry", run->lease_expiry)
                              .with("priority", static_cast<std::int64_t>(run->priority))
                              .with("ready_at", run->ready_at)
                              .with("waited", waited));
    out->grants.push_back(Grant{*run, job->spec.payload, job->spec.policy.timeout});
    return absl::OkStatus();
  };
  for (std::uint32_t i = 0; i < shard_count_ && out->grants.size() < args.max_runs; ++i) {
    const std::uint32_t shard = (args.first_shard + i) % shard_count_;
    // One probe finds the shard's first non-empty band (or that it has no
    // ready run at all): the band scans below start there.
    const keys::Range all = keys::ready_of(shard);
    const auto probe = txn.scan(all.begin, all.end, 1);
    if (probe.empty()) continue;
    KAIROS_ASSIGN_OR_RETURN(const std::uint8_t first_band, keys::parse_ready_band(probe[0].key));
    // Pass 1, the no-starvation rule: runs ready for at least
    // starvation_bound are served first, oldest ready_at first, whatever
    // their band.
    {
      const std::size_t want = args.max_runs - out->grants.size();
      std::vector<std::pair<std::pair<absl::Time, std::string>, std::string>> starved;
      for (std::int32_t band = first_band; band < kBands; ++band) {
        const keys::Range range = keys::ready_until(shard, static_cast<std::uint8_t>(band),
                                                    now - options_.starvation_bound);
        for (const auto& kv : txn.scan(range.begin, range.end, want)) {
          KAIROS_ASSIGN_OR_RETURN(RunId rid, keys::parse_ready(kv.key));
          KAIROS_ASSIGN_OR_RETURN(auto run, read<RunRecord>(txn, keys::run(rid), decode_run));
          const absl::Time at = run ? run->ready_at : absl::InfinitePast();
          starved.push_back({{at, kv.key}, kv.key});
        }
      }
      std::sort(starved.begin(), starved.end());
      for (const auto& s : starved) {
        if (out->grants.size() >= args.max_runs) break;
        KAIROS_RETURN_IF_ERROR(take(s.second));
      }
    }
    // Pass 2: higher priority first among due runs, FIFO within a band.
    for (std::int32_t band = first_band; band < kBands; ++band) {
      const std::size_t want = args.max_runs - out->grants.size();
      if (want == 0) break;
      const keys::Range range = keys::ready_until(shard, static_cast<std::uint8_t>(band), now);
      for (const auto& kv : txn.scan(range.begin, range.end, want)) {
        KAIROS_RETURN_IF_ERROR(take(kv.key));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status JobStore::renew(Txn& txn, std::string_view worker, const std::vector<RenewItem>& items,
                             absl::Duration ttl, RenewResult* out) const {
  *out = {};
  const absl::Time now = txn.now();
  for (const RenewItem& item : items) {
    RenewVerdict v;
    KAIROS_ASSIGN_OR_RETURN(auto run, read<RunRecord>(txn, keys::run(item.run), decode_run));
    if (!run) {
      v.verdict = WriteVerdict::kUnknownRun;
      v.reason = absl::StrCat("no run ", idempotency_key(item.run));
    } else if (run->token != item.token && !bugs_.ignore_fencing) {
      v.verdict = WriteVerdict::kStaleToken;
      v.reason = absl::StrCat("stale token ", item.token, "; current token is ", run->token);
      out->events.push_back(run_event("write.rejected_stale_token", *run)
                                .with("worker", std::string(worker))
                                .with("stale_token", item.token)
                                .with("op", std::string("renew")));
    } else if (run->state != RunState::kLeased) {
      v.verdict = WriteVerdict::kNotLeased;
      v.reason = absl::StrCat("run is ", absl_sv(to_string(run->state)));
    } else if (run->lease_expiry <= now) {
      v.verdict = WriteVerdict::kLeaseLapsed;
      v.reason = "lease lapsed before the renewal arrived";
    } else {
      txn.erase(keys::expiry(run->shard, run->lease_expiry, run->id));
      run->lease_expiry = now + ttl;
      txn.put(keys::expiry(run->shard, run->lease_expiry, run->id), "");
      put_run(txn, *run);
      v.verdict = WriteVerdict::kAccepted;
      v.lease_expiry = run->lease_expiry;
      out->events.push_back(run_event("run.renewed", *run)
                                .with("worker", std::string(worker))
                                .with("lease_expiry", run->lease_expiry));
    }
    out->verdicts.push_back(std::move(v));
  }
  return absl::OkStatus();
}

absl::Status JobStore::complete(Txn& txn, std::string_view worker,
                                const std::vector<CompleteItem>& items, CompleteResult* out) const {
  *out = {};
  const absl::Time now = txn.now();
  for (const CompleteItem& item : items) {
    CompleteVerdict v;
    KAIROS_ASSIGN_OR_RETURN(auto run, read<RunRecord>(txn, keys::run(item.run), decode_run));
    const bool releasing = item.outcome == RunStatus::kStopped;
    if (!run) {
      v.verdict = WriteVerdict::kUnknownRun;
      v.reason = absl::StrCat("no run ", idempotency_key(item.run));
      out->verdicts.push_back(std::move(v));
      continue;
    }
    const bool token_ok = run->token == item.token;
    // The attempt this token was granted for, if it already ended.
    const AttemptRecord* ended = nullptr;
    for (const AttemptRecord& a : run->attempts)
      if (a.token == item.token && a.end != AttemptEnd::kRunning) ended = &a;
    if (is_terminal(run->state) && token_ok && run->state != RunState::kCancelled &&
        run->outcome == item.outcome) {
      v.verdict = WriteVerdict::kAccepted;  // a retry of a recorded completion
      v.reason = "already recorded";
    } else if (run->state == RunState::kReady && token_ok && ended &&
               ended->end == attempt_end(item.outcome)) {
      // A retried report whose first copy was applied: the run is already
      // re-queued (released, or waiting for its retry).
      v.verdict = WriteVerdict::kAccepted;
      v.reason = releasing ? "already released" : "already recorded; retry scheduled";
    } else if (!token_ok && !bugs_.ignore_fencing) {
      v.verdict = WriteVerdict::kStaleToken;
      v.reason = absl::StrCat("stale token ", item.token, "; current token is ", run->token);
      out->events.push_back(run_event("write.rejected_stale_token", *run)
                                .with("worker", std::string(worker))
                                .with("stale_token", item.token)
                                .with("op", std::string("complete")));
    } else if (run->state != RunState::kLeased &&
               !(bugs_.ignore_fencing && run->state == RunState::kReady)) {
      v.verdict =
          run->state == RunState::kReady ? WriteVerdict::kStaleToken : WriteVerdict::kNotLeased;
      v.reason = absl::StrCat(
          "run is ", absl_sv(to_string(run->state)),
          run->state == RunState::kReady ? " (its lease lapsed and it was re-queued)" : "");
      out->events.push_back(run_event("write.rejected_stale_token", *run)
                                .with("worker", std::string(worker))
                                .with("stale_token", item.token)
                                .with("op", std::string("complete")));
    } else {
      // Accepted: the token is current (the token, not the clock, is the
      // fence: until the reaper re-queues the run nobody else can hold it).
      KAIROS_ASSIGN_OR_RETURN(auto job,
                              read<JobRecord>(txn, keys::job(run->id.job_id), decode_job));
      const JobPolicy policy = job_accepts(job, run->id) ? job->spec.policy : JobPolicy{};
      const bool job_live = job_accepts(job, run->id);
      if (releasing) {
        // The worker gave the run back (stopped at its lease deadline).
        const std::uint32_t max = job_live ? policy.max_attempts : run->attempt;
        KAIROS_RETURN_IF_ERROR(
            requeue_or_fail(txn, *run, now, AttemptEnd::kReleased, max, out->events));
        v.verdict = WriteVerdict::kAccepted;
        out->events.push_back(run_event("run.released", *run)
                                  .with("worker", std::string(worker))
                                  .with("state", std::string(to_string(run->state))));
        out->verdicts.push_back(std::move(v));
        continue;
      }
      if (run->state == RunState::kReady)  // only under ignore_fencing
        txn.erase(keys::ready(run->shard, run->priority, run->ready_at, run->id));
      else
        txn.erase(keys::expiry(run->shard, run->lease_expiry, run->id));
      close_attempt(*run, attempt_end(item.outcome), now, item.exit_code);
      v.verdict = WriteVerdict::kAccepted;
      const bool retry = job_live && retryable(item.outcome) && run->attempt < policy.max_attempts;
      if (retry) {
        // The next attempt of the same run (same idempotency key), after the
        // backoff; its claim takes a higher token.
        const absl::Duration delay = bugs_.retry_without_backoff
                                         ? absl::ZeroDuration()  // planted bug
                                         : retry_delay(policy, run->id, run->attempt);
        const std::uint32_t failed = run->attempt;
        run->state = RunState::kReady;
        run->outcome = item.outcome;
        run->exit_code = item.exit_code;
        run->detail = item.detail.substr(0, kMaxDetailSize);
        run->owner.clear();
        run->lease_expiry = absl::InfinitePast();
        run->attempt += 1;
        run->ready_at = now + delay;
        run->last_retry_delay = delay;
        txn.put(keys::ready(run->shard, run->priority, run->ready_at, run->id), "");
        put_run(txn, *run);
        out->events.push_back(
            run_event("run.retry_scheduled", *run)
                .with("worker", std::string(worker))
                .with("failed_attempt", static_cast<std::uint64_t>(failed))
                .with("status", static_cast<std::uint64_t>(item.outcome))
                .with("delay", delay)
                .with("delay_min", retry_lower_bound(policy, failed))
                .with("delay_max", retry_base_delay(policy, failed))
                .with("ready_at", run->ready_at)
                .with("max_attempts", static_cast<std::uint64_t>(policy.max_attempts)));
      } else {
        std::string detail = item.detail.substr(0, kMaxDetailSize);
        KAIROS_RETURN_IF_ERROR(finish_run(
            txn, *run,
            item.outcome == RunStatus::kSucceeded ? RunState::kSucceeded : RunState::kFailed,
            item.outcome, item.exit_code, std::move(detail), now, worker, out->events));
      }
    }
    out->verdicts.push_back(std::move(v));
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Job control (issue 6).

namespace {
absl::StatusOr<JobRecord> live_job(Txn& txn, std::string_view id) {
  KAIROS_RETURN_IF_ERROR(validate_job_id(id));
  KAIROS_ASSIGN_OR_RETURN(auto job, read<JobRecord>(txn, keys::job(id), decode_job));
  if (!job) return absl::NotFoundError(absl::StrCat("job '", absl_sv(id), "' not found"));
  if (job->state != JobState::kActive)
    return absl::FailedPreconditionError(
        absl::StrCat("job '", absl_sv(id), "' is cancelled (incarnation ", job->incarnation, ")"));
  return *job;
}
Event job_event(std::string_view kind, const JobRecord& job) {
  Event e;
  e.kind = kind;
  e.with("job", job.spec.id)
      .with("incarnation", job.incarnation)
      .with("generation", job.generation);
  return e;
}
}  // namespace

absl::Status JobStore::list(Txn& txn, std::string_view page_token, std::size_t limit,
                            const JobFilter& filter, ListResult* out) const {
  *out = {};
  if (filter.empty()) return list(txn, page_token, limit, out);
  if (limit == 0 || limit > 10'000) return invalid("page_size", "must be in [1, 10000]");
  keys::Range range = keys::all_jobs();
  if (!page_token.empty()) {
    if (!validate_job_id(page_token).ok())
      return invalid("page_token", "is not a token this API returned");
    range.begin = key_successor(keys::job(page_token));
  }
  const std::size_t max_scan = std::min<std::size_t>(limit * 10, 10'000);
  auto kvs = txn.scan(range.begin, range.end, max_scan + 1);
  std::string last;
  std::size_t i = 0;
  for (; i < kvs.size() && i < max_scan && out->jobs.size() < limit; ++i) {
    KAIROS_ASSIGN_OR_RETURN(auto job, decode_job(kvs[i].value));
    last = job.spec.id;
    if (filter.matches(job.spec)) out->jobs.push_back(std::move(job));
  }
  if (i < kvs.size()) out->next_page_token = last;  // more jobs after the last one examined
  return absl::OkStatus();
}

absl::Status JobStore::pause(Txn& txn, std::string_view id, ControlResult* out) const {
  *out = {};
  KAIROS_ASSIGN_OR_RETURN(JobRecord job, live_job(txn, id));
  if (job.paused) {
    out->job = job;
    return absl::OkStatus();
  }
  const absl::Time now = txn.now();
  if (job.next_due_at) txn.erase(keys::due(shard_of(id), *job.next_due_at, id));
  job.next_due_at.reset();  // next_nominal is kept for resume
  job.paused = true;
  job.paused_at = now;
  job.resumed_at = absl::InfinitePast();
  txn.put(keys::job(id), encode(job));
  out->job = job;
  out->changed = true;
  out->events.push_back(job_event("job.paused", job).with("next_nominal", job.next_nominal));
  return absl::OkStatus();
}

absl::Status JobStore::resume(Txn& txn, std::string_view id, ControlResult* out) const {
  *out = {};
  KAIROS_ASSIGN_OR_RETURN(JobRecord job, live_job(txn, id));
  if (!job.paused) {
    out->job = job;
    return absl::OkStatus();
  }
  const absl::Time now = txn.now();
  job.paused = false;
  job.resumed_at = now;
  Event e = job_event("job.resumed", job);
  e.with("paused_at", job.paused_at);
  if (job.next_nominal != absl::InfinitePast()) {
    KAIROS_ASSIGN_OR_RETURN(auto schedule, Schedule::compile(job.spec.schedule, job.spec.id));
    auto f = schedule.next_after(job.next_nominal - absl::Microseconds(1));
    // The occurrence the job was waiting for when paused; it is overdue now
    // and dispatch applies the misfire policy to it and its successors.
    const absl::Time at = f && f->nominal == job.next_nominal ? f->at : job.next_nominal;
    job.next_due_at = at;
    txn.put(keys::due(shard_of(id), at, id), encode(DueEntry{job.incarnation, job.next_nominal}));
    e.with("next_due", at);
  }
  txn.put(keys::job(id), encode(job));
  out->job = job;
  out->changed = true;
  out->events.push_back(std::move(e));
  return absl::OkStatus();
}

absl::Status JobStore::update(Txn& txn, std::string_view id, const SpecMutation& mutate,
                              ControlResult* out) const {
  *out = {};
  KAIROS_ASSIGN_OR_RETURN(JobRecord job, live_job(txn, id));
  JobSpec spec = job.spec;
  KAIROS_RETURN_IF_ERROR(mutate(spec));
  if (spec.id != job.spec.id) return invalid("id", "cannot be changed by an update");
  spec = normalize_spec(std::move(spec));
  KAIROS_RETURN_IF_ERROR(validate_job_spec(spec));
  if (spec == job.spec) {
    out->job = job;
    return absl::OkStatus();  // unchanged: nothing written
  }
  const absl::Time now = txn.now();
  const bool schedule_changed = spec.schedule != job.spec.schedule;
  const bool priority_changed = spec.policy.priority != job.spec.policy.priority;
  const JobSpec old_spec = job.spec;
  job.spec = spec;
  job.generation += 1;
  job.updated_at = now;
  if (schedule_changed || priority_changed) {
    KAIROS_ASSIGN_OR_RETURN(OpenRuns open, open_runs(txn, id, job.incarnation));
    for (RunRecord& run : open.runs) {
      const bool unclaimed = (run.state == RunState::kReady || run.state == RunState::kWaiting) &&
                             run.token == 0 && run.kind == RunKind::kScheduled;
      if (schedule_changed && unclaimed) {
        withdraw(txn, run, now, out->events, "rescheduled");
        ++out->withdrawn_runs;
      } else if (priority_changed &&
                 (run.state == RunState::kReady || run.state == RunState::kWaiting)) {
        if (run.state == RunState::kReady)
          txn.erase(keys::ready(run.shard, run.priority, run.ready_at, run.id));
        run.priority = spec.policy.priority;
        if (run.state == RunState::kReady)
          txn.put(keys::ready(run.shard, run.priority, run.ready_at, run.id), "");
        put_run(txn, run);
      }
    }
  }
  if (schedule_changed) {
    // The old schedule's overdue, undispatched occurrences end here.
    const JobSpec new_spec = job.spec;
    job.spec = old_spec;
    KAIROS_RETURN_IF_ERROR(close_overdue(txn, job, "rescheduled before dispatch", out->events));
    job.spec = new_spec;
    if (job.next_due_at) txn.erase(keys::due(shard_of(id), *job.next_due_at, id));
    job.next_due_at.reset();
    job.next_nominal = absl::InfinitePast();
    job.backlog = 0;
    KAIROS_ASSIGN_OR_RETURN(auto schedule, Schedule::compile(spec.schedule, spec.id));
    auto f = first_fire(schedule, now);
    // Never reuse an occurrence identity that already has a run.
    for (int guard = 0;
         f && guard < 10'000 && txn.get(keys::run({spec.id, job.incarnation, f->nominal})); ++guard)
      f = schedule.next_after(f->nominal);
    if (f) {
      job.next_nominal = f->nominal;
      if (!job.paused) {
        job.next_due_at = f->at;
        txn.put(keys::due(shard_of(id), f->at, id), encode(DueEntry{job.incarnation, f->nominal}));
      }
    }
  }
  txn.put(keys::job(id), encode(job));
  out->job = job;
  out->changed = true;
  Event e = job_event("job.updated", job);
  e.with("schedule_changed", static_cast<std::uint64_t>(schedule_changed))
      .with("withdrawn", static_cast<std::uint64_t>(out->withdrawn_runs));
  if (job.next_due_at) e.with("next_due", *job.next_due_at);
  out->events.push_back(std::move(e));
  return absl::OkStatus();
}

absl::Status JobStore::apply(Txn& txn, const JobSpec& raw, ControlResult* out) const {
  *out = {};
  const JobSpec spec = normalize_spec(raw);
  KAIROS_RETURN_IF_ERROR(validate_job_spec(spec));
  KAIROS_ASSIGN_OR_RETURN(auto existing, read<JobRecord>(txn, keys::job(spec.id), decode_job));
  if (!existing || existing->state != JobState::kActive) {
    CreateResult c;
    KAIROS_RETURN_IF_ERROR(create(txn, spec, &c));
    out->job = c.job;
    out->changed = out->created = c.created;
    out->events = std::move(c.events);
    return absl::OkStatus();
  }
  return update(
      txn, spec.id,
      [&](JobSpec& s) {
        s = spec;
        return absl::OkStatus();
      },
      out);
}

absl::Status JobStore::trigger(Txn& txn, const TriggerArgs& args, TriggerResult* out) const {
  *out = {};
  KAIROS_ASSIGN_OR_RETURN(JobRecord job, live_job(txn, args.job_id));
  const absl::Time now = txn.now();
  KAIROS_ASSIGN_OR_RETURN(auto schedule, Schedule::compile(job.spec.schedule, job.spec.id));
  // The manual run's nominal time: the request time, moved forward by 1us
  // until it is neither an occurrence of the schedule nor another run.
  absl::Time nominal = absl::FromUnixMicros(absl::ToUnixMicros(args.requested_at));
  for (int guard = 0;; ++guard) {
    if (guard > 10'000) return absl::ResourceExhaustedError("trigger: no free manual run identity");
    const RunId rid{job.spec.id, job.incarnation, nominal};
    KAIROS_ASSIGN_OR_RETURN(auto existing, read<RunRecord>(txn, keys::run(rid), decode_run));
    if (existing && existing->kind == RunKind::kManual && existing->trigger_id == args.trigger_id) {
      out->run = *existing;  // this request was applied before (unknown outcome)
      return absl::OkStatus();
    }
    if (!existing && !schedule.matches(nominal)) break;
    nominal += absl::Microseconds(1);
  }
  KAIROS_ASSIGN_OR_RETURN(OpenRuns open, open_runs(txn, job.spec.id, job.incarnation));
  if (bugs_.overlap_ignored) open = OpenRuns{};  // planted bug
  const JobPolicy& p = job.spec.policy;
  RunState state = RunState::kReady;
  if (!args.force && (open.active >= overlap_cap(p) || open.waiting > 0)) {
    if (p.overlap == OverlapPolicy::kQueue && open.waiting == 0) {
      state = RunState::kWaiting;
    } else {
      return absl::FailedPreconditionError(
          absl::StrCat("trigger: the overlap policy refuses a run now (", open.active,
                       " unfinished, ", open.waiting, " waiting); pass force to run anyway"));
    }
  }
  RunRecord run;
  run.id = RunId{job.spec.id, job.incarnation, nominal};
  run.shard = shard_of(job.spec.id);
  run.due_at = now;
  run.state = state;
  run.priority = p.priority;
  run.ready_at = now;
  run.dispatched_at = now;
  run.kind = RunKind::kManual;
  run.lateness = absl::ZeroDuration();
  run.stands_for = 0;
  run.trigger_id = args.trigger_id;
  DispatchResult d;
  KAIROS_RETURN_IF_ERROR(create_run_if_absent(txn, run, /*idempotent=*/true, &d));
  LedgerRecord led;
  led.incarnation = job.incarnation;
  led.nominal = led.through = nominal;
  led.outcome = LedgerOutcome::kManual;
  led.fire_at = now;
  led.run_nominal = nominal;
  led.recorded_at = now;
  led.detail = args.force ? "manual trigger (forced)" : "manual trigger";
  KAIROS_RETURN_IF_ERROR(put_ledger(txn, job, led, d.events));
  txn.put(keys::job(job.spec.id), encode(job));
  out->run = run;
  out->created = true;
  out->events = std::move(d.events);
  out->events.push_back(job_event("job.triggered", job)
                            .with("nominal", nominal)
                            .with("trigger_id", args.trigger_id)
                            .with("forced", static_cast<std::uint64_t>(args.force)));
  return absl::OkStatus();
}

absl::Status JobStore::ledger(Txn& txn, const LedgerQuery& q, LedgerResult* out) const {
  *out = {};
  KAIROS_RETURN_IF_ERROR(validate_job_id(q.job_id));
  if (q.limit == 0 || q.limit > 10'000) return invalid("limit", "must be in [1, 10000]");
  const keys::Range r = keys::ledger_between(q.job_id, q.from, q.to);
  // A range record that starts before `from` but reaches into it covers
  // occurrences asked for ("why didn't 02:30 run?" is answered by a record
  // coalescing 02:00-02:45). Records of one incarnation never overlap, so
  // the few just below `from` are enough (one per recent incarnation).
  if (q.from != absl::InfinitePast()) {
    const keys::Range all = keys::ledger_of(q.job_id);
    std::vector<LedgerRecord> reaching;
    for (const auto& kv : txn.scan(all.begin, r.begin, 8, Direction::kReverse)) {
      KAIROS_ASSIGN_OR_RETURN(auto rec, decode_ledger(kv.value));
      if (rec.through >= q.from && rec.nominal < q.to) reaching.push_back(std::move(rec));
    }
    for (auto it = reaching.rbegin(); it != reaching.rend(); ++it) {
      if (out->records.size() == q.limit) {
        out->more = true;
        return absl::OkStatus();
      }
      out->records.push_back(std::move(*it));
    }
  }
  const std::size_t room = q.limit - out->records.size();
  if (room == 0) {
    out->more = !txn.scan(r.begin, r.end, 1).empty();
    return absl::OkStatus();
  }
  auto kvs = txn.scan(r.begin, r.end, room + 1);
  for (std::size_t i = 0; i < kvs.size() && i < room; ++i) {
    KAIROS_ASSIGN_OR_RETURN(auto rec, decode_ledger(kvs[i].value));
    out->records.push_back(std::move(rec));
  }
  out->more = kvs.size() > room;
  return absl::OkStatus();
}

absl::Status JobStore::runs(Txn& txn, const RunsQuery& q, RunsResult* out) const {
  *out = {};
  KAIROS_RETURN_IF_ERROR(validate_job_id(q.job_id));
  if (q.limit == 0 || q.limit > 10'000) return invalid("limit", "must be in [1, 10000]");
  std::uint64_t inc = q.incarnation;
  if (inc == 0) {
    KAIROS_ASSIGN_OR_RETURN(auto job, read<JobRecord>(txn, keys::job(q.job_id), decode_job));
    if (!job) return absl::NotFoundError(absl::StrCat("job '", q.job_id, "' not found"));
    inc = job->incarnation;
  }
  keys::Range r = keys::runs_of(q.job_id, inc);
  if (q.from != absl::InfinitePast()) r.begin = keys::run({q.job_id, inc, q.from});
  auto kvs = txn.scan(r.begin, r.end, q.limit + 1);
  for (std::size_t i = 0; i < kvs.size() && i < q.limit; ++i) {
    KAIROS_ASSIGN_OR_RETURN(auto run, decode_run(kvs[i].value));
    out->runs.push_back(std::move(run));
  }
  out->more = kvs.size() > q.limit;
  return absl::OkStatus();
}

}  // namespace kairos
