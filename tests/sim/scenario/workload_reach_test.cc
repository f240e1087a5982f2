// The workload's reach options: `cancel ... [job=K] [recreate=D]` (a job
// cancelled with runs in flight and created again under its id) and `timing
// ... quantum=D` (time on a grid, so expiries tie with ticks and commits):
// their grammar and canonical form, the grid itself, and runs that show each
// reaches what it exists for.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "sim/scenario/scenario.h"
#include "sim/world/cluster.h"
#include "sim/world/world.h"

namespace kairos::sim {
namespace {

std::string error_of(const std::string& text) {
  auto s = parse_scenario(text, "x.scenario");
  return s.ok() ? std::string("(parsed)") : std::string(s.status().message());
}

TEST(WorkloadReach, CancelTakesAJobLineAndARecreationDelay) {
  auto s = parse_scenario(
      "job interval count=2 every=30s\n"
      "job once count=1 within=10m\n"
      "cancel count=1 at=5m job=1 recreate=3s\n"
      "cancel count=1 at=6m\n",
      "x.scenario");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->cancels.size(), 2u);
  EXPECT_EQ(s->cancels[0].job, 1u);
  EXPECT_EQ(s->cancels[0].recreate_after, absl::Seconds(3));
  EXPECT_EQ(s->cancels[1].job, 0u);
  EXPECT_FALSE(s->cancels[1].recreate_after.has_value());
  const std::string text = format_scenario(*s);
  EXPECT_NE(text.find("cancel count=1 at=5m job=1 recreate=3s\n"), std::string::npos) << text;
  EXPECT_NE(text.find("cancel count=1 at=6m\n"), std::string::npos) << text;
  auto again = parse_scenario(text, "formatted.scenario");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->cancels, s->cancels);

  EXPECT_EQ(error_of("job interval count=1 every=1m\ncancel count=1 at=1m job=2\n"),
            "x.scenario:2: cancel: job: the file has 1 job lines, no job line 2");
  EXPECT_EQ(error_of("job once count=1 within=1m\ncancel count=1 at=1m job=1\n"),
            "x.scenario:2: cancel: job: job line 1 is a one-off; expected a cron or interval job "
            "line");
}

TEST(WorkloadReach, TheQuantumIsOnTheTimingLineAndWrittenOnlyWhenOn) {
  auto s = parse_scenario("timing quantum=100ms\n", "x.scenario");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->timing.quantum, absl::Milliseconds(100));
  EXPECT_NE(format_scenario(*s).find(" quantum=100ms\n"), std::string::npos);
  auto off = parse_scenario("timing poll=1s\n", "x.scenario");
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(format_scenario(*off).find("quantum"), std::string::npos);
  EXPECT_EQ(error_of("timing quantum=11s\n"),
            "x.scenario:1: timing: quantum: expected a duration in [0s, 10s] (0s: off)");
}

TEST(WorkloadReach, OnGridRoundsUpToTheQuantumAndIsTheIdentityWhenOff) {
  const absl::Duration q = absl::Milliseconds(100);
  EXPECT_EQ(on_grid(absl::Microseconds(1), q), q);
  EXPECT_EQ(on_grid(q, q), q);
  EXPECT_EQ(on_grid(q + absl::Microseconds(1), q), 2 * q);
  EXPECT_EQ(on_grid(absl::ZeroDuration(), q), absl::ZeroDuration());
  EXPECT_EQ(on_grid(absl::Microseconds(1234), absl::ZeroDuration()), absl::Microseconds(1234));
}

// A job cancelled with its runs executing and created again: the client
// sees two incarnations of the id, the second's runs exist, and every
// invariant holds (tokens-increase judges the id's grants across both).
TEST(WorkloadReach, ARecreatedJobGetsANewIncarnationWhoseRunsGoOn) {
  auto s = parse_scenario(R"(name recreate
duration 15m
quiet-tail 3m
topology schedulers=2 workers=2 shards=2
job interval count=3 every=10s run=8s..15s overlap=allow max-concurrent=2
cancel count=2 at=3m job=1 recreate=1s
)",
                          "recreate");
  ASSERT_TRUE(s.ok()) << s.status();
  Cluster c(*s, 2);
  const RunSummary r = c.run();
  EXPECT_TRUE(r.ok) << r.line();
  std::map<std::string, std::set<std::uint64_t>> incarnations;
  for (const ClientJob& j : c.workload().client_jobs()) incarnations[j.id].insert(j.incarnation);
  std::size_t recreated = 0;
  for (const auto& [id, incs] : incarnations) recreated += incs.size() == 2;
  EXPECT_EQ(recreated, 2u);
  std::size_t later = 0;  // expected occurrences of the new incarnations
  for (const Occurrence& o : *c.history().expected) later += o.incarnation > 1;
  EXPECT_GT(later, 30u);
}

}  // namespace
}  // namespace kairos::sim
