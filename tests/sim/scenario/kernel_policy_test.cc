// The kernel-policy scenario line: it parses and formats back, refuses
// values the kernel refuses, is silent (and the kernel's defaults apply)
// when absent, and reaches the scheduler nodes' configuration and the
// checker's retention bounds.
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "sim/scenario/scenario.h"
#include "sim/world/kernel_nodes.h"

namespace kairos::sim {
namespace {

TEST(KernelPolicy, ParsesFormatsBackAndReachesTheNodes) {
  auto s = parse_scenario(
      "name k\nkernel-policy ledger-keep=7 ledger-max-age=90s prune-budget=2 misfire-chunk=1005 "
      "dispatch-batch=4 reap-batch=3\n",
      "k.scenario");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->kernel_policy.ledger_keep, 7u);
  EXPECT_EQ(s->kernel_policy.ledger_max_age, absl::Seconds(90));
  auto again = parse_scenario(format_scenario(*s), "formatted.scenario");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->kernel_policy, s->kernel_policy);
  const SchedulerNodeConfig c = scheduler_config(*s, "scheduler-1");
  EXPECT_EQ(c.policy.ledger_keep, 7u);
  EXPECT_EQ(c.policy.ledger_max_age, absl::Seconds(90));
  EXPECT_EQ(c.policy.prune_budget, 2u);
  EXPECT_EQ(c.policy.misfire_chunk, 1005u);
  EXPECT_EQ(c.dispatch_batch, 4u);
  EXPECT_EQ(c.reap_batch, 3u);
  EXPECT_EQ(c.policy.starvation_bound, PolicyOptions{}.starvation_bound);  // not a knob
}

TEST(KernelPolicy, AbsentItKeepsTheKernelDefaultsAndFormatsNothing) {
  auto s = parse_scenario("name k\n", "k.scenario");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(format_scenario(*s).find("kernel-policy"), std::string::npos);
  const SchedulerNodeConfig c = scheduler_config(*s, "scheduler-1");
  const PolicyOptions d;
  EXPECT_EQ(c.policy.ledger_keep, d.ledger_keep);
  EXPECT_EQ(c.policy.ledger_max_age, d.ledger_max_age);
  EXPECT_EQ(c.policy.prune_budget, d.prune_budget);
  EXPECT_EQ(c.policy.misfire_chunk, d.misfire_chunk);
  EXPECT_EQ(c.dispatch_batch, SchedulerNodeConfig{}.dispatch_batch);
  EXPECT_EQ(c.reap_batch, SchedulerNodeConfig{}.reap_batch);
  // Only the given fields change.
  auto one = parse_scenario("name k\nkernel-policy ledger-keep=9\n", "k.scenario");
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(scheduler_config(*one, "x").policy.ledger_max_age, d.ledger_max_age);
}

TEST(KernelPolicy, ValuesTheKernelRefusesDoNotParse) {
  for (const char* bad : {"kernel-policy ledger-keep=0", "kernel-policy ledger-max-age=0s",
                          "kernel-policy prune-budget=0", "kernel-policy dispatch-batch=0",
                          "kernel-policy reap-batch=0", "kernel-policy misfire-chunk=0",
                          "kernel-policy ledger-keep=x", "kernel-policy keep=3"}) {
    auto s = parse_scenario(absl::StrCat("name k\n", bad, "\n"), "k.scenario");
    EXPECT_FALSE(s.ok()) << bad;
    if (!s.ok()) {
      EXPECT_NE(s.status().message().find("kernel-policy"), std::string::npos) << bad;
    }
  }
}

}  // namespace
}  // namespace kairos::sim
