// The one RFC 3339 formatter: every instant Kairos prints (logs, the event
// trace, the CLI, the runner's environment) goes through these functions, so
// there is one text form of a time.
//
// Form: YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM). The year always has
// four digits (zero-padded: 0099, never 99); the fraction is printed only
// when non-zero, with as many digits as it needs (nanosecond resolution).
// The infinite past and future print as "infinite-past" / "infinite-future"
// (they are not instants; no supported input produces them as a time).
// Parsing lives with the schedules (core/schedule/schedule_text.h), which
// also bound the instants a user may give.
//
// Cost. The UTC form of an instant in the years 0000..9999 (every time a
// schedule or a clock produces) is computed with integer arithmetic and
// written digit by digit, with no time zone lookup and no format string:
// the event log formats two or three instants per event. Instants outside
// those years take a general path that prints the same form (a year of more
// than four digits, or a negative one, as printf's %04d does).
#pragma once

#include <string>

#include "absl/time/time.h"

namespace kairos {

// "2026-03-29T01:00:00Z".
std::string format_rfc3339_utc(absl::Time t);
// The same text, appended to `out`.
void append_rfc3339_utc(std::string& out, absl::Time t);
// "2026-03-29T03:00:00+02:00": the wall time in `zone` with its offset.
std::string format_rfc3339_local(absl::Time t, const absl::TimeZone& zone);

}  // namespace kairos
