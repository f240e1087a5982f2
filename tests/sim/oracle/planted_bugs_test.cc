// Proves the checker can fail: each planted bug (kCaughtBugs: the safety bugs
// and the policy bugs) is caught by the swarm within 50
// seeds (as `kairos-sim --swarm --runs 50 --inject-bug=NAME` is) -- a policy
// bug by the invariant written for it -- and the seeds up to the catching one
// pass without the switch. The search stops at the first violation.
#include "core/kernel/planted_bugs.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "sim/world/cluster.h"
#include "sim/world/fault_plan.h"

namespace kairos::sim {
namespace {

constexpr std::uint64_t kRuns = 50;

Scenario swarm(std::uint64_t seed) {
  Random r(seed);  // as kairos-sim --swarm draws it
  return swarm_scenario(default_swarm_base(), r);
}

class PlantedBug : public ::testing::TestWithParam<PlantedBugCheck> {};

TEST(PlantedBugList, EveryBugTheCoreCanPlantIsChecked) {
  ASSERT_EQ(std::size(kCaughtBugs), kPlantedBugNames.size());
  for (std::size_t i = 0; i < kPlantedBugNames.size(); ++i)
    EXPECT_EQ(kCaughtBugs[i].bug, kPlantedBugNames[i]);
}

TEST_P(PlantedBug, TheSwarmCatchesItAndTheSameSeedsPassWithoutIt) {
  const std::string_view bug = GetParam().bug;
  PlantedBugs bugs;
  ASSERT_TRUE(set_planted_bug(bugs, bug));
  std::uint64_t caught = 0;
  std::set<std::string> invariants;
  for (std::uint64_t seed = 1; seed <= kRuns && caught == 0; ++seed) {
    Cluster c(swarm(seed), seed, bugs);
    if (c.run().ok) continue;
    caught = seed;
    for (const auto& v : c.report().violations) invariants.insert(v.invariant);
  }
  ASSERT_NE(caught, 0u) << bug << " survived " << kRuns << " swarm seeds";
  if (!GetParam().invariant.empty()) {
    EXPECT_TRUE(invariants.count(std::string(GetParam().invariant)))
        << bug << " was caught, but not by " << GetParam().invariant;
  }
  std::string names;
  for (const auto& n : invariants) names += n + " ";
  RecordProperty("caught_by", names);
  std::printf("%.*s: caught at seed %llu by %s\n", static_cast<int>(bug.size()), bug.data(),
              static_cast<unsigned long long>(caught), names.c_str());
  for (std::uint64_t seed = 1; seed <= caught; ++seed) {
    Cluster c(swarm(seed), seed);
    const RunSummary r = c.run();
    EXPECT_TRUE(r.ok) << r.line() << " fails without the bug: "
                      << (c.report().violations.empty() ? "" : c.report().violations[0].detail);
  }
}

INSTANTIATE_TEST_SUITE_P(AllBugs, PlantedBug, ::testing::ValuesIn(kCaughtBugs),
                         [](const auto& info) {
                           std::string n(info.param.bug);
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace kairos::sim
