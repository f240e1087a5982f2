// Gauges, family HELP texts and the exposition's grouping by family.
#include <gtest/gtest.h>

#include <string>

#include "core/ports/metrics.h"

namespace kairos {
namespace {

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(Gauge, SetAndAddMoveBothWays) {
  Metrics m;
  Gauge& g = m.gauge("kairos_workers_connected{kind=\"remote\"}", "Workers connected");
  g.add();
  g.add(2);
  g.add(-1);
  EXPECT_EQ(g.value(), 2);
  EXPECT_EQ(m.gauge_value("kairos_workers_connected{kind=\"remote\"}"), 2);
  g.set(-5);
  EXPECT_EQ(m.gauge_value("kairos_workers_connected{kind=\"remote\"}"), -5);
  EXPECT_EQ(&m.gauge("kairos_workers_connected{kind=\"remote\"}"), &g);
  EXPECT_EQ(m.gauge_value("kairos_missing"), 0);
}

TEST(Gauge, ExportedWithTypeGaugeAndHelp) {
  Metrics m;
  m.gauge("kairos_due_backlog{shard=\"1\"}", "Due entries").set(7);
  m.gauge("kairos_due_backlog{shard=\"0\"}").set(0);
  const std::string text = m.to_prometheus();
  EXPECT_NE(text.find("# HELP kairos_due_backlog Due entries\n# TYPE kairos_due_backlog gauge\n"
                      "kairos_due_backlog{shard=\"0\"} 0\nkairos_due_backlog{shard=\"1\"} 7\n"),
            std::string::npos)
      << text;
}

TEST(Metrics, DescribeGivesHelpToAFamilyWhoseSeriesCameWithout) {
  Metrics m;
  m.counter("kairos_leader_lost_total").add();
  m.describe("kairos_leader_lost_total", "Shard leaderships lost");
  m.describe("kairos_never_created_total", "Not exported");
  const std::string text = m.to_prometheus();
  EXPECT_NE(text.find("# HELP kairos_leader_lost_total Shard leaderships lost\n"
                      "# TYPE kairos_leader_lost_total counter\nkairos_leader_lost_total 1\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("kairos_never_created_total"), std::string::npos);
}

TEST(Metrics, HelpGivenWithALaterSeriesStillCounts) {
  Metrics m;
  m.counter("kairos_runs_total{outcome=\"failed\"}").add();
  m.counter("kairos_runs_total{outcome=\"succeeded\"}", "Runs finished").add();
  EXPECT_NE(m.to_prometheus().find("# HELP kairos_runs_total Runs finished\n"), std::string::npos);
}

TEST(Metrics, AFamilyIsContiguousEvenWhenAnotherNameSortsBetweenItsSeries) {
  // "a_total_x" sorts between "a_total" and "a_total{...}" by series name.
  Metrics m;
  m.counter("kairos_a_total").add();
  m.counter("kairos_a_total_x").add();
  m.counter("kairos_a_total{k=\"v\"}").add();
  const std::string text = m.to_prometheus();
  EXPECT_EQ(occurrences(text, "# TYPE kairos_a_total counter"), 1u);
  EXPECT_NE(
      text.find("# TYPE kairos_a_total counter\nkairos_a_total 1\nkairos_a_total{k=\"v\"} 1\n"),
      std::string::npos)
      << text;
}

TEST(Metrics, OrderIsCountersGaugesHistograms) {
  Metrics m;
  m.histogram("kairos_h_us", {1}).observe(1);
  m.gauge("kairos_g").set(1);
  m.counter("kairos_z_total").add();
  const std::string text = m.to_prometheus();
  EXPECT_LT(text.find("# TYPE kairos_z_total counter"), text.find("# TYPE kairos_g gauge"));
  EXPECT_LT(text.find("# TYPE kairos_g gauge"), text.find("# TYPE kairos_h_us histogram"));
  ASSERT_NE(m.find_histogram("kairos_h_us"), nullptr);
  EXPECT_EQ(m.find_histogram("kairos_h_us")->count(), 1u);
  EXPECT_EQ(m.find_histogram("kairos_other_us"), nullptr);
}

TEST(MetricsDeathTest, OneFamilyOneType) {
  Metrics m;
  m.counter("kairos_x_total{a=\"1\"}");
  EXPECT_DEATH(m.gauge("kairos_x_total{a=\"2\"}"), "one type");
}

}  // namespace
}  // namespace kairos
