// Policy arithmetic: the pure, integer-only decisions behind retries and the
// job filters. The JobStore bodies call these at the decision points; the
// simulator's checker calls the same functions to bound what it observes.
//
// Retries (docs/POLICIES.md "Retries"). After attempt k (1-based) fails, the
// base delay is
//   base(k) = min(retry_max, retry_initial x (multiplier_percent / 100)^(k-1))
// computed in integer microseconds (saturating; never floating point), and
// the actual delay is
//   delay(k) = base(k) - base(k) x retry_jitter_percent x u / (100 x 2^32)
// with u in [0, 2^32) taken from stable_hash(idempotency key, k): the same run
// and attempt give the same delay in every process, so a simulated history
// replays exactly and a checker can verify delay in [retry_lower_bound, base].
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "absl/time/time.h"
#include "core/kernel/records.h"

namespace kairos {

// base(k) above; `failed_attempt` >= 1.
absl::Duration retry_base_delay(const JobPolicy& p, std::uint32_t failed_attempt);
// delay(k) above.
absl::Duration retry_delay(const JobPolicy& p, const RunId& run, std::uint32_t failed_attempt);
// The smallest delay the jitter can produce for attempt k.
absl::Duration retry_lower_bound(const JobPolicy& p, std::uint32_t failed_attempt);

// Whether a failed attempt may be retried: retryable status and attempts left.
bool retryable(RunStatus status);

// Listing filter: empty namespace matches every namespace; every label given
// must be present with an equal value.
struct JobFilter {
  std::string ns;
  std::map<std::string, std::string> labels;
  bool matches(const JobSpec& spec) const;
  bool empty() const { return ns.empty() && labels.empty(); }
};

}  // namespace kairos
