// Lease timing: run leases (worker <-> store) and leader leases (node <-> store).
//
// Safety never depends on these numbers (tokens and epochs fence stale
// holders); they decide how often a healthy holder loses its lease by
// accident and how fast a dead one is replaced. The relations below keep a
// healthy worker safely inside its lease:
//
//   effective = ttl - ttl * max_drift_ppm / 1e6 - margin   (worker deadline
//               after the claim/renew was *sent*, on the worker's own clock)
//   heartbeat_period * 2 + rpc_timeout <= effective
//       so one lost heartbeat still leaves time for the next to land;
//   margin >= rpc_timeout / 2, max_drift_ppm <= 100000 (10%).
//
// The defaults are compile-time checked (static_assert in lease_config.cc);
// validate() checks configuration given at runtime with errors naming the
// field. All arithmetic is integer microseconds.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace kairos {

namespace lease_defaults {
inline constexpr std::int64_t kLeaseTtlUs = 30'000'000;
inline constexpr std::int64_t kHeartbeatUs = 8'000'000;
inline constexpr std::int64_t kMaxDriftPpm = 10'000;  // 1%
inline constexpr std::int64_t kMarginUs = 2'000'000;
inline constexpr std::int64_t kRpcTimeoutUs = 2'000'000;
inline constexpr std::int64_t kLeaderTtlUs = 10'000'000;
inline constexpr std::int64_t kLeaderRenewUs = 2'500'000;

constexpr std::int64_t effective_us(std::int64_t ttl, std::int64_t drift_ppm, std::int64_t margin) {
  return ttl - ttl / 1'000'000 * drift_ppm - (ttl % 1'000'000) * drift_ppm / 1'000'000 - margin;
}
}  // namespace lease_defaults

struct LeaseConfig {
  absl::Duration lease_ttl = absl::Microseconds(lease_defaults::kLeaseTtlUs);
  absl::Duration heartbeat_period = absl::Microseconds(lease_defaults::kHeartbeatUs);
  std::int64_t max_drift_ppm = lease_defaults::kMaxDriftPpm;
  absl::Duration margin = absl::Microseconds(lease_defaults::kMarginUs);
  absl::Duration rpc_timeout = absl::Microseconds(lease_defaults::kRpcTimeoutUs);
  // Leader leases: renewed every leader_renew_period; a node stops acting as
  // leader leader_ttl * (1 - drift) - margin after it *sent* its last
  // successful renewal.
  absl::Duration leader_ttl = absl::Microseconds(lease_defaults::kLeaderTtlUs);
  absl::Duration leader_renew_period = absl::Microseconds(lease_defaults::kLeaderRenewUs);
};

// Errors name the field ("lease.heartbeat_period: ...").
absl::Status validate(const LeaseConfig& c);

// The latest local time at which a holder may still act on a lease of `ttl`
// whose request it sent at `sent` (its own clock): sent + ttl*(1-drift) - margin.
absl::Time lease_deadline(absl::Time sent, absl::Duration ttl, std::int64_t max_drift_ppm,
                          absl::Duration margin);

}  // namespace kairos
