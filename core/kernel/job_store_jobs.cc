// JobStore, the job API: validation of specs, ids and store options, the
// store's construction and init, and create / get / list / cancel of jobs.
// Every body here follows the contract in job_store.h.
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "core/base/check.h"
#include "core/base/key_codec.h"
#include "core/base/stable_hash.h"
#include "core/kernel/event_kinds.h"
#include "core/kernel/job_store.h"
#include "core/kernel/keyspace.h"
#include "core/kernel/run_lifecycle.h"
#include "core/schedule/schedule.h"

namespace kairos {

using namespace job_store_internal;  // the bodies' shared helpers

namespace {

bool finite_nonneg(absl::Duration d) {
  return d >= absl::ZeroDuration() && d != absl::InfiniteDuration();
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

absl::Status generation_mismatch(std::string_view job_id, std::uint64_t expected,
                                 std::optional<std::uint64_t> actual) {
  absl::Status s = absl::FailedPreconditionError(
      actual ? absl::StrCat("generation: expected ", expected, ", job '", absl_sv(job_id),
                            "' is at ", *actual)
             : absl::StrCat("generation: expected ", expected, ", job '", absl_sv(job_id),
                            "' does not exist"));
  s.SetPayload(absl_sv(kGenerationMismatchPayload),
               absl::Cord(actual ? absl::StrCat(*actual) : ""));
  return s;
}

bool is_generation_mismatch(const absl::Status& status) {
  return status.code() == absl::StatusCode::kFailedPrecondition &&
         status.GetPayload(absl_sv(kGenerationMismatchPayload)).has_value();
}

absl::Status check_generation(std::string_view job_id, std::optional<std::uint64_t> expected,
                              std::optional<std::uint64_t> actual) {
  if (!expected || (actual && *actual == *expected)) return absl::OkStatus();
  return generation_mismatch(job_id, *expected, actual);
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
  return create_normalized(txn, spec, out);
}

absl::Status JobStore::create_normalized(Txn& txn, const JobSpec& spec, CreateResult* out) const {
  *out = {};
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
  KAIROS_ASSIGN_OR_RETURN(const JobCounters before, read_counters(txn, spec.id));
  JobCounters counters = before;
  counters.incarnation_hw += 1;
  write_counters(txn, spec.id, before, counters);

  JobRecord job;
  job.spec = spec;
  job.incarnation = counters.incarnation_hw;
  job.state = JobState::kActive;
  job.created_at = now;
  job.updated_at = now;
  // The generation never goes back for an id: a stale If-Match from before
  // the cancel never matches the new incarnation.
  if (existing) job.generation = existing->generation + 1;
  // A re-created job outranks the tombstone it replaces.
  KAIROS_CHECK_MSG(!existing || job.incarnation > existing->incarnation,
                   "a re-created job must have a higher incarnation than its tombstone");
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
  e.kind = event_kinds::kJobCreated;
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
  KAIROS_CHECK(out->jobs.size() <= limit);
  if (kvs.size() > limit) out->next_page_token = out->jobs.back().spec.id;
  return absl::OkStatus();
}

absl::Status JobStore::cancel(Txn& txn, std::string_view id, CancelResult* out,
                              std::optional<std::uint64_t> expected_generation) const {
  *out = {};
  KAIROS_RETURN_IF_ERROR(validate_job_id(id));
  const absl::Time now = txn.now();
  KAIROS_ASSIGN_OR_RETURN(auto job, read<JobRecord>(txn, keys::job(id), decode_job));
  if (!job) return absl::NotFoundError(absl::StrCat("job '", absl_sv(id), "' not found"));
  out->job = *job;
  if (job->state != JobState::kActive) return absl::OkStatus();  // idempotent
  KAIROS_RETURN_IF_ERROR(check_generation(id, expected_generation, job->generation));
  out->was_active = true;
  KAIROS_RETURN_IF_ERROR(close_overdue(txn, *job, "job cancelled before dispatch", out->events));
  if (job->next_due_at) txn.erase(keys::due(shard_of(id), *job->next_due_at, id));
  job->next_due_at.reset();
  job->state = JobState::kCancelled;
  job->cancelled_at = now;
  job->generation += 1;
  job->updated_at = now;
  txn.put(keys::job(id), encode(*job));
  // Its ledger and runs are removed by the shard's reaper once past
  // ledger_max_age (sweep_cancelled); no dispatch will prune them now.
  txn.put(keys::sweep(shard_of(id), now, id), "");
  // Open runs are few (bounded by the overlap policy); withdraw the ready ones.
  const keys::Range open = keys::open_runs_of(id, job->incarnation);
  for (const auto& kv : txn.scan(open.begin, open.end, 10'000)) {
    KAIROS_ASSIGN_OR_RETURN(RunId rid, keys::parse_open(kv.key));
    KAIROS_CHECK(rid.job_id == id && rid.incarnation == job->incarnation);
    KAIROS_ASSIGN_OR_RETURN(auto run, read<RunRecord>(txn, keys::run(rid), decode_run));
    if (!run)
      return absl::DataLossError(absl::StrCat("open-run entry without run ", idempotency_key(rid)));
    if (run->state == RunState::kReady || run->state == RunState::kWaiting) {
      withdraw(txn, *run, now, out->events, "job cancelled");
      ++out->cancelled_runs;
    } else {
      KAIROS_CHECK_MSG(run->state == RunState::kLeased, "a terminal run is in the open-run index");
      ++out->running_runs;
    }
  }
  out->job = *job;
  Event e;
  e.kind = event_kinds::kJobCancelled;
  e.with("job", std::string(id)).with("incarnation", job->incarnation);
  out->events.push_back(std::move(e));
  return absl::OkStatus();
}

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

}  // namespace kairos
