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
// field, and check_lease_invariants() re-derives the relations from a config
// validate() accepted (a failure there is a bug in validate, not bad input).
// All arithmetic is integer microseconds.
//
// Clock safety. A holder acts until lease_deadline(sent, ttl) on its own
// clock, `sent` being when it sent the request that took or renewed the
// lease. The store starts the lease no earlier than `sent`, so while the
// holder's clock runs at most max_drift slow the holder stops at least
// `margin` before the store's lease can lapse: within_lease() states that
// inequality, and the node and the worker check it wherever they derive a
// deadline.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
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
// The node's tick (SchedulerNodeConfig::poll_interval) and the worker's
// long-poll bound (WorkerConfig::claim_wait): not lease values, but their
// defaults must fit the lease defaults above.
inline constexpr std::int64_t kPollIntervalUs = 1'000'000;
inline constexpr std::int64_t kClaimWaitUs = 10'000'000;

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

// The run-lease timing for a run lease of `ttl` (the `--lease-ttl` flag):
// the defaults scaled to it. heartbeat_period = ttl x 8/30, rpc_timeout =
// min(2 s, ttl / 15), margin = rpc_timeout (the margin also guards the
// leader lease, so it never grows past its default); the drift
// bound and the leader lease keep their defaults. With the default ttl
// this is exactly LeaseConfig{}. InvalidArgument naming "lease.ttl" unless
// ttl is in [kMinLeaseTtl, kMaxLeaseTtl] and whole milliseconds; the result
// always passes validate().
inline constexpr absl::Duration kMinLeaseTtl = absl::Seconds(1);
inline constexpr absl::Duration kMaxLeaseTtl = absl::Hours(24);
absl::StatusOr<LeaseConfig> lease_config_for_ttl(absl::Duration ttl);

// The worker's long-poll bound for a lease: min(10 s, ttl / 3), so a parked
// claim is answered well within one heartbeat of a lease of that length.
absl::Duration claim_wait_for(const LeaseConfig& c);

// Aborts unless `c` passed validate() and the relations above hold for its
// derived values (effective run and leader leases, heartbeat and renewal
// periods inside them). The node and the worker call it on their config.
void check_lease_invariants(const LeaseConfig& c);

// ttl x (1 - max_drift) - margin: how long after sending its request a holder
// may act on a lease of `ttl` (may be negative for a tiny ttl).
absl::Duration effective_lease(absl::Duration ttl, const LeaseConfig& c);

// The latest local time at which a holder may still act on a lease of `ttl`
// whose request it sent at `sent` (its own clock): sent + ttl*(1-drift) - margin.
absl::Time lease_deadline(absl::Time sent, absl::Duration ttl, std::int64_t max_drift_ppm,
                          absl::Duration margin);

// The clock-safety inequality: acting until `deadline` on a request sent at
// `sent` ends at least `margin` before a lease of `ttl` (a non-positive ttl
// counts as 0) started no earlier than `sent` lapses. In whole microseconds,
// as lease_deadline() computes: deadline - sent <= max(ttl, 0) - margin.
bool within_lease(absl::Time sent, absl::Time deadline, absl::Duration ttl, absl::Duration margin);

}  // namespace kairos
