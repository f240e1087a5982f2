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

TEST(LeaseConfigForTtl, TheDefaultTtlGivesTheDefaults) {
  auto c = lease_config_for_ttl(absl::Microseconds(lease_defaults::kLeaseTtlUs));
  ASSERT_TRUE(c.ok()) << c.status();
  const LeaseConfig d;
  EXPECT_EQ(c->lease_ttl, d.lease_ttl);
  EXPECT_EQ(c->heartbeat_period, d.heartbeat_period);
  EXPECT_EQ(c->rpc_timeout, d.rpc_timeout);
  EXPECT_EQ(c->margin, d.margin);
  EXPECT_EQ(c->leader_ttl, d.leader_ttl);
  EXPECT_EQ(claim_wait_for(*c), absl::Microseconds(lease_defaults::kClaimWaitUs));
}

TEST(LeaseConfigForTtl, AShortLeaseKeepsAWorkerInsideIt) {
  auto c = lease_config_for_ttl(absl::Seconds(3));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->heartbeat_period, absl::Milliseconds(800));
  EXPECT_EQ(c->rpc_timeout, absl::Milliseconds(200));
  EXPECT_EQ(c->margin, absl::Milliseconds(200));
  EXPECT_EQ(claim_wait_for(*c), absl::Seconds(1));
  // Two heartbeats and a timed-out request fit before the worker's deadline.
  EXPECT_LE(c->heartbeat_period * 2 + c->rpc_timeout, effective_lease(c->lease_ttl, *c));
}

TEST(LeaseConfigForTtl, EveryTtlInRangeIsValid) {
  for (std::int64_t ms = 1000; ms <= 24 * 3600 * 1000; ms = ms * 11 / 10 + 7) {
    auto c = lease_config_for_ttl(absl::Milliseconds(ms));
    ASSERT_TRUE(c.ok()) << ms << "ms: " << c.status();
    EXPECT_TRUE(validate(*c).ok()) << ms;
    EXPECT_LE(c->rpc_timeout, absl::Seconds(2));
    EXPECT_GE(c->margin * 2, c->rpc_timeout);
    EXPECT_LE(c->margin, absl::Seconds(2));
  }
}

TEST(LeaseConfigForTtl, OutOfRangeNamesTheField) {
  for (absl::Duration bad : {absl::Milliseconds(999), absl::Hours(25), absl::Microseconds(1500500),
                             absl::ZeroDuration(), -absl::Seconds(5)}) {
    auto c = lease_config_for_ttl(bad);
    ASSERT_FALSE(c.ok()) << bad;
    EXPECT_NE(c.status().message().find("lease.ttl"), std::string_view::npos);
  }
}

}  // namespace
}  // namespace kairos
