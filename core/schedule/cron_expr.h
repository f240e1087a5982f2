// CronExpr: a parsed, compiled cron expression over local (civil) time.
//
// Purpose. The pure calendar half of the cron engine: which local wall-clock
// seconds match an expression. It knows nothing about time zones or DST;
// CronSchedule (cron_schedule.h) maps local times to instants and applies the
// DST rules. Used by the scheduler (through kairos::Schedule), the CLI and
// the simulator.
//
// Syntax (full reference with examples: docs/SCHEDULES.md).
//   5 fields:  minute hour day-of-month month day-of-week
//   6 fields:  second minute hour day-of-month month day-of-week
//   macros:    @yearly @annually @monthly @weekly @daily @midnight @hourly
//   items:     *  ?  N  N-M  */S  N-M/S  N/S (N to the field's max)
//              H  H/S  H(N-M)  H(N-M)/S   (hash spread, seeded by the job id)
//              names JAN-DEC and SUN-SAT, case-insensitive; day-of-week 7 = 0 = SUN
//   day-of-month also: L  L-N  NW  LW;  day-of-week also: NL (last N-day
//   of the month) and N#K (K-th N-day, K in 1..5); lists combine any items.
// Day matching: a day field is unrestricted when it is exactly `*`, `?` or
// `*/1`. When both day fields are restricted a day matches if either matches;
// otherwise both must (so the unrestricted one is ignored).
//
// Guarantees.
// - parse() is strict: wrong field counts, out-of-range values, reversed
//   ranges (FRI-MON, MON-SUN), zero or oversized steps, unknown names and
//   stray characters are errors of the form
//   "field 2 (hour): 25 is out of range 0-23" (fields numbered from 1 in the
//   text as written).
// - parse() rejects an expression that can never fire (`0 0 30 2 *`): every
//   accepted expression matches at least once in every 400-year Gregorian
//   cycle, which bounds every search.
// - next()/prev() jump field by field (month, day, hour, minute, second) and
//   never scan second by second; they stop at the given limit and never look
//   outside years 1..9999.
// - to_string() prints a canonical form; parse(to_string(e)) == e.
// - Integer arithmetic only; no I/O; immutable after parse (thread-compatible).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/time/civil_time.h"

namespace kairos::cron {

// Local time as seconds since 1970-01-01T00:00:00 of the *civil* calendar
// (no zone): a monotone, integer encoding of absl::CivilSecond.
using LocalSeconds = std::int64_t;

LocalSeconds to_local_seconds(const absl::CivilSecond& c);
absl::CivilSecond from_local_seconds(LocalSeconds s);
// First second of year 10000: searches never reach it.
inline constexpr LocalSeconds kLocalEnd = 253402300800;  // 10000-01-01T00:00:00
// First second of year 1.
inline constexpr LocalSeconds kLocalBegin = -62135596800;  // 0001-01-01T00:00:00

// Days since 1970-01-01 of a proleptic Gregorian date, and the inverse.
std::int64_t days_from_civil(std::int64_t y, int m, int d);
int days_in_month(std::int64_t y, int m);
// 0 = Sunday ... 6 = Saturday.
int weekday_of(std::int64_t y, int m, int d);

struct DomSpecial {
  enum Kind : std::uint8_t { kLast, kNearestWeekday, kLastWeekday };
  Kind kind;
  std::uint8_t n;  // kLast: offset N of L-N; kNearestWeekday: the day N of NW
  friend bool operator==(const DomSpecial&, const DomSpecial&) = default;
  friend auto operator<=>(const DomSpecial&, const DomSpecial&) = default;
};

struct DowSpecial {
  enum Kind : std::uint8_t { kLast, kNth };
  Kind kind;
  std::uint8_t weekday;  // 0 = Sunday
  std::uint8_t nth;      // kNth: 1..5
  friend bool operator==(const DowSpecial&, const DowSpecial&) = default;
  friend auto operator<=>(const DowSpecial&, const DowSpecial&) = default;
};

class CronExpr {
 public:
  // Parses `text`. `job_id` seeds H fields (see stable_hash.h); an empty id
  // is allowed and hashes like any other string.
  static absl::StatusOr<CronExpr> parse(std::string_view text, std::string_view job_id = {});

  // Canonical text (5 fields when the seconds field is plain `0`, else 6).
  std::string to_string() const;

  // Vixie's rule: true when the seconds, minute or hour field starts with `*`
  // (or the expression is @hourly). Such schedules are "wildcard" for DST.
  bool wildcard() const { return sec_star_ || min_star_ || hour_star_; }

  bool matches(LocalSeconds s) const;
  bool matches(const absl::CivilSecond& c) const { return matches(to_local_seconds(c)); }

  // The first matching local second in [from, limit), or nullopt.
  std::optional<LocalSeconds> next(LocalSeconds from, LocalSeconds limit = kLocalEnd) const;
  // The last matching local second in [limit, from], or nullopt.
  std::optional<LocalSeconds> prev(LocalSeconds from, LocalSeconds limit = kLocalBegin) const;

  // Bit d (1..31) set when day d of (year, month) matches the day fields.
  std::uint32_t day_mask(std::int64_t year, int month) const;

  // Field data, for describe() and tests.
  std::uint64_t seconds() const { return sec_; }
  std::uint64_t minutes() const { return min_; }
  std::uint32_t hours() const { return hour_; }
  std::uint32_t days_of_month() const { return dom_; }  // bits 1..31
  std::uint16_t months() const { return mon_; }         // bits 1..12
  std::uint8_t days_of_week() const { return dow_; }    // bits 0..6
  const absl::InlinedVector<DomSpecial, 2>& dom_specials() const { return dom_special_; }
  const absl::InlinedVector<DowSpecial, 2>& dow_specials() const { return dow_special_; }
  bool dom_restricted() const { return dom_restricted_; }
  bool dow_restricted() const { return dow_restricted_; }
  bool has_seconds_field() const { return !(sec_ == 1 && !sec_star_); }

  // Semantic equality (the source text and the job id are not compared).
  friend bool operator==(const CronExpr& a, const CronExpr& b) {
    return a.sec_ == b.sec_ && a.min_ == b.min_ && a.hour_ == b.hour_ && a.dom_ == b.dom_ &&
           a.mon_ == b.mon_ && a.dow_ == b.dow_ && a.sec_star_ == b.sec_star_ &&
           a.min_star_ == b.min_star_ && a.hour_star_ == b.hour_star_ &&
           a.dom_restricted_ == b.dom_restricted_ && a.dow_restricted_ == b.dow_restricted_ &&
           a.dom_special_ == b.dom_special_ && a.dow_special_ == b.dow_special_;
  }

 private:
  friend class CronParser;
  void finish();  // computes derived tables
  bool can_ever_fire() const;

  std::uint64_t sec_ = 0, min_ = 0;
  std::uint32_t hour_ = 0, dom_ = 0;
  std::uint16_t mon_ = 0;
  std::uint8_t dow_ = 0;
  bool sec_star_ = false, min_star_ = false, hour_star_ = false;
  bool dom_restricted_ = false, dow_restricted_ = false;
  absl::InlinedVector<DomSpecial, 2> dom_special_;
  absl::InlinedVector<DowSpecial, 2> dow_special_;
  // Derived: day bits matching dow_ when the 1st of the month is weekday w.
  std::uint32_t dow_days_[7] = {};
};

}  // namespace kairos::cron
