// The scenario language's directive table (sim/scenario/scenario.cc): every
// directive's sample is canonical text that parses and formats back to
// itself, so a directive whose parse and format disagree fails here.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "core/base/absl_compat.h"
#include "sim/scenario/scenario.h"

namespace kairos::sim {
namespace {

// The lines of `text` whose first word is one of `keywords`.
std::string lines_of(const std::string& text, const std::vector<std::string_view>& keywords) {
  std::string out;
  for (absl::string_view l : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    const std::string line(l);
    const std::string first = line.substr(0, line.find(' '));
    for (std::string_view k : keywords)
      if (first == k) out += line + "\n";
  }
  return out;
}

TEST(ScenarioDirectives, EveryDirectiveRoundTripsItsSample) {
  const auto directives = scenario_directives();
  ASSERT_FALSE(directives.empty());
  for (const ScenarioDirective& d : directives) {
    SCOPED_TRACE(std::string(d.keywords.front()));
    ASSERT_FALSE(d.sample.empty());
    auto s = parse_scenario(d.sample, "sample.scenario");
    ASSERT_TRUE(s.ok()) << s.status();
    const std::string text = format_scenario(*s);
    // format(parse(x)) == x for the directive's own lines...
    EXPECT_EQ(lines_of(text, d.keywords), std::string(d.sample));
    // ...and the whole canonical text is a fixed point (the Scenarios
    // themselves differ where a default is finer than the grammar's
    // millisecond, e.g. the network's 200us minimum delay).
    auto again = parse_scenario(text, "formatted.scenario");
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(format_scenario(*again), text);
  }
}

TEST(ScenarioDirectives, EveryKeywordIsInOneEntryAndEveryKeywordIsUsedByItsSample) {
  std::set<std::string_view> seen;
  for (const ScenarioDirective& d : scenario_directives()) {
    for (std::string_view k : d.keywords) {
      EXPECT_TRUE(seen.insert(k).second) << k << " is in two entries";
      EXPECT_NE(lines_of(std::string(d.sample), {k}), "") << k << " has no sample line";
    }
  }
}

TEST(ScenarioDirectives, AnUnknownDirectiveListsEveryKeywordInTableOrder) {
  std::string all;
  for (const ScenarioDirective& d : scenario_directives())
    for (std::string_view k : d.keywords) all += (all.empty() ? "" : ", ") + std::string(k);
  auto s = parse_scenario("bogus\n", "x.scenario");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(std::string(s.status().message()),
            "x.scenario:1: unknown directive \"bogus\"; expected one of " + all);
}

}  // namespace
}  // namespace kairos::sim
