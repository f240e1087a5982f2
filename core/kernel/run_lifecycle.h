// Run lifecycle: the helpers the JobStore bodies share (internal to the job
// store; nothing outside core/kernel/job_store*.cc includes this header).
//
// Purpose. The job store's bodies are split by topic across several files
// (job_store_jobs.cc, _leadership, _dispatch, _leases, _control); the steps
// they have in common live here: reading a record through a Txn, the run
// transitions every body uses (withdraw, finish, requeue, promote a waiting
// run), the open-run census the overlap policy counts, and ledger events.
//
// Guarantees. Every function reads and writes only through the Txn it is
// given, uses only Txn::now() for time, and reports what it changed as Events
// appended to the caller's list, exactly as a body does (job_store.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/base/check.h"
#include "core/kernel/records.h"
#include "core/ports/event_log.h"
#include "core/ports/storage.h"
#include "core/schedule/schedule.h"

namespace kairos::job_store_internal {

// InvalidArgument "field: what".
absl::Status invalid(std::string_view field, std::string_view what);

// The first occurrence of a freshly created job: the first fire strictly after
// `now - 1us` (so a fire at exactly `now` counts), except that a one-off in
// the past still fires once (late; the misfire policy decides more).
std::optional<Fire> first_fire(const Schedule& s, absl::Time now);

// The record under `key`, decoded; nullopt when absent.
template <typename T>
absl::StatusOr<std::optional<T>> read(Txn& txn, const std::string& key,
                                      absl::StatusOr<T> (*decode)(std::string_view)) {
  auto v = txn.get(key);
  if (!v) return std::optional<T>();
  KAIROS_ASSIGN_OR_RETURN(T rec, decode(*v));
  return std::optional<T>(std::move(rec));
}

// The job's counters (zero when none were written yet).
absl::StatusOr<JobCounters> read_counters(Txn& txn, std::string_view id);
// Writes `next` over `before` (as read); the high-water marks never go
// backwards (KAIROS_CHECK).
void write_counters(Txn& txn, std::string_view id, const JobCounters& before,
                    const JobCounters& next);

// Run transitions. write_run is the one owner of a run's record and of the
// three index entries derived from its state:
//   ready queue   Q|shard|band|ready_at|id   iff state == kReady
//   lease expiry  E|shard|expiry|id          iff state == kLeased
//   open runs     O|id                       iff !is_terminal(state)
// Given the run as stored (`old`, nullopt when it is created) and as it is to
// be, it erases the entries `old` had and `next` does not, puts those `next`
// has and `old` did not (an entry whose key is unchanged is not touched),
// and writes the run record. So the indexes never name a run that is not in
// the matching state, and readers may assert that instead of skipping.
//
// The transition old.state -> next.state must be in the table of allowed
// state changes (legal_transition); an illegal one is a bug (KAIROS_CHECK).
// Legality::kPlantedBug skips that check: only the planted-bug paths pass it
// (a stale holder's completion of a re-queued run under ignore_fencing, the
// re-dispatch that overwrites a run under unknown_as_failure).
enum class Legality : std::uint8_t { kChecked, kPlantedBug };

// The allowed state changes. From nullopt (creation): ready or waiting.
// waiting -> waiting | ready | cancelled; ready -> ready | leased | cancelled;
// leased -> leased | ready | succeeded | failed | cancelled; a terminal state
// (succeeded, failed, cancelled) never changes.
bool legal_transition(std::optional<RunState> from, RunState to);

// The index keys a run in its state must have (nullopt: no entry).
struct RunIndexKeys {
  std::optional<std::string> ready;
  std::optional<std::string> expiry;
  std::optional<std::string> open;
  friend bool operator==(const RunIndexKeys&, const RunIndexKeys&) = default;
};
RunIndexKeys run_index_keys(const RunRecord& run);

void write_run(Txn& txn, const std::optional<RunRecord>& old, const RunRecord& next,
               Legality legality = Legality::kChecked);

Event ledger_event(std::string_view kind, std::string_view job_id, const LedgerRecord& l);

// Closes the latest attempt of `run` (if it is still running).
void close_attempt(RunRecord& run, AttemptEnd end, absl::Time now, std::int32_t exit_code = 0);

// How an attempt that reported `s` ended.
AttemptEnd attempt_end(RunStatus s);

// The ledger record of a scheduled run's own occurrence becomes kCancelled.
void cancel_ledger(Txn& txn, const RunRecord& run, std::string_view why,
                   std::vector<Event>& events);

// Withdraws a run that is not running (ready or waiting; a leased one only
// when the reaper finds its lease lapsed after a cancel): state cancelled,
// off the queue and the open set; its occurrence's ledger record says so.
void withdraw(Txn& txn, RunRecord& run, absl::Time now, std::vector<Event>& events,
              std::string_view why);

// Whether `job` is the live incarnation the run `id` belongs to.
bool job_accepts(const std::optional<JobRecord>& job, const RunId& id);

// Unfinished runs of one incarnation, split by whether they are active
// (ready, incl. a pending retry, or leased) or waiting (overlap `queue`).
struct OpenRuns {
  std::uint32_t active = 0;
  std::uint32_t waiting = 0;
  std::optional<RunRecord> first_waiting;
  std::vector<RunRecord> runs;
};
absl::StatusOr<OpenRuns> open_runs(Txn& txn, std::string_view id, std::uint64_t inc);

// How many runs the overlap policy lets be active at once.
std::uint32_t overlap_cap(const JobPolicy& p);

// When a run of the job has left the active set: a waiting run (overlap
// `queue`) becomes ready if the policy now allows it. `job` is the run's job
// record as stored now (read by the caller in this transaction; nullopt when
// absent), so it is not read and decoded again.
absl::Status promote_waiting(Txn& txn, const std::optional<JobRecord>& job, const RunId& finished,
                             absl::Time now, std::vector<Event>& events);

// A run is over for good: terminal state, off the open set, its successor
// (if waiting) promoted. `old` is the run as stored; `run` is it with any
// changes the caller made so far (its latest attempt closed); `job` as for
// promote_waiting.
absl::Status finish_run(Txn& txn, const std::optional<JobRecord>& job, const RunRecord& old,
                        RunRecord& run, RunState state, RunStatus outcome, std::int32_t exit_code,
                        std::string detail, absl::Time now, std::string_view worker,
                        std::vector<Event>& events, Legality legality = Legality::kChecked);

// A leased run whose attempt ended without a verdict (lease lapsed, or
// released by its worker): claimable again at once with the next attempt
// number while attempts are left (a crashed worker's run is retried after one
// lease period, not after a backoff); otherwise failed.
// `run` is the run as stored; `job` as for promote_waiting.
absl::Status requeue_or_fail(Txn& txn, const std::optional<JobRecord>& job, RunRecord& run,
                             absl::Time now, AttemptEnd end, std::uint32_t max_attempts,
                             std::vector<Event>& events, Legality legality = Legality::kChecked);

}  // namespace kairos::job_store_internal
