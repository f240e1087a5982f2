#include "core/ports/metrics.h"

#include <gtest/gtest.h>

namespace kairos {
namespace {

TEST(Metrics, CountersAreStableAndExported) {
  Metrics m;
  m.counter("kairos_runs_total{outcome=\"ok\"}", "Runs finished").add(3);
  m.counter("kairos_runs_total{outcome=\"failed\"}").add();
  Counter& c = m.counter("kairos_runs_total{outcome=\"ok\"}");
  c.add(2);
  EXPECT_EQ(m.counter_value("kairos_runs_total{outcome=\"ok\"}"), 5);
  EXPECT_EQ(m.counter_value("missing"), 0);
  const std::string text = m.to_prometheus();
  EXPECT_NE(text.find("# TYPE kairos_runs_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("kairos_runs_total{outcome=\"ok\"} 5\n"), std::string::npos);
  EXPECT_NE(text.find("kairos_runs_total{outcome=\"failed\"} 1\n"), std::string::npos);
  // One TYPE line per metric name even with several label sets.
  EXPECT_EQ(text.find("# TYPE kairos_runs_total"), text.rfind("# TYPE kairos_runs_total"));
}

TEST(Metrics, HistogramBucketsAreCumulativeInExport) {
  Metrics m;
  Histogram& h = m.histogram("kairos_lateness_us", {10, 100});
  h.observe(5);
  h.observe(10);
  h.observe(50);
  h.observe(1000);
  EXPECT_EQ(h.count(), 4u);
  EXPECT_EQ(h.sum(), 1065);
  EXPECT_EQ(h.bucket_counts(), (std::vector<std::uint64_t>{2, 1, 1}));
  const std::string text = m.to_prometheus();
  EXPECT_NE(text.find("kairos_lateness_us_bucket{le=\"10\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("kairos_lateness_us_bucket{le=\"100\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("kairos_lateness_us_bucket{le=\"+Inf\"} 4\n"), std::string::npos);
  EXPECT_NE(text.find("kairos_lateness_us_count 4\n"), std::string::npos);
}

}  // namespace
}  // namespace kairos
