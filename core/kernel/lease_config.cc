#include "core/kernel/lease_config.h"

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

absl::Time lease_deadline(absl::Time sent, absl::Duration ttl, std::int64_t max_drift_ppm,
                          absl::Duration margin) {
  KAIROS_CHECK(max_drift_ppm >= 0 && max_drift_ppm <= 1'000'000);
  return sent + absl::Microseconds(d::effective_us(us(ttl), max_drift_ppm, us(margin)));
}

}  // namespace kairos
