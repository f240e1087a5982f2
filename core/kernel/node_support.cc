#include "core/kernel/node_support.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "core/base/check.h"

namespace kairos {

std::string event_counter_name(std::string_view kind) {
  std::string name = absl::StrCat("kairos_", absl_sv(kind), "_total");
  for (char& c : name)
    if (c == '.') c = '_';
  return name;
}

void record_event(Event event, absl::Time now, std::string_view who_field, const std::string& who,
                  EventLog& events, Metrics& metrics) {
  KAIROS_CHECK_MSG(!event.kind.empty(), "an event needs a kind");
  KAIROS_CHECK(!who_field.empty());
  event.at = now;
  if (!event.find(who_field)) event.with(who_field, who);
  metrics.counter(event_counter_name(event.kind)).add();
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
