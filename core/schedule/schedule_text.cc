#include "core/schedule/schedule_text.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/base/absl_compat.h"
#include "core/base/check.h"
#include "core/base/duration.h"
#include "core/base/text.h"
#include "core/schedule/cron_expr.h"

namespace kairos {
namespace {

absl::Status bad_time(std::string_view text, std::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("invalid time \"", excerpt(text), "\": ", absl_sv(why),
                   "; expected RFC 3339 with an offset, e.g. 2026-12-01T10:00:00Z or "
                   "2026-12-01T11:00:00+01:00"));
}

bool digits(std::string_view s, std::size_t pos, std::size_t n, int& out) {
  if (pos + n > s.size()) return false;
  int v = 0;
  for (std::size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  out = v;
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool starts_with_word(std::string_view s, std::string_view word) {
  return s.size() > word.size() && s.substr(0, word.size()) == word &&
         (s[word.size()] == ' ' || s[word.size()] == '\t');
}

}  // namespace

absl::StatusOr<absl::Time> parse_rfc3339(std::string_view text) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  if (!digits(text, 0, 4, y) || text.size() < 19 || text[4] != '-' || !digits(text, 5, 2, mo) ||
      text[7] != '-' || !digits(text, 8, 2, d) ||
      !(text[10] == 'T' || text[10] == 't' || text[10] == ' ') || !digits(text, 11, 2, h) ||
      text[13] != ':' || !digits(text, 14, 2, mi) || text[16] != ':' || !digits(text, 17, 2, s)) {
    return bad_time(text, "not in the form YYYY-MM-DDTHH:MM:SS");
  }
  if (mo < 1 || mo > 12) return bad_time(text, "month out of range 01-12");
  if (d < 1 || d > cron::days_in_month(y, mo))
    return bad_time(text, "day out of range for its month");
  if (h > 23) return bad_time(text, "hour out of range 00-23");
  if (mi > 59) return bad_time(text, "minute out of range 00-59");
  if (s > 59) return bad_time(text, "second out of range 00-59 (leap seconds are not supported)");
  std::size_t pos = 19;
  std::int64_t nanos = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    const std::size_t start = pos;
    std::int64_t scale = 100000000;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      nanos += (text[pos] - '0') * scale;
      scale /= 10;
      ++pos;
    }
    if (pos == start) return bad_time(text, "expected digits after '.'");
  }
  if (pos >= text.size()) return bad_time(text, "the UTC offset (Z or +HH:MM) is missing");
  std::int64_t offset = 0;
  if (text[pos] == 'Z' || text[pos] == 'z') {
    ++pos;
  } else if (text[pos] == '+' || text[pos] == '-') {
    int oh = 0, om = 0;
    if (!digits(text, pos + 1, 2, oh) || pos + 3 >= text.size() || text[pos + 3] != ':' ||
        !digits(text, pos + 4, 2, om)) {
      return bad_time(text, "the offset must be +HH:MM or -HH:MM");
    }
    if (oh > 23 || om > 59) return bad_time(text, "offset out of range");
    offset = (oh * 3600 + om * 60) * (text[pos] == '-' ? -1 : 1);
    pos += 6;
  } else {
    return bad_time(text, absl::StrCat("unexpected '", excerpt(text.substr(pos, 1)),
                                       "' where the offset belongs"));
  }
  if (pos != text.size())
    return bad_time(
        text, absl::StrCat("unexpected text after the offset: '", excerpt(text.substr(pos)), "'"));
  const std::int64_t local = cron::days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s;
  const absl::Time t = absl::FromUnixSeconds(local - offset) + absl::Nanoseconds(nanos);
  if (!in_supported_range(t)) {
    return bad_time(text, absl::StrCat("outside the supported range ", supported_range_text()));
  }
  return t;
}

absl::StatusOr<ScheduleSpec> parse_schedule_text(std::string_view text, absl::Time now) {
  text = trim(text);
  ScheduleSpec spec;
  if (text.empty()) return absl::InvalidArgumentError("schedule is empty");
  if (starts_with_word(text, "in")) {
    const std::string_view rest = trim(text.substr(2));
    auto d = parse_duration(rest);
    if (!d.ok())
      return absl::InvalidArgumentError(absl::StrCat("in 'in DURATION': ", d.status().message()));
    spec.kind = ScheduleSpec::Kind::kOnce;
    spec.at = now + *d;
    return spec;
  }
  if (starts_with_word(text, "at")) {
    KAIROS_ASSIGN_OR_RETURN(spec.at, parse_rfc3339(trim(text.substr(2))));
    spec.kind = ScheduleSpec::Kind::kOnce;
    return spec;
  }
  if (starts_with_word(text, "every")) {
    std::string_view rest = trim(text.substr(5));
    std::size_t sp = rest.find_first_of(" \t");
    const std::string_view dur = rest.substr(0, sp);
    auto d = parse_duration(dur);
    if (!d.ok())
      return absl::InvalidArgumentError(
          absl::StrCat("in 'every DURATION': ", d.status().message()));
    if (*d <= absl::ZeroDuration())
      return absl::InvalidArgumentError("in 'every DURATION': the interval must be positive");
    spec.kind = ScheduleSpec::Kind::kInterval;
    spec.every = *d;
    spec.start = now;
    rest = sp == std::string_view::npos ? std::string_view() : trim(rest.substr(sp));
    bool seen_from = false, seen_until = false;
    while (!rest.empty()) {
      sp = rest.find_first_of(" \t");
      const std::string_view word = rest.substr(0, sp);
      if (sp == std::string_view::npos) {
        return absl::InvalidArgumentError(
            absl::StrCat("in 'every': '", excerpt(word), "' needs an RFC 3339 time after it"));
      }
      rest = trim(rest.substr(sp));
      sp = rest.find_first_of(" \t");
      const std::string_view value = rest.substr(0, sp);
      rest = sp == std::string_view::npos ? std::string_view() : trim(rest.substr(sp));
      if (word == "from" && !seen_from) {
        KAIROS_ASSIGN_OR_RETURN(spec.start, parse_rfc3339(value));
        seen_from = true;
      } else if (word == "until" && !seen_until) {
        KAIROS_ASSIGN_OR_RETURN(spec.end, parse_rfc3339(value));
        seen_until = true;
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("in 'every': unexpected '", excerpt(word),
                         "' (expected 'from RFC3339' then 'until RFC3339')"));
      }
    }
    if (spec.end < spec.start)
      return absl::InvalidArgumentError("in 'every': 'until' is before the start");
    return spec;
  }
  if (text.size() >= 19 && text[0] >= '0' && text[0] <= '9' && text[4] == '-') {
    KAIROS_ASSIGN_OR_RETURN(spec.at, parse_rfc3339(text));
    spec.kind = ScheduleSpec::Kind::kOnce;
    return spec;
  }
  KAIROS_ASSIGN_OR_RETURN(auto e, cron::CronExpr::parse(text));
  (void)e;
  spec.kind = ScheduleSpec::Kind::kCron;
  spec.cron = std::string(text);
  return spec;
}

}  // namespace kairos
