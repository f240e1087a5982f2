#include "sim/scenario.h"

#include <gtest/gtest.h>

#include "sim/fault_plan.h"

namespace kairos::sim {
namespace {

constexpr char kGood[] = R"(# a comment
name paused-worker
description A worker pauses past its lease.
duration 2h
quiet-tail 10m
topology schedulers=3 workers=8 shards=4
timing poll=1s lease=10s job-timeout=30s max-attempts=3
network delay=1ms..5ms loss=2 duplicate=1 replay=1
store sync=2ms service=0s..1ms timeout=1s record-writes=no
sink error=5 timeout=5 wait=2s
runner duration=100ms..20s fail=10 hang=1
clock worker-2 offset=-2s drift=150
job cron count=10 expr="*/5 * * * *" zone=Europe/Berlin
job once count=100 within=1h
job interval count=5 every=90s
cancel count=2 at=30m
fault pause at=10m for=45s node=worker-1
fault partition at=20m for=1m node=leader peer=store
fault clock-jump at=30m node=any amount=-30s
swarm per-hour=10 for=1s..30s kinds=pause,crash,net
ignore timeliness
)";

TEST(Scenario, ParsesEveryDirectiveAndRoundTrips) {
  auto s = parse_scenario(kGood, "good.scenario");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->name, "paused-worker");
  EXPECT_EQ(s->topology.workers, 8u);
  EXPECT_EQ(s->network.max_delay, absl::Milliseconds(5));
  EXPECT_EQ(s->clocks[0].offset, absl::Seconds(-2));
  EXPECT_EQ(s->jobs[0].expr, "*/5 * * * *");
  EXPECT_EQ(s->faults[2].amount, absl::Seconds(-30));
  EXPECT_EQ(s->random_faults.kinds.size(), 3u);
  auto again = parse_scenario(format_scenario(*s), "emitted");
  ASSERT_TRUE(again.ok()) << again.status() << "\n" << format_scenario(*s);
  EXPECT_EQ(*again, *s);
}

void expect_error(const char* text, const char* needle) {
  auto s = parse_scenario(text, "bad.scenario");
  ASSERT_FALSE(s.ok()) << text;
  EXPECT_NE(std::string(s.status().message()).find(needle), std::string::npos)
      << s.status().message();
}

TEST(Scenario, ErrorsNameFileLineAndWhatWasExpected) {
  expect_error("name x\nnetwork loss=5%\n", "bad.scenario:2: network: loss: expected an integer per-mille");
  expect_error("duration 1.5h\n", "bad.scenario:1: duration:");
  expect_error("\n\nbogus 1\n", "bad.scenario:3: unknown directive \"bogus\"");
  expect_error("fault explode at=1m\n", "bad.scenario:1: fault: unknown kind \"explode\"");
  expect_error("fault pause for=1m\n", "bad.scenario:1: fault pause: expected at=<duration>");
  expect_error("topology workers=2\nfault pause at=1m node=worker-3\n", "bad.scenario:2: unknown node \"worker-3\"");
  expect_error("job cron count=1\n", "bad.scenario:1: job: cron: expected expr=");
  expect_error("network delay=5ms..1ms\n", "range start exceeds its end");
  expect_error("sink error=1 colour=red\n", "bad.scenario:1: sink: unknown attribute \"colour\"");
  expect_error("description \"open\n", "bad.scenario:1: unterminated double quote");
  expect_error("name a\nname b\n", "bad.scenario:2: name: given twice");
}

TEST(FaultPlan, SameSeedSamePlanAndFaultsHealBeforeTheQuietTail) {
  auto s = parse_scenario(kGood, "good.scenario");
  ASSERT_TRUE(s.ok());
  Random a(9), b(9);
  const auto pa = plan_faults(*s, a), pb = plan_faults(*s, b);
  ASSERT_EQ(pa.size(), pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) {
    EXPECT_EQ(pa[i].spec, pb[i].spec);
    if (i > 0) {
      EXPECT_LE(pa[i - 1].spec.at, pa[i].spec.at);
    }
    if (pa[i].random) {
      EXPECT_LE(pa[i].spec.at + pa[i].spec.length, s->duration - s->quiet_tail);
    }
  }
  EXPECT_GT(pa.size(), 3u);
}

TEST(CrashPoints, FireOncePerArming) {
  CrashPoints cp;
  cp.arm(3, "effect-before-complete");
  EXPECT_FALSE(cp.should_crash(2, "effect-before-complete"));
  EXPECT_TRUE(cp.should_crash(3, "effect-before-complete"));
  EXPECT_FALSE(cp.should_crash(3, "effect-before-complete"));
}

}  // namespace
}  // namespace kairos::sim
