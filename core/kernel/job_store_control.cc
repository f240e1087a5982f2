// JobStore, job control: pause, resume, update (in place, same incarnation),
// apply (create-or-update), manual triggers, and the ledger and runs
// queries.
#include <map>
#include <string>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "core/base/check.h"
#include "core/kernel/event_kinds.h"
#include "core/kernel/job_store.h"
#include "core/kernel/keyspace.h"
#include "core/kernel/run_lifecycle.h"
#include "core/schedule/schedule.h"

namespace kairos {

using namespace job_store_internal;  // the bodies' shared helpers

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

absl::Status JobStore::pause(Txn& txn, std::string_view id, ControlResult* out,
                             std::optional<std::uint64_t> expected_generation) const {
  *out = {};
  KAIROS_ASSIGN_OR_RETURN(JobRecord job, live_job(txn, id));
  if (job.paused) {
    out->job = job;
    return absl::OkStatus();
  }
  KAIROS_RETURN_IF_ERROR(check_generation(id, expected_generation, job.generation));
  const absl::Time now = txn.now();
  job.generation += 1;
  job.updated_at = now;
  if (job.next_due_at) txn.erase(keys::due(shard_of(id), *job.next_due_at, id));
  job.next_due_at.reset();  // next_nominal is kept for resume
  job.paused = true;
  job.paused_at = now;
  job.resumed_at = absl::InfinitePast();
  txn.put(keys::job(id), encode(job));
  out->job = job;
  out->changed = true;
  out->events.push_back(
      job_event(event_kinds::kJobPaused, job).with("next_nominal", job.next_nominal));
  return absl::OkStatus();
}

absl::Status JobStore::resume(Txn& txn, std::string_view id, ControlResult* out,
                              std::optional<std::uint64_t> expected_generation) const {
  *out = {};
  KAIROS_ASSIGN_OR_RETURN(JobRecord job, live_job(txn, id));
  if (!job.paused) {
    out->job = job;
    return absl::OkStatus();
  }
  KAIROS_RETURN_IF_ERROR(check_generation(id, expected_generation, job.generation));
  const absl::Time now = txn.now();
  job.generation += 1;
  job.updated_at = now;
  job.paused = false;
  job.resumed_at = now;
  Event e = job_event(event_kinds::kJobResumed, job);
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
                              ControlResult* out,
                              std::optional<std::uint64_t> expected_generation) const {
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
  KAIROS_RETURN_IF_ERROR(check_generation(id, expected_generation, job.generation));
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
        const RunRecord old = run;
        run.priority = spec.policy.priority;
        write_run(txn, old, run);
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
  Event e = job_event(event_kinds::kJobUpdated, job);
  e.with("schedule_changed", static_cast<std::uint64_t>(schedule_changed))
      .with("withdrawn", static_cast<std::uint64_t>(out->withdrawn_runs));
  if (job.next_due_at) e.with("next_due", *job.next_due_at);
  out->events.push_back(std::move(e));
  return absl::OkStatus();
}

absl::Status JobStore::apply(Txn& txn, const JobSpec& raw, ControlResult* out,
                             std::optional<std::uint64_t> expected_generation) const {
  *out = {};
  const JobSpec spec = normalize_spec(raw);
  KAIROS_RETURN_IF_ERROR(validate_job_spec(spec));
  return apply_normalized(txn, spec, out, expected_generation);
}

absl::Status JobStore::apply_normalized(Txn& txn, const JobSpec& spec, ControlResult* out,
                                        std::optional<std::uint64_t> expected_generation) const {
  *out = {};
  KAIROS_ASSIGN_OR_RETURN(auto existing, read<JobRecord>(txn, keys::job(spec.id), decode_job));
  if (!existing || existing->state != JobState::kActive) {
    KAIROS_RETURN_IF_ERROR(check_generation(
        spec.id, expected_generation,
        existing ? std::optional<std::uint64_t>(existing->generation) : std::nullopt));
    CreateResult c;
    KAIROS_RETURN_IF_ERROR(create_normalized(txn, spec, &c));
    out->job = std::move(c.job);
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
      out, expected_generation);
}

namespace {
// The item's error with "jobs[i]: " before its message, code and payloads kept.
absl::Status item_error(std::size_t index, const absl::Status& s) {
  absl::Status out(s.code(), absl::StrCat("jobs[", index, "]: ", s.message()));
  s.ForEachPayload(
      [&](absl::string_view url, const absl::Cord& value) { out.SetPayload(url, value); });
  return out;
}

// validate_batch(), keeping each spec as normalized when `normalized` is
// given (then it holds one per spec when the batch is valid).
absl::Status validate_batch_into(const std::vector<JobSpec>& specs,
                                 std::vector<BatchItemError>* errors,
                                 std::vector<JobSpec>* normalized) {
  errors->clear();
  if (specs.empty()) return invalid("jobs", "the batch is empty");
  if (specs.size() > kMaxBatchSize)
    return invalid("jobs",
                   absl::StrCat("at most ", kMaxBatchSize, " jobs per batch, got ", specs.size()));
  std::map<std::string, std::size_t> seen;
  if (normalized != nullptr) {
    normalized->clear();
    normalized->reserve(specs.size());
  }
  for (std::size_t i = 0; i < specs.size(); ++i) {
    JobSpec spec = normalize_spec(specs[i]);
    absl::Status s = validate_job_spec(spec);
    if (normalized != nullptr) normalized->push_back(std::move(spec));
    // Every item's id counts, valid or not: a later item naming it is
    // reported too, so a client that fixes the first error does not meet
    // the duplicate only on its next try.
    auto [it, fresh] = seen.emplace(specs[i].id, i);
    if (s.ok() && !fresh)
      s = invalid("id", absl::StrCat("'", specs[i].id, "' appears twice in the batch (jobs[",
                                     it->second, "] and jobs[", i, "])"));
    if (!s.ok()) errors->push_back({i, std::move(s)});
  }
  if (errors->empty()) return absl::OkStatus();
  const BatchItemError& first = errors->front();
  return absl::InvalidArgumentError(absl::StrCat(item_error(first.index, first.status).message(),
                                                 " (", errors->size(), " of ", specs.size(),
                                                 " jobs invalid)"));
}
}  // namespace

absl::Status validate_batch(const std::vector<JobSpec>& specs,
                            std::vector<BatchItemError>* errors) {
  return validate_batch_into(specs, errors, nullptr);
}

absl::Status JobStore::apply_batch(Txn& txn, const std::vector<JobSpec>& specs,
                                   BatchResult* out) const {
  *out = {};
  std::vector<JobSpec> normalized;
  KAIROS_RETURN_IF_ERROR(validate_batch_into(specs, &out->errors, &normalized));
  out->items.reserve(specs.size());
  for (std::size_t i = 0; i < specs.size(); ++i) {
    ControlResult item;
    if (absl::Status s = apply_normalized(txn, normalized[i], &item, std::nullopt); !s.ok()) {
      out->items.clear();
      out->events.clear();
      out->errors.push_back({i, s});
      return item_error(i, s);
    }
    for (Event& e : item.events) out->events.push_back(std::move(e));
    item.events.clear();
    out->items.push_back(std::move(item));
  }
  return absl::OkStatus();
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
  const JobPolicy& p = job.spec.policy;
  RunState state = RunState::kReady;
  // A forced run passes the overlap policy, so it need not count the job's
  // unfinished runs (a scan of all of them, which forced triggers multiply).
  if (!args.force) {
    KAIROS_ASSIGN_OR_RETURN(OpenRuns open, open_runs_for_overlap(txn, job));
    if (open.active >= overlap_cap(p) || open.waiting > 0) {
      if (p.overlap == OverlapPolicy::kQueue && open.waiting == 0) {
        state = RunState::kWaiting;
      } else {
        return absl::FailedPreconditionError(
            absl::StrCat("trigger: the overlap policy refuses a run now (", open.active,
                         " unfinished, ", open.waiting, " waiting); pass force to run anyway"));
      }
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
  out->events.push_back(job_event(event_kinds::kJobTriggered, job)
                            .with("nominal", nominal)
                            .with("trigger_id", args.trigger_id)
                            .with("forced", static_cast<std::uint64_t>(args.force)));
  return absl::OkStatus();
}

absl::Status JobStore::ledger(Txn& txn, const LedgerQuery& q, LedgerResult* out) const {
  *out = {};
  KAIROS_RETURN_IF_ERROR(validate_job_id(q.job_id));
  if (q.limit == 0 || q.limit > 10'000) return invalid("limit", "must be in [1, 10000]");
  // An inverted window is a mistake in the request, not an empty answer:
  // said so, it cannot pass for "nothing happened then".
  if (q.to < q.from) return invalid("to", "must not be before from");
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
