#include "core/base/rfc3339.h"

#include <cstdint>
#include <cstdlib>

#include "absl/strings/str_format.h"

namespace kairos {
namespace {

// The instants whose UTC year is 0000..9999: 0000-01-01T00:00:00Z and
// 9999-12-31T23:59:59Z in seconds since the Unix epoch.
constexpr std::int64_t kFirstFastSecond = -62167219200;
constexpr std::int64_t kLastFastSecond = 253402300799;

// Writes `v` (< 10^width) as exactly `width` decimal digits at `p`; returns
// the end.
char* put_digits(char* p, std::uint32_t v, int width) {
  for (int i = width - 1; i >= 0; --i) {
    p[i] = static_cast<char>('0' + v % 10);
    v /= 10;
  }
  return p + width;
}

// The civil fields the text is made of.
struct Fields {
  std::int64_t year;
  int month, day, hour, minute, second;
  std::int64_t nanos;  // of the second, 0 when none
};

// Appends the fields as YYYY-MM-DDTHH:MM:SS[.fraction]: digit by digit for
// a four-digit year, through printf's %04d for any other (a negative year, or
// more than four digits), so the text is the same either way.
void append_fields(std::string& out, const Fields& f) {
  char buf[32];
  char* p = buf;
  if (f.year >= 0 && f.year <= 9999) {
    p = put_digits(p, static_cast<std::uint32_t>(f.year), 4);
  } else {
    out += absl::StrFormat("%04d", f.year);
  }
  *p++ = '-';
  p = put_digits(p, static_cast<std::uint32_t>(f.month), 2);
  *p++ = '-';
  p = put_digits(p, static_cast<std::uint32_t>(f.day), 2);
  *p++ = 'T';
  p = put_digits(p, static_cast<std::uint32_t>(f.hour), 2);
  *p++ = ':';
  p = put_digits(p, static_cast<std::uint32_t>(f.minute), 2);
  *p++ = ':';
  p = put_digits(p, static_cast<std::uint32_t>(f.second), 2);
  if (f.nanos > 0) {
    // Nine digits, then as few as the value needs: trailing zeros dropped.
    *p++ = '.';
    p = put_digits(p, static_cast<std::uint32_t>(f.nanos), 9);
    while (p[-1] == '0') --p;
  }
  out.append(buf, static_cast<std::size_t>(p - buf));
}

std::int64_t subsecond_nanos(absl::Duration subsecond) {
  return subsecond > absl::ZeroDuration() ? absl::ToInt64Nanoseconds(subsecond) : 0;
}

Fields fields_of(const absl::TimeZone::CivilInfo& ci) {
  const absl::CivilSecond& cs = ci.cs;
  return {cs.year(),
          cs.month(),
          cs.day(),
          cs.hour(),
          cs.minute(),
          cs.second(),
          subsecond_nanos(ci.subsecond)};
}

// The proleptic Gregorian date of day `days` since 1970-01-01, counted in
// 400-year eras from 0000-03-01 (so the leap day ends a year and every era
// has the same 146,097 days).
void set_date(Fields& f, std::int64_t days) {
  const std::int64_t z = days + 719468;  // days since 0000-03-01
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto day_of_era = static_cast<std::uint32_t>(z - era * 146097);  // [0, 146096]
  const std::uint32_t year_of_era =
      (day_of_era - day_of_era / 1460 + day_of_era / 36524 - day_of_era / 146096) /
      365;  // [0, 399]
  const std::uint32_t day_of_year =
      day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);  // [0, 365]
  const std::uint32_t month_from_march = (5 * day_of_year + 2) / 153;          // [0, 11]
  f.day = static_cast<int>(day_of_year - (153 * month_from_march + 2) / 5 + 1);
  f.month = static_cast<int>(month_from_march < 10 ? month_from_march + 3 : month_from_march - 9);
  f.year = static_cast<std::int64_t>(year_of_era) + era * 400 + (f.month <= 2 ? 1 : 0);
}

// The UTC fields of `t` by arithmetic alone; false outside the years
// 0000..9999 (and for the infinite instants).
bool utc_fields(absl::Time t, Fields& f) {
  const std::int64_t s = absl::ToUnixSeconds(t);  // rounds toward the past
  if (s < kFirstFastSecond || s > kLastFastSecond) return false;
  f.nanos = subsecond_nanos(t - absl::FromUnixSeconds(s));
  std::int64_t days = s / 86400;
  std::int64_t second_of_day = s % 86400;
  if (second_of_day < 0) {
    second_of_day += 86400;
    --days;
  }
  set_date(f, days);
  const auto sod = static_cast<int>(second_of_day);
  f.hour = sod / 3600;
  f.minute = sod / 60 % 60;
  f.second = sod % 60;
  return true;
}

// False (nothing appended) unless `t` is finite.
bool append_infinite(std::string& out, absl::Time t) {
  if (t == absl::InfiniteFuture()) {
    out += "infinite-future";
    return true;
  }
  if (t == absl::InfinitePast()) {
    out += "infinite-past";
    return true;
  }
  return false;
}

}  // namespace

void append_rfc3339_utc(std::string& out, absl::Time t) {
  Fields f;
  if (!utc_fields(t, f)) {
    if (append_infinite(out, t)) return;
    f = fields_of(absl::UTCTimeZone().At(t));
  }
  append_fields(out, f);
  out.push_back('Z');
}

std::string format_rfc3339_utc(absl::Time t) {
  std::string out;
  append_rfc3339_utc(out, t);
  return out;
}

std::string format_rfc3339_local(absl::Time t, const absl::TimeZone& zone) {
  std::string out;
  if (append_infinite(out, t)) return out;
  const absl::TimeZone::CivilInfo ci = zone.At(t);
  append_fields(out, fields_of(ci));
  const int mag = std::abs(ci.offset);
  char buf[6] = {ci.offset < 0 ? '-' : '+'};
  put_digits(buf + 1, static_cast<std::uint32_t>(mag / 3600), 2);
  buf[3] = ':';
  put_digits(buf + 4, static_cast<std::uint32_t>(mag / 60 % 60), 2);
  out.append(buf, sizeof buf);
  return out;
}

}  // namespace kairos
