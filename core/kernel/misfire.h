// Misfire: the pure decision of what becomes of a job's due occurrences when
// dispatch takes its due entry. No I/O, no clock (now is an argument), no
// store: JobStore::dispatch gathers the inputs, calls decide_misfire, and
// applies the decision with a short writer. The simulator's checker judges
// misfires against the rule documented here.
//
// Terms. An occurrence is a Fire (nominal identity, fire time `at`). Its
// lateness is
//   lateness(f) = max(0, now - max(f.at, created_at))
// (an occurrence cannot be missed before its job existed). It has misfired
// when lateness(f) > policy.misfire_threshold (strictly: lateness equal to
// the threshold is on time).
//
// Inputs. `due` lists the occurrences the entry covers, oldest first:
// due[0] is the entry's own occurrence; when due[0] has not misfired, `due`
// is just {due[0]}; otherwise it is due[0] and every following occurrence
// with at <= now, at most `chunk` of them (`capped` when more were due).
// `after_last` is the schedule's occurrence after due.back() (nullopt: the
// schedule ends). `backlog` counts occurrences coalesced by earlier capped
// run-once passes whose run is still to come.
//
// The rule. Let m = the length of the misfired prefix of `due` (fire times
// increase, so lateness decreases along `due`).
// - due[0] on time: it runs (ledger kFired, or kMovedDst when its time was
//   moved by a DST gap), standing for 1 + backlog occurrences; the backlog
//   is cleared; next = after_last.
// - run-once (run once now):
//   - capped: nothing runs yet; all of `due` is recorded kCoalesced ("run
//     follows"), added to the backlog; next = after_last.
//   - otherwise: the last due occurrence runs (kLate if it misfired, else as
//     on time) standing for |due| + backlog occurrences; the others are then
//     recorded kCoalesced, linked to that run; the backlog is cleared;
//     next = after_last.
// - skip: the misfired prefix due[0, m) is recorded kSkippedMisfire; nothing
//   runs; next = due[m] if m < |due|, else after_last.
// - catch-up (bounded): excess = max(0, |due| - catch_up_max) oldest
//   occurrences are recorded kSkippedMisfire ("beyond the bound"); then
//   - capped: nothing runs; next = due[excess] (the pass resumes there);
//   - otherwise: due[excess] runs (kLate if it misfired, else as on time);
//     next = due[excess + 1] if there is one, else after_last; and when next
//     is already due (at <= now) it waits until now + catch_up_spacing (the
//     rate limit).
//   So a backlog never yields more than catch_up_max runs, one per pass, at
//   most one per catch_up_spacing.
// The backlog is cleared by every outcome except run-once capped.
//
// Whether a chosen occurrence really gets a run is the overlap policy's
// decision (the writer's): a refused run is recorded kSkippedOverlap, and a
// run-once kCoalesced range then links to no run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "core/kernel/records.h"
#include "core/schedule/schedule.h"

namespace kairos {

absl::Duration misfire_lateness(const Fire& f, absl::Time created_at, absl::Time now);
bool misfired(const JobPolicy& p, const Fire& f, absl::Time created_at, absl::Time now);

struct MisfireInput {
  JobPolicy policy;
  absl::Time created_at;
  absl::Time now;
  std::uint64_t backlog = 0;
  std::vector<Fire> due;  // non-empty, see above
  bool capped = false;
  std::optional<Fire> after_last;
  // False only under the unbounded_catch_up planted bug: catch-up applies
  // neither catch_up_max nor catch_up_spacing.
  bool bound_catch_up = true;
};

// One step of the decision, applied in order.
struct MisfireAction {
  enum class Kind : std::uint8_t {
    kRun,     // due[index] becomes a run (subject to the overlap policy)
    kRecord,  // due[begin, end) get ledger records with `outcome`
  };
  Kind kind = Kind::kRun;
  LedgerOutcome outcome = LedgerOutcome::kFired;
  // kRun.
  std::size_t index = 0;
  absl::Duration lateness;
  std::uint32_t stands_for = 1;
  // kRecord. `linked`: the records name the run of the preceding kRun as
  // their run (run_nominal), if that run was created.
  std::size_t begin = 0;
  std::size_t end = 0;
  bool linked = false;
  std::string detail;
  friend bool operator==(const MisfireAction&, const MisfireAction&) = default;
};

struct MisfireDecision {
  bool misfire = false;      // due[0] had misfired (dispatch reports the decision)
  std::size_t misfired = 0;  // m: the misfired prefix of `due`
  std::vector<MisfireAction> actions;
  std::uint64_t skipped = 0;    // occurrences recorded kSkippedMisfire
  std::uint64_t coalesced = 0;  // occurrences recorded kCoalesced
  std::uint64_t backlog = 0;    // the job's backlog afterwards
  std::optional<Fire> next;     // the next due entry's occurrence (nullopt: none)
  absl::Time next_at;           // and when it is due (meaningful with `next`)
};

MisfireDecision decide_misfire(const MisfireInput& in);

// "run-once", "catch-up", "skip".
std::string misfire_policy_name(MisfirePolicy p);

}  // namespace kairos
