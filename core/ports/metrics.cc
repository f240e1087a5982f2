#include "core/ports/metrics.h"

#include <algorithm>
#include <utility>

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

std::vector<std::int64_t> lateness_buckets_us() {
  return {1000,      5000,      10000,     25000,      50000,     100000,   250000,
          500000,    1000000,   2500000,   5000000,    10000000,  30000000, 60000000,
          120000000, 300000000, 600000000, 1800000000, 3600000000};
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

template <typename T, typename... Args>
T& find_or_add(std::map<std::string, std::unique_ptr<T>, std::less<>>& series,
               std::string_view name, Args&&... args) {
  auto it = series.find(name);
  if (it == series.end())
    it = series.emplace(std::string(name), std::make_unique<T>(std::forward<Args>(args)...)).first;
  return *it->second;
}

// The series of `all` grouped by family, families in name order (a family's
// lines must be contiguous in the exposition format).
template <typename T>
std::map<std::string_view, std::vector<std::pair<std::string_view, const T*>>> by_family(
    const std::map<std::string, std::unique_ptr<T>, std::less<>>& all) {
  std::map<std::string_view, std::vector<std::pair<std::string_view, const T*>>> out;
  for (const auto& [series, metric] : all)
    out[split_series(series).first].emplace_back(series, metric.get());
  return out;
}
}  // namespace

void Metrics::note_family(std::string_view series, Type type, std::string_view help) {
  const std::string_view family = split_series(series).first;
  KAIROS_CHECK_MSG(!family.empty(), "a metric series needs a name");
  auto it = families_.find(family);
  if (it == families_.end()) it = families_.emplace(std::string(family), Family{type, {}}).first;
  KAIROS_CHECK_MSG(it->second.type == type, "a metric family has one type");
  if (it->second.help.empty() && !help.empty()) it->second.help = std::string(help);
}

std::string_view Metrics::help_of(std::string_view family) const {
  if (auto d = described_.find(family); d != described_.end()) return d->second;
  if (auto f = families_.find(family); f != families_.end()) return f->second.help;
  return {};
}

Counter& Metrics::counter(std::string_view series, std::string_view help) {
  note_family(series, Type::kCounter, help);
  return find_or_add(counters_, series);
}

Gauge& Metrics::gauge(std::string_view series, std::string_view help) {
  note_family(series, Type::kGauge, help);
  return find_or_add(gauges_, series);
}

Histogram& Metrics::histogram(std::string_view series, std::vector<std::int64_t> upper_bounds,
                              std::string_view help) {
  note_family(series, Type::kHistogram, help);
  auto it = histograms_.find(series);
  if (it == histograms_.end())
    it = histograms_
             .emplace(std::string(series), std::make_unique<Histogram>(std::move(upper_bounds)))
             .first;
  return *it->second;
}

void Metrics::describe(std::string_view family, std::string_view help) {
  KAIROS_CHECK_MSG(family.find('{') == std::string_view::npos, "describe() takes a family name");
  described_[std::string(family)] = std::string(help);
}

std::int64_t Metrics::counter_value(std::string_view series) const {
  auto it = counters_.find(series);
  return it == counters_.end() ? 0 : it->second->value();
}

std::int64_t Metrics::gauge_value(std::string_view series) const {
  auto it = gauges_.find(series);
  return it == gauges_.end() ? 0 : it->second->value();
}

const Histogram* Metrics::find_histogram(std::string_view series) const {
  auto it = histograms_.find(series);
  return it == histograms_.end() ? nullptr : it->second.get();
}

std::string Metrics::to_prometheus() const {
  std::string out;
  auto head = [&](std::string_view name, std::string_view type) {
    const std::string_view help = help_of(name);
    if (!help.empty()) absl::StrAppend(&out, "# HELP ", absl_sv(name), " ", absl_sv(help), "\n");
    absl::StrAppend(&out, "# TYPE ", absl_sv(name), " ", absl_sv(type), "\n");
  };
  for (const auto& [name, series] : by_family(counters_)) {
    head(name, "counter");
    for (const auto& [s, c] : series) absl::StrAppend(&out, absl_sv(s), " ", c->value(), "\n");
  }
  for (const auto& [name, series] : by_family(gauges_)) {
    head(name, "gauge");
    for (const auto& [s, g] : series) absl::StrAppend(&out, absl_sv(s), " ", g->value(), "\n");
  }
  for (const auto& [name, series] : by_family(histograms_)) {
    head(name, "histogram");
    for (const auto& [s, hp] : series) {
      const Histogram& h = *hp;
      const std::string_view labels = split_series(s).second;
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
  }
  return out;
}

}  // namespace kairos
