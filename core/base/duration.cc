#include "core/base/duration.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "core/base/text.h"

namespace kairos {
namespace {

constexpr std::int64_t kMaxMillis = std::int64_t{100000} * 86400 * 1000;

struct Unit {
  std::string_view name;
  std::int64_t millis;
};
// Decreasing order; "ms" before "m" is handled by the longest-match below.
constexpr Unit kUnits[] = {{"d", 86400000}, {"h", 3600000}, {"m", 60000}, {"s", 1000}, {"ms", 1}};

absl::Status bad(std::string_view text, std::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(
      "invalid duration \"", excerpt(text), "\": ", absl_sv(why),
      "; expected integers with units d, h, m, s, ms in that order, e.g. 90s, 1h30m, 1s500ms"));
}

}  // namespace

absl::StatusOr<absl::Duration> parse_duration(std::string_view text) {
  if (text.empty()) return bad(text, "it is empty");
  std::int64_t total = 0;
  std::size_t i = 0;
  int last_unit = -1;
  while (i < text.size()) {
    const std::size_t start = i;
    std::int64_t value = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      value = value * 10 + (text[i] - '0');
      if (value > kMaxMillis) return bad(text, "it is too large (at most 100000d)");
      ++i;
    }
    if (i == start) {
      if (text[i] == '-') return bad(text, "negative durations are not allowed");
      return bad(text, absl::StrCat("expected a digit at position ", i + 1));
    }
    if (i == text.size()) {
      return bad(text, absl::StrCat("the number ", value, " has no unit"));
    }
    if (text[i] == '.') return bad(text, "fractions are not allowed (write 1h30m, not 1.5h)");
    int unit = -1;
    if (text.substr(i, 2) == "ms") {
      unit = 4;
      i += 2;
    } else {
      for (int u = 0; u < 4; ++u) {
        if (text[i] == kUnits[u].name[0]) unit = u;
      }
      if (unit >= 0) ++i;
    }
    if (unit < 0 || (i < text.size() && text[i] >= 'a' && text[i] <= 'z')) {
      std::size_t unit_end = i;
      while (unit_end < text.size() && !(text[unit_end] >= '0' && text[unit_end] <= '9'))
        ++unit_end;
      const std::size_t unit_start = unit < 0 ? i : i - kUnits[unit].name.size();
      return bad(text, absl::StrCat("unknown unit '",
                                    excerpt(text.substr(unit_start, unit_end - unit_start)),
                                    "' at position ", unit_start + 1));
    }
    if (unit <= last_unit) {
      return bad(text, absl::StrCat("unit '", absl_sv(kUnits[unit].name),
                                    "' is repeated or out of order"));
    }
    last_unit = unit;
    if (value > kMaxMillis / kUnits[unit].millis)
      return bad(text, "it is too large (at most 100000d)");
    total += value * kUnits[unit].millis;
    if (total > kMaxMillis) return bad(text, "it is too large (at most 100000d)");
  }
  return absl::Milliseconds(total);
}

std::string format_duration(absl::Duration d) {
  if (d == absl::InfiniteDuration()) return "inf";
  if (d == -absl::InfiniteDuration()) return "-inf";
  std::string out;
  if (d < absl::ZeroDuration()) {
    out = "-";
    d = -d;
  }
  std::int64_t ms = absl::ToInt64Milliseconds(d);
  if (ms == 0) return out + "0s";
  for (const Unit& u : kUnits) {
    const std::int64_t n = ms / u.millis;
    if (n > 0) absl::StrAppend(&out, n, absl_sv(u.name));
    ms %= u.millis;
  }
  return out;
}

}  // namespace kairos
