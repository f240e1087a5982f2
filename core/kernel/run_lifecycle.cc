// Run lifecycle: the job store's shared helpers (see run_lifecycle.h), and
// the two job_store.h functions every body file uses (to_string of a
// verdict, run_event).
#include "core/kernel/run_lifecycle.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "core/base/check.h"
#include "core/kernel/event_kinds.h"
#include "core/kernel/job_store.h"
#include "core/kernel/keyspace.h"

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

namespace job_store_internal {

absl::Status invalid(std::string_view field, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(absl_sv(field), ": ", absl_sv(what)));
}

// The first occurrence of a freshly created job: the first fire strictly after
// `now - 1us` (so a fire at exactly `now` counts), except that a one-off in
// the past still fires once (late; the misfire policy decides more).
std::optional<Fire> first_fire(const Schedule& s, absl::Time now) {
  if (s.spec().kind == ScheduleSpec::Kind::kOnce) return s.next_after(absl::InfinitePast());
  return s.next_after(now - absl::Microseconds(1));
}

absl::StatusOr<JobCounters> read_counters(Txn& txn, std::string_view id) {
  KAIROS_ASSIGN_OR_RETURN(auto c, read<JobCounters>(txn, keys::counters(id), decode_counters));
  return c.value_or(JobCounters{});
}

void write_counters(Txn& txn, std::string_view id, const JobCounters& before,
                    const JobCounters& next) {
  KAIROS_CHECK_MSG(next.token_hw >= before.token_hw, "the token high-water mark went backwards");
  KAIROS_CHECK_MSG(next.incarnation_hw >= before.incarnation_hw,
                   "the incarnation high-water mark went backwards");
  txn.put(keys::counters(id), encode(next));
}

namespace {
void put_run(Txn& txn, const RunRecord& run) { txn.put(keys::run(run.id), encode(run)); }

// Puts or erases one index entry when its key differs between old and new:
// `had`/`has` say whether the entry exists for `old`/`next`, `key_of` builds
// its key from a run, only for a side that has the entry (so the common
// transitions, created, claimed and finished, build each key once).
template <typename KeyOf>
void update_entry(Txn& txn, const RunRecord* old, bool had, const RunRecord& next, bool has,
                  KeyOf key_of) {
  if (!had && !has) return;
  const std::optional<std::string> before = had ? std::optional(key_of(*old)) : std::nullopt;
  const std::optional<std::string> after = has ? std::optional(key_of(next)) : std::nullopt;
  if (before == after) return;
  if (before) txn.erase(*before);
  if (after) txn.put(*after, "");
}
}  // namespace

bool legal_transition(std::optional<RunState> from, RunState to) {
  if (!from) return to == RunState::kReady || to == RunState::kWaiting;
  switch (*from) {
    case RunState::kWaiting:
      return to == RunState::kWaiting || to == RunState::kReady || to == RunState::kCancelled;
    case RunState::kReady:
      return to == RunState::kReady || to == RunState::kLeased || to == RunState::kCancelled;
    case RunState::kLeased:
      return to == RunState::kLeased || to == RunState::kReady || to == RunState::kSucceeded ||
             to == RunState::kFailed || to == RunState::kCancelled;
    case RunState::kSucceeded:
    case RunState::kFailed:
    case RunState::kCancelled:
      return false;
  }
  return false;
}

RunIndexKeys run_index_keys(const RunRecord& run) {
  RunIndexKeys k;
  if (run.state == RunState::kReady)
    k.ready = keys::ready(run.shard, run.priority, run.ready_at, run.id);
  if (run.state == RunState::kLeased) k.expiry = keys::expiry(run.shard, run.lease_expiry, run.id);
  if (!is_terminal(run.state)) k.open = keys::open_run(run.id);
  return k;
}

void write_run(Txn& txn, const std::optional<RunRecord>& old, const RunRecord& next,
               Legality legality) {
  KAIROS_CHECK_MSG(!old || old->id == next.id, "write_run: old and new name different runs");
  if (legality == Legality::kChecked) {
    const std::optional<RunState> from = old ? std::optional<RunState>(old->state) : std::nullopt;
    if (!legal_transition(from, next.state)) {
      const std::string msg =
          absl::StrCat("illegal run transition ", from ? absl_sv(to_string(*from)) : "(none)",
                       " -> ", absl_sv(to_string(next.state)), " of ", idempotency_key(next.id));
      KAIROS_CHECK_MSG(legal_transition(from, next.state), msg.c_str());
    }
    // A run's token and attempt number never go backwards, and a lease
    // extended in place keeps its token.
    if (old) {
      KAIROS_CHECK(next.token >= old->token);
      KAIROS_CHECK(next.attempt >= old->attempt);
      KAIROS_CHECK(old->state != RunState::kLeased || next.state != RunState::kLeased ||
                   next.token == old->token);
    }
  }
  KAIROS_CHECK(!old || old->shard == next.shard);
  KAIROS_CHECK_MSG(next.state != RunState::kLeased || next.token > 0,
                   "a leased run carries a granted token");
  // The entries of run_index_keys(), updated from `old`'s to `next`'s.
  const RunRecord* was = old ? &*old : nullptr;
  auto in = [was](RunState s) { return was != nullptr && was->state == s; };
  update_entry(
      txn, was, in(RunState::kReady), next, next.state == RunState::kReady,
      [](const RunRecord& r) { return keys::ready(r.shard, r.priority, r.ready_at, r.id); });
  update_entry(txn, was, in(RunState::kLeased), next, next.state == RunState::kLeased,
               [](const RunRecord& r) { return keys::expiry(r.shard, r.lease_expiry, r.id); });
  // The open entry's key is the run's id, the same on both sides: only its
  // presence can change.
  const bool open_before = was != nullptr && !is_terminal(was->state);
  const bool open_after = !is_terminal(next.state);
  if (open_before != open_after)
    update_entry(txn, was, open_before, next, open_after,
                 [](const RunRecord& r) { return keys::open_run(r.id); });
  put_run(txn, next);
}

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
void close_attempt(RunRecord& run, AttemptEnd end, absl::Time now, std::int32_t exit_code) {
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
  events.push_back(
      ledger_event(event_kinds::kLedgerUpdated, run.id.job_id, *rec).with("previous", previous));
}

// Withdraws a run that is not running (ready or waiting; a leased one only
// when the reaper finds its lease lapsed after a cancel): state cancelled,
// off the queue and the open set; its occurrence's ledger record says so.
void withdraw(Txn& txn, RunRecord& run, absl::Time now, std::vector<Event>& events,
              std::string_view why) {
  KAIROS_CHECK_MSG(!is_terminal(run.state), "withdrawing a run that is already over");
  const RunRecord old = run;
  if (run.state == RunState::kLeased) close_attempt(run, AttemptEnd::kLapsed, now);
  const bool never_started = run.token == 0;
  run.state = RunState::kCancelled;
  run.owner.clear();
  run.finished_at = now;
  write_run(txn, old, run);
  events.push_back(run_event(event_kinds::kRunCancelled, run).with("reason", std::string(why)));
  if (never_started) cancel_ledger(txn, run, why, events);
}

bool job_accepts(const std::optional<JobRecord>& job, const RunId& id) {
  return job && job->state == JobState::kActive && job->incarnation == id.incarnation;
}

absl::StatusOr<OpenRuns> open_runs(Txn& txn, std::string_view id, std::uint64_t inc) {
  OpenRuns o;
  const keys::Range r = keys::open_runs_of(id, inc);
  for (const auto& kv : txn.scan(r.begin, r.end, 10'000)) {
    KAIROS_ASSIGN_OR_RETURN(RunId rid, keys::parse_open(kv.key));
    KAIROS_CHECK(rid.job_id == id && rid.incarnation == inc);
    KAIROS_ASSIGN_OR_RETURN(auto run, read<RunRecord>(txn, keys::run(rid), decode_run));
    if (!run)
      return absl::DataLossError(absl::StrCat("open-run entry without run ", idempotency_key(rid)));
    if (run->state == RunState::kWaiting) {
      ++o.waiting;
      if (!o.first_waiting) o.first_waiting = *run;
    } else {
      KAIROS_CHECK_MSG(!is_terminal(run->state), "a terminal run is in the open-run index");
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
absl::Status promote_waiting(Txn& txn, const std::optional<JobRecord>& job, const RunId& finished,
                             absl::Time now, std::vector<Event>& events) {
  if (!job_accepts(job, finished)) return absl::OkStatus();
  KAIROS_ASSIGN_OR_RETURN(OpenRuns open, open_runs(txn, finished.job_id, finished.incarnation));
  if (!open.first_waiting || open.active >= overlap_cap(job->spec.policy)) return absl::OkStatus();
  const RunRecord& old = *open.first_waiting;
  KAIROS_CHECK(old.state == RunState::kWaiting);
  RunRecord run = old;
  run.state = RunState::kReady;
  run.ready_at = now;
  write_run(txn, old, run);
  events.push_back(run_event(event_kinds::kRunPromoted, run).with("after", finished.nominal));
  return absl::OkStatus();
}

// A run is over for good: terminal state, off the open set, its successor
// (if waiting) promoted.
absl::Status finish_run(Txn& txn, const std::optional<JobRecord>& job, const RunRecord& old,
                        RunRecord& run, RunState state, RunStatus outcome, std::int32_t exit_code,
                        std::string detail, absl::Time now, std::string_view worker,
                        std::vector<Event>& events, Legality legality) {
  KAIROS_CHECK_MSG(!is_terminal(old.state), "finishing a run that is already over");
  KAIROS_CHECK(is_terminal(state) && state != RunState::kCancelled);
  run.state = state;
  run.outcome = outcome;
  run.exit_code = exit_code;
  run.detail = std::move(detail);
  run.finished_at = now;
  run.owner.clear();
  run.lease_expiry = absl::InfinitePast();
  write_run(txn, old, run, legality);
  events.push_back(run_event(event_kinds::kRunCompleted, run)
                       .with("worker", std::string(worker))
                       .with("outcome", std::string(to_string(run.state)))
                       .with("status", static_cast<std::uint64_t>(outcome))
                       .with("exit_code", static_cast<std::int64_t>(exit_code)));
  return promote_waiting(txn, job, run.id, now, events);
}

// A leased run whose attempt ended without a verdict (lease lapsed, or
// released by its worker): claimable again at once with the next attempt
// number while attempts are left (a crashed worker's run is retried after one
// lease period, not after a backoff); otherwise failed.
absl::Status requeue_or_fail(Txn& txn, const std::optional<JobRecord>& job, RunRecord& run,
                             absl::Time now, AttemptEnd end, std::uint32_t max_attempts,
                             std::vector<Event>& events, Legality legality) {
  KAIROS_CHECK_MSG(legality == Legality::kPlantedBug || run.state == RunState::kLeased,
                   "re-queueing a run that was not leased");
  KAIROS_CHECK(end == AttemptEnd::kLapsed || end == AttemptEnd::kReleased);
  const RunRecord old = run;
  close_attempt(run, end, now);
  if (run.attempt >= max_attempts) {
    const std::string worker = run.owner;
    return finish_run(
        txn, job, old, run, RunState::kFailed, RunStatus::kFailed, 0,
        absl::StrCat(end == AttemptEnd::kLapsed ? "lease lapsed" : "released",
                     " on the last attempt (", run.attempt, " of ", max_attempts, ")"),
        now, worker, events, legality);
  }
  run.state = RunState::kReady;
  run.owner.clear();
  run.attempt += 1;
  run.ready_at = now;
  run.lease_expiry = absl::InfinitePast();
  write_run(txn, old, run, legality);
  KAIROS_CHECK(run.attempt == old.attempt + 1 && run.attempt <= max_attempts);
  return absl::OkStatus();
}

}  // namespace job_store_internal
}  // namespace kairos
