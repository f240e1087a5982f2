// Duration: the one duration grammar of Kairos.
//
// Every duration a user writes (CLI flags, the HTTP API, config files,
// scenarios, `in 3h`, `every 90s`) goes through parse_duration(), so the same
// text means the same thing everywhere.
//
// Grammar: one or more <integer><unit> terms, no spaces, no sign, units
//   d (24 h), h, m, s, ms
// each used at most once and in that (decreasing) order: "90s", "1h30m",
// "2d12h", "1s500ms", "0s". A bare number, an unknown unit ("5min", "1y"),
// a fraction ("1.5h"), a negative value, a repeated or out-of-order unit
// ("30m1h") and a total beyond 100000 days are errors whose message says
// what was expected. `d` is always exactly 24 hours, never a calendar day.
//
// format_duration() prints the canonical form (largest units first, zero
// terms omitted, "0s" for zero), truncated to whole milliseconds; for every
// millisecond-resolution duration d >= 0,
// parse_duration(format_duration(d)) == d.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace kairos {

absl::StatusOr<absl::Duration> parse_duration(std::string_view text);

// Canonical text; negative durations get a leading '-' (which parse rejects),
// infinite ones print as "inf" / "-inf".
std::string format_duration(absl::Duration d);

}  // namespace kairos
