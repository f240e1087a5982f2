// The one table of invariant names (sim/oracle/invariant_names.h): the
// checker runs exactly its entries, in its order, every finding is recorded
// under a registered name, and recording one under any other name aborts.
#include "sim/oracle/invariant_names.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "core/kernel/planted_bugs.h"
#include "sim/oracle/checker.h"
#include "sim/oracle/replay.h"
#include "sim/world/cluster.h"
#include "sim/world/fault_plan.h"

namespace kairos::sim {
namespace {

TEST(InvariantNames, EveryNameIsUniqueAndDescribed) {
  std::set<std::string_view> names;
  for (const InvariantInfo& i : kInvariants) {
    EXPECT_TRUE(names.insert(i.name).second) << i.name << " is listed twice";
    EXPECT_FALSE(i.description.empty()) << i.name;
    EXPECT_TRUE(is_registered_invariant(i.name));
  }
  EXPECT_FALSE(is_registered_invariant("no-such-invariant"));
  EXPECT_FALSE(is_registered_invariant(""));
}

TEST(InvariantNames, TheCheckerRunsExactlyTheTableInItsOrder) {
  const Checker c = Checker::with_defaults();
  ASSERT_EQ(c.invariants().size(), kInvariants.size());
  for (std::size_t i = 0; i < kInvariants.size(); ++i) {
    EXPECT_EQ(c.invariants()[i].name(), kInvariants[i].name);
    EXPECT_EQ(c.invariants()[i].description(), kInvariants[i].description);
  }
}

TEST(InvariantNames, FindingsUnderEveryRegisteredNameAreStampedAndCapped) {
  for (const InvariantInfo& i : kInvariants) {
    std::vector<Violation> out;
    Findings f(i.name, out);
    for (std::size_t k = 0; k < kMaxPerInvariant + 3; ++k) f.add(Violation{});
    EXPECT_FALSE(f.open());
    ASSERT_EQ(out.size(), kMaxPerInvariant) << i.name;
    for (const Violation& v : out) EXPECT_EQ(v.invariant, i.name);
  }
}

TEST(InvariantNamesDeathTest, AFindingUnderAnUnregisteredNameAborts) {
  std::vector<Violation> out;
  EXPECT_DEATH(Findings("no-such-invariant", out), "invariant_names.h lacks");
}

TEST(InvariantNames, ASwarmRunReportsOnlyRegisteredNames) {
  // A seed the planted-bug test catches, so there are findings to look at.
  PlantedBugs bugs;
  ASSERT_TRUE(set_planted_bug(bugs, "reuse-token"));
  Random r(1);
  Cluster c(swarm_scenario(default_swarm_base(), r), 1, bugs);
  EXPECT_FALSE(c.run().ok);
  ASSERT_FALSE(c.report().violations.empty());
  for (const Violation& v : c.report().violations)
    EXPECT_TRUE(is_registered_invariant(v.invariant));
  for (const std::string& n : c.report().checked) EXPECT_TRUE(is_registered_invariant(n));
}

}  // namespace
}  // namespace kairos::sim
