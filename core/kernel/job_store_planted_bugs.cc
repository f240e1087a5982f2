// JobStore, planted-bug decision points: every place a PlantedBugs switch
// (planted_bugs.h) changes what a job store body does is one of the small
// functions below, so the bodies read as the clean algorithm and this file
// lists what each switch subverts. With every switch off (always, outside
// the simulator's bug-injection runs) each function returns exactly what the
// clean path needs.
#include <utility>

#include "core/base/check.h"
#include "core/kernel/job_store.h"
#include "core/kernel/keyspace.h"
#include "core/kernel/run_lifecycle.h"

namespace kairos {

using namespace job_store_internal;  // the bodies' shared helpers

// skip_epoch_check: leader bodies run without checking the leader record.
bool JobStore::planted_skips_epoch_check() const { return bugs_.skip_epoch_check; }

// handover_keeps_epoch: a released or lapsed record of another holder is
// taken over under its own epoch.
std::uint64_t JobStore::next_epoch(const LeaderRecord& previous, bool had_record) const {
  if (bugs_.handover_keeps_epoch && had_record && previous.epoch > 0) return previous.epoch;
  return previous.epoch + 1;
}

// no_lease_expiry: the reaper never makes a lapsed lease claimable again.
bool JobStore::planted_reaper_off() const { return bugs_.no_lease_expiry; }

// overlap_ignored: the overlap policy counts no unfinished run.
absl::StatusOr<OpenRuns> JobStore::open_runs_for_overlap(Txn& txn, const JobRecord& job) const {
  if (bugs_.overlap_ignored) return OpenRuns{};
  return open_runs(txn, job.spec.id, job.incarnation);
}

// non_atomic_dispatch: the run is left for a second transaction
// (DispatchResult::to_create) instead of being created with its due entry.
absl::Status JobStore::create_dispatched_run(Txn& txn, const RunRecord& run,
                                             DispatchResult* out) const {
  if (bugs_.non_atomic_dispatch) {
    out->to_create.push_back(run);
    return absl::OkStatus();
  }
  return create_run_if_absent(txn, run, /*idempotent=*/true, out);
}

// unbounded_catch_up: catch-up applies neither its bound nor its spacing.
bool JobStore::catch_up_bounded() const { return !bugs_.unbounded_catch_up; }

// reuse_token: a re-grant keeps the run's old token (and leaves the job's
// high-water mark alone). Clean: the job's mark + 1, written back.
absl::StatusOr<JobStore::GrantToken> JobStore::grant_token(Txn& txn, const RunRecord& run) const {
  KAIROS_ASSIGN_OR_RETURN(const JobCounters before, read_counters(txn, run.id.job_id));
  KAIROS_CHECK_MSG(run.token <= before.token_hw, "a run's token is above its job's mark");
  if (bugs_.reuse_token && run.token != 0) return GrantToken{run.token, before.token_hw, true};
  JobCounters counters = before;
  counters.token_hw += 1;
  KAIROS_CHECK(counters.token_hw > run.token);
  write_counters(txn, run.id.job_id, before, counters);
  return GrantToken{counters.token_hw, counters.token_hw, false};
}

// ignore_fencing: a write under a stale token is not refused, and a stale
// holder's completion of a re-queued (ready) run is accepted.
bool JobStore::token_refused(std::uint64_t current, std::uint64_t presented) const {
  return current != presented && !bugs_.ignore_fencing;
}
bool JobStore::planted_ignores_fencing() const { return bugs_.ignore_fencing; }
bool JobStore::planted_completes_requeued(const RunRecord& run) const {
  return bugs_.ignore_fencing && run.state == RunState::kReady;
}

// retry_without_backoff: a retryable failure is re-queued at once.
absl::Duration JobStore::retry_backoff(const JobPolicy& policy, const RunRecord& run) const {
  if (bugs_.retry_without_backoff) return absl::ZeroDuration();
  return retry_delay(policy, run.id, run.attempt);
}

}  // namespace kairos
