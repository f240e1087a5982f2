// Metrics: counters, gauges and histograms that core code updates and
// adapters export.
//
// Purpose. Core code counts what happens (runs dispatched, claims rejected,
// stale tokens refused) and measures distributions (dispatch lateness, commit
// latency). Production exports them at /metrics in Prometheus text format;
// the simulator and tests read them directly.
//
// Contract. A Metrics registry belongs to one node and is used from that
// node's event loop only. counter()/gauge()/histogram() return a reference
// that stays valid for the registry's lifetime; asking again for the same
// series returns the same object. A series name may carry Prometheus labels:
// `kairos_runs_total{outcome="succeeded"}`; the part before '{' is its
// family. A family has one type: asking for a series of a family under
// another type is a bug (checked). Its HELP text is the one given by
// describe(), else the first non-empty help given with one of its series.
// Export is in family order within each type (counters, gauges, histograms),
// then series-name order: deterministic. Values are integers (no floating
// point): durations are recorded in microseconds. Updating a metric never
// has any other effect (metrics must not change what a node does).
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

// A value that goes up and down (connections, backlog): set or adjusted.
class Gauge {
 public:
  void set(std::int64_t v) { value_ = v; }
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
// Bucket bounds for lateness in microseconds: 1ms .. 1h (a misfired job can
// be hours late; the tail is coarse).
std::vector<std::int64_t> lateness_buckets_us();

class Metrics {
 public:
  Counter& counter(std::string_view series, std::string_view help = {});
  Gauge& gauge(std::string_view series, std::string_view help = {});
  // `upper_bounds` apply when the series is created; later calls get the
  // existing histogram unchanged.
  Histogram& histogram(std::string_view series, std::vector<std::int64_t> upper_bounds,
                       std::string_view help = {});
  // Sets the HELP text of a family (`name`, no labels) whether or not any of
  // its series exists yet; it wins over help given with a series. A family
  // with no series is not exported.
  void describe(std::string_view family, std::string_view help);

  // Prometheus text exposition format (version 0.0.4), deterministic order.
  std::string to_prometheus() const;

  // Current value of a counter series, 0 when it does not exist.
  std::int64_t counter_value(std::string_view series) const;
  // Current value of a gauge series, 0 when it does not exist.
  std::int64_t gauge_value(std::string_view series) const;
  // The histogram of a series, null when it does not exist.
  const Histogram* find_histogram(std::string_view series) const;

 private:
  enum class Type { kCounter, kGauge, kHistogram };
  // Records the series' family under `type` (checked against an earlier
  // type) and keeps the first non-empty help given for it.
  void note_family(std::string_view series, Type type, std::string_view help);
  std::string_view help_of(std::string_view family) const;

  struct Family {
    Type type = Type::kCounter;
    std::string help;  // from a series' creation
  };
  std::map<std::string, Family, std::less<>> families_;
  std::map<std::string, std::string, std::less<>> described_;  // describe()
  std::map<std::string, std::unique_ptr<Counter>, std::less<>> counters_;
  std::map<std::string, std::unique_ptr<Gauge>, std::less<>> gauges_;
  std::map<std::string, std::unique_ptr<Histogram>, std::less<>> histograms_;
};

}  // namespace kairos
