#include "core/schedule/explain.h"

#include <bit>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/base/absl_compat.h"
#include "core/schedule/schedule_text.h"

namespace kairos::cron {
namespace {

constexpr const char* kMonths[13] = {"",        "January",  "February", "March",  "April",
                                     "May",     "June",     "July",     "August", "September",
                                     "October", "November", "December"};
constexpr const char* kDays[7] = {"Sunday",   "Monday", "Tuesday", "Wednesday",
                                  "Thursday", "Friday", "Saturday"};
constexpr const char* kOrdinals[6] = {"", "first", "second", "third", "fourth", "fifth"};

int popcount(std::uint64_t m) { return std::popcount(m); }
int lowest(std::uint64_t m) { return std::countr_zero(m); }

// "1-5,10" style with optional names.
std::string runs(std::uint64_t mask, int lo, int hi, const char* const* names,
                 const char* through) {
  std::vector<std::string> out;
  for (int v = lo; v <= hi;) {
    if (!(mask >> v & 1)) {
      ++v;
      continue;
    }
    int end = v;
    while (end + 1 <= hi && (mask >> (end + 1) & 1)) ++end;
    auto name = [&](int x) { return names ? std::string(names[x]) : absl::StrCat(x); };
    if (end == v)
      out.push_back(name(v));
    else if (end == v + 1)
      out.push_back(absl::StrCat(name(v), ", ", name(end)));
    else
      out.push_back(absl::StrCat(name(v), through, name(end)));
    v = end + 1;
  }
  return absl::StrJoin(out, ", ");
}

// The step of a star field if it is exactly */N from lo, else 0.
int star_step(std::uint64_t mask, int lo, int hi) {
  for (int n = 1; n <= hi - lo + 1; ++n) {
    std::uint64_t want = 0;
    for (int v = lo; v <= hi; v += n) want |= std::uint64_t{1} << v;
    if (want == mask) return n;
  }
  return 0;
}

std::string time_part(const CronExpr& e) {
  const bool single =
      popcount(e.seconds()) == 1 && popcount(e.minutes()) == 1 && popcount(e.hours()) == 1;
  if (single) {
    const int h = lowest(e.hours()), m = lowest(e.minutes()), s = lowest(e.seconds());
    return s ? absl::StrFormat("at %02d:%02d:%02d", h, m, s)
             : absl::StrFormat("at %02d:%02d", h, m);
  }
  std::vector<std::string> parts;
  auto field = [&](std::uint64_t mask, int hi, const char* unit, const char* units) -> std::string {
    if (popcount(mask) == hi + 1) return absl::StrCat("every ", unit);
    const int step = star_step(mask, 0, hi);
    if (step > 1) return absl::StrCat("every ", step, " ", units);
    if (popcount(mask) == 1) return absl::StrCat("at ", unit, " ", lowest(mask));
    return absl::StrCat("at ", units, " ", runs(mask, 0, hi, nullptr, "-"));
  };
  const bool every_second = popcount(e.seconds()) == 60;
  const bool every_minute = popcount(e.minutes()) == 60;
  if (e.has_seconds_field()) parts.push_back(field(e.seconds(), 59, "second", "seconds"));
  if (!(e.has_seconds_field() && every_second && every_minute)) {
    parts.push_back(field(e.minutes(), 59, "minute", "minutes"));
  }
  if (popcount(e.hours()) != 24) {
    const int step = star_step(e.hours(), 0, 23);
    if (step > 1)
      parts.push_back(absl::StrCat("every ", step, " hours"));
    else
      parts.push_back(absl::StrCat("during hour", popcount(e.hours()) == 1 ? " " : "s ",
                                   runs(e.hours(), 0, 23, nullptr, "-")));
  }
  return absl::StrJoin(parts, ", ");
}

std::string day_of_month_part(const CronExpr& e) {
  std::vector<std::string> items;
  if (e.days_of_month())
    items.push_back(absl::StrCat("day ", runs(e.days_of_month(), 1, 31, nullptr, "-")));
  for (const DomSpecial& s : e.dom_specials()) {
    switch (s.kind) {
      case DomSpecial::kLast:
        items.push_back(
            s.n == 0 ? std::string("the last day")
                     : absl::StrCat(s.n, " day", s.n == 1 ? "" : "s", " before the last day"));
        break;
      case DomSpecial::kNearestWeekday:
        items.push_back(absl::StrCat("the weekday nearest day ", s.n));
        break;
      case DomSpecial::kLastWeekday:
        items.push_back("the last weekday");
        break;
    }
  }
  return absl::StrCat(absl::StrJoin(items, " and "), " of the month");
}

std::string day_of_week_part(const CronExpr& e) {
  std::vector<std::string> items;
  if (e.days_of_week()) items.push_back(runs(e.days_of_week(), 0, 6, kDays, " through "));
  for (const DowSpecial& s : e.dow_specials()) {
    if (s.kind == DowSpecial::kLast)
      items.push_back(absl::StrCat("the last ", kDays[s.weekday], " of the month"));
    else
      items.push_back(
          absl::StrCat("the ", kOrdinals[s.nth], " ", kDays[s.weekday], " of the month"));
  }
  return absl::StrJoin(items, " and ");
}

std::string hhmm(const absl::CivilSecond& c) {
  return c.second() ? absl::StrFormat("%02d:%02d:%02d", c.hour(), c.minute(), c.second())
                    : absl::StrFormat("%02d:%02d", c.hour(), c.minute());
}
std::string ymd(const absl::CivilSecond& c) {
  return absl::StrFormat("%04d-%02d-%02d", c.year(), c.month(), c.day());
}

}  // namespace

std::string describe(const CronExpr& e) {
  std::string out = time_part(e);
  if (e.dom_restricted() && e.dow_restricted()) {
    absl::StrAppend(&out, " on ", day_of_month_part(e), " or on ", day_of_week_part(e));
  } else if (e.dom_restricted()) {
    absl::StrAppend(&out, " on ", day_of_month_part(e));
  } else if (e.dow_restricted()) {
    absl::StrAppend(&out, " on ", day_of_week_part(e));
  } else {
    absl::StrAppend(&out, " every day");
  }
  if (e.months() != 0x1ffe)
    absl::StrAppend(&out, " in ", runs(e.months(), 1, 12, kMonths, " through "));
  return out;
}

std::string note(const Fire& f, const CronSchedule& s) {
  const std::string local = hhmm(f.local);
  switch (f.note) {
    case DstNote::kNone:
      return "";
    case DstNote::kGapShifted:
      return absl::StrCat("DST gap: ", local,
                          " does not exist; fired at the end of the gap (--dst-gap shift)");
    case DstNote::kFoldFirst:
    case DstNote::kFoldSecond: {
      const char* pass = f.note == DstNote::kFoldFirst ? "first pass" : "second pass";
      std::string why;
      if (!s.fixed_time()) {
        why = "wildcard schedule: fires on both passes";
      } else {
        const auto seg = s.segment_at(absl::ToUnixSeconds(f.nominal));
        const std::int64_t delta =
            f.note == DstNote::kFoldFirst ? seg.off - seg.next_off : seg.prev_off - seg.off;
        if (delta > CronSchedule::kMaxDstShiftSeconds)
          why = "zone redefinition: fires on both passes";
        else
          why = s.fold() == DstFold::kBoth    ? "--dst-fold both"
                : s.fold() == DstFold::kFirst ? "--dst-fold first"
                                              : "--dst-fold last";
      }
      return absl::StrCat("DST fold: ", local, " occurs twice; ", pass, " (", why, ")");
    }
  }
  return "";
}

std::vector<std::string> explain(const CronSchedule& s, std::string_view zone_name,
                                 absl::Time now) {
  std::vector<std::string> lines;
  const CronExpr& e = s.expr();
  lines.push_back(absl::StrCat(e.to_string(), ": ", describe(e), ", in ", absl_sv(zone_name), "."));
  if (s.fixed_time()) {
    lines.push_back(absl::StrCat(
        "Fixed-time schedule: a local time skipped by a DST gap ",
        s.gap() == DstGap::kShift ? "fires once at the end of the gap (--dst-gap shift)"
                                  : "does not fire (--dst-gap skip)",
        "; a local time repeated by a DST fold fires ",
        s.fold() == DstFold::kFirst  ? "on its first pass only (--dst-fold first)"
        : s.fold() == DstFold::kLast ? "on its second pass only (--dst-fold last)"
                                     : "on both passes (--dst-fold both)",
        "."));
  } else {
    lines.push_back(
        "Wildcard schedule (seconds, minute or hour field starts with '*'): fires at every real "
        "occurrence of a "
        "matching local time; times inside a DST gap do not exist and do not fire, times inside a "
        "fold fire on "
        "both passes.");
  }
  if (s.fixed_time()) {
    // Walk the zone's transitions over the next 5 years.
    bool gap_warned = false, fold_warned = false;
    const absl::Time horizon = now + absl::Hours(24 * 366 * 5);
    absl::Time t = now;
    absl::TimeZone::CivilTransition tr;
    for (int i = 0; i < 64 && !(gap_warned && fold_warned) && s.zone().NextTransition(t, &tr);
         ++i) {
      const absl::Time at = s.zone().At(tr.to).trans;
      if (at > horizon) break;
      t = at;
      const std::int64_t from = to_local_seconds(tr.from), to = to_local_seconds(tr.to);
      const std::int64_t delta = to - from;
      if (delta == 0 || delta > CronSchedule::kMaxDstShiftSeconds ||
          delta < -CronSchedule::kMaxDstShiftSeconds)
        continue;
      const std::string abbr_after = s.zone().At(at).zone_abbr;
      if (delta > 0 && !gap_warned) {
        const auto c = e.next(from, to);
        if (!c) continue;
        gap_warned = true;
        const absl::CivilSecond lc = from_local_seconds(*c);
        std::string what;
        if (s.gap() == DstGap::kShift) {
          what = absl::StrCat("Kairos fires once at ", hhmm(tr.to), " ", abbr_after, " (",
                              format_rfc3339_utc(at),
                              ") instead (--dst-gap shift; --dst-gap skip would not fire)");
        } else {
          what =
              "Kairos does not fire for it (--dst-gap skip; --dst-gap shift would fire at the end "
              "of the gap)";
        }
        lines.push_back(absl::StrCat("warning: on ", ymd(lc), " ", hhmm(lc), " does not exist in ",
                                     absl_sv(zone_name), " (clocks jump from ", hhmm(tr.from),
                                     " to ", hhmm(tr.to), "); ", what, "."));
      } else if (delta < 0 && !fold_warned) {
        const auto c = e.next(to, from);
        if (!c) continue;
        fold_warned = true;
        const absl::CivilSecond lc = from_local_seconds(*c);
        const absl::TimeZone::TimeInfo ti = s.zone().At(lc);
        std::string what;
        switch (s.fold()) {
          case DstFold::kFirst:
            what =
                absl::StrCat("Kairos fires once, on the first pass (", format_rfc3339_utc(ti.pre),
                             ") (--dst-fold first; last and both are available)");
            break;
          case DstFold::kLast:
            what = absl::StrCat("Kairos fires once, on the second pass (",
                                format_rfc3339_utc(ti.post), ") (--dst-fold last)");
            break;
          case DstFold::kBoth:
            what = absl::StrCat("Kairos fires on both passes (", format_rfc3339_utc(ti.pre),
                                " and ", format_rfc3339_utc(ti.post), ") (--dst-fold both)");
            break;
        }
        lines.push_back(absl::StrCat("warning: on ", ymd(lc), " ", hhmm(lc), " occurs twice in ",
                                     absl_sv(zone_name), " (clocks go back from ", hhmm(tr.from),
                                     " to ", hhmm(tr.to), "); ", what, "."));
      }
    }
  }
  // Fires less than once a year: look for a calendar year without a match
  // among the next 28 (a full weekday/leap-year cycle).
  const std::int64_t year = s.zone().At(now).cs.year();
  for (std::int64_t y = year + 1; y <= year + 28; ++y) {
    const LocalSeconds begin = days_from_civil(y, 1, 1) * 86400;
    const LocalSeconds end = days_from_civil(y + 1, 1, 1) * 86400;
    if (!e.next(begin, end)) {
      lines.push_back(
          absl::StrCat("warning: fires less than once a year (no fire at all in ", y, ")."));
      break;
    }
  }
  if (const auto f = s.next_after(now)) {
    lines.push_back(absl::StrCat("Next fire: ", format_rfc3339_utc(f->at), " (",
                                 format_rfc3339_local(f->at, s.zone()), ")."));
  }
  return lines;
}

}  // namespace kairos::cron
