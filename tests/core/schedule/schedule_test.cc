// kairos::Schedule (core/schedule/schedule.h), the duration grammar, schedule text
// (one-off, relative, interval) and RFC 3339 parsing.
#include "core/schedule/schedule.h"

#include <gtest/gtest.h>

#include "core/base/duration.h"
#include "core/schedule/schedule_text.h"
#include "tests/support/cron_test_util.h"

namespace kairos {
namespace {

using test_support::T;
using test_support::Z;

TEST(DurationTest, ParsesTheOneGrammar) {
  EXPECT_EQ(*parse_duration("90s"), absl::Seconds(90));
  EXPECT_EQ(*parse_duration("1h30m"), absl::Minutes(90));
  EXPECT_EQ(*parse_duration("2d12h"), absl::Hours(60));
  EXPECT_EQ(*parse_duration("1s500ms"), absl::Milliseconds(1500));
  EXPECT_EQ(*parse_duration("250ms"), absl::Milliseconds(250));
  EXPECT_EQ(*parse_duration("0s"), absl::ZeroDuration());
  EXPECT_EQ(*parse_duration("1d2h3m4s5ms"),
            absl::Hours(26) + absl::Minutes(3) + absl::Seconds(4) + absl::Milliseconds(5));
}

TEST(DurationTest, RejectsEverythingElseSayingWhatWasExpected) {
  for (const char* bad : {"", "90", "1.5h", "-5s", "5min", "1y", "30m1h", "1h1h", "1h 30m", "h",
                          "5S", " 5s", "100001d", "99999999999999999999s"}) {
    const auto d = parse_duration(bad);
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_NE(d.status().message().find("expected integers with units d, h, m, s, ms"),
              absl::string_view::npos)
        << d.status();
  }
  EXPECT_NE(parse_duration("90").status().message().find("has no unit"), absl::string_view::npos);
  EXPECT_NE(parse_duration("5min").status().message().find("unknown unit 'min'"),
            absl::string_view::npos);
  EXPECT_NE(parse_duration("30m1h").status().message().find("out of order"),
            absl::string_view::npos);
}

TEST(DurationTest, FormatRoundTrips) {
  EXPECT_EQ(format_duration(absl::Minutes(90)), "1h30m");
  EXPECT_EQ(format_duration(absl::ZeroDuration()), "0s");
  EXPECT_EQ(format_duration(absl::Milliseconds(1500)), "1s500ms");
  EXPECT_EQ(format_duration(absl::Hours(49)), "2d1h");
  EXPECT_EQ(format_duration(-absl::Seconds(5)), "-5s");
  for (std::int64_t ms : {1LL, 999LL, 1000LL, 61000LL, 86400000LL, 90061001LL, 123456789012LL}) {
    EXPECT_EQ(*parse_duration(format_duration(absl::Milliseconds(ms))), absl::Milliseconds(ms))
        << ms;
  }
}

TEST(Rfc3339Test, ParsesOffsetsAndRejectsJunk) {
  EXPECT_EQ(*parse_rfc3339("2026-03-29T01:00:00Z"), absl::FromUnixSeconds(1774746000));
  EXPECT_EQ(*parse_rfc3339("2026-03-29T03:00:00+02:00"), absl::FromUnixSeconds(1774746000));
  EXPECT_EQ(*parse_rfc3339("2026-03-28t20:00:00-05:00"), absl::FromUnixSeconds(1774746000));
  EXPECT_EQ(*parse_rfc3339("2026-03-29T01:00:00.25Z"),
            absl::FromUnixSeconds(1774746000) + absl::Milliseconds(250));
  for (const char* bad : {"2026-03-29T01:00:00", "2026-02-30T00:00:00Z", "2026-03-29T24:00:00Z",
                          "2026-03-29T01:00:60Z", "2026-03-29", "2026-03-29T01:00:00+0200",
                          "2026-03-29T01:00:00Zjunk", "tomorrow"}) {
    const auto t = parse_rfc3339(bad);
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_NE(t.status().message().find("expected RFC 3339 with an offset"),
              absl::string_view::npos);
  }
  EXPECT_EQ(format_rfc3339_utc(absl::FromUnixSeconds(1774746000)), "2026-03-29T01:00:00Z");
  absl::TimeZone berlin;
  ASSERT_TRUE(absl::LoadTimeZone("Europe/Berlin", &berlin));
  EXPECT_EQ(format_rfc3339_local(absl::FromUnixSeconds(1774746000), berlin),
            "2026-03-29T03:00:00+02:00");
}

TEST(ScheduleTextTest, OneOffRelativeIntervalCron) {
  const absl::Time now = T("2026-06-01T12:00:00Z");
  auto once = parse_schedule_text("2026-12-01T10:00:00Z", now);
  ASSERT_TRUE(once.ok());
  EXPECT_EQ(once->kind, ScheduleSpec::Kind::kOnce);
  EXPECT_EQ(once->at, T("2026-12-01T10:00:00Z"));
  EXPECT_EQ(parse_schedule_text("at 2026-12-01T11:00:00+01:00", now)->at,
            T("2026-12-01T10:00:00Z"));
  auto in = parse_schedule_text("in 3h", now);
  ASSERT_TRUE(in.ok());
  EXPECT_EQ(in->kind, ScheduleSpec::Kind::kOnce);
  EXPECT_EQ(in->at, T("2026-06-01T15:00:00Z"));
  auto every = parse_schedule_text("every 90s", now);
  ASSERT_TRUE(every.ok());
  EXPECT_EQ(every->kind, ScheduleSpec::Kind::kInterval);
  EXPECT_EQ(every->every, absl::Seconds(90));
  EXPECT_EQ(every->start, now);
  EXPECT_EQ(every->end, absl::InfiniteFuture());
  auto bounded =
      parse_schedule_text("every 1h30m from 2026-07-01T00:00:00Z until 2026-07-02T00:00:00Z", now);
  ASSERT_TRUE(bounded.ok()) << bounded.status();
  EXPECT_EQ(bounded->start, T("2026-07-01T00:00:00Z"));
  EXPECT_EQ(bounded->end, T("2026-07-02T00:00:00Z"));
  auto cron = parse_schedule_text("30 2 * * *", now);
  ASSERT_TRUE(cron.ok());
  EXPECT_EQ(cron->kind, ScheduleSpec::Kind::kCron);
  EXPECT_EQ(cron->cron, "30 2 * * *");
  EXPECT_EQ(cron->zone, "UTC");
  // Errors say what was expected.
  EXPECT_NE(parse_schedule_text("in 3 hours", now)
                .status()
                .message()
                .find("expected integers with units"),
            absl::string_view::npos);
  EXPECT_NE(parse_schedule_text("every 90s from tomorrow", now).status().message().find("RFC 3339"),
            absl::string_view::npos);
  EXPECT_NE(parse_schedule_text("every 90s sometimes 2026-07-01T00:00:00Z", now)
                .status()
                .message()
                .find("unexpected 'sometimes'"),
            absl::string_view::npos);
  EXPECT_NE(parse_schedule_text("0 25 * * *", now).status().message().find("field 2 (hour)"),
            absl::string_view::npos);
  EXPECT_FALSE(parse_schedule_text("every 0s", now).ok());
}

ScheduleSpec CronSpec(std::string expr, std::string zone = "UTC") {
  ScheduleSpec s;
  s.kind = ScheduleSpec::Kind::kCron;
  s.cron = std::move(expr);
  s.zone = std::move(zone);
  return s;
}

TEST(ScheduleTest, CompileErrors) {
  EXPECT_NE(Schedule::compile(CronSpec("0 0 30 2 *"), "j").status().message().find("never fires"),
            absl::string_view::npos);
  EXPECT_NE(
      Schedule::compile(CronSpec("0 25 * * *"), "j").status().message().find("field 2 (hour): 25"),
      absl::string_view::npos);
  EXPECT_NE(Schedule::compile(CronSpec("0 2 * * *", "Mars/Olympus"), "j")
                .status()
                .message()
                .find("\"Mars/Olympus\""),
            absl::string_view::npos);
  EXPECT_NE(Schedule::compile(CronSpec("0 2 * * *", "localtime"), "j")
                .status()
                .message()
                .find("local zone"),
            absl::string_view::npos);
  ScheduleSpec once;
  once.kind = ScheduleSpec::Kind::kOnce;
  EXPECT_FALSE(Schedule::compile(once, "j").ok());
  ScheduleSpec iv;
  iv.kind = ScheduleSpec::Kind::kInterval;
  iv.every = absl::Seconds(90);
  EXPECT_NE(Schedule::compile(iv, "j").status().message().find("start"), absl::string_view::npos);
  iv.start = T("2026-01-01T00:00:00Z");
  iv.every = absl::ZeroDuration();
  EXPECT_FALSE(Schedule::compile(iv, "j").ok());
  ScheduleSpec neg = CronSpec("0 2 * * *");
  neg.jitter = -absl::Seconds(1);
  EXPECT_FALSE(Schedule::compile(neg, "j").ok());
}

TEST(ScheduleTest, CronThroughTheSchedulerApi) {
  ScheduleSpec spec = CronSpec("30 2 * * *", "Europe/Berlin");
  auto s = Schedule::compile(spec, "job-1");
  ASSERT_TRUE(s.ok());
  auto f = s->next_after(T("2026-03-28T12:00:00Z"));
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(Z(f->at), "2026-03-29T01:00:00Z");
  EXPECT_EQ(f->nominal, f->at);
  EXPECT_EQ(f->note, DstNote::kGapShifted);
  EXPECT_EQ(f->local, absl::CivilSecond(2026, 3, 29, 2, 30, 0));
  EXPECT_EQ(f->utc_offset, absl::Hours(2));
  spec.dst_gap = DstGap::kSkip;
  EXPECT_EQ(Z(Schedule::compile(spec, "job-1")->next_after(T("2026-03-28T12:00:00Z"))->at),
            "2026-03-30T00:30:00Z");
  // H is seeded by the job id.
  auto h1 = Schedule::compile(CronSpec("H H * * *"), "job-1");
  auto h2 = Schedule::compile(CronSpec("H H * * *"), "job-1");
  EXPECT_EQ(h1->next_after(T("2026-01-01T00:00:00Z"))->at,
            h2->next_after(T("2026-01-01T00:00:00Z"))->at);
}

TEST(ScheduleTest, OnceAndInterval) {
  ScheduleSpec once;
  once.kind = ScheduleSpec::Kind::kOnce;
  once.at = T("2026-12-01T10:00:00Z");
  once.zone = "Asia/Kathmandu";
  auto s = Schedule::compile(once, "j");
  ASSERT_TRUE(s.ok());
  auto f = s->next_after(T("2026-11-01T00:00:00Z"));
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->at, once.at);
  EXPECT_EQ(f->local, absl::CivilSecond(2026, 12, 1, 15, 45, 0));
  EXPECT_FALSE(s->next_after(once.at).has_value());  // strictly after

  ScheduleSpec iv;
  iv.kind = ScheduleSpec::Kind::kInterval;
  iv.every = absl::Seconds(90);
  iv.start = T("2026-01-01T00:00:00Z");
  iv.end = T("2026-01-01T00:04:30Z");
  auto is = Schedule::compile(iv, "j");
  ASSERT_TRUE(is.ok());
  std::vector<std::string> got;
  absl::Time t = T("2025-12-31T00:00:00Z");
  while (auto g = is->next_after(t)) {
    got.push_back(Z(g->at));
    t = g->nominal;
  }
  // Anchored at start (k = 0, 1, ...), up to and including end.
  EXPECT_EQ(got, (std::vector<std::string>{"2026-01-01T00:00:00Z", "2026-01-01T00:01:30Z",
                                           "2026-01-01T00:03:00Z", "2026-01-01T00:04:30Z"}));
  EXPECT_EQ(Z(is->next_after(T("2026-01-01T00:01:00Z"))->at), "2026-01-01T00:01:30Z");
  EXPECT_EQ(Z(is->next_after(T("2026-01-01T00:01:30Z"))->at), "2026-01-01T00:03:00Z");
  // prev_before / matches mirror next_after.
  EXPECT_EQ(Z(is->prev_before(T("2026-01-01T00:03:00Z"))->at), "2026-01-01T00:01:30Z");
  EXPECT_EQ(Z(is->prev_before(T("2026-01-01T00:03:01Z"))->at), "2026-01-01T00:03:00Z");
  EXPECT_EQ(Z(is->prev_before(T("2027-01-01T00:00:00Z"))->at), "2026-01-01T00:04:30Z");
  EXPECT_FALSE(is->prev_before(T("2026-01-01T00:00:00Z")).has_value());
  EXPECT_TRUE(is->matches(T("2026-01-01T00:03:00Z")));
  EXPECT_FALSE(is->matches(T("2026-01-01T00:03:01Z")));
  EXPECT_FALSE(is->matches(T("2026-01-01T00:06:00Z")));  // past the end
  EXPECT_EQ(s->prev_before(T("2027-01-01T00:00:00Z"))->at, once.at);
  EXPECT_FALSE(s->prev_before(once.at).has_value());
  EXPECT_TRUE(s->matches(once.at));
  ScheduleSpec cron;
  cron.cron = "30 2 * * *";
  cron.zone = "Europe/Berlin";
  auto cs = Schedule::compile(cron, "j");
  EXPECT_EQ(Z(cs->prev_before(T("2026-03-29T12:00:00Z"))->at), "2026-03-29T01:00:00Z");
  EXPECT_TRUE(cs->matches(T("2026-03-29T01:00:00Z")));
  EXPECT_FALSE(cs->matches(T("2026-03-29T00:30:00Z")));
}

TEST(ScheduleTest, JitterIsDeterministicBoundedAndBeforeTheNextOccurrence) {
  ScheduleSpec spec = CronSpec("*/5 * * * *");
  spec.jitter = absl::Minutes(2);
  auto a = Schedule::compile(spec, "job-a");
  auto a2 = Schedule::compile(spec, "job-a");
  auto b = Schedule::compile(spec, "job-b");
  ASSERT_TRUE(a.ok() && b.ok());
  absl::Time t = T("2026-01-01T00:00:00Z");
  bool differs = false, nonzero = false;
  for (int i = 0; i < 200; ++i) {
    const auto fa = a->next_after(t);
    const auto fb = b->next_after(t);
    ASSERT_TRUE(fa && fb);
    EXPECT_EQ(fa->at, a2->next_after(t)->at);
    EXPECT_EQ(fa->nominal, fb->nominal);
    EXPECT_GE(fa->at, fa->nominal);
    EXPECT_LE(fa->at, fa->nominal + absl::Minutes(2));
    differs |= fa->at != fb->at;
    nonzero |= fa->at != fa->nominal;
    t = fa->nominal;
  }
  EXPECT_TRUE(differs);
  EXPECT_TRUE(nonzero);
  // A jitter larger than the spacing never reaches the next occurrence.
  spec.cron = "* * * * * *";  // every second
  spec.jitter = absl::Hours(1);
  auto c = Schedule::compile(spec, "job-c");
  t = T("2026-01-01T00:00:00Z");
  for (int i = 0; i < 500; ++i) {
    const auto f = c->next_after(t);
    EXPECT_LT(f->at, f->nominal + absl::Seconds(1));
    t = f->nominal;
  }
}

}  // namespace
}  // namespace kairos
