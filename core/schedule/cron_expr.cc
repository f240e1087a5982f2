#include "core/schedule/cron_expr.h"

#include <algorithm>
#include <bit>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/base/absl_compat.h"
#include "core/base/check.h"
#include "core/base/stable_hash.h"
#include "core/base/text.h"

namespace kairos::cron {

// ---------------------------------------------------------------------------
// Calendar arithmetic (proleptic Gregorian, integers only).

std::int64_t days_from_civil(std::int64_t y, int m, int d) {
  // Howard Hinnant's days_from_civil.
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const std::int64_t yoe = y - era * 400;
  const std::int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const std::int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

namespace {

struct Ymd {
  std::int64_t y;
  int m, d;
};

Ymd civil_from_days(std::int64_t z) {
  z += 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const std::int64_t doe = z - era * 146097;
  const std::int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const std::int64_t mp = (5 * doy + 2) / 153;
  const int d = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  const int m = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  return {yoe + era * 400 + (m <= 2), m, d};
}

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}

bool is_leap(std::int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

}  // namespace

int days_in_month(std::int64_t y, int m) {
  static constexpr int kDays[13] = {0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && is_leap(y) ? 29 : kDays[m];
}

int weekday_of(std::int64_t y, int m, int d) {
  const std::int64_t days = days_from_civil(y, m, d);
  return static_cast<int>(((days % 7) + 11) % 7);  // 1970-01-01 was a Thursday (4)
}

LocalSeconds to_local_seconds(const absl::CivilSecond& c) {
  return days_from_civil(c.year(), c.month(), c.day()) * 86400 + c.hour() * 3600 + c.minute() * 60 +
         c.second();
}

absl::CivilSecond from_local_seconds(LocalSeconds s) {
  const std::int64_t days = floor_div(s, 86400);
  const std::int64_t sod = s - days * 86400;
  const Ymd ymd = civil_from_days(days);
  return absl::CivilSecond(ymd.y, ymd.m, ymd.d, static_cast<int>(sod / 3600),
                           static_cast<int>(sod / 60 % 60), static_cast<int>(sod % 60));
}

// ---------------------------------------------------------------------------
// Parsing.

namespace {

enum FieldIndex { kSec = 0, kMin, kHour, kDom, kMon, kDow };

struct FieldInfo {
  const char* name;
  int lo, hi;            // accepted numeric range (day-of-week accepts 7 = Sunday)
  int hash_lo, hash_hi;  // range of a bare H
};
constexpr FieldInfo kFields[6] = {
    {"second", 0, 59, 0, 59},       {"minute", 0, 59, 0, 59}, {"hour", 0, 23, 0, 23},
    {"day-of-month", 1, 31, 1, 28}, {"month", 1, 12, 1, 12},  {"day-of-week", 0, 7, 0, 6},
};

constexpr const char* kMonthNames[12] = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                         "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
constexpr const char* kDayNames[7] = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"};

char upper(char c) { return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

std::uint64_t bit(int i) { return std::uint64_t{1} << i; }

// The run of digits at text[pos...]; advances pos past all of them, however
// many there are (an error then quotes the whole number, not a prefix).
std::string_view leading_digits(std::string_view text, std::size_t& pos) {
  const std::size_t start = pos;
  while (pos < text.size() && is_digit(text[pos])) ++pos;
  return text.substr(start, pos - start);
}

// The value of a digit run, saturated at kTooLarge: every field's range is
// far below it, so a saturated value is always reported as out of range.
constexpr std::int64_t kTooLarge = 1'000'000;
std::int64_t bounded_number(std::string_view digits) {
  std::int64_t v = 0;
  for (const char c : digits) {
    v = v * 10 + (c - '0');
    if (v >= kTooLarge) return kTooLarge;
  }
  return v;
}

}  // namespace

class CronParser {
 public:
  CronParser(std::string_view job_id, int first_field_number)
      : job_id_(job_id), first_number_(first_field_number) {}

  absl::Status parse_field(int field, std::string_view text, CronExpr& e);

 private:
  absl::Status err(int field, std::string_view msg) const {
    return absl::InvalidArgumentError(absl::StrCat("field ", field - first_number_ + 1, " (",
                                                   kFields[field].name, "): ", absl_sv(msg)));
  }
  // Parses a number or (month/day-of-week) name at text[pos...]; advances pos.
  absl::StatusOr<int> value(int field, std::string_view text, std::size_t& pos) const;
  absl::Status item(int field, std::string_view item, CronExpr& e, std::uint64_t& mask,
                    bool& star_first, bool first);

  std::string_view job_id_;
  int first_number_;
};

absl::StatusOr<int> CronParser::value(int field, std::string_view text, std::size_t& pos) const {
  const FieldInfo& f = kFields[field];
  if (pos < text.size() && is_digit(text[pos])) {
    const std::string_view digits = leading_digits(text, pos);
    const std::int64_t v = bounded_number(digits);
    if (v < f.lo || v > f.hi) {
      return err(field, absl::StrCat(excerpt(digits), " is out of range ", f.lo, "-", f.hi));
    }
    return static_cast<int>(v);
  }
  if (pos < text.size() && is_alpha(text[pos]) && (field == kMon || field == kDow)) {
    const std::size_t start = pos;
    while (pos < text.size() && is_alpha(text[pos])) ++pos;
    std::string name;
    for (std::size_t i = start; i < pos; ++i) name.push_back(upper(text[i]));
    // "FRIL" (last Friday): a day name followed by L.
    if (field == kDow && name.size() == 4 && name.back() == 'L') {
      name.pop_back();
      --pos;
    }
    const auto* names = field == kMon ? kMonthNames : kDayNames;
    const int count = field == kMon ? 12 : 7;
    for (int i = 0; i < count; ++i) {
      if (name == names[i]) return field == kMon ? i + 1 : i;
    }
    return err(field, absl::StrCat("unknown name '", excerpt(text.substr(start, pos - start)),
                                   "' (expected ", field == kMon ? "JAN-DEC" : "SUN-SAT", ")"));
  }
  if (pos >= text.size())
    return err(field, absl::StrCat("'", excerpt(text), "' ends where a value was expected"));
  return err(field,
             absl::StrCat("unexpected '", excerpt(text.substr(pos, 1)), "' in '", excerpt(text),
                          "' (expected a number", field == kMon ? " or a month name" : "",
                          field == kDow ? " or a day name" : "", ")"));
}

absl::Status CronParser::item(int field, std::string_view it, CronExpr& e, std::uint64_t& mask,
                              bool& star_first, bool first) {
  const FieldInfo& f = kFields[field];
  if (it.empty()) return err(field, "empty list item (two commas, or a comma at an end)");
  const int top = field == kDow ? 6 : f.hi;
  int lo = 0, hi = 0;
  bool has_range_start = false;
  std::size_t pos = 0;

  // Quartz-style day specials.
  std::string up;
  for (char c : it) up.push_back(upper(c));
  if (field == kDom && up[0] == 'L') {
    if (up == "L") {
      e.dom_special_.push_back({DomSpecial::kLast, 0});
      return absl::OkStatus();
    }
    if (up == "LW") {
      e.dom_special_.push_back({DomSpecial::kLastWeekday, 0});
      return absl::OkStatus();
    }
    if (up.size() > 2 && up[1] == '-') {
      std::size_t p = 2;
      std::int64_t n = 0;
      while (p < up.size() && is_digit(up[p]) && n < 1000) n = n * 10 + (up[p++] - '0');
      if (p != up.size() || p == 2)
        return err(field, absl::StrCat("'", excerpt(it), "' is not L-N (N a number of days)"));
      if (n > 30)
        return err(field,
                   absl::StrCat("in '", excerpt(it), "' the offset ", n, " is out of range 0-30"));
      e.dom_special_.push_back({DomSpecial::kLast, static_cast<std::uint8_t>(n)});
      return absl::OkStatus();
    }
    return err(field, absl::StrCat("'", excerpt(it), "' is not L, L-N or LW"));
  }
  if (field == kDom && up.back() == 'W' && is_digit(up[0])) {
    KAIROS_ASSIGN_OR_RETURN(const int d, value(field, it, pos));
    if (pos != it.size() - 1)
      return err(field, absl::StrCat("'", excerpt(it), "' is not NW (nearest weekday to day N)"));
    e.dom_special_.push_back({DomSpecial::kNearestWeekday, static_cast<std::uint8_t>(d)});
    return absl::OkStatus();
  }
  if (field == kDow && (up == "L" || up == "L#")) {
    return err(
        field,
        "'L' alone is ambiguous in day-of-week; write 6L (last Saturday) or 5L (last Friday)");
  }

  if (up[0] == '*' || up[0] == '?') {
    if (up[0] == '?' && field != kDom && field != kDow) {
      return err(field, "'?' is only allowed in day-of-month and day-of-week");
    }
    if (first) star_first = up[0] == '*' || star_first;
    lo = f.lo;
    hi = top;
    pos = 1;
    if (up[0] == '?' && it.size() != 1)
      return err(field, absl::StrCat("'", excerpt(it), "': '?' stands alone"));
  } else if (up[0] == 'H') {
    pos = 1;
    int hlo = f.hash_lo, hhi = f.hash_hi;
    if (pos < it.size() && it[pos] == '(') {
      ++pos;
      KAIROS_ASSIGN_OR_RETURN(hlo, value(field, it, pos));
      if (pos >= it.size() || it[pos] != '-')
        return err(field, absl::StrCat("'", excerpt(it), "': expected H(N-M)"));
      ++pos;
      KAIROS_ASSIGN_OR_RETURN(hhi, value(field, it, pos));
      if (pos >= it.size() || it[pos] != ')')
        return err(field, absl::StrCat("'", excerpt(it), "': expected ')' after H(N-M"));
      ++pos;
      if (field == kDow) {
        if (hhi == 7) hhi = 6;
        if (hlo == 7) hlo = 6;
      }
      if (hlo > hhi)
        return err(field,
                   absl::StrCat("range ", hlo, "-", hhi, " in '", excerpt(it), "' is reversed"));
    }
    const std::uint64_t h = stable_hash(job_id_, static_cast<std::uint64_t>(field));
    const int width = hhi - hlo + 1;
    if (pos < it.size() && it[pos] == '/') {
      ++pos;
      const std::string_view digits = leading_digits(it, pos);
      if (digits.empty())
        return err(field, absl::StrCat("'", excerpt(it), "': expected a step number after '/'"));
      if (pos != it.size())
        return err(field, absl::StrCat("unexpected '", excerpt(it.substr(pos)),
                                       "' after the step in '", excerpt(it), "'"));
      const std::int64_t step = bounded_number(digits);
      if (step < 1) return err(field, "step 0 must be at least 1");
      if (step > width)
        return err(field, absl::StrCat("step ", excerpt(digits), " is larger than the range ", hlo,
                                       "-", hhi));
      const int offset = static_cast<int>(h % static_cast<std::uint64_t>(step));
      for (int v = hlo + offset; v <= hhi; v += static_cast<int>(step)) mask |= bit(v);
      return absl::OkStatus();
    }
    if (pos != it.size())
      return err(field,
                 absl::StrCat("unexpected '", excerpt(it.substr(pos)), "' in '", excerpt(it), "'"));
    mask |= bit(hlo + static_cast<int>(h % static_cast<std::uint64_t>(width)));
    return absl::OkStatus();
  } else {
    KAIROS_ASSIGN_OR_RETURN(lo, value(field, it, pos));
    hi = lo;
    if (pos < it.size() && it[pos] == '-') {
      ++pos;
      has_range_start = true;
      KAIROS_ASSIGN_OR_RETURN(hi, value(field, it, pos));
      if (lo > hi) {
        std::string why = absl::StrCat("range ", excerpt(it.substr(0, pos)), " is reversed (", lo,
                                       " > ", hi, ")");
        if (field == kDow && hi == 0)
          absl::StrAppend(&why, "; SUN is 0, write 7 for a Sunday at the end, e.g. MON-7");
        else
          absl::StrAppend(&why, "; ranges do not wrap around, split it into two ranges");
        return err(field, why);
      }
    } else if (pos < it.size() && it[pos] == '/') {
      hi = std::max(top, lo);  // N/S runs to the field's max (7/S: Sunday)
    }
    if (field == kDow && pos < it.size() && upper(it[pos]) == 'L' && !has_range_start) {
      if (pos + 1 != it.size())
        return err(field, absl::StrCat("'", excerpt(it), "' is not NL (last N-day of the month)"));
      e.dow_special_.push_back({DowSpecial::kLast, static_cast<std::uint8_t>(lo % 7), 0});
      return absl::OkStatus();
    }
    if (field == kDow && pos < it.size() && it[pos] == '#' && !has_range_start) {
      ++pos;
      if (pos + 1 != it.size() || it[pos] < '1' || it[pos] > '5') {
        return err(field, absl::StrCat("'", excerpt(it),
                                       "': after # expected 1-5 (which N-day of the month)"));
      }
      e.dow_special_.push_back({DowSpecial::kNth, static_cast<std::uint8_t>(lo % 7),
                                static_cast<std::uint8_t>(it[pos] - '0')});
      return absl::OkStatus();
    }
  }
  int step = 1;
  if (pos < it.size() && it[pos] == '/') {
    ++pos;
    const std::string_view digits = leading_digits(it, pos);
    if (digits.empty())
      return err(field, absl::StrCat("'", excerpt(it), "': expected a step number after '/'"));
    const std::int64_t s = bounded_number(digits);
    if (s < 1) return err(field, "step 0 must be at least 1");
    const int width = (field == kDow ? 7 : f.hi - f.lo + 1);
    if (s > width) {
      return err(field, absl::StrCat("step ", excerpt(digits), " is larger than the field's range ",
                                     f.lo, "-", top));
    }
    step = static_cast<int>(s);
  }
  if (pos != it.size()) {
    return err(field,
               absl::StrCat("unexpected '", excerpt(it.substr(pos)), "' in '", excerpt(it), "'"));
  }
  for (int v = lo; v <= hi; v += step) mask |= bit(field == kDow ? v % 7 : v);
  return absl::OkStatus();
}

absl::Status CronParser::parse_field(int field, std::string_view text, CronExpr& e) {
  std::uint64_t mask = 0;
  bool star_first = false;
  std::size_t start = 0;
  bool first = true;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string_view it = text.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    KAIROS_RETURN_IF_ERROR(item(field, it, e, mask, star_first, first));
    first = false;
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  const bool unrestricted = text == "*" || text == "?" || text == "*/1";
  switch (field) {
    case kSec:
      e.sec_ = mask;
      e.sec_star_ = star_first;
      break;
    case kMin:
      e.min_ = mask;
      e.min_star_ = star_first;
      break;
    case kHour:
      e.hour_ = static_cast<std::uint32_t>(mask);
      e.hour_star_ = star_first;
      break;
    case kDom:
      e.dom_ = static_cast<std::uint32_t>(mask);
      e.dom_restricted_ = !unrestricted;
      break;
    case kMon:
      e.mon_ = static_cast<std::uint16_t>(mask);
      break;
    case kDow:
      e.dow_ = static_cast<std::uint8_t>(mask);
      e.dow_restricted_ = !unrestricted;
      break;
    default:
      KAIROS_CHECK(false);
  }
  return absl::OkStatus();
}

namespace {

struct Macro {
  const char* name;
  const char* expansion;
};
constexpr Macro kMacros[] = {
    {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
    {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
    {"@hourly", "0 * * * *"},
};

}  // namespace

absl::StatusOr<CronExpr> CronExpr::parse(std::string_view text, std::string_view job_id) {
  std::vector<std::string_view> fields;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
    if (i == text.size()) break;
    const std::size_t start = i;
    while (i < text.size() && text[i] != ' ' && text[i] != '\t') {
      const auto c = static_cast<unsigned char>(text[i]);
      if (c < 0x20 || c >= 0x7f) {
        return absl::InvalidArgumentError(absl::StrCat("unexpected character at position ", i + 1,
                                                       " (cron expressions are printable ASCII)"));
      }
      ++i;
    }
    fields.push_back(text.substr(start, i - start));
    if (fields.size() > 7) break;
  }
  if (fields.size() == 1 && !fields[0].empty() && fields[0][0] == '@') {
    std::string lower;
    for (char c : fields[0])
      lower.push_back((c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c);
    for (const Macro& m : kMacros) {
      if (lower == m.name) return parse(m.expansion, job_id);
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown macro '", excerpt(fields[0]),
        "' (expected @yearly, @annually, @monthly, @weekly, @daily, @midnight or @hourly)"));
  }
  if (fields.size() != 5 && fields.size() != 6) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected 5 fields (minute hour day-of-month month day-of-week) or 6 (a "
                     "leading second field), got ",
                     fields.size() > 7 ? std::string("more than 7") : absl::StrCat(fields.size())));
  }
  CronExpr e;
  const int first = fields.size() == 6 ? kSec : kMin;
  CronParser p(job_id, first);
  if (first == kMin) e.sec_ = 1;
  for (std::size_t f = 0; f < fields.size(); ++f) {
    KAIROS_RETURN_IF_ERROR(p.parse_field(first + static_cast<int>(f), fields[f], e));
  }
  std::sort(e.dom_special_.begin(), e.dom_special_.end());
  e.dom_special_.erase(std::unique(e.dom_special_.begin(), e.dom_special_.end()),
                       e.dom_special_.end());
  std::sort(e.dow_special_.begin(), e.dow_special_.end());
  e.dow_special_.erase(std::unique(e.dow_special_.begin(), e.dow_special_.end()),
                       e.dow_special_.end());
  e.finish();
  if (!e.can_ever_fire()) {
    const std::size_t d = fields.size() - 3;
    return absl::InvalidArgumentError(absl::StrCat(
        "the expression never fires: no date matches day-of-month '", excerpt(fields[d]),
        "' in month '", excerpt(fields[d + 1]), "'",
        e.dow_restricted_ ? absl::StrCat(" with day-of-week '", excerpt(fields[d + 2]), "'") : ""));
  }
  return e;
}

void CronExpr::finish() {
  for (int w = 0; w < 7; ++w) {
    std::uint32_t days = 0;
    for (int d = 1; d <= 31; ++d) {
      if (dow_ & (1u << ((w + d - 1) % 7))) days |= 1u << d;
    }
    dow_days_[w] = days;
  }
}

bool CronExpr::can_ever_fire() const {
  // The day mask depends only on the month's length and the weekday of its
  // 1st. Over a 400-year cycle every month-of-year starts on every weekday,
  // with each of its possible lengths (February: 28 and 29). Representative
  // years: 2001-2007 and 2004,2008,... give all combinations; simplest is to
  // scan the 28 years 2000-2027, which cover every (leap?, weekday of Jan 1)
  // pair, hence every (month, length, first weekday) that occurs at all.
  for (int m = 1; m <= 12; ++m) {
    if (!(mon_ & (1u << m))) continue;
    for (int y = 2000; y < 2028; ++y) {
      if (day_mask(y, m) != 0) return true;
    }
  }
  return false;
}

// ---------------------------------------------------------------------------
// Matching.

std::uint32_t CronExpr::day_mask(std::int64_t year, int month) const {
  const int len = days_in_month(year, month);
  const std::uint32_t valid = ((1u << len) - 1) << 1;
  const int w1 = weekday_of(year, month, 1);
  const int wlast = (w1 + len - 1) % 7;
  std::uint32_t dom = dom_ & valid;
  for (const DomSpecial& s : dom_special_) {
    int day = 0;
    switch (s.kind) {
      case DomSpecial::kLast:
        day = len - s.n;
        break;
      case DomSpecial::kNearestWeekday: {
        if (s.n > len) break;
        const int wd = (w1 + s.n - 1) % 7;
        if (wd == 6)
          day = s.n == 1 ? 3 : s.n - 1;
        else if (wd == 0)
          day = s.n == len ? s.n - 2 : s.n + 1;
        else
          day = s.n;
        break;
      }
      case DomSpecial::kLastWeekday:
        day = wlast == 6 ? len - 1 : wlast == 0 ? len - 2 : len;
        break;
    }
    if (day >= 1) dom |= 1u << day;
  }
  std::uint32_t dow = dow_days_[w1] & valid;
  for (const DowSpecial& s : dow_special_) {
    int day = 0;
    if (s.kind == DowSpecial::kLast) {
      day = len - (wlast - s.weekday + 7) % 7;
    } else {
      day = 1 + (s.weekday - w1 + 7) % 7 + 7 * (s.nth - 1);
    }
    if (day <= len) dow |= 1u << day;
  }
  if (dom_restricted_ && dow_restricted_) return dom | dow;
  if (dom_restricted_) return dom;
  if (dow_restricted_) return dow;
  return valid;
}

bool CronExpr::matches(LocalSeconds s) const {
  const std::int64_t days = floor_div(s, 86400);
  const std::int64_t sod = s - days * 86400;
  if (!(sec_ & bit(static_cast<int>(sod % 60)))) return false;
  if (!(min_ & bit(static_cast<int>(sod / 60 % 60)))) return false;
  if (!(hour_ & (1u << (sod / 3600)))) return false;
  const Ymd ymd = civil_from_days(days);
  if (!(mon_ & (1u << ymd.m))) return false;
  return (day_mask(ymd.y, ymd.m) >> ymd.d) & 1u;
}

namespace {

// Lowest set bit >= from, or -1.
int next_bit(std::uint64_t mask, int from) {
  if (from >= 64) return -1;
  const std::uint64_t m = mask & (~std::uint64_t{0} << from);
  return m ? std::countr_zero(m) : -1;
}
// Highest set bit <= from, or -1.
int prev_bit(std::uint64_t mask, int from) {
  if (from < 0) return -1;
  const std::uint64_t m = from >= 63 ? mask : mask & ((std::uint64_t{2} << from) - 1);
  return m ? 63 - std::countl_zero(m) : -1;
}

}  // namespace

std::optional<LocalSeconds> CronExpr::next(LocalSeconds from, LocalSeconds limit) const {
  if (from < kLocalBegin) from = kLocalBegin;
  if (limit > kLocalEnd) limit = kLocalEnd;
  if (from >= limit) return std::nullopt;
  std::int64_t days = floor_div(from, 86400);
  const std::int64_t sod = from - days * 86400;
  Ymd ymd = civil_from_days(days);
  std::int64_t y = ymd.y;
  int mo = ymd.m, d = ymd.d;
  int h = static_cast<int>(sod / 3600), mi = static_cast<int>(sod / 60 % 60),
      s = static_cast<int>(sod % 60);
  const std::int64_t limit_day = floor_div(limit - 1, 86400);
  // Each pass either returns or moves to a strictly later day, month or
  // year; the limit (at most year 10000) bounds the loop.
  while (true) {
    const int m2 = next_bit(mon_, mo);
    if (m2 < 0) {
      ++y, mo = 1, d = 1, h = 0, mi = 0, s = 0;
      if (y >= 10000) return std::nullopt;
      continue;
    }
    if (m2 != mo) mo = m2, d = 1, h = 0, mi = 0, s = 0;
    const int d2 = next_bit(day_mask(y, mo), d);
    if (d2 < 0) {
      if (++mo > 12) {
        ++y, mo = 1;
        if (y >= 10000) return std::nullopt;
      }
      d = 1, h = 0, mi = 0, s = 0;
      if (days_from_civil(y, mo, 1) > limit_day) return std::nullopt;
      continue;
    }
    if (d2 != d) d = d2, h = 0, mi = 0, s = 0;
    days = days_from_civil(y, mo, d);
    if (days > limit_day) return std::nullopt;
    const int h2 = next_bit(hour_, h);
    if (h2 < 0) {
      ++d, h = 0, mi = 0, s = 0;
      continue;
    }
    if (h2 != h) h = h2, mi = 0, s = 0;
    const int mi2 = next_bit(min_, mi);
    if (mi2 < 0) {
      ++h, mi = 0, s = 0;
      if (h == 24) ++d, h = 0;
      continue;
    }
    if (mi2 != mi) mi = mi2, s = 0;
    const int s2 = next_bit(sec_, s);
    if (s2 < 0) {
      ++mi, s = 0;
      if (mi == 60) {
        mi = 0;
        if (++h == 24) ++d, h = 0;
      }
      continue;
    }
    const LocalSeconds result = days * 86400 + h * 3600 + mi * 60 + s2;
    if (result >= limit) return std::nullopt;
    return result;
  }
}

std::optional<LocalSeconds> CronExpr::prev(LocalSeconds from, LocalSeconds limit) const {
  if (from >= kLocalEnd) from = kLocalEnd - 1;
  if (limit < kLocalBegin) limit = kLocalBegin;
  if (from < limit) return std::nullopt;
  std::int64_t days = floor_div(from, 86400);
  const std::int64_t sod = from - days * 86400;
  Ymd ymd = civil_from_days(days);
  std::int64_t y = ymd.y;
  int mo = ymd.m, d = ymd.d;
  int h = static_cast<int>(sod / 3600), mi = static_cast<int>(sod / 60 % 60),
      s = static_cast<int>(sod % 60);
  const std::int64_t limit_day = floor_div(limit, 86400);
  while (true) {
    const int m2 = prev_bit(mon_, mo);
    if (m2 < 1) {
      --y, mo = 12, d = 31, h = 23, mi = 59, s = 59;
      if (y < 1) return std::nullopt;
      continue;
    }
    if (m2 != mo) mo = m2, d = 31, h = 23, mi = 59, s = 59;
    const int d2 = prev_bit(day_mask(y, mo), std::min(d, 31));
    if (d2 < 1) {
      if (--mo < 1) {
        --y, mo = 12;
        if (y < 1) return std::nullopt;
      }
      d = 31, h = 23, mi = 59, s = 59;
      if (days_from_civil(y, mo, days_in_month(y, mo)) < limit_day) return std::nullopt;
      continue;
    }
    if (d2 != d) d = d2, h = 23, mi = 59, s = 59;
    days = days_from_civil(y, mo, d);
    if (days < limit_day) return std::nullopt;
    const int h2 = prev_bit(hour_, h);
    if (h2 < 0) {
      --d, h = 23, mi = 59, s = 59;
      continue;
    }
    if (h2 != h) h = h2, mi = 59, s = 59;
    const int mi2 = prev_bit(min_, mi);
    if (mi2 < 0) {
      --h, mi = 59, s = 59;
      if (h < 0) --d, h = 23;
      continue;
    }
    if (mi2 != mi) mi = mi2, s = 59;
    const int s2 = prev_bit(sec_, s);
    if (s2 < 0) {
      --mi, s = 59;
      if (mi < 0) {
        mi = 59;
        if (--h < 0) --d, h = 23;
      }
      continue;
    }
    const LocalSeconds result = days * 86400 + h * 3600 + mi * 60 + s2;
    if (result < limit) return std::nullopt;
    return result;
  }
}

// ---------------------------------------------------------------------------
// Printing.

namespace {

void append_runs(std::vector<std::string>& out, std::uint64_t mask, int lo, int hi) {
  int v = lo;
  while (v <= hi) {
    if (!(mask & bit(v))) {
      ++v;
      continue;
    }
    int end = v;
    while (end + 1 <= hi && (mask & bit(end + 1))) ++end;
    if (end == v)
      out.push_back(absl::StrCat(v));
    else if (end == v + 1) {
      out.push_back(absl::StrCat(v));
      out.push_back(absl::StrCat(end));
    } else {
      out.push_back(absl::StrCat(v, "-", end));
    }
    v = end + 1;
  }
}

// A seconds/minute/hour field; `star` fields are printed starting with `*`
// so that the DST class (wildcard or fixed-time) survives a round trip.
std::string time_field(std::uint64_t mask, bool star, int lo, int hi) {
  std::vector<std::string> items;
  if (star) {
    const int width = hi - lo + 1;
    int step = width;
    for (int n = 1; n <= width; ++n) {
      bool ok = true;
      for (int v = lo; v <= hi && ok; v += n) ok = (mask & bit(v)) != 0;
      if (ok) {
        step = n;
        break;
      }
    }
    items.push_back(step == 1 ? std::string("*") : absl::StrCat("*/", step));
    for (int v = lo; v <= hi; v += step) mask &= ~bit(v);
  }
  append_runs(items, mask, lo, hi);
  return absl::StrJoin(items, ",");
}

}  // namespace

std::string CronExpr::to_string() const {
  std::vector<std::string> f;
  if (has_seconds_field()) f.push_back(time_field(sec_, sec_star_, 0, 59));
  f.push_back(time_field(min_, min_star_, 0, 59));
  f.push_back(time_field(hour_, hour_star_, 0, 23));
  if (!dom_restricted_) {
    f.push_back("*");
  } else {
    std::vector<std::string> items;
    append_runs(items, dom_, 1, 31);
    for (const DomSpecial& s : dom_special_) {
      switch (s.kind) {
        case DomSpecial::kLast:
          items.push_back(s.n == 0 ? std::string("L") : absl::StrCat("L-", s.n));
          break;
        case DomSpecial::kNearestWeekday:
          items.push_back(absl::StrCat(s.n, "W"));
          break;
        case DomSpecial::kLastWeekday:
          items.push_back("LW");
          break;
      }
    }
    f.push_back(absl::StrJoin(items, ","));
  }
  if (mon_ == 0x1ffe) {
    f.push_back("*");
  } else {
    std::vector<std::string> items;
    append_runs(items, mon_, 1, 12);
    f.push_back(absl::StrJoin(items, ","));
  }
  if (!dow_restricted_) {
    f.push_back("*");
  } else {
    std::vector<std::string> items;
    append_runs(items, dow_, 0, 6);
    for (const DowSpecial& s : dow_special_) {
      if (s.kind == DowSpecial::kLast)
        items.push_back(absl::StrCat(s.weekday, "L"));
      else
        items.push_back(absl::StrCat(s.weekday, "#", s.nth));
    }
    f.push_back(absl::StrJoin(items, ","));
  }
  return absl::StrJoin(f, " ");
}

}  // namespace kairos::cron
