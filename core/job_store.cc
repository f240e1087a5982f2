#include "core/job_store.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/absl_compat.h"
#include "core/check.h"
#include "core/key_codec.h"
#include "core/keyspace.h"
#include "core/schedule.h"
#include "core/stable_hash.h"

namespace kairos {

std::string_view to_string(WriteVerdict v) {
  switch (v) {
    case WriteVerdict::kAccepted: return "accepted";
    case WriteVerdict::kStaleToken: return "stale_token";
    case WriteVerdict::kLeaseLapsed: return "lease_lapsed";
    case WriteVerdict::kNotLeased: return "not_leased";
    case WriteVerdict::kUnknownRun: return "unknown_run";
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

// Withdraws a ready run: state cancelled, off the queue and the open set.
void withdraw(Txn& txn, RunRecord& run, absl::Time now, std::vector<Event>& events,
              std::string_view why) {
  if (run.state == RunState::kReady)
    txn.erase(keys::ready(run.shard, run.priority, run.ready_at, run.id));
  if (run.state == RunState::kLeased) txn.erase(keys::expiry(run.shard, run.lease_expiry, run.id));
  run.state = RunState::kCancelled;
  run.owner.clear();
  run.finished_at = now;
  txn.erase(keys::open_run(run.id));
  put_run(txn, run);
  events.push_back(run_event("run.cancelled", run).with("reason", std::string(why)));
}

// Makes a leased run claimable again with the next attempt number.
void requeue(Txn& txn, RunRecord& run, absl::Time now) {
  txn.erase(keys::expiry(run.shard, run.lease_expiry, run.id));
  run.state = RunState::kReady;
  run.owner.clear();
  run.attempt += 1;
  run.ready_at = now;
  run.lease_expiry = absl::InfinitePast();
  txn.put(keys::ready(run.shard, run.priority, run.ready_at, run.id), "");
  put_run(txn, run);
}

bool job_accepts(const std::optional<JobRecord>& job, const RunId& id) {
  return job && job->state == JobState::kActive && job->incarnation == id.incarnation;
}

}  // namespace

absl::Status validate_job_id(std::string_view id) {
  if (id.empty()) return invalid("id", "must not be empty");
  if (id.size() > kMaxJobIdSize)
    return invalid("id", absl::StrCat("must be at most ", kMaxJobIdSize, " bytes, got ", id.size()));
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.' || c == ':' || c == '/';
    if (!ok)
      return invalid("id", absl::StrCat("'", absl_sv(id),
                                        "' may contain only letters, digits and - _ . : /"));
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
    return invalid("policy.max_attempts", absl::StrCat("must be in [1, 100], got ", p.max_attempts));
  if (!finite_nonneg(p.retry_initial)) return invalid("policy.retry_initial", "must be >= 0 and finite");
  if (p.retry_multiplier_percent < 100 || p.retry_multiplier_percent > 1000)
    return invalid("policy.retry_multiplier_percent",
                   absl::StrCat("must be in [100, 1000], got ", p.retry_multiplier_percent));
  if (!finite_nonneg(p.retry_max) || p.retry_max < p.retry_initial)
    return invalid("policy.retry_max", "must be finite and >= policy.retry_initial");
  if (p.timeout <= absl::ZeroDuration() || p.timeout > absl::Hours(24 * 7))
    return invalid("policy.timeout", "must be in (0, 7d]");
  if (!finite_nonneg(p.misfire_threshold)) return invalid("policy.misfire_threshold", "must be >= 0 and finite");
  if (p.catch_up_max < 1 || p.catch_up_max > 1000)
    return invalid("policy.catch_up_max", absl::StrCat("must be in [1, 1000], got ", p.catch_up_max));
  if (p.max_concurrent < 1 || p.max_concurrent > 100)
    return invalid("policy.max_concurrent", absl::StrCat("must be in [1, 100], got ", p.max_concurrent));
  if (p.priority < kMinPriority || p.priority > kMaxPriority)
    return invalid("policy.priority", absl::StrCat("must be in [", kMinPriority, ", ", kMaxPriority,
                                                   "], got ", p.priority));
  return absl::OkStatus();
}

JobStore::JobStore(std::uint32_t shard_count, PlantedBugs bugs)
    : shard_count_(shard_count), bugs_(bugs) {
  KAIROS_CHECK(shard_count >= 1 && shard_count <= keys::kMaxShards);
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
  if (job->next_due_at) txn.erase(keys::due(shard_of(id), *job->next_due_at, id));
  job->next_due_at.reset();
  job->state = JobState::kCancelled;
  job->cancelled_at = now;
  txn.put(keys::job(id), encode(*job));
  // Open runs are few (bounded by the overlap policy); withdraw the ready ones.
  const keys::Range open = keys::open_runs_of(id, job->incarnation);
  for (const auto& kv : txn.scan(open.begin, open.end, 10'000)) {
    KAIROS_ASSIGN_OR_RETURN(RunId rid, keys::parse_open(kv.key));
    KAIROS_ASSIGN_OR_RETURN(auto run, read<RunRecord>(txn, keys::run(rid), decode_run));
    if (!run) return absl::DataLossError(absl::StrCat("open-run entry without run ", idempotency_key(rid)));
    if (run->state == RunState::kReady) {
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
  KAIROS_ASSIGN_OR_RETURN(auto current, read<LeaderRecord>(txn, keys::leader(shard), decode_leader));
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
    return absl::OkStatus();
  }
  txn.put(keys::leader(shard), encode(rec));
  out->record = rec;
  return absl::OkStatus();
}

absl::Status JobStore::check_leader(Txn& txn, std::uint32_t shard, const LeaderToken& leader) const {
  KAIROS_ASSIGN_OR_RETURN(auto current, read<LeaderRecord>(txn, keys::leader(shard), decode_leader));
  const absl::Time now = txn.now();
  if (current && current->holder == leader.node && current->epoch == leader.epoch &&
      current->expiry > now)
    return absl::OkStatus();
  if (!current)
    return absl::FailedPreconditionError(absl::StrCat(
        "stale epoch ", leader.epoch, " for shard ", shard, ": the shard has no leader record"));
  return absl::FailedPreconditionError(absl::StrCat(
      "stale epoch ", leader.epoch, " for shard ", shard, " (node '", leader.node,
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
  txn.put(keys::ready(run.shard, run.priority, run.ready_at, run.id), "");
  txn.put(keys::open_run(run.id), "");
  out->dispatched.push_back(run);
  out->events.push_back(run_event("run.dispatched", run).with("due", run.due_at));
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
        job->next_due_at != dk.due_at) {
      continue;  // an orphan entry (cannot arise from these bodies); dropped
    }
    RunRecord run;
    run.id = RunId{dk.job_id, de.incarnation, de.nominal};
    run.shard = shard;
    run.due_at = dk.due_at;
    run.attempt = 1;
    run.state = RunState::kReady;
    run.priority = job->spec.policy.priority;
    run.ready_at = dk.due_at;
    run.dispatched_at = now;
    if (bugs_.non_atomic_dispatch) {
      out->to_create.push_back(run);  // planted bug: created by a second txn
    } else {
      KAIROS_RETURN_IF_ERROR(create_run_if_absent(txn, run, /*idempotent=*/true, out));
    }
    // Advance the due entry in the same transaction.
    KAIROS_ASSIGN_OR_RETURN(auto schedule, Schedule::compile(job->spec.schedule, job->spec.id));
    auto next = schedule.next_after(de.nominal);
    if (next) {
      job->next_due_at = next->at;
      job->next_nominal = next->nominal;
      txn.put(keys::due(shard, next->at, dk.job_id), encode(DueEntry{de.incarnation, next->nominal}));
    } else {
      job->next_due_at.reset();
    }
    txn.put(keys::job(dk.job_id), encode(*job));
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
    requeue(txn, *run, now);
    out->requeued.push_back(rid);
    out->events.push_back(run_event("run.lease_lapsed", *run)
                              .with("worker", owner)
                              .with("lapsed_token", token)
                              .with("expiry", expiry));
  }
  return absl::OkStatus();
}

absl::Status JobStore::claim(Txn& txn, const ClaimArgs& args, ClaimResult* out) const {
  *out = {};
  if (args.max_runs == 0) return absl::OkStatus();
  const absl::Time now = txn.now();
  for (std::uint32_t i = 0; i < shard_count_ && out->grants.size() < args.max_runs; ++i) {
    const std::uint32_t shard = (args.first_shard + i) % shard_count_;
    for (std::int32_t band = 0; band <= kMaxPriority - kMinPriority; ++band) {
      const std::size_t want = args.max_runs - out->grants.size();
      if (want == 0) break;
      const keys::Range range = keys::ready_until(shard, static_cast<std::uint8_t>(band), now);
      for (const auto& kv : txn.scan(range.begin, range.end, want)) {
        KAIROS_ASSIGN_OR_RETURN(RunId rid, keys::parse_ready(kv.key));
        KAIROS_ASSIGN_OR_RETURN(auto run, read<RunRecord>(txn, keys::run(rid), decode_run));
        if (!run || run->state != RunState::kReady ||
            keys::ready(run->shard, run->priority, run->ready_at, run->id) != kv.key) {
          txn.erase(kv.key);  // stale queue entry
          continue;
        }
        KAIROS_ASSIGN_OR_RETURN(auto job, read<JobRecord>(txn, keys::job(rid.job_id), decode_job));
        if (!job_accepts(job, rid)) {
          withdraw(txn, *run, now, out->events, "job no longer active");
          continue;
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
        txn.erase(kv.key);
        run->state = RunState::kLeased;
        run->owner = args.worker;
        run->token = token;
        run->lease_expiry = now + args.ttl;
        run->claimed_at = now;
        txn.put(keys::expiry(run->shard, run->lease_expiry, run->id), "");
        put_run(txn, *run);
        out->events.push_back(run_event("run.claimed", *run)
                                  .with("worker", args.worker)
                                  .with("lease_expiry", run->lease_expiry));
        out->grants.push_back(Grant{*run, job->spec.payload, job->spec.policy.timeout});
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
    if (is_terminal(run->state) && token_ok && run->state != RunState::kCancelled &&
        run->outcome == item.outcome) {
      v.verdict = WriteVerdict::kAccepted;  // a retry of a recorded completion
      v.reason = "already recorded";
    } else if (run->state == RunState::kReady && releasing && token_ok) {
      v.verdict = WriteVerdict::kAccepted;  // a retried release
      v.reason = "already released";
    } else if (!token_ok && !bugs_.ignore_fencing) {
      v.verdict = WriteVerdict::kStaleToken;
      v.reason = absl::StrCat("stale token ", item.token, "; current token is ", run->token);
      out->events.push_back(run_event("write.rejected_stale_token", *run)
                                .with("worker", std::string(worker))
                                .with("stale_token", item.token)
                                .with("op", std::string("complete")));
    } else if (run->state != RunState::kLeased &&
               !(bugs_.ignore_fencing && run->state == RunState::kReady)) {
      v.verdict = run->state == RunState::kReady ? WriteVerdict::kStaleToken : WriteVerdict::kNotLeased;
      v.reason = absl::StrCat("run is ", absl_sv(to_string(run->state)),
                              run->state == RunState::kReady ? " (its lease lapsed and it was re-queued)" : "");
      out->events.push_back(run_event("write.rejected_stale_token", *run)
                                .with("worker", std::string(worker))
                                .with("stale_token", item.token)
                                .with("op", std::string("complete")));
    } else if (releasing && token_ok) {
      // The worker gave the run back (stopped at its lease deadline).
      requeue(txn, *run, now);
      v.verdict = WriteVerdict::kAccepted;
      out->events.push_back(run_event("run.released", *run).with("worker", std::string(worker)));
    } else {
      // Accepted: the token is current (the token, not the clock, is the
      // fence: until the reaper re-queues the run nobody else can hold it).
      if (run->state == RunState::kReady)  // only under ignore_fencing
        txn.erase(keys::ready(run->shard, run->priority, run->ready_at, run->id));
      else
        txn.erase(keys::expiry(run->shard, run->lease_expiry, run->id));
      run->state = item.outcome == RunStatus::kSucceeded ? RunState::kSucceeded : RunState::kFailed;
      run->outcome = item.outcome;
      run->exit_code = item.exit_code;
      run->detail = item.detail.substr(0, kMaxDetailSize);
      run->finished_at = now;
      txn.erase(keys::open_run(run->id));
      put_run(txn, *run);
      v.verdict = WriteVerdict::kAccepted;
      out->events.push_back(run_event("run.completed", *run)
                                .with("worker", std::string(worker))
                                .with("outcome", std::string(to_string(run->state)))
                                .with("exit_code", static_cast<std::int64_t>(item.exit_code)));
    }
    out->verdicts.push_back(std::move(v));
  }
  return absl::OkStatus();
}

}  // namespace kairos
