// Metrics: counters and histograms that core code updates and adapters export.
//
// Purpose. Core code counts what happens (runs dispatched, claims rejected,
// stale tokens refused) and measures distributions (dispatch lateness, commit
// latency). Production exports them at /metrics in Prometheus text format;
// the simulator and tests read them directly.
//
// Contract. A Metrics registry belongs to one node and is used from that
// node's event loop only. counter()/histogram() return a reference that stays
// valid for the registry's lifetime; asking again for the same series returns
// the same object. A series name may carry Prometheus labels:
// `kairos_runs_total{outcome="succeeded"}`. Iteration is in series-name order
// (deterministic). Values are integers (no floating point): durations are
// recorded in microseconds.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kairos {

class Counter {
 public:
  void add(std::int64_t n = 1) { value_ += n; }
  std::int64_t value() const { return value_; }

 private:
  std::int64_t value_ = 0;
};

// Fixed upper bounds chosen at creation; an implicit +Inf bucket follows.
class Histogram {
 public:
  explicit Histogram(std::vector<std::int64_t> upper_bounds);
  void observe(std::int64_t value);
  const std::vector<std::int64_t>& upper_bounds() const { return bounds_; }
  // Per-bucket (not cumulative) counts; size() == upper_bounds().size() + 1.
  const std::vector<std::uint64_t>& bucket_counts() const { return counts_; }
  std::uint64_t count() const { return count_; }
  std::int64_t sum() const { return sum_; }

 private:
  std::vector<std::int64_t> bounds_;
  std::vector<std::uint64_t> counts_;
  std::uint64_t count_ = 0;
  std::int64_t sum_ = 0;
};

// Bucket bounds for latencies in microseconds: 100us .. ~100s, roughly x2.5.
std::vector<std::int64_t> latency_buckets_us();

class Metrics {
 public:
  Counter& counter(std::string_view series, std::string_view help = {});
  Histogram& histogram(std::string_view series, std::vector<std::int64_t> upper_bounds,
                       std::string_view help = {});

  // Prometheus text exposition format (version 0.0.4), deterministic order.
  std::string to_prometheus() const;

  // Current value of a counter series, 0 when it does not exist.
  std::int64_t counter_value(std::string_view series) const;

 private:
  struct CounterEntry {
    std::unique_ptr<Counter> counter;
    std::string help;
  };
  struct HistogramEntry {
    std::unique_ptr<Histogram> histogram;
    std::string help;
  };
  std::map<std::string, CounterEntry, std::less<>> counters_;
  std::map<std::string, HistogramEntry, std::less<>> histograms_;
};

}  // namespace kairos
