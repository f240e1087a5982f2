#include "core/base/rfc3339.h"

#include <cstdint>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace kairos {
namespace {

std::string format_in(absl::Time t, const absl::TimeZone& zone, bool utc) {
  if (t == absl::InfiniteFuture()) return "infinite-future";
  if (t == absl::InfinitePast()) return "infinite-past";
  const absl::TimeZone::CivilInfo ci = zone.At(t);
  const absl::CivilSecond& cs = ci.cs;
  std::string out = absl::StrFormat("%04d-%02d-%02dT%02d:%02d:%02d", cs.year(), cs.month(),
                                    cs.day(), cs.hour(), cs.minute(), cs.second());
  if (ci.subsecond > absl::ZeroDuration()) {
    std::int64_t nanos = absl::ToInt64Nanoseconds(ci.subsecond);
    int digits = 9;
    while (digits > 1 && nanos % 10 == 0) {
      nanos /= 10;
      --digits;
    }
    if (nanos > 0) absl::StrAppend(&out, ".", absl::StrFormat("%0*d", digits, nanos));
  }
  if (utc) {
    out.push_back('Z');
  } else {
    const int off = ci.offset;
    const int mag = std::abs(off);
    absl::StrAppend(&out, off < 0 ? "-" : "+",
                    absl::StrFormat("%02d:%02d", mag / 3600, mag / 60 % 60));
  }
  return out;
}

}  // namespace

std::string format_rfc3339_utc(absl::Time t) { return format_in(t, absl::UTCTimeZone(), true); }

std::string format_rfc3339_local(absl::Time t, const absl::TimeZone& zone) {
  return format_in(t, zone, false);
}

}  // namespace kairos
