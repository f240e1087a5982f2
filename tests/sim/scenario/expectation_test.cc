// Scenario expectations (`expect FACT OP N [job=K]`, sim/oracle/expectation.h):
// the directive's grammar and its errors, its canonical form, and the
// checker's judgement of it on hand-made histories and on a real run.
#include "sim/oracle/expectation.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/kernel/planted_bugs.h"
#include "sim/scenario/scenario.h"
#include "sim/world/cluster.h"
#include "sim/world/fault_plan.h"
#include "tests/support/history_builder.h"

namespace kairos::sim {
namespace {

std::string error_of(const std::string& text) {
  auto s = parse_scenario(text, "x.scenario");
  return s.ok() ? std::string("(parsed)") : std::string(s.status().message());
}

TEST(Expectations, ParseAFactAComparisonAndANumber) {
  auto s = parse_scenario(
      "job interval count=2 every=30s\n"
      "expect kernel.clock-skew-fenced >= 1\n"
      "expect runs.max-active == 2 job=1\n"
      "expect fault.pause > 0\n"
      "expect ledger.skipped_misfire != 0\n",
      "x.scenario");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->expectations.size(), 4u);
  EXPECT_EQ(s->expectations[0], (Expectation{"kernel.clock-skew-fenced", Expectation::Op::kGe, 1}));
  EXPECT_EQ(s->expectations[1], (Expectation{"runs.max-active", Expectation::Op::kEq, 2, 1}));
  EXPECT_EQ(s->expectations[2].op, Expectation::Op::kGt);
  EXPECT_EQ(s->expectations[3].op, Expectation::Op::kNe);
  // The canonical form reads back to the same expectations (and is a fixed
  // point; the Scenarios differ only where a default is finer than the
  // grammar's millisecond).
  auto again = parse_scenario(format_scenario(*s), "formatted.scenario");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->expectations, s->expectations);
  EXPECT_EQ(format_scenario(*again), format_scenario(*s));
  EXPECT_EQ(expectation_text(s->expectations[1]), "expect runs.max-active == 2 job=1");
}

TEST(Expectations, ErrorsNameTheLineAndWhatIsWrong) {
  EXPECT_EQ(error_of("\nexpect kernel.lease-lapsed >=\n"),
            "x.scenario:2: expect: expected FACT OP NUMBER [job=K], e.g. \"expect "
            "kernel.clock-skew-fenced >= 1\"");
  EXPECT_EQ(error_of("expect kernel.lease-lapsd >= 1\n").substr(0, 60),
            "x.scenario:1: expect: unknown fact \"kernel.lease-lapsd\"; exp");
  EXPECT_NE(error_of("expect bogus >= 1\n").find("runs.max-active, ledger.fired"),
            std::string::npos);
  EXPECT_EQ(error_of("expect fault.earthquake >= 1\n").substr(0, 50),
            "x.scenario:1: expect: unknown fact \"fault.earthqua");
  EXPECT_EQ(error_of("expect kernel.lease-lapsed => 1\n"),
            "x.scenario:1: expect: kernel.lease-lapsed: expected a comparison ==, !=, <, <=, > "
            "or >=, got \"=>\"");
  EXPECT_EQ(error_of("expect kernel.lease-lapsed >= -1\n"),
            "x.scenario:1: expect: kernel.lease-lapsed: expected a non-negative integer, got "
            "\"-1\"");
  EXPECT_EQ(error_of("expect kernel.lease-lapsed >= many\n"),
            "x.scenario:1: expect: kernel.lease-lapsed: expected a non-negative integer, got "
            "\"many\"");
  EXPECT_EQ(error_of("expect kernel.lease-lapsed >= 1 job=1\njob interval count=1 every=1m\n"),
            "x.scenario:1: expect: kernel.lease-lapsed: job= scopes run counters (runs.*, "
            "ledger.*) only, not a coverage mark");
  EXPECT_EQ(error_of("job interval count=1 every=1m\nexpect runs.created >= 1 job=2\n"),
            "x.scenario:2: expect: runs.created: job: the file has 1 job lines, no job line 2");
  EXPECT_EQ(error_of("expect runs.created >= 1 seed=3\n"),
            "x.scenario:1: expect: unknown attribute \"seed\"");
}

// A history with one job ("every-0-0", job line 1) and marks.
struct ExpectHist : test_support::Hist {
  std::map<std::string, std::uint64_t, std::less<>> marks{{"kernel.clock-skew-fenced", 2}};
  std::vector<Expectation> expectations;
  bool met() const {
    History h = history();
    h.marks = &marks;
    h.expectations = &expectations;
    for (const auto& v : Checker::with_defaults().run(h, {}).violations)
      if (v.invariant == "expectations-met") return false;
    return true;
  }
};

TEST(Expectations, TheCheckerJudgesMarksAndRunCounters) {
  ExpectHist x;
  LedgerRecord late;
  late.incarnation = 1;
  late.count = 1;
  late.outcome = LedgerOutcome::kLate;
  for (int i = 0; i < 3; ++i) {
    late.nominal = late.through = late.fire_at = x.t0 + absl::Seconds(10 * i);
    x.commit_ops(absl::Seconds(100 + i), 1, {test_support::Hist::put("every-0-0", late)});
  }
  x.expectations = {{"kernel.clock-skew-fenced", Expectation::Op::kGe, 1}};
  EXPECT_TRUE(x.met());
  x.expectations = {{"kernel.clock-skew-fenced", Expectation::Op::kGe, 3}};
  EXPECT_FALSE(x.met());
  x.expectations = {{"kernel.leader-failover", Expectation::Op::kEq, 0}};  // never hit
  EXPECT_TRUE(x.met());
  x.expectations = {{"ledger.late", Expectation::Op::kEq, 3}};
  EXPECT_TRUE(x.met());
  x.expectations = {{"ledger.late", Expectation::Op::kEq, 3, 1}};
  EXPECT_TRUE(x.met());
  x.expectations = {{"ledger.late", Expectation::Op::kEq, 0, 2}};  // job line 2 has none
  EXPECT_TRUE(x.met());
  x.expectations = {{"ledger.late", Expectation::Op::kLt, 3}};
  EXPECT_FALSE(x.met());
}

TEST(Expectations, EveryMarkARunHitsIsAFactAnExpectationMayName) {
  Random r(1);
  Cluster c(swarm_scenario(default_swarm_base(), r), 1);
  c.run();
  ASSERT_FALSE(c.world().marks().empty());
  for (const auto& [name, n] : c.world().marks())
    EXPECT_EQ(fact_kind(name), FactKind::kMark) << name << " is not in sim/world/marks.h";
}

}  // namespace
}  // namespace kairos::sim
