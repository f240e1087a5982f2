#include "core/kernel/lease_config.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"

namespace kairos {

namespace d = lease_defaults;
static_assert(d::kMaxDriftPpm >= 0 && d::kMaxDriftPpm <= 100'000, "drift bound out of range");
static_assert(d::kMarginUs * 2 >= d::kRpcTimeoutUs, "margin must cover half an rpc timeout");
static_assert(d::kHeartbeatUs * 2 + d::kRpcTimeoutUs <=
                  d::effective_us(d::kLeaseTtlUs, d::kMaxDriftPpm, d::kMarginUs),
              "two heartbeats and an rpc timeout must fit in the effective lease");
static_assert(d::kLeaderRenewUs * 2 + d::kRpcTimeoutUs <=
                  d::effective_us(d::kLeaderTtlUs, d::kMaxDriftPpm, d::kMarginUs),
              "two leader renewals and an rpc timeout must fit in the effective leader lease");
static_assert(d::kMarginUs > 0 && d::kRpcTimeoutUs > 0 && d::kHeartbeatUs > 0 &&
                  d::kLeaderRenewUs > 0,
              "lease periods must be positive");
static_assert(d::effective_us(d::kLeaseTtlUs, d::kMaxDriftPpm, d::kMarginUs) + d::kMarginUs <=
                  d::kLeaseTtlUs,
              "a worker's run deadline must end a margin inside the run lease");
static_assert(d::effective_us(d::kLeaderTtlUs, d::kMaxDriftPpm, d::kMarginUs) + d::kMarginUs <=
                  d::kLeaderTtlUs,
              "a node's leadership deadline must end a margin inside the leader lease");
static_assert(d::kPollIntervalUs <= d::kLeaderRenewUs,
              "leader renewals ride on ticks: the default poll must not exceed the renew period");
static_assert(d::kClaimWaitUs * 2 <= d::kLeaseTtlUs,
              "the default long-poll wait must be at most half of the run lease");
static_assert(d::kClaimWaitUs + d::kRpcTimeoutUs <
                  d::effective_us(d::kLeaseTtlUs, d::kMaxDriftPpm, d::kMarginUs),
              "a grant answered at the end of a default long poll must still arrive in its lease");

namespace {
std::int64_t us(absl::Duration x) { return absl::ToInt64Microseconds(x); }
}  // namespace

absl::Status validate(const LeaseConfig& c) {
  auto positive = [](absl::Duration x, const char* field) -> absl::Status {
    if (x <= absl::ZeroDuration() || x == absl::InfiniteDuration())
      return absl::InvalidArgumentError(absl::StrCat(field, ": must be positive and finite"));
    return absl::OkStatus();
  };
  KAIROS_RETURN_IF_ERROR(positive(c.lease_ttl, "lease.ttl"));
  KAIROS_RETURN_IF_ERROR(positive(c.heartbeat_period, "lease.heartbeat_period"));
  KAIROS_RETURN_IF_ERROR(positive(c.margin, "lease.margin"));
  KAIROS_RETURN_IF_ERROR(positive(c.rpc_timeout, "lease.rpc_timeout"));
  KAIROS_RETURN_IF_ERROR(positive(c.leader_ttl, "lease.leader_ttl"));
  KAIROS_RETURN_IF_ERROR(positive(c.leader_renew_period, "lease.leader_renew_period"));
  if (c.max_drift_ppm < 0 || c.max_drift_ppm > 100'000)
    return absl::InvalidArgumentError(
        absl::StrCat("lease.max_drift_ppm: must be in [0, 100000] (0-10%), got ", c.max_drift_ppm));
  if (us(c.margin) * 2 < us(c.rpc_timeout))
    return absl::InvalidArgumentError("lease.margin: must be at least half of lease.rpc_timeout");
  const std::int64_t eff = d::effective_us(us(c.lease_ttl), c.max_drift_ppm, us(c.margin));
  if (us(c.heartbeat_period) * 2 + us(c.rpc_timeout) > eff)
    return absl::InvalidArgumentError(absl::StrCat(
        "lease.heartbeat_period: 2 x heartbeat_period + rpc_timeout must be <= ttl x (1 - "
        "max_drift) - margin = ",
        eff, "us"));
  const std::int64_t leff = d::effective_us(us(c.leader_ttl), c.max_drift_ppm, us(c.margin));
  if (us(c.leader_renew_period) * 2 + us(c.rpc_timeout) > leff)
    return absl::InvalidArgumentError(absl::StrCat(
        "lease.leader_renew_period: 2 x leader_renew_period + rpc_timeout must be <= leader_ttl "
        "x (1 - max_drift) - margin = ",
        leff, "us"));
  return absl::OkStatus();
}

void check_lease_invariants(const LeaseConfig& c) {
  const absl::Status s = validate(c);
  KAIROS_CHECK_MSG(s.ok(), std::string(s.message()).c_str());
  const std::int64_t eff = us(effective_lease(c.lease_ttl, c));
  const std::int64_t leff = us(effective_lease(c.leader_ttl, c));
  KAIROS_CHECK_MSG(eff > 0 && eff + us(c.margin) <= us(c.lease_ttl),
                   "the effective run lease must be positive and a margin inside the lease");
  KAIROS_CHECK_MSG(leff > 0 && leff + us(c.margin) <= us(c.leader_ttl),
                   "the effective leader lease must be positive and a margin inside the lease");
  KAIROS_CHECK_MSG(us(c.heartbeat_period) * 2 + us(c.rpc_timeout) <= eff,
                   "two heartbeats and an rpc timeout must fit in the effective run lease");
  KAIROS_CHECK_MSG(us(c.leader_renew_period) * 2 + us(c.rpc_timeout) <= leff,
                   "two leader renewals and an rpc timeout must fit in the effective leader lease");
  KAIROS_CHECK(us(c.margin) * 2 >= us(c.rpc_timeout));
}

absl::Duration effective_lease(absl::Duration ttl, const LeaseConfig& c) {
  return absl::Microseconds(d::effective_us(us(ttl), c.max_drift_ppm, us(c.margin)));
}

absl::Time lease_deadline(absl::Time sent, absl::Duration ttl, std::int64_t max_drift_ppm,
                          absl::Duration margin) {
  KAIROS_CHECK(max_drift_ppm >= 0 && max_drift_ppm <= 1'000'000);
  return sent + absl::Microseconds(d::effective_us(us(ttl), max_drift_ppm, us(margin)));
}

bool within_lease(absl::Time sent, absl::Time deadline, absl::Duration ttl, absl::Duration margin) {
  return us(deadline - sent) <= std::max<std::int64_t>(us(ttl), 0) - us(margin);
}

absl::StatusOr<LeaseConfig> lease_config_for_ttl(absl::Duration ttl) {
  if (ttl < kMinLeaseTtl || ttl > kMaxLeaseTtl || us(ttl) % 1000 != 0)
    return absl::InvalidArgumentError(absl::StrCat(
        "lease.ttl: must be whole milliseconds in [1s, 24h], got ", absl::FormatDuration(ttl)));
  LeaseConfig c;
  c.lease_ttl = ttl;
  c.heartbeat_period = absl::Microseconds(us(ttl) / 30 * 8 + us(ttl) % 30 * 8 / 30);
  c.rpc_timeout = std::min(absl::Microseconds(lease_defaults::kRpcTimeoutUs), ttl / 15);
  c.margin = c.rpc_timeout;  // shared with the leader lease: never above the default
  const absl::Status s = validate(c);
  KAIROS_CHECK_MSG(s.ok(), std::string(s.message()).c_str());
  return c;
}

absl::Duration claim_wait_for(const LeaseConfig& c) {
  return std::min(absl::Microseconds(lease_defaults::kClaimWaitUs), c.lease_ttl / 3);
}

}  // namespace kairos
