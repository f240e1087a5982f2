#include "core/ports/metrics.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "core/base/check.h"

namespace kairos {

Histogram::Histogram(std::vector<std::int64_t> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {
  KAIROS_CHECK_MSG(std::is_sorted(bounds_.begin(), bounds_.end()) &&
                       std::adjacent_find(bounds_.begin(), bounds_.end()) == bounds_.end(),
                   "histogram bounds must be strictly increasing");
}

void Histogram::observe(std::int64_t value) {
  const auto it = std::lower_bound(bounds_.begin(), bounds_.end(), value);
  ++counts_[static_cast<std::size_t>(it - bounds_.begin())];
  ++count_;
  sum_ += value;
}

std::vector<std::int64_t> latency_buckets_us() {
  return {100,    250,    500,     1000,    2500,    5000,     10000,    25000,    50000,    100000,
          250000, 500000, 1000000, 2500000, 5000000, 10000000, 25000000, 50000000, 100000000};
}

Counter& Metrics::counter(std::string_view series, std::string_view help) {
  auto it = counters_.find(series);
  if (it == counters_.end())
    it = counters_
             .emplace(std::string(series),
                      CounterEntry{std::make_unique<Counter>(), std::string(help)})
             .first;
  return *it->second.counter;
}

Histogram& Metrics::histogram(std::string_view series, std::vector<std::int64_t> upper_bounds,
                              std::string_view help) {
  auto it = histograms_.find(series);
  if (it == histograms_.end())
    it = histograms_
             .emplace(std::string(series),
                      HistogramEntry{std::make_unique<Histogram>(std::move(upper_bounds)),
                                     std::string(help)})
             .first;
  return *it->second.histogram;
}

std::int64_t Metrics::counter_value(std::string_view series) const {
  auto it = counters_.find(series);
  return it == counters_.end() ? 0 : it->second.counter->value();
}

namespace {
// Splits `name{labels}` into the metric name and the label text inside braces.
std::pair<std::string_view, std::string_view> split_series(std::string_view series) {
  const auto brace = series.find('{');
  if (brace == std::string_view::npos || series.back() != '}') return {series, {}};
  return {series.substr(0, brace), series.substr(brace + 1, series.size() - brace - 2)};
}

std::string with_label(std::string_view name, std::string_view suffix, std::string_view labels,
                       std::string_view extra) {
  std::string out = absl::StrCat(absl_sv(name), absl_sv(suffix));
  if (labels.empty() && extra.empty()) return out;
  absl::StrAppend(&out, "{", absl_sv(labels), (!labels.empty() && !extra.empty()) ? "," : "",
                  absl_sv(extra), "}");
  return out;
}
}  // namespace

std::string Metrics::to_prometheus() const {
  std::string out;
  std::string_view last_name;
  for (const auto& [series, entry] : counters_) {
    auto [name, labels] = split_series(series);
    if (name != last_name) {
      if (!entry.help.empty())
        absl::StrAppend(&out, "# HELP ", absl_sv(name), " ", entry.help, "\n");
      absl::StrAppend(&out, "# TYPE ", absl_sv(name), " counter\n");
      last_name = name;
    }
    absl::StrAppend(&out, series, " ", entry.counter->value(), "\n");
  }
  last_name = {};
  for (const auto& [series, entry] : histograms_) {
    auto [name, labels] = split_series(series);
    if (name != last_name) {
      if (!entry.help.empty())
        absl::StrAppend(&out, "# HELP ", absl_sv(name), " ", entry.help, "\n");
      absl::StrAppend(&out, "# TYPE ", absl_sv(name), " histogram\n");
      last_name = name;
    }
    const Histogram& h = *entry.histogram;
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i <= h.upper_bounds().size(); ++i) {
      cumulative += h.bucket_counts()[i];
      const std::string le = i < h.upper_bounds().size()
                                 ? absl::StrCat("le=\"", h.upper_bounds()[i], "\"")
                                 : std::string("le=\"+Inf\"");
      absl::StrAppend(&out, with_label(name, "_bucket", labels, le), " ", cumulative, "\n");
    }
    absl::StrAppend(&out, with_label(name, "_sum", labels, ""), " ", h.sum(), "\n");
    absl::StrAppend(&out, with_label(name, "_count", labels, ""), " ", h.count(), "\n");
  }
  return out;
}

}  // namespace kairos
