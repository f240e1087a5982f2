// Syntax of cron expressions: every element, the day-matching rule, errors.
#include "core/schedule/cron_expr.h"

#include <gtest/gtest.h>

#include "core/base/stable_hash.h"
#include "tests/support/cron_test_util.h"

namespace kairos::cron {
namespace {

CronExpr P(std::string_view text, std::string_view id = {}) {
  auto e = CronExpr::parse(text, id);
  EXPECT_TRUE(e.ok()) << text << ": " << e.status();
  return e.ok() ? *e : CronExpr();
}

std::string Err(std::string_view text) {
  auto e = CronExpr::parse(text);
  EXPECT_FALSE(e.ok()) << text << " parsed as " << (e.ok() ? e->to_string() : "");
  return std::string(e.status().message());
}

std::uint64_t Bits(std::initializer_list<int> v) {
  std::uint64_t m = 0;
  for (int x : v) m |= std::uint64_t{1} << x;
  return m;
}

// Next matches in UTC (local == UTC), as strings.
std::vector<std::string> Next(std::string_view expr, std::string_view from, int n) {
  return test_support::Fires(test_support::Sched(expr, "UTC"), from, n);
}

TEST(CronExprTest, FieldsListsRangesSteps) {
  EXPECT_EQ(P("5 * * * *").minutes(), Bits({5}));
  EXPECT_EQ(P("1,2,40 * * * *").minutes(), Bits({1, 2, 40}));
  EXPECT_EQ(P("10-13 * * * *").minutes(), Bits({10, 11, 12, 13}));
  EXPECT_EQ(P("*/15 * * * *").minutes(), Bits({0, 15, 30, 45}));
  EXPECT_EQ(P("5-59/20 * * * *").minutes(), Bits({5, 25, 45}));
  EXPECT_EQ(P("50/5 * * * *").minutes(), Bits({50, 55}));  // N/S runs to the max
  EXPECT_EQ(P("0 0-23/6 * * *").hours(), Bits({0, 6, 12, 18}));
  EXPECT_EQ(P("*/60 * * * *").minutes(), Bits({0}));
  EXPECT_EQ(P("0 0 1,15 * *").days_of_month(), Bits({1, 15}));
  EXPECT_EQ(P("0 0 * 1-3,12 *").months(), Bits({1, 2, 3, 12}));
  // 6 fields: a leading seconds field.
  const CronExpr six = P("*/20 5 4 * * *");
  EXPECT_EQ(six.seconds(), Bits({0, 20, 40}));
  EXPECT_EQ(six.minutes(), Bits({5}));
  EXPECT_EQ(six.hours(), Bits({4}));
  EXPECT_TRUE(six.has_seconds_field());
  EXPECT_FALSE(P("5 4 * * *").has_seconds_field());
  EXPECT_EQ(P("5 4 * * *").seconds(), Bits({0}));
  // Tabs and repeated spaces separate fields too.
  EXPECT_EQ(P(" 5\t4  * * * "), P("5 4 * * *"));
}

TEST(CronExprTest, NamesAreCaseInsensitiveAndSundayIsZeroOrSeven) {
  EXPECT_EQ(P("0 0 * JAN-mar,Dec *").months(), Bits({1, 2, 3, 12}));
  EXPECT_EQ(P("0 0 * * MON-FRI").days_of_week(), Bits({1, 2, 3, 4, 5}));
  EXPECT_EQ(P("0 0 * * sun").days_of_week(), Bits({0}));
  EXPECT_EQ(P("0 0 * * 7").days_of_week(), Bits({0}));
  EXPECT_EQ(P("0 0 * * 0").days_of_week(), Bits({0}));
  EXPECT_EQ(P("0 0 * * 5-7").days_of_week(), Bits({0, 5, 6}));
  EXPECT_EQ(P("0 0 * * MON-7"), P("0 0 * * 0-1,2-6"));
  EXPECT_EQ(P("0 0 * * */2").days_of_week(), Bits({0, 2, 4, 6}));
}

TEST(CronExprTest, QuestionMarkIsUnrestrictedInDayFields) {
  const CronExpr e = P("0 0 ? * MON");
  EXPECT_FALSE(e.dom_restricted());
  EXPECT_TRUE(e.dow_restricted());
  EXPECT_EQ(P("0 0 1 * ?"), P("0 0 1 * *"));
  EXPECT_NE(Err("? 0 * * *").find("field 1 (minute)"), std::string::npos);
}

TEST(CronExprTest, Macros) {
  EXPECT_EQ(P("@yearly"), P("0 0 1 1 *"));
  EXPECT_EQ(P("@annually"), P("0 0 1 1 *"));
  EXPECT_EQ(P("@monthly"), P("0 0 1 * *"));
  EXPECT_EQ(P("@weekly"), P("0 0 * * 0"));
  EXPECT_EQ(P("@daily"), P("0 0 * * *"));
  EXPECT_EQ(P("@midnight"), P("0 0 * * *"));
  EXPECT_EQ(P("@HOURLY"), P("0 * * * *"));
  EXPECT_TRUE(P("@hourly").wildcard());
  EXPECT_FALSE(P("@daily").wildcard());
  EXPECT_NE(Err("@reboot").find("unknown macro '@reboot'"), std::string::npos);
}

TEST(CronExprTest, WildcardIsVixiesRule) {
  EXPECT_TRUE(P("*/15 2 * * *").wildcard());
  EXPECT_TRUE(P("0 * * * *").wildcard());
  EXPECT_TRUE(P("* 0 2 * * *").wildcard());  // seconds field starts with *
  EXPECT_TRUE(P("*/5,7 2 * * *").wildcard());
  EXPECT_FALSE(P("0,15,30,45 2 * * *").wildcard());
  EXPECT_FALSE(P("0-59 2 * * *").wildcard());
  EXPECT_FALSE(P("30 2 * * *").wildcard());
  EXPECT_FALSE(P("H/15 2 * * *").wildcard());  // documented: H is not '*'
}

TEST(CronExprTest, DayMatchingRule) {
  // Both restricted: either matches. 2026-03-01 is a Sunday.
  EXPECT_EQ(Next("0 0 13 * FRI", "2026-03-01T00:00:00Z", 4),
            (std::vector<std::string>{"2026-03-06T00:00:00Z", "2026-03-13T00:00:00Z",
                                      "2026-03-20T00:00:00Z", "2026-03-27T00:00:00Z"}));
  // Only day-of-week restricted: Fridays only.
  EXPECT_EQ(Next("0 0 * * FRI", "2026-03-01T00:00:00Z", 2),
            (std::vector<std::string>{"2026-03-06T00:00:00Z", "2026-03-13T00:00:00Z"}));
  EXPECT_EQ(Next("0 0 ? * FRI", "2026-03-01T00:00:00Z", 1),
            (std::vector<std::string>{"2026-03-06T00:00:00Z"}));
  EXPECT_EQ(Next("0 0 */1 * FRI", "2026-03-01T00:00:00Z", 1),
            (std::vector<std::string>{"2026-03-06T00:00:00Z"}));
  // */2 in day-of-month is restricted: odd days OR Fridays.
  EXPECT_EQ(Next("0 0 */2 * FRI", "2026-03-01T00:00:00Z", 4),
            (std::vector<std::string>{"2026-03-03T00:00:00Z", "2026-03-05T00:00:00Z",
                                      "2026-03-06T00:00:00Z", "2026-03-07T00:00:00Z"}));
  // 1-31 is restricted too.
  EXPECT_EQ(Next("0 0 1-31 * FRI", "2026-03-01T00:00:00Z", 1),
            (std::vector<std::string>{"2026-03-02T00:00:00Z"}));
}

TEST(CronExprTest, LastDayForms) {
  EXPECT_EQ(Next("0 0 L * *", "2026-01-15T00:00:00Z", 3),
            (std::vector<std::string>{"2026-01-31T00:00:00Z", "2026-02-28T00:00:00Z",
                                      "2026-03-31T00:00:00Z"}));
  EXPECT_EQ(Next("0 0 L * *", "2028-02-01T00:00:00Z", 1),
            (std::vector<std::string>{"2028-02-29T00:00:00Z"}));
  EXPECT_EQ(Next("0 0 L-3 * *", "2026-02-01T00:00:00Z", 2),
            (std::vector<std::string>{"2026-02-25T00:00:00Z", "2026-03-28T00:00:00Z"}));
  // LW: last weekday. 2026-01-31 is a Saturday, 2026-05-31 a Sunday.
  EXPECT_EQ(Next("0 0 LW * *", "2026-01-01T00:00:00Z", 1),
            (std::vector<std::string>{"2026-01-30T00:00:00Z"}));
  EXPECT_EQ(Next("0 0 LW 5 *", "2026-01-01T00:00:00Z", 1),
            (std::vector<std::string>{"2026-05-29T00:00:00Z"}));
  EXPECT_EQ(Next("0 0 LW 3 *", "2026-01-01T00:00:00Z", 1),
            (std::vector<std::string>{"2026-03-31T00:00:00Z"}));
}

TEST(CronExprTest, NearestWeekday) {
  // 2026-02-15 is a Sunday -> Monday 16th; 2026-08-15 is a Saturday -> Friday 14th.
  EXPECT_EQ(Next("0 0 15W 2 *", "2026-01-01T00:00:00Z", 1),
            (std::vector<std::string>{"2026-02-16T00:00:00Z"}));
  EXPECT_EQ(Next("0 0 15W 8 *", "2026-01-01T00:00:00Z", 1),
            (std::vector<std::string>{"2026-08-14T00:00:00Z"}));
  EXPECT_EQ(Next("0 0 15W 4 *", "2026-01-01T00:00:00Z", 1),
            (std::vector<std::string>{"2026-04-15T00:00:00Z"}));
  // Never crosses the month: 1W on Saturday 2026-08-01 -> Monday 3rd.
  EXPECT_EQ(Next("0 0 1W 8 *", "2026-01-01T00:00:00Z", 1),
            (std::vector<std::string>{"2026-08-03T00:00:00Z"}));
  // 31W on Sunday 2026-05-31 -> Friday 29th.
  EXPECT_EQ(Next("0 0 31W 5 *", "2026-01-01T00:00:00Z", 1),
            (std::vector<std::string>{"2026-05-29T00:00:00Z"}));
}

TEST(CronExprTest, LastAndNthWeekday) {
  EXPECT_EQ(Next("0 0 * * 5L", "2026-01-01T00:00:00Z", 2),
            (std::vector<std::string>{"2026-01-30T00:00:00Z", "2026-02-27T00:00:00Z"}));
  EXPECT_EQ(P("0 0 * * FRIL"), P("0 0 * * 5L"));
  EXPECT_EQ(Next("0 0 * * 5#3", "2026-01-01T00:00:00Z", 2),
            (std::vector<std::string>{"2026-01-16T00:00:00Z", "2026-02-20T00:00:00Z"}));
  EXPECT_EQ(P("0 0 * * fri#3"), P("0 0 * * 5#3"));
  EXPECT_EQ(P("0 0 * * 7#1"), P("0 0 * * 0#1"));
  // A fifth Monday exists only in some months: 2026-03-30, 2026-06-29.
  EXPECT_EQ(Next("0 0 * * 1#5", "2026-03-01T00:00:00Z", 2),
            (std::vector<std::string>{"2026-03-30T00:00:00Z", "2026-06-29T00:00:00Z"}));
}

TEST(CronExprTest, HashSpreadIsStablePerJob) {
  const CronExpr a = P("H 2 * * *", "job-a");
  EXPECT_EQ(a, P("H 2 * * *", "job-a"));
  const int minute = static_cast<int>(stable_hash("job-a", 1) % 60);
  EXPECT_EQ(a.minutes(), Bits({minute}));
  // 6-field form hashes the minute field the same way.
  EXPECT_EQ(P("0 H 2 * * *", "job-a").minutes(), a.minutes());
  // H/15: one value per 15 with a per-job offset.
  const CronExpr b = P("H/15 * * * *", "job-b");
  const int off = static_cast<int>(stable_hash("job-b", 1) % 15);
  EXPECT_EQ(b.minutes(), Bits({off, off + 15, off + 30, off + 45}));
  // H(N-M)/S: a per-job phase inside the range.
  const CronExpr c = P("H(10-40)/10 * * * *", "job-c");
  const int phase = static_cast<int>(stable_hash("job-c", 1) % 10);
  std::uint64_t want = 0;
  for (int v = 10 + phase; v <= 40; v += 10) want |= std::uint64_t{1} << v;
  EXPECT_EQ(c.minutes(), want);
  // H(0-29) stays in range; H in day-of-month stays in 1-28.
  for (int i = 0; i < 200; ++i) {
    const std::string id = "job-" + std::to_string(i);
    const CronExpr e = P("H(0-29) H H * *", id);
    EXPECT_LT(e.minutes(), std::uint64_t{1} << 30);
    EXPECT_GE(e.days_of_month(), 2u);
    EXPECT_LT(e.days_of_month(), 1u << 29);
  }
  // Many jobs spread over the hour.
  std::uint64_t seen = 0;
  for (int i = 0; i < 1000; ++i) seen |= P("H 2 * * *", "daily-" + std::to_string(i)).minutes();
  EXPECT_EQ(seen, (std::uint64_t{1} << 60) - 1);
}

TEST(CronExprTest, StableHashIsPinned) {
  // Part of the persistent contract (H fields, jitter, shard map): FNV-1a 64
  // then fmix64. Values computed independently from the definition.
  EXPECT_EQ(stable_hash(""), 0xefd01f60ba992926ULL);
  EXPECT_EQ(stable_hash("a"), 0x82a2a958a9bece5bULL);
  EXPECT_EQ(stable_hash("job-a"), 0x71ebe15c5a73f827ULL);
  EXPECT_EQ(stable_hash("job-a", 1), 0xf746ad65d97ccd1eULL);
}

TEST(CronExprTest, ErrorsNameFieldAndProblem) {
  EXPECT_EQ(Err("0 25 * * *"), "field 2 (hour): 25 is out of range 0-23");
  EXPECT_EQ(Err("0 0 25 * * *"), "field 3 (hour): 25 is out of range 0-23");
  EXPECT_EQ(Err("60 * * * *"), "field 1 (minute): 60 is out of range 0-59");
  EXPECT_EQ(Err("0 0 0 * *"), "field 3 (day-of-month): 0 is out of range 1-31");
  EXPECT_EQ(Err("0 0 * 13 *"), "field 4 (month): 13 is out of range 1-12");
  EXPECT_EQ(Err("0 0 * * 8"), "field 5 (day-of-week): 8 is out of range 0-7");
  EXPECT_NE(Err("0 0 * * FRI-MON").find("field 5 (day-of-week): range FRI-MON is reversed (5 > 1)"),
            std::string::npos);
  EXPECT_NE(Err("0 0 * * MON-SUN").find("range MON-SUN is reversed (1 > 0); SUN is 0"),
            std::string::npos);
  EXPECT_NE(Err("30-10 * * * *").find("field 1 (minute): range 30-10 is reversed"),
            std::string::npos);
  EXPECT_NE(Err("0 0 * *").find("expected 5 fields"), std::string::npos);
  EXPECT_NE(Err("0 0 * * * * *").find("got 7"), std::string::npos);
  EXPECT_NE(Err("").find("got 0"), std::string::npos);
  EXPECT_EQ(Err("*/0 * * * *"), "field 1 (minute): step 0 must be at least 1");
  EXPECT_NE(Err("*/61 * * * *").find("step 61 is larger"), std::string::npos);
  EXPECT_NE(Err("0 0 * FOO *").find("field 4 (month): unknown name 'FOO'"), std::string::npos);
  EXPECT_NE(Err("0 MON * * *").find("field 2 (hour): unexpected 'M'"), std::string::npos);
  EXPECT_NE(Err("1,,2 * * * *").find("empty list item"), std::string::npos);
  EXPECT_NE(Err("0 0 L 2 L").find("day-of-week"), std::string::npos);
  EXPECT_NE(Err("0 0 * * 5#6").find("after # expected 1-5"), std::string::npos);
  EXPECT_NE(Err("0 0 32W * *").find("32 is out of range 1-31"), std::string::npos);
  EXPECT_NE(Err("0 0 L-31 * *").find("out of range 0-30"), std::string::npos);
  EXPECT_NE(Err("0 0 * * 1-5/").find("expected a step number"), std::string::npos);
  EXPECT_NE(Err("5x * * * *").find("unexpected 'x'"), std::string::npos);
  EXPECT_NE(Err("0 0 \x01 * *").find("printable ASCII"), std::string::npos);
}

TEST(CronExprTest, NeverFiringExpressionsAreRejected) {
  EXPECT_NE(Err("0 0 30 2 *").find("never fires"), std::string::npos);
  EXPECT_NE(Err("0 0 31 4,6,9,11 *").find("never fires"), std::string::npos);
  EXPECT_NE(Err("0 0 31W 2 *").find("never fires"), std::string::npos);
  // Rare but possible: accepted.
  P("0 0 29 2 *");
  P("0 0 * 2 1#5");
  P("0 0 30 2 MON");  // day-of-week matches (either rule)
}

TEST(CronExprTest, LongHorizons) {
  EXPECT_EQ(Next("0 0 29 2 *", "2096-03-01T00:00:00Z", 1),
            (std::vector<std::string>{"2104-02-29T00:00:00Z"}));
  EXPECT_EQ(Next("0 0 29 2 *", "2099-01-01T00:00:00Z", 2),
            (std::vector<std::string>{"2104-02-29T00:00:00Z", "2108-02-29T00:00:00Z"}));
  // Past year 9999 there is nothing.
  EXPECT_TRUE(Next("0 0 1 1 *", "9999-06-01T00:00:00Z", 1).empty());
  // Second-resolution fires across a year boundary.
  EXPECT_EQ(Next("59 59 23 31 12 *", "2026-12-31T23:59:58Z", 2),
            (std::vector<std::string>{"2026-12-31T23:59:59Z", "2027-12-31T23:59:59Z"}));
}

TEST(CronExprTest, PrevMatchesMirrorNext) {
  const CronExpr e = P("*/7 1-3 L,15 * *");
  LocalSeconds t = to_local_seconds(absl::CivilSecond(2026, 1, 1, 0, 0, 0));
  std::vector<LocalSeconds> fwd;
  for (int i = 0; i < 50; ++i) {
    t = *e.next(t + 1);
    fwd.push_back(t);
  }
  for (int i = 49; i > 0; --i) EXPECT_EQ(*e.prev(fwd[i] - 1), fwd[i - 1]);
}

TEST(CronExprTest, CanonicalPrintRoundTrips) {
  for (const char* text : {"*/15 2 * * *", "0 0 L-3,15W,LW * *", "0 0 * * 5L,1#2,MON-WED",
                           "*/5,7,30-40 * * * *", "@hourly", "*/20 5 4 ? JAN-MAR,DEC SUN",
                           "0 0 */2 * FRI", "0 0 1-31 * *", "59 59 23 31 12 *", "*/60 * * * *"}) {
    const CronExpr e = P(text);
    const std::string printed = e.to_string();
    EXPECT_EQ(P(printed), e) << text << " printed as " << printed;
  }
  EXPECT_EQ(P("0 2 * * MON-FRI").to_string(), "0 2 * * 1-5");
  EXPECT_EQ(P("@weekly").to_string(), "0 0 * * 0");
}

}  // namespace
}  // namespace kairos::cron
