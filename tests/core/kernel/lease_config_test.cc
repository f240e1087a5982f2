#include "core/kernel/lease_config.h"

#include <gtest/gtest.h>

namespace kairos {
namespace {

TEST(LeaseConfig, DefaultsAreValid) { EXPECT_TRUE(validate(LeaseConfig{}).ok()); }

TEST(LeaseConfig, ErrorsNameTheField) {
  LeaseConfig c;
  c.heartbeat_period = absl::Seconds(20);
  EXPECT_NE(validate(c).message().find("lease.heartbeat_period"), std::string::npos);
  c = LeaseConfig{};
  c.max_drift_ppm = 200'000;
  EXPECT_NE(validate(c).message().find("lease.max_drift_ppm"), std::string::npos);
  c = LeaseConfig{};
  c.lease_ttl = absl::ZeroDuration();
  EXPECT_NE(validate(c).message().find("lease.ttl"), std::string::npos);
  c = LeaseConfig{};
  c.margin = absl::Milliseconds(100);
  EXPECT_NE(validate(c).message().find("lease.margin"), std::string::npos);
}

TEST(LeaseConfig, DeadlineIsIntegerAndConservative) {
  const absl::Time sent = absl::FromUnixSeconds(1000);
  // 30s * (1 - 1%) - 2s = 27.7s
  EXPECT_EQ(lease_deadline(sent, absl::Seconds(30), 10'000, absl::Seconds(2)),
            sent + absl::Milliseconds(27'700));
  EXPECT_EQ(lease_deadline(sent, absl::Microseconds(1'000'001), 500'000, absl::ZeroDuration()),
            sent + absl::Microseconds(500'001));
}

}  // namespace
}  // namespace kairos
