// LabelledCounters: one counter per label value, resolved once, the same
// series as counting `family{label="value"}` by name; no series for a value
// never counted. And the node's runs-by-outcome series, counted through it.
#include <gtest/gtest.h>

#include <string>

#include "core/kernel/node_metrics.h"
#include "core/kernel/node_support.h"

namespace kairos {
namespace {

TEST(LabelledCounters, CountsTheSeriesNamedByFamilyLabelAndValue) {
  Metrics metrics;
  LabelledCounters runs(metrics, node_metrics::kRuns, "outcome");
  Counter& succeeded = runs.of("succeeded");
  succeeded.add();
  runs.of("succeeded").add();
  runs.of(std::string("failed")).add();
  EXPECT_EQ(&runs.of("succeeded"), &succeeded);
  EXPECT_EQ(&succeeded, &metrics.counter("kairos_runs_total{outcome=\"succeeded\"}"));
  EXPECT_EQ(metrics.counter_value("kairos_runs_total{outcome=\"succeeded\"}"), 2);
  EXPECT_EQ(metrics.counter_value("kairos_runs_total{outcome=\"failed\"}"), 1);
}

TEST(LabelledCounters, AValueNeverCountedHasNoSeries) {
  Metrics metrics;
  LabelledCounters runs(metrics, "kairos_things_total", "kind");
  runs.of("a").add();
  const std::string text = metrics.to_prometheus();
  EXPECT_NE(text.find("kairos_things_total{kind=\"a\"} 1"), std::string::npos);
  EXPECT_EQ(text.find("kind=\"b\""), std::string::npos);
}

TEST(LabelledCounters, SharesTheRegistryWithCountingByName) {
  Metrics metrics;
  metrics.counter("kairos_runs_total{outcome=\"cancelled\"}").add();
  LabelledCounters runs(metrics, node_metrics::kRuns, "outcome");
  runs.of("cancelled").add();
  EXPECT_EQ(metrics.counter_value("kairos_runs_total{outcome=\"cancelled\"}"), 2);
}

}  // namespace
}  // namespace kairos
