// PlantedBugs: switches that plant known bugs at the kernel's real decision
// points, so the simulator can prove its checker catches each of them.
//
// All are false by default; production never sets them. They travel inside
// the node and worker configs (never a global), so one simulated process can
// run a buggy node beside clean ones. Each flag's comment names the decision
// point it subverts.
#pragma once

#include <array>
#include <string_view>

namespace kairos {

struct PlantedBugs {
  // job_store complete/renew: the fencing-token check is skipped, so a stale
  // holder's completion is accepted.
  bool ignore_fencing = false;
  // reaper: lapsed leases are never made claimable again.
  bool no_lease_expiry = false;
  // leader transactions (dispatch, reaper): the epoch/holder check is skipped.
  bool skip_epoch_check = false;
  // worker: success is reported when the run starts, before the Runner's
  // outcome (the side effect) is known.
  bool ack_before_effect = false;
  // dispatch: the due entry is advanced in one transaction and the run is
  // created in a second one.
  bool non_atomic_dispatch = false;
  // claim: a re-grant after a lapsed lease keeps the run's old token.
  bool reuse_token = false;
  // node: an unknown commit outcome is taken as "not applied": a dispatch is
  // re-issued without the idempotency check, and a completion is answered as
  // failed (the run is then re-executed).
  bool unknown_as_failure = false;
  // dispatch (misfire catch-up): neither the catch_up_max bound nor the
  // catch_up_spacing rate limit is applied.
  bool unbounded_catch_up = false;
  // dispatch/trigger: the overlap check counts no unfinished runs, so every
  // occurrence starts a run at once.
  bool overlap_ignored = false;
  // complete: a retryable failure is re-queued at once (ready_at = now)
  // instead of after the backoff delay.
  bool retry_without_backoff = false;
  // leadership (acquire): a shard whose record was released or lapsed is
  // taken over under the same epoch instead of epoch + 1, so one epoch names
  // two holders -- a handover that does not end the old epoch.
  bool handover_keeps_epoch = false;

  bool any() const {
    return ignore_fencing || no_lease_expiry || skip_epoch_check || ack_before_effect ||
           non_atomic_dispatch || reuse_token || unknown_as_failure || unbounded_catch_up ||
           overlap_ignored || retry_without_backoff || handover_keeps_epoch;
  }
  friend bool operator==(const PlantedBugs&, const PlantedBugs&) = default;
};

// Names as the simulator's --inject-bug spells them.
inline constexpr std::array<std::string_view, 11> kPlantedBugNames = {
    "ignore-fencing",      "no-lease-expiry",       "skip-epoch-check",    "ack-before-effect",
    "non-atomic-dispatch", "reuse-token",           "unknown-as-failure",  "unbounded-catch-up",
    "overlap-ignored",     "retry-without-backoff", "handover-keeps-epoch"};

// Sets the flag named `name`; false when the name is unknown.
inline bool set_planted_bug(PlantedBugs& bugs, std::string_view name) {
  bool* flags[] = {&bugs.ignore_fencing,        &bugs.no_lease_expiry,     &bugs.skip_epoch_check,
                   &bugs.ack_before_effect,     &bugs.non_atomic_dispatch, &bugs.reuse_token,
                   &bugs.unknown_as_failure,    &bugs.unbounded_catch_up,  &bugs.overlap_ignored,
                   &bugs.retry_without_backoff, &bugs.handover_keeps_epoch};
  for (std::size_t i = 0; i < kPlantedBugNames.size(); ++i) {
    if (kPlantedBugNames[i] == name) {
      *flags[i] = true;
      return true;
    }
  }
  return false;
}

}  // namespace kairos
