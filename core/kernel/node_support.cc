#include "core/kernel/node_support.h"

#include <array>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "core/base/check.h"
#include "core/kernel/event_kinds.h"

namespace kairos {

namespace {

std::string build_counter_name(std::string_view kind) {
  std::string name = absl::StrCat("kairos_", absl_sv(kind), "_total");
  for (char& c : name)
    if (c == '.') c = '_';
  return name;
}

// The counter names of the registered kinds, built once (thread-safe static
// initialisation, immutable afterwards), in kAllEventKinds order.
const std::array<std::string, event_kinds::kAllEventKinds.size()>& registered_names() {
  static const auto names = [] {
    std::array<std::string, event_kinds::kAllEventKinds.size()> out;
    for (std::size_t i = 0; i < out.size(); ++i)
      out[i] = build_counter_name(event_kinds::kAllEventKinds[i]);
    return out;
  }();
  return names;
}

// The registered name of `kind`, or nullptr for a kind outside the registry.
const std::string* registered_name(std::string_view kind) {
  const auto& names = registered_names();
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string_view k = event_kinds::kAllEventKinds[i];
    if (k.data() == kind.data() && k.size() == kind.size()) return &names[i];
  }
  for (std::size_t i = 0; i < names.size(); ++i)
    if (event_kinds::kAllEventKinds[i] == kind) return &names[i];
  return nullptr;
}

Counter& counter_of(Metrics& metrics, std::string_view kind) {
  if (const std::string* name = registered_name(kind)) return metrics.counter(*name);
  return metrics.counter(build_counter_name(kind));
}

void stamp(Event& event, absl::Time now, std::string_view who_field, const std::string& who) {
  KAIROS_CHECK_MSG(!event.kind.empty(), "an event needs a kind");
  KAIROS_CHECK(!who_field.empty());
  event.at = now;
  if (!event.find(who_field)) event.with(who_field, who);
}

}  // namespace

std::string event_counter_name(std::string_view kind) {
  if (const std::string* name = registered_name(kind)) return *name;
  return build_counter_name(kind);
}

Counter& EventCounters::of(std::string_view kind) {
  for (const Entry& e : entries_)
    if (e.data == kind.data() && e.size == kind.size()) return *e.counter;
  Counter& c = counter_of(metrics_, kind);
  entries_.push_back({kind.data(), kind.size(), &c});
  return c;
}

Counter& LabelledCounters::of(std::string_view value) {
  for (const Entry& e : entries_)
    if (e.value == value) return *e.counter;
  Counter& c = metrics_.counter(
      absl::StrCat(absl_sv(family_), "{", absl_sv(label_), "=\"", absl_sv(value), "\"}"));
  entries_.push_back({std::string(value), &c});
  return c;
}

void record_event(Event event, absl::Time now, std::string_view who_field, const std::string& who,
                  EventLog& events, Metrics& metrics) {
  stamp(event, now, who_field, who);
  counter_of(metrics, event.kind).add();
  events.record(std::move(event));
}

void record_event(Event event, absl::Time now, std::string_view who_field, const std::string& who,
                  EventLog& events, EventCounters& counters) {
  stamp(event, now, who_field, who);
  counters.of(event.kind).add();
  events.record(std::move(event));
}

absl::Duration backoff_cap(absl::Duration base, absl::Duration max, std::uint32_t attempt) {
  std::int64_t cap = absl::ToInt64Microseconds(base);
  const std::int64_t top = absl::ToInt64Microseconds(max);
  KAIROS_CHECK_MSG(cap >= 0 && cap <= top, "backoff needs 0 < base <= max");
  for (std::uint32_t i = 1; i < attempt && cap < top; ++i) cap *= 2;
  if (cap > top) cap = top;
  KAIROS_CHECK(cap >= absl::ToInt64Microseconds(base) && cap <= top);
  return absl::Microseconds(cap);
}

absl::Duration retry_backoff(Random& random, absl::Duration base, absl::Duration max,
                             std::uint32_t attempt) {
  const std::int64_t cap = absl::ToInt64Microseconds(backoff_cap(base, max, attempt));
  const std::int64_t wait = random.between(cap / 2, cap);
  KAIROS_CHECK(wait >= cap / 2 && wait <= cap);
  return absl::Microseconds(wait);
}

}  // namespace kairos
