// RapidCheck properties of the cron engine against a brute-force reference
// that walks minute by minute (or second by second) through real instants and
// applies the DST rules of docs/SCHEDULES.md directly, using only
// absl::TimeZone lookups — not the engine's segment logic.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tests/support/cron_test_util.h"

namespace kairos::cron {
namespace {

const char* const kZones[] = {"UTC",
                              "Europe/Berlin",
                              "America/New_York",
                              "Australia/Lord_Howe",
                              "Asia/Kathmandu",
                              "America/Sao_Paulo",
                              "Pacific/Apia"};

// Reference: the first fire strictly after t within (t, t + horizon], or
// nullopt. `step` is 60 for 5-field expressions, 1 for 6-field ones.
std::optional<absl::Time> reference_next(const CronExpr& e, const absl::TimeZone& tz, DstGap gap,
                                         DstFold fold, absl::Time t, absl::Duration horizon,
                                         std::int64_t step) {
  const bool fixed = !e.wildcard();
  std::int64_t i = absl::ToUnixSeconds(t);
  i = (i / step + 1) * step;  // t is a multiple of step in these tests, or earlier
  const std::int64_t end = absl::ToUnixSeconds(t + horizon);
  for (; i <= end; i += step) {
    const absl::Time at = absl::FromUnixSeconds(i);
    if (at <= t) continue;
    const absl::TimeZone::CivilInfo ci = tz.At(at);
    // Natural occurrence of a matching local time.
    if (e.matches(ci.cs)) {
      const absl::TimeZone::TimeInfo ti = tz.At(ci.cs);
      if (ti.kind == absl::TimeZone::TimeInfo::UNIQUE) return at;
      // REPEATED: fold size from the two offsets.
      const std::int64_t size = absl::ToInt64Seconds(ti.post - ti.pre);
      if (!fixed || size > 3 * 3600) return at;
      const bool first_pass = at == ti.pre;
      if (first_pass && fold != DstFold::kLast) return at;
      if (!first_pass && fold != DstFold::kFirst) return at;
    }
    // A forward transition exactly at `at`: the shift rule.
    if (fixed && gap == DstGap::kShift) {
      const int before = tz.At(at - absl::Seconds(1)).offset;
      const int after = ci.offset;
      if (after > before && after - before <= 3 * 3600 && !e.matches(ci.cs)) {
        const LocalSeconds gap_begin = absl::ToUnixSeconds(at) + before;
        const LocalSeconds gap_end = absl::ToUnixSeconds(at) + after;
        for (LocalSeconds c = gap_begin; c < gap_end; c += step) {
          if (e.matches(c)) return at;
        }
      }
    }
  }
  return std::nullopt;
}

rc::Gen<std::string> time_item(int max, std::vector<int> favourites) {
  return rc::gen::oneOf(
      rc::gen::just(std::string("*")),
      rc::gen::map(rc::gen::element(2, 3, 5, 10, 15, 20),
                   [](int s) { return absl::StrCat("*/", s); }),
      rc::gen::map(rc::gen::elementOf(favourites), [](int v) { return absl::StrCat(v); }),
      rc::gen::map(rc::gen::inRange(0, max + 1), [](int v) { return absl::StrCat(v); }),
      rc::gen::map(rc::gen::pair(rc::gen::elementOf(favourites), rc::gen::inRange(0, max + 1)),
                   [](std::pair<int, int> p) { return absl::StrCat(p.first, ",", p.second); }),
      rc::gen::map(rc::gen::pair(rc::gen::inRange(0, max + 1), rc::gen::inRange(1, 8)),
                   [max](std::pair<int, int> p) {
                     const int hi = std::min(max, p.first + 3 * p.second);
                     return absl::StrCat(
                         p.first, "-", hi,
                         p.second > 1 ? absl::StrCat("/", p.second) : std::string());
                   }));
}

rc::Gen<std::string> day_item() {
  return rc::gen::weightedOneOf<std::string>({{8, rc::gen::just(std::string("*"))},
                                              {1, rc::gen::just(std::string("L"))},
                                              {1, rc::gen::just(std::string("*/2"))},
                                              {1, rc::gen::just(std::string("1-31"))},
                                              {1, rc::gen::just(std::string("LW,15W"))}});
}

rc::Gen<std::string> dow_item() {
  return rc::gen::weightedOneOf<std::string>({{8, rc::gen::just(std::string("*"))},
                                              {1, rc::gen::just(std::string("MON-FRI"))},
                                              {1, rc::gen::just(std::string("0,6"))},
                                              {1, rc::gen::just(std::string("5L,0#2"))}});
}

struct Case {
  std::string expr;
  std::string zone;
  DstGap gap;
  DstFold fold;
  absl::Time from;
};

// A random start near one of the zone's transitions (or a random instant).
rc::Gen<Case> gen_case(bool seconds) {
  return rc::gen::exec([seconds] {
    Case c;
    std::vector<std::string> fields;
    if (seconds) fields.push_back(*time_item(59, {0, 30, 59}));
    fields.push_back(*time_item(59, {0, 15, 30, 45}));
    fields.push_back(*time_item(23, {0, 1, 2, 3, 23}));
    fields.push_back(*day_item());
    fields.push_back("*");
    fields.push_back(*dow_item());
    c.expr = absl::StrJoin(fields, " ");
    c.zone = *rc::gen::elementOf(std::vector<std::string>(std::begin(kZones), std::end(kZones)));
    c.gap = *rc::gen::element(DstGap::kShift, DstGap::kSkip);
    c.fold = *rc::gen::element(DstFold::kFirst, DstFold::kLast, DstFold::kBoth);
    absl::TimeZone tz;
    RC_ASSERT(absl::LoadTimeZone(c.zone, &tz));
    const int year = *rc::gen::inRange(1985, 2045);
    absl::Time base = absl::FromCivil(absl::CivilSecond(year, *rc::gen::inRange(1, 13), 1, 0, 0, 0),
                                      absl::UTCTimeZone());
    absl::TimeZone::CivilTransition tr;
    if (*rc::gen::inRange(0, 4) != 0 && tz.NextTransition(base, &tr)) base = tz.At(tr.to).trans;
    const std::int64_t unit = seconds ? 1 : 60;
    const std::int64_t jiggle = *rc::gen::inRange<std::int64_t>(-3 * 3600 / unit, 3 * 3600 / unit);
    c.from = base + absl::Seconds(jiggle * unit);
    return c;
  });
}

void check_against_reference(const Case& c, absl::Duration horizon, int fires, std::int64_t step) {
  RC_TAG(c.zone);
  const CronSchedule s = test_support::Sched(c.expr, c.zone, c.gap, c.fold);
  absl::Time t = c.from;
  for (int i = 0; i < fires; ++i) {
    const auto want = reference_next(s.expr(), s.zone(), c.gap, c.fold, t, horizon, step);
    const auto got = s.next_after(t);
    if (!want) {
      // Nothing within the horizon: the engine must agree.
      RC_ASSERT(!got || got->nominal > t + horizon);
      return;
    }
    RC_ASSERT(got.has_value());
    if (got->nominal != *want) {
      RC_FAIL(absl::StrCat(c.expr, " in ", c.zone, " after ", test_support::Z(t), ": engine ",
                           test_support::Z(got->nominal), " reference ", test_support::Z(*want)));
    }
    t = *want;
  }
}

// Each property run checks several cases: 100 runs x 10 cases, so that rare
// situations (starting inside the second pass of a fold) come up every time.
RC_GTEST_PROP(CronProperty, NextAfterEqualsMinuteByMinuteReference, ()) {
  for (int i = 0; i < 10; ++i) check_against_reference(*gen_case(false), absl::Hours(60), 6, 60);
}

RC_GTEST_PROP(CronProperty, NextAfterEqualsSecondBySecondReference, ()) {
  for (int i = 0; i < 5; ++i) check_against_reference(*gen_case(true), absl::Hours(4), 8, 1);
}

RC_GTEST_PROP(CronProperty, FiresStrictlyIncreaseMatchAndMirrorPrevBefore, ()) {
  const Case c = *gen_case(*rc::gen::arbitrary<bool>());
  const CronSchedule s = test_support::Sched(c.expr, c.zone, c.gap, c.fold);
  absl::Time t = c.from;
  std::optional<Fire> last;
  for (int i = 0; i < 30; ++i) {
    const auto f = s.next_after(t);
    RC_ASSERT(f.has_value());
    RC_ASSERT(f->nominal > t);
    RC_ASSERT(f->at == f->nominal);
    RC_ASSERT(s.matches(f->nominal));
    // Nothing fires strictly between t and the fire.
    const auto p = s.prev_before(f->nominal);
    if (last) {
      RC_ASSERT(p.has_value());
      RC_ASSERT(p->nominal == last->nominal);
    } else if (p) {
      RC_ASSERT(p->nominal <= t);
    }
    // The reported local time and offset are consistent with the zone.
    if (f->note != DstNote::kGapShifted) {
      RC_ASSERT(absl::FromCivil(f->local, absl::FixedTimeZone(static_cast<int>(
                                              absl::ToInt64Seconds(f->utc_offset)))) == f->nominal);
      RC_ASSERT(s.expr().matches(f->local));
    } else {
      RC_ASSERT(s.expr().matches(f->local));
      RC_ASSERT(s.zone().At(f->local).kind == absl::TimeZone::TimeInfo::SKIPPED);
    }
    last = f;
    t = f->nominal;
  }
}

// Random expressions over the whole syntax print canonically and re-parse
// to the same compiled expression.
RC_GTEST_PROP(CronProperty, ParsePrintRoundTrip, ()) {
  const auto any_item = [](int lo, int hi) {
    return rc::gen::oneOf(
        rc::gen::just(std::string("*")),
        rc::gen::map(rc::gen::inRange(1, hi - lo + 2), [](int s) { return absl::StrCat("*/", s); }),
        rc::gen::map(rc::gen::inRange(lo, hi + 1), [](int v) { return absl::StrCat(v); }),
        rc::gen::map(rc::gen::pair(rc::gen::inRange(lo, hi + 1), rc::gen::inRange(0, 10)),
                     [hi](std::pair<int, int> p) {
                       return absl::StrCat(p.first, "-", std::min(hi, p.first + p.second));
                     }),
        rc::gen::map(rc::gen::pair(rc::gen::inRange(lo, hi + 1), rc::gen::inRange(1, 7)),
                     [](std::pair<int, int> p) { return absl::StrCat(p.first, "/", p.second); }),
        rc::gen::just(std::string("H")), rc::gen::just(std::string("H/7")));
  };
  const auto list = [&](int lo, int hi, std::vector<std::string> extra) {
    return rc::gen::exec([=] {
      const int n = *rc::gen::inRange(1, 4);
      std::vector<std::string> items;
      for (int i = 0; i < n; ++i) {
        if (!extra.empty() && *rc::gen::inRange(0, 4) == 0)
          items.push_back(*rc::gen::elementOf(extra));
        else
          items.push_back(*any_item(lo, hi));
      }
      return absl::StrJoin(items, ",");
    });
  };
  std::vector<std::string> fields;
  if (*rc::gen::arbitrary<bool>()) fields.push_back(*list(0, 59, {}));
  fields.push_back(*list(0, 59, {}));
  fields.push_back(*list(0, 23, {}));
  fields.push_back(
      *rc::gen::oneOf(rc::gen::just(std::string("?")), list(1, 31, {"L", "L-2", "LW", "10W"})));
  fields.push_back(*list(1, 12, {"JAN", "mar-May", "DEC"}));
  fields.push_back(*rc::gen::oneOf(rc::gen::just(std::string("?")),
                                   list(0, 7, {"MON-FRI", "5L", "3#2", "sun"})));
  const std::string text = absl::StrJoin(fields, " ");
  const std::string id = *rc::gen::elementOf(std::vector<std::string>{"", "a", "job-42"});
  const auto e = CronExpr::parse(text, id);
  RC_PRE(e.ok());  // e.g. a never-firing day/month combination
  const std::string printed = e->to_string();
  const auto again = CronExpr::parse(printed, "other-id");  // canonical text has no H left
  RC_ASSERT(again.ok());
  if (!(*again == *e)) RC_FAIL(absl::StrCat(text, " -> ", printed, " -> ", again->to_string()));
  RC_ASSERT(again->to_string() == printed);
}

}  // namespace
}  // namespace kairos::cron
