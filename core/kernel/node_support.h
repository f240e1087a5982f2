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
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/time/time.h"
#include "core/ports/event_log.h"
#include "core/ports/metrics.h"
#include "core/ports/random.h"

namespace kairos {

// "kairos_" + kind with '.' replaced by '_' + "_total", e.g. run.claimed ->
// kairos_run_claimed_total.
std::string event_counter_name(std::string_view kind);

// Stamps `event` with `now`, adds `who_field` = `who` unless the event already
// carries that field, adds one to its counter (event_counter_name) and hands it
// to `events`.
void record_event(Event event, absl::Time now, std::string_view who_field, const std::string& who,
                  EventLog& events, Metrics& metrics);

// The ceiling of the backoff before retry number `attempt` (1-based; 0 is
// treated as 1): base x 2^(attempt - 1), capped at `max`, in whole
// microseconds (truncated). Requires 0 < base <= max.
absl::Duration backoff_cap(absl::Duration base, absl::Duration max, std::uint32_t attempt);

// A jittered wait in [cap / 2, cap] for the cap above (one draw from `random`).
absl::Duration retry_backoff(Random& random, absl::Duration base, absl::Duration max,
                             std::uint32_t attempt);

}  // namespace kairos
