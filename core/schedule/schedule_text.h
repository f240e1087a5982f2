// Schedule text: the forms a user types for when a job runs, parsed into a
// ScheduleSpec (see schedule.h and docs/SCHEDULES.md).
//
//   2026-12-01T10:00:00Z            one-off instant, RFC 3339 with an offset
//   at 2026-12-01T11:00:00+01:00    the same, with the optional word "at"
//   in 3h                           one-off, that long after `now`
//   every 90s                       fixed interval anchored at `now`
//   every 1h30m from RFC3339 [until RFC3339]
//   every 15m until RFC3339
//   anything else                   a cron expression (5/6 fields or @macro)
//
// Durations use the one grammar of core/base/duration.h. Pure: `now` is passed in.
// The zone, DST policy and jitter are not part of the text; callers set them
// on the returned spec.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/base/rfc3339.h"
#include "core/schedule/schedule.h"

namespace kairos {

absl::StatusOr<ScheduleSpec> parse_schedule_text(std::string_view text, absl::Time now);

// Strict RFC 3339: YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM); 'T' may
// be 't' or a space and 'Z' may be 'z'. The offset is required. Leap seconds
// (:60) are rejected.
absl::StatusOr<absl::Time> parse_rfc3339(std::string_view text);

}  // namespace kairos
