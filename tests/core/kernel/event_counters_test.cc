// EventCounters: each kind's counter resolved once per registry, the same
// series record_event counts by name, and no series for a kind never seen.
#include <gtest/gtest.h>

#include <string>

#include "core/kernel/event_kinds.h"
#include "core/kernel/node_support.h"
#include "core/twins/memory_event_log.h"

namespace kairos {
namespace {

TEST(EventCounters, CountsTheSameSeriesAsCountingByName) {
  Metrics metrics;
  EventCounters counters(metrics);
  MemoryEventLog log;
  const absl::Time now = absl::FromUnixSeconds(1000);
  for (int i = 0; i < 3; ++i) {
    Event e;
    e.kind = event_kinds::kRunClaimed;
    record_event(std::move(e), now, "worker", "w1", log, counters);
  }
  Event by_name;
  by_name.kind = event_kinds::kRunClaimed;
  record_event(std::move(by_name), now, "worker", "w1", log, metrics);
  EXPECT_EQ(metrics.counter_value("kairos_run_claimed_total"), 4);
  EXPECT_EQ(&counters.of(event_kinds::kRunClaimed), &metrics.counter("kairos_run_claimed_total"));
  ASSERT_EQ(log.events().size(), 4u);
  EXPECT_EQ(std::get<std::string>(*log.events()[0].find("worker")), "w1");
  EXPECT_EQ(log.events()[0].at, now);
}

TEST(EventCounters, AKindNeverRecordedHasNoSeries) {
  Metrics metrics;
  EventCounters counters(metrics);
  counters.of(event_kinds::kRunCompleted).add();
  EXPECT_EQ(metrics.to_prometheus().find("kairos_run_claimed_total"), std::string::npos);
  EXPECT_NE(metrics.to_prometheus().find("kairos_run_completed_total"), std::string::npos);
}

TEST(EventCounters, AKindOutsideTheRegistryIsNamedTheSameWay) {
  Metrics metrics;
  EventCounters counters(metrics);
  static constexpr std::string_view kOther = "server.started";
  counters.of(kOther).add(2);
  EXPECT_EQ(metrics.counter_value("kairos_server_started_total"), 2);
  EXPECT_EQ(event_counter_name(kOther), "kairos_server_started_total");
}

TEST(EventCounters, RegisteredNamesMatchTheRule) {
  for (std::string_view kind : event_kinds::kAllEventKinds) {
    std::string expected = "kairos_" + std::string(kind) + "_total";
    for (char &c : expected)
      if (c == '.') c = '_';
    EXPECT_EQ(event_counter_name(kind), expected);
    EXPECT_EQ(event_counter_name(std::string(kind)), expected);
  }
}

}  // namespace
}  // namespace kairos
