// JobStore, dispatch: turning due entries into runs under the misfire and
// overlap policies, writing each occurrence's ledger record, bounded ledger
// retention (prune, and the sweep of cancelled jobs), and closing the overdue
// occurrences of a job that is cancelled or rescheduled.
#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "core/base/check.h"
#include "core/kernel/event_kinds.h"
#include "core/kernel/job_store.h"
#include "core/kernel/keyspace.h"
#include "core/kernel/misfire.h"
#include "core/kernel/run_lifecycle.h"
#include "core/schedule/schedule.h"

namespace kairos {

using namespace job_store_internal;  // the bodies' shared helpers

absl::Status JobStore::create_run_if_absent(Txn& txn, const RunRecord& run, bool idempotent,
                                            DispatchResult* out) const {
  KAIROS_ASSIGN_OR_RETURN(auto existing, read<RunRecord>(txn, keys::run(run.id), decode_run));
  if (idempotent && existing) return absl::OkStatus();  // the idempotency key
  KAIROS_CHECK_MSG(run.attempt == 1 && run.token == 0 && run.attempts.empty(),
                   "a new run starts at attempt 1, never granted");
  KAIROS_CHECK(run.shard == shard_of(run.id.job_id));
  // Without the idempotency check (the unknown_as_failure planted bug) an
  // existing run is overwritten by a fresh one: not a transition the table
  // allows.
  write_run(txn, existing, run, existing ? Legality::kPlantedBug : Legality::kChecked);
  out->dispatched.push_back(run);
  out->events.push_back(run_event(event_kinds::kRunDispatched, run)
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
  KAIROS_CHECK(rec.through >= rec.nominal && rec.incarnation <= job.incarnation);
  const std::string key = keys::ledger(job.spec.id, rec.nominal, rec.incarnation);
  if (txn.get(key)) return absl::OkStatus();  // already recorded (idempotent)
  txn.put(key, encode(rec));
  ++job.ledger_count;
  events.push_back(ledger_event(event_kinds::kLedgerRecorded, job.spec.id, rec));
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
  KAIROS_ASSIGN_OR_RETURN(OpenRuns open, open_runs_for_overlap(txn, job));
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
  KAIROS_RETURN_IF_ERROR(create_dispatched_run(txn, run, out));
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
  KAIROS_CHECK(b <= e && e <= fires.size());
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
  // The inputs of the misfire rule (misfire.h): when the entry misfired, the
  // occurrences due by now, oldest first, at most one chunk.
  MisfireInput in;
  in.policy = p;
  in.created_at = job.created_at;
  in.now = now;
  in.backlog = job.backlog;
  in.due = {first};
  in.bound_catch_up = catch_up_bounded();
  if (misfired(p, first, job.created_at, now)) {
    for (;;) {
      auto n = schedule.next_after(in.due.back().nominal);
      if (!n || n->at > now) break;
      if (in.due.size() >= options_.misfire_chunk) {
        in.capped = true;
        break;
      }
      in.due.push_back(*n);
    }
  }
  in.after_last = schedule.next_after(in.due.back().nominal);
  const MisfireDecision d = decide_misfire(in);
  KAIROS_ASSIGN_OR_RETURN(std::uint64_t fired, apply_misfire(txn, shard, job, in, d, due_at, out));
  if (d.misfire) {
    Event decision;
    decision.kind = event_kinds::kMisfireDecided;
    decision.with("job", job.spec.id)
        .with("incarnation", job.incarnation)
        .with("nominal", first.nominal)
        .with("policy", misfire_policy_name(p.misfire))
        .with("lateness", misfire_lateness(first, job.created_at, now))
        .with("threshold", p.misfire_threshold)
        .with("due", static_cast<std::uint64_t>(in.due.size()))
        .with("misfired", static_cast<std::uint64_t>(d.misfired))
        .with("capped", static_cast<std::uint64_t>(in.capped ? 1 : 0));
    decision.with("fired", fired).with("skipped", d.skipped).with("coalesced", d.coalesced);
    if (d.next) decision.with("next_due", d.next_at);
    out->events.push_back(std::move(decision));
  }
  // The job's next due entry. Dispatch makes progress: the next occurrence
  // comes after the one this entry stood for.
  if (d.next) {
    KAIROS_CHECK_MSG(d.next->nominal > first.nominal, "dispatch did not make progress");
    job.next_due_at = d.next_at;
    job.next_nominal = d.next->nominal;
    txn.put(keys::due(shard, d.next_at, job.spec.id),
            encode(DueEntry{job.incarnation, d.next->nominal}));
    if (d.next_at <= now) out->more = true;  // due already: the next pass takes it
  } else {
    job.next_due_at.reset();
    job.next_nominal = absl::InfinitePast();
  }
  return absl::OkStatus();
}

// Applies a misfire decision's actions in order: runs (through the overlap
// policy) and ledger ranges. Returns how many runs were created.
absl::StatusOr<std::uint64_t> JobStore::apply_misfire(Txn& txn, std::uint32_t shard, JobRecord& job,
                                                      const MisfireInput& in,
                                                      const MisfireDecision& d, absl::Time ready_at,
                                                      DispatchResult* out) const {
  std::uint64_t fired = 0;
  std::optional<absl::Time> run_nominal;  // the run the last kRun created
  for (const MisfireAction& a : d.actions) {
    if (a.kind == MisfireAction::Kind::kRun) {
      bool created = false;
      Occ o;
      o.fire = in.due[a.index];
      o.outcome = a.outcome;
      o.lateness = a.lateness;
      o.stands_for = a.stands_for;
      o.ready_at = ready_at;
      o.created = &created;
      KAIROS_RETURN_IF_ERROR(fire(txn, shard, job, o, out));
      if (created) {
        ++fired;
        run_nominal = o.fire.nominal;
      }
    } else {
      const absl::Time linked = a.linked && run_nominal ? *run_nominal : absl::InfinitePast();
      KAIROS_RETURN_IF_ERROR(
          record_range(txn, job, in.due, a.begin, a.end, a.outcome, linked, a.detail, out->events));
    }
  }
  job.backlog = d.backlog;
  return fired;
}

absl::Status JobStore::prune(Txn& txn, JobRecord& job, std::vector<Event>& events,
                             std::optional<DispatchResult::Undecodable>* bad) const {
  const absl::Time now = txn.now();
  const keys::Range r = keys::ledger_of(job.spec.id);
  std::uint64_t pruned = 0;
  for (std::uint32_t i = 0; i < options_.prune_budget; ++i) {
    const auto oldest = txn.scan(r.begin, r.end, 1);
    if (oldest.empty()) {
      job.ledger_count = 0;
      break;
    }
    auto decoded = decode_ledger(oldest[0].value);
    if (bad != nullptr && decoded.status().code() == absl::StatusCode::kDataLoss) {
      *bad = DispatchResult::Undecodable{job.spec.id, oldest[0].key,
                                         std::string(decoded.status().message())};
      break;
    }
    KAIROS_ASSIGN_OR_RETURN(LedgerRecord rec, std::move(decoded));
    const bool over_count = job.ledger_count > options_.ledger_keep;
    const bool over_age = rec.recorded_at + options_.ledger_max_age < now;
    if (!over_count && !over_age) break;
    if (has_own_run(rec.outcome) || rec.outcome == LedgerOutcome::kCancelled) {
      const RunId rid{job.spec.id, rec.incarnation,
                      rec.run_nominal == absl::InfinitePast() ? rec.nominal : rec.run_nominal};
      const std::string run_key = keys::run(rid);
      auto read_run = read<RunRecord>(txn, run_key, decode_run);
      if (bad != nullptr && read_run.status().code() == absl::StatusCode::kDataLoss) {
        *bad = DispatchResult::Undecodable{job.spec.id, run_key,
                                           std::string(read_run.status().message())};
        break;
      }
      KAIROS_ASSIGN_OR_RETURN(auto run, std::move(read_run));
      if (run && !is_terminal(run->state)) break;  // never prune past an open run
      if (run) txn.erase(keys::run(rid));
    }
    txn.erase(oldest[0].key);
    if (job.ledger_count > 0) --job.ledger_count;
    ++pruned;
  }
  if (pruned > 0) {
    Event e;
    e.kind = event_kinds::kLedgerPruned;
    e.with("job", job.spec.id).with("count", pruned).with("remaining", job.ledger_count);
    events.push_back(std::move(e));
  }
  return absl::OkStatus();
}

absl::Status JobStore::dispatch(Txn& txn, std::uint32_t shard, const LeaderToken& leader,
                                std::size_t limit, DispatchResult* out,
                                const std::set<std::string>* skip_jobs) const {
  *out = {};
  KAIROS_CHECK(limit > 0);
  KAIROS_RETURN_IF_ERROR(leader_gate(txn, shard, leader));
  const absl::Time now = txn.now();
  const keys::Range range = keys::due_until(shard, now);
  // Due entries left in place this pass (their job is passed over), and the
  // jobs served. The scan goes on past the passed-over entries until `limit`
  // entries were served or the due range ends, so passed-over entries never
  // take the place of others; it only moves forward, so it ends.
  std::set<std::string> passed;
  std::set<std::string> served;
  std::string begin = range.begin;
  std::size_t want = limit;
  bool full = false;
  for (bool first = true; want > 0; first = false) {
    const auto entries = txn.scan(begin, range.end, want);
    std::size_t passed_here = 0;
    bool stop = false;
    for (const auto& kv : entries) {
      ++out->scanned;
      KAIROS_ASSIGN_OR_RETURN(keys::DueKey dk, keys::parse_due(kv.key));
      KAIROS_CHECK(dk.shard == shard && dk.due_at <= now);
      auto read_due = decode_due(kv.value);
      if (read_due.status().code() == absl::StatusCode::kDataLoss) {
        // The entry itself does not decode: without its occurrence the job
        // cannot be served; reported, left in place and passed over.
        out->undecodable.push_back({dk.job_id, kv.key, std::string(read_due.status().message())});
        passed.insert(kv.key);
        ++passed_here;
        continue;
      }
      KAIROS_ASSIGN_OR_RETURN(DueEntry de, std::move(read_due));
      if (!first && served.count(dk.job_id) > 0) {
        // This pass already advanced the job to a due-again entry: the next
        // pass takes it, as it would without the passed-over entries.
        stop = true;
        break;
      }
      if (skip_jobs != nullptr && skip_jobs->count(dk.job_id) > 0) {
        passed.insert(kv.key);
        ++passed_here;
        continue;
      }
      const std::string job_key = keys::job(dk.job_id);
      auto read_job = read<JobRecord>(txn, job_key, decode_job);
      if (!read_job.ok() && read_job.status().code() == absl::StatusCode::kDataLoss) {
        out->undecodable.push_back({dk.job_id, job_key, std::string(read_job.status().message())});
        passed.insert(kv.key);
        ++passed_here;
        continue;
      }
      KAIROS_ASSIGN_OR_RETURN(auto job, std::move(read_job));
      served.insert(dk.job_id);
      txn.erase(kv.key);
      if (!job || job->state != JobState::kActive || job->incarnation != de.incarnation ||
          job->next_due_at != dk.due_at || job->paused) {
        continue;  // an orphan entry (cannot arise from these bodies); dropped
      }
      // Decide, create the run(s) and advance the due entry in one
      // transaction. A record of this job that does not decode aborts the
      // body (its writes so far are not separable): the caller passes the job
      // over and runs the body again.
      absl::Status s = dispatch_entry(txn, shard, kv.key, dk.due_at, *job, de.nominal, out);
      if (s.ok()) s = prune(txn, *job, out->events);
      if (s.code() == absl::StatusCode::kDataLoss)
        out->poisoned = DispatchResult::Undecodable{dk.job_id, job_key, std::string(s.message())};
      KAIROS_RETURN_IF_ERROR(s);
      txn.put(job_key, encode(*job));
    }
    if (stop) {
      full = true;
      break;
    }
    if (entries.size() < want) break;  // the due range ends here
    if (passed_here == 0) {
      full = true;  // the scan hit its limit; call again
      break;
    }
    begin = entries.back().key + '\0';  // past the last one scanned
    want = passed_here;
  }
  if (full) out->more = true;
  const keys::Range all = keys::due_of(shard);
  for (std::string from = all.begin;;) {
    const auto next = txn.scan(from, all.end, 1);
    if (next.empty()) break;
    if (passed.count(next[0].key) > 0) {
      from = next[0].key + '\0';
      continue;
    }
    KAIROS_ASSIGN_OR_RETURN(keys::DueKey dk, keys::parse_due(next[0].key));
    out->next_due_in = std::max(absl::ZeroDuration(), dk.due_at - now);
    break;
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

// Retention for cancelled jobs, which dispatch no longer prunes: each reaper
// pass takes at most two sweep entries whose cancellation is older than
// ledger_max_age (so every record of the job is too) and prunes up to
// prune_budget records of each (their runs with them); an entry is dropped
// once its job's ledger is empty, or when the id was re-created (its
// dispatches prune it again). An entry whose job record does not decode, or
// whose pruning meets a ledger or run record that does not decode (what was
// pruned before it stays pruned), is reported, left in place and passed over.
absl::Status JobStore::sweep_cancelled(Txn& txn, std::uint32_t shard, ReapResult* out) const {
  const absl::Time now = txn.now();
  const keys::Range range = keys::sweep_until(shard, now - options_.ledger_max_age);
  std::string from = range.begin;
  for (int taken = 0; taken < 2;) {
    const auto next = txn.scan(from, range.end, 1);
    if (next.empty()) break;
    const std::string& key = next[0].key;
    from = key + '\0';
    KAIROS_ASSIGN_OR_RETURN(keys::SweepKey k, keys::parse_sweep(key));
    const std::string job_key = keys::job(k.job_id);
    auto read_job = read<JobRecord>(txn, job_key, decode_job);
    if (!read_job.ok() && read_job.status().code() == absl::StatusCode::kDataLoss) {
      out->undecodable.push_back({k.job_id, job_key, std::string(read_job.status().message())});
      continue;
    }
    KAIROS_ASSIGN_OR_RETURN(auto job, std::move(read_job));
    if (!job || job->state != JobState::kCancelled || job->cancelled_at != k.cancelled_at) {
      ++taken;
      txn.erase(key);
      continue;
    }
    const std::uint64_t before = job->ledger_count;
    std::optional<DispatchResult::Undecodable> bad;
    KAIROS_RETURN_IF_ERROR(prune(txn, *job, out->events, &bad));
    if (job->ledger_count != before) txn.put(job_key, encode(*job));
    if (bad) {
      // Its ledger cannot be pruned past that record: the entry stays,
      // reported, and does not count, so it never takes another's turn.
      out->undecodable.push_back(std::move(*bad));
      continue;
    }
    ++taken;
    if (job->ledger_count == 0) txn.erase(key);
  }
  return absl::OkStatus();
}

}  // namespace kairos
