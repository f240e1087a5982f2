// Plumbing shared by the scheduler node and the worker.
//
// Purpose. Both processes turn every decision into an Event that is stamped
// with their clock, tagged with who recorded it and counted in Metrics, and
// both retry idempotent requests after a jittered, capped exponential
// backoff. These helpers are the one definition of each, so the node and the
// worker cannot drift apart in how they count or how they back off.
//
// Guarantees. record_event() never drops or reorders: it records exactly the
// event it is given, after adding the fields named below. retry_backoff()
// draws exactly one number from the Random (so a seeded run stays
// reproducible) and always returns a value in [cap / 2, cap], where
// cap = min(base x 2^(attempt - 1), max) in whole microseconds.
//
// Cost. Counting an event builds no string and allocates nothing for a
// registered kind (core/kernel/event_kinds.h): its counter name comes from a
// table built once per process, and an EventCounters resolves each kind's
// Counter once per registry, so a hot path pays a short pointer comparison
// per event instead of a name lookup. A LabelledCounters does the same for the
// values of one label of a family.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "core/ports/event_log.h"
#include "core/ports/metrics.h"
#include "core/ports/random.h"

namespace kairos {

// "kairos_" + kind with '.' replaced by '_' + "_total", e.g. run.claimed ->
// kairos_run_claimed_total.
std::string event_counter_name(std::string_view kind);

// The per-kind event counters of one Metrics registry, each resolved on the
// first event of its kind (so a kind never recorded creates no series, as
// with Metrics::counter by name) and remembered by the kind's address and
// length (kinds have static storage). Used on the owner's loop only, like
// the registry, which must outlive it.
class EventCounters {
 public:
  explicit EventCounters(Metrics& metrics) : metrics_(metrics) {}
  EventCounters(const EventCounters&) = delete;
  EventCounters& operator=(const EventCounters&) = delete;

  // The counter named event_counter_name(kind) in the registry.
  Counter& of(std::string_view kind);

 private:
  struct Entry {
    const char* data;
    std::size_t size;
    Counter* counter;
  };
  Metrics& metrics_;
  std::vector<Entry> entries_;
};

// The counters of one family with one label, `family{label="value"}`, each
// resolved on the first use of its value (so a value never counted creates
// no series) and remembered by the value's text. For a label with a handful
// of values (a run's outcome): a hot path compares a few short strings
// instead of building the series name and looking it up. Owner's loop only;
// the registry must outlive it.
class LabelledCounters {
 public:
  LabelledCounters(Metrics& metrics, std::string_view family, std::string_view label)
      : metrics_(metrics), family_(family), label_(label) {}
  LabelledCounters(const LabelledCounters&) = delete;
  LabelledCounters& operator=(const LabelledCounters&) = delete;

  // The counter `family{label="value"}` in the registry.
  Counter& of(std::string_view value);

 private:
  struct Entry {
    std::string value;
    Counter* counter;
  };
  Metrics& metrics_;
  const std::string family_;
  const std::string label_;
  std::vector<Entry> entries_;
};

// Stamps `event` with `now`, adds `who_field` = `who` unless the event already
// carries that field, adds one to its counter (event_counter_name) and hands it
// to `events`.
void record_event(Event event, absl::Time now, std::string_view who_field, const std::string& who,
                  EventLog& events, Metrics& metrics);
// The same, counting through resolved counters (no lookup by name).
void record_event(Event event, absl::Time now, std::string_view who_field, const std::string& who,
                  EventLog& events, EventCounters& counters);

// The ceiling of the backoff before retry number `attempt` (1-based; 0 is
// treated as 1): base x 2^(attempt - 1), capped at `max`, in whole
// microseconds (truncated). Requires 0 < base <= max.
absl::Duration backoff_cap(absl::Duration base, absl::Duration max, std::uint32_t attempt);

// A jittered wait in [cap / 2, cap] for the cap above (one draw from `random`).
absl::Duration retry_backoff(Random& random, absl::Duration base, absl::Duration max,
                             std::uint32_t attempt);

}  // namespace kairos
