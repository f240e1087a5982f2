// The corrupt-record fault: its scenario line (parse, format, the errors),
// and a run in which one job's record stops decoding, judged by the
// corruption-contained invariant: the other jobs keep firing, the corrupted
// job's later occurrences are not expected.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <string_view>

#include "sim/scenario/scenario.h"
#include "sim/world/cluster.h"

namespace kairos::sim {
namespace {

constexpr char kScenario[] = R"(name corrupt
duration 15m
quiet-tail 3m
topology schedulers=1 workers=1 shards=1
job interval count=3 every=30s run=1s..2s
job cron count=1 expr="8 * * * *" zone=UTC run=1s..2s
fault corrupt-record at=4m job=cron-1-0
)";

TEST(CorruptRecord, TheFaultLineParsesAndFormatsBack) {
  auto s = parse_scenario(kScenario, "corrupt.scenario");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->faults.size(), 1u);
  EXPECT_EQ(s->faults[0].kind, FaultKind::kCorruptRecord);
  EXPECT_EQ(s->faults[0].job, "cron-1-0");
  EXPECT_EQ(s->faults[0].node, "store");
  auto again = parse_scenario(format_scenario(*s), "formatted.scenario");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->faults, s->faults);
  // Never in the swarm mix: the swarm's draws stay as they were.
  EXPECT_EQ(
      std::count(std::begin(kAllFaultKinds), std::end(kAllFaultKinds), FaultKind::kCorruptRecord),
      0);
}

TEST(CorruptRecord, TheRecordKindParsesAndFormatsBack) {
  for (std::string_view kind : kCorruptibleRecords) {
    // The membership records name no job.
    const std::string job = kind == "node" ? "" : " job=j";
    auto s = parse_scenario(
        "name x\nfault corrupt-record at=1m" + job + " record=" + std::string(kind) + "\n",
        "x.scenario");
    ASSERT_TRUE(s.ok()) << s.status();
    // The job record is the default: written without record=.
    EXPECT_EQ(s->faults[0].record, kind == "job" ? "" : std::string(kind));
    const std::string text = format_scenario(*s);
    EXPECT_EQ(text.find("record=") != std::string::npos, kind != "job") << text;
    auto again = parse_scenario(text, "formatted.scenario");
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(again->faults, s->faults);
  }
  auto bad =
      parse_scenario("name x\nfault corrupt-record at=1m job=j record=lease\n", "x.scenario");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("job, counters, due, run, ledger"), std::string::npos)
      << bad.status();
  auto other = parse_scenario("name x\nfault crash at=1m node=worker-1 record=run\n", "x.scenario");
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("record="), std::string::npos) << other.status();
}

TEST(CorruptRecord, TheFaultNeedsAJobUnlessItIsTheMembershipAndIsNoSwarmKind) {
  auto no_job = parse_scenario("name x\nfault corrupt-record at=1m\n", "x.scenario");
  ASSERT_FALSE(no_job.ok());
  EXPECT_NE(no_job.status().message().find("job="), std::string::npos) << no_job.status();
  auto node_job =
      parse_scenario("name x\nfault corrupt-record at=1m job=j record=node\n", "x.scenario");
  ASSERT_FALSE(node_job.ok());
  EXPECT_NE(node_job.status().message().find("record=node"), std::string::npos)
      << node_job.status();
  auto swarm = parse_scenario("name x\nswarm per-hour=5 kinds=corrupt-record\n", "x.scenario");
  ASSERT_FALSE(swarm.ok());
  EXPECT_NE(swarm.status().message().find("corrupt-record"), std::string::npos);
}

TEST(CorruptRecord, TheOtherJobsKeepFiring) {
  auto s = parse_scenario(kScenario, "corrupt.scenario");
  ASSERT_TRUE(s.ok()) << s.status();
  Cluster c(*s, 1);
  const RunSummary r = c.run();
  std::string first;
  if (!c.report().violations.empty()) first = c.report().violations.front().detail;
  EXPECT_TRUE(r.ok) << first;
  const auto& checked = c.report().checked;
  EXPECT_NE(std::find(checked.begin(), checked.end(), "corruption-contained"), checked.end());
  const History h = c.history();
  ASSERT_NE(h.corrupted, nullptr);
  ASSERT_EQ(h.corrupted->size(), 1u);
  EXPECT_EQ(h.corrupted->front().job, "cron-1-0");
  bool others = false;
  for (const Occurrence& o : *h.expected) {
    EXPECT_FALSE(o.job == "cron-1-0" && o.due >= h.corrupted->front().at) << o.job;
    others = others || (o.job != "cron-1-0" && o.due > h.corrupted->front().at);
  }
  EXPECT_TRUE(others);
}

}  // namespace
}  // namespace kairos::sim
