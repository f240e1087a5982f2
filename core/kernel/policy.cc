#include "core/kernel/policy.h"

#include "core/base/check.h"
#include "core/base/stable_hash.h"
#include "core/ports/random.h"

namespace kairos {

namespace {
constexpr std::int64_t kMaxDelayUs = std::int64_t{1} << 50;  // ~35 years: saturation point
}

absl::Duration retry_base_delay(const JobPolicy& p, std::uint32_t failed_attempt) {
  KAIROS_CHECK(failed_attempt >= 1);
  const std::int64_t max = absl::ToInt64Microseconds(p.retry_max);
  std::int64_t d = absl::ToInt64Microseconds(p.retry_initial);
  for (std::uint32_t i = 1; i < failed_attempt && d < max; ++i) {
    const uint128_t next = static_cast<uint128_t>(d) * p.retry_multiplier_percent / 100;
    d = next > static_cast<uint128_t>(kMaxDelayUs) ? kMaxDelayUs : static_cast<std::int64_t>(next);
  }
  if (d > max) d = max;
  return absl::Microseconds(d);
}

absl::Duration retry_delay(const JobPolicy& p, const RunId& run, std::uint32_t failed_attempt) {
  const std::int64_t base = absl::ToInt64Microseconds(retry_base_delay(p, failed_attempt));
  const std::uint64_t u = stable_hash(idempotency_key(run), failed_attempt) >> 32;  // [0, 2^32)
  const uint128_t cut = static_cast<uint128_t>(base) * p.retry_jitter_percent * u /
                        (static_cast<uint128_t>(100) << 32);
  // The jitter only shortens the delay, by at most retry_jitter_percent
  // (which validate_job_spec bounds by 100).
  KAIROS_CHECK(p.retry_jitter_percent > 100 || cut <= static_cast<uint128_t>(base));
  return absl::Microseconds(base - static_cast<std::int64_t>(cut));
}

absl::Duration retry_lower_bound(const JobPolicy& p, std::uint32_t failed_attempt) {
  const std::int64_t base = absl::ToInt64Microseconds(retry_base_delay(p, failed_attempt));
  // u < 2^32, so the cut is strictly below base x j / 100.
  const std::int64_t cut =
      static_cast<std::int64_t>(static_cast<uint128_t>(base) * p.retry_jitter_percent / 100);
  return absl::Microseconds(base - cut);
}

bool retryable(RunStatus status) {
  return status == RunStatus::kFailed || status == RunStatus::kTimedOut;
}

bool JobFilter::matches(const JobSpec& spec) const {
  if (!ns.empty() && spec.ns != ns) return false;
  for (const auto& [k, v] : labels) {
    auto it = spec.labels.find(k);
    if (it == spec.labels.end() || it->second != v) return false;
  }
  return true;
}

}  // namespace kairos
