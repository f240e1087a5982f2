// CronSchedule: a cron expression placed in an IANA time zone, with the
// explicit DST policy that turns matching local times into instants.
//
// Purpose. The scheduler (through kairos::Schedule), the CLI previews and the
// simulator ask "when is the next / previous fire" and "does this instant
// fire"; this class answers with the DST rules of docs/SCHEDULES.md:
//
// - A *wildcard* schedule (seconds, minute or hour field starts with `*`, or
//   @hourly) fires at every real instant whose local time matches: local
//   times inside a spring-forward gap do not exist and do not fire; local
//   times inside a fall-back fold fire on both passes.
// - A *fixed-time* schedule (every other one), for transitions of at most 3
//   hours (DST, including 30-minute and odd-offset changes):
//     gap:  DstGap::kShift (default) fires once at the transition instant
//           (the end of the gap) when any matching local time falls inside
//           the gap; DstGap::kSkip does not fire.
//     fold: DstFold::kFirst (default) fires on the first pass only, kLast on
//           the second pass only, kBoth on both.
// - Offset changes larger than 3 hours are zone redefinitions (Pacific/Apia
//   skipping 2011-12-30): every schedule treats them like a wildcard one —
//   skipped local times never fire, repeated ones fire on both passes.
// - When a gap shift lands on an instant that is itself a natural fire (the
//   local time at the end of the gap matches), it fires once, as the natural
//   fire.
//
// Guarantees. Fires are whole seconds; next_after(t) is the first fire
// strictly after t, prev_before(t) the last strictly before t; successive
// fires are strictly increasing; matches(t) is true exactly when t is a fire.
// Searches jump field by field and transition by transition, and stop at
// year 9999 (nullopt). No clock reads, no I/O except LoadTimeZone in
// load_zone()/create(). Immutable after construction; safe to share between
// threads for reading.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/schedule/cron_expr.h"
#include "core/schedule/schedule.h"

namespace kairos::cron {

// IANA zone names: parts of letters, digits, '_', '+' and '-', each starting
// with a letter, separated by '/' ("Europe/Berlin", "Etc/GMT+5",
// "America/Argentina/Buenos_Aires"). Nothing else: no path, no "..", no
// loader prefix such as "file:".
inline constexpr std::size_t kMaxZoneNameBytes = 64;
inline constexpr int kMaxZoneNameParts = 4;
bool is_zone_name(std::string_view name);

// Loads an IANA zone from the system tz database. "" and "localtime" are
// rejected (a schedule never runs in the server's local zone), and so is
// anything that is not an IANA zone name (is_zone_name()): the loader never
// opens a path a caller chose. An unknown name is an error naming it.
absl::StatusOr<absl::TimeZone> load_zone(std::string_view name);

class CronSchedule {
 public:
  // Offset changes up to this size are DST transitions; larger ones are zone
  // redefinitions (Vixie cron's bound).
  static constexpr std::int64_t kMaxDstShiftSeconds = 3 * 3600;

  static absl::StatusOr<CronSchedule> create(std::string_view expr, std::string_view zone_name,
                                             DstGap gap = DstGap::kShift,
                                             DstFold fold = DstFold::kFirst,
                                             std::string_view job_id = {});
  CronSchedule(CronExpr expr, absl::TimeZone zone, DstGap gap, DstFold fold);

  // The first fire strictly after t, or nullopt (past year 9999). Fire::at ==
  // Fire::nominal (no jitter at this layer).
  std::optional<Fire> next_after(absl::Time t) const;
  // The last fire strictly before t, or nullopt (before year 1).
  std::optional<Fire> prev_before(absl::Time t) const;
  // True when t is a fire instant.
  bool matches(absl::Time t) const;
  // Fires in (from, to], in order, at most max_count.
  std::vector<Fire> fires_between(absl::Time from, absl::Time to, std::size_t max_count) const;

  // True when the DST gap/fold policy applies (not a wildcard schedule).
  bool fixed_time() const { return !expr_.wildcard(); }
  const CronExpr& expr() const { return expr_; }
  const absl::TimeZone& zone() const { return zone_; }
  DstGap gap() const { return gap_; }
  DstFold fold() const { return fold_; }

  // A stretch of instants [begin, end) with one UTC offset, and the offsets
  // on either side (equal to `off` when there is no transition). Exposed for
  // explain() and tests.
  struct Segment {
    std::int64_t begin, end;  // unix seconds; kNoBegin / kNoEnd when unbounded
    std::int64_t off, prev_off, next_off;
  };
  static constexpr std::int64_t kNoBegin = INT64_MIN;
  static constexpr std::int64_t kNoEnd = INT64_MAX;
  Segment segment_at(std::int64_t unix_seconds) const;

 private:
  Segment segment_from(const Segment& prev) const;  // the segment after `prev`
  bool dst_sized(std::int64_t delta) const {
    return delta != 0 && delta <= kMaxDstShiftSeconds && delta >= -kMaxDstShiftSeconds;
  }
  Fire natural(LocalSeconds local, const Segment& s) const;

  CronExpr expr_;
  absl::TimeZone zone_;
  DstGap gap_;
  DstFold fold_;
  bool fixed_offset_ = false;  // the zone never changes offset (UTC, Etc/GMT+5)
  std::int64_t fixed_off_ = 0;
};

}  // namespace kairos::cron
