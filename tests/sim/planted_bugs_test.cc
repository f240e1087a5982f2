// Proves the checker can fail: each planted bug of issue 5 (kSafetyBugs) is
// caught by the swarm within 50 seeds (as `kairos-sim --swarm --runs 50
// --inject-bug=NAME` is), and the seeds up to the catching one pass without
// the switch. The search stops at the first violation to stay fast.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "core/planted_bugs.h"
#include "sim/cluster.h"
#include "sim/fault_plan.h"

namespace kairos::sim {
namespace {

constexpr std::uint64_t kRuns = 50;

Scenario swarm(std::uint64_t seed) {
  Random r(seed);  // as kairos-sim --swarm draws it
  return swarm_scenario(default_swarm_base(), r);
}

class PlantedBug : public ::testing::TestWithParam<std::string_view> {};

TEST_P(PlantedBug, TheSwarmCatchesItAndTheSameSeedsPassWithoutIt) {
  PlantedBugs bugs;
  ASSERT_TRUE(set_planted_bug(bugs, GetParam()));
  std::uint64_t caught = 0;
  std::set<std::string> invariants;
  for (std::uint64_t seed = 1; seed <= kRuns && caught == 0; ++seed) {
    Cluster c(swarm(seed), seed, bugs);
    if (c.run().ok) continue;
    caught = seed;
    for (const auto& v : c.report().violations) invariants.insert(v.invariant);
  }
  ASSERT_NE(caught, 0u) << GetParam() << " survived " << kRuns << " swarm seeds";
  std::string names;
  for (const auto& n : invariants) names += n + " ";
  RecordProperty("caught_by", names);
  std::printf("%.*s: caught at seed %llu by %s\n", static_cast<int>(GetParam().size()),
              GetParam().data(), static_cast<unsigned long long>(caught), names.c_str());
  for (std::uint64_t seed = 1; seed <= caught; ++seed) {
    Cluster c(swarm(seed), seed);
    const RunSummary r = c.run();
    EXPECT_TRUE(r.ok) << r.line() << " fails without the bug: "
                      << (c.report().violations.empty() ? "" : c.report().violations[0].detail);
  }
}

INSTANTIATE_TEST_SUITE_P(AllBugs, PlantedBug, ::testing::ValuesIn(kSafetyBugs),
                         [](const auto& info) {
                           std::string n(info.param);
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace kairos::sim
