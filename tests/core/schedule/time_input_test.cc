// Time and zone inputs are hostile: a client chooses them once the API is
// open. Zone names never reach the file system as paths, instants outside
// the supported range are refused instead of computed wrongly, every
// instant prints in one RFC 3339 form, and errors that quote an input
// neither flood the terminal nor write control bytes to it.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "core/base/rfc3339.h"
#include "core/base/text.h"
#include "core/ports/random.h"
#include "core/schedule/cron_cli.h"
#include "core/schedule/cron_expr.h"
#include "core/schedule/cron_schedule.h"
#include "core/schedule/schedule.h"
#include "core/schedule/schedule_text.h"

namespace kairos {
namespace {

absl::Time Utc(int y, int mo, int d, int h = 0, int mi = 0, int s = 0) {
  return absl::FromCivil(absl::CivilSecond(y, mo, d, h, mi, s), absl::UTCTimeZone());
}

bool has_control_bytes(absl::string_view s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) return true;
  return false;
}

TEST(ZoneName, AcceptsIanaNames) {
  for (const char* name : {"UTC", "Europe/Berlin", "Etc/GMT+5", "Etc/GMT-14",
                           "America/Argentina/Buenos_Aires", "America/Port-au-Prince", "EST5EDT"}) {
    EXPECT_TRUE(cron::is_zone_name(name)) << name;
    EXPECT_TRUE(cron::load_zone(name).ok()) << name;
  }
}

TEST(ZoneName, RefusesPathsAndLoaderPrefixes) {
  for (const char* name :
       {"/etc/localtime", "/dev/stdin", "../../../etc/passwd", "Europe/../../etc/passwd", "./UTC",
        "Europe//Berlin", "Europe/Berlin/", "/UTC", "file:UTC", "libc:UTC", "Europe/Ber lin",
        "1Europe", "Europe/Berlin\n", "a/b/c/d/e"}) {
    EXPECT_FALSE(cron::is_zone_name(name)) << name;
    const auto z = cron::load_zone(name);
    ASSERT_FALSE(z.ok()) << name;
    EXPECT_NE(z.status().message().find("not an IANA zone name"), std::string_view::npos)
        << z.status().message();
  }
  EXPECT_FALSE(cron::is_zone_name(std::string(cron::kMaxZoneNameBytes + 1, 'A')));
}

// Before the grammar check the loader opened whatever path it was given, and a
// FIFO blocked it for ever; now the path is refused without being opened (a
// regression makes this test hang until ctest's timeout).
TEST(ZoneName, FifoPathIsRefusedWithoutOpeningIt) {
  char dir[] = "/tmp/kairos-zone-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string fifo = std::string(dir) + "/zone";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_FALSE(cron::load_zone(fifo).ok());
  ::unlink(fifo.c_str());
  ::rmdir(dir);
}

TEST(SupportedRange, Rfc3339RefusesInstantsOutsideIt) {
  for (const char* text : {"0000-01-01T00:00:00Z", "0001-01-01T00:00:00Z", "0099-12-31T23:59:00Z",
                           "1969-12-31T23:59:59Z", "1970-01-01T00:30:00+01:00",
                           "9999-12-30T00:00:00Z", "9999-12-31T23:59:59Z"}) {
    const auto t = parse_rfc3339(text);
    ASSERT_FALSE(t.ok()) << text;
    EXPECT_NE(t.status().message().find("outside the supported range"), std::string_view::npos)
        << t.status().message();
  }
  EXPECT_EQ(*parse_rfc3339("1970-01-01T00:00:00Z"), absl::UnixEpoch());
  EXPECT_EQ(*parse_rfc3339("9999-12-29T23:59:59.999Z"),
            Utc(9999, 12, 29, 23, 59, 59) + absl::Milliseconds(999));
}

TEST(SupportedRange, SchedulesRefuseInstantsOutsideIt) {
  ScheduleSpec once;
  once.kind = ScheduleSpec::Kind::kOnce;
  once.at = Utc(1969, 12, 31, 23);
  auto s = Schedule::compile(once, "j");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("one-off instant 1969-12-31T23:00:00Z is outside"),
            std::string_view::npos)
      << s.status().message();
  once.at = Utc(2026, 12, 1, 10);
  EXPECT_TRUE(Schedule::compile(once, "j").ok());

  ScheduleSpec every;
  every.kind = ScheduleSpec::Kind::kInterval;
  every.every = absl::Minutes(5);
  every.start = Utc(1, 1, 1);
  s = Schedule::compile(every, "j");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("interval start 0001-01-01T00:00:00Z"),
            std::string_view::npos)
      << s.status().message();
  every.start = Utc(2026, 1, 1);
  EXPECT_TRUE(Schedule::compile(every, "j").ok());  // end: infinite future, no bound
  every.end = Utc(9999, 12, 31);
  EXPECT_FALSE(Schedule::compile(every, "j").ok());
}

TEST(Rfc3339Format, YearsAreFourDigitsAndFractionsMinimal) {
  EXPECT_EQ(format_rfc3339_utc(Utc(99, 12, 31, 23, 59)), "0099-12-31T23:59:00Z");
  EXPECT_EQ(format_rfc3339_utc(Utc(2026, 3, 29, 1) + absl::Milliseconds(500)),
            "2026-03-29T01:00:00.5Z");
  EXPECT_EQ(format_rfc3339_utc(Utc(2026, 3, 29, 1) + absl::Nanoseconds(1)),
            "2026-03-29T01:00:00.000000001Z");
  EXPECT_EQ(format_rfc3339_utc(absl::InfiniteFuture()), "infinite-future");
  EXPECT_EQ(format_rfc3339_utc(absl::InfinitePast()), "infinite-past");
  const auto ba = cron::load_zone("America/Argentina/Buenos_Aires");
  ASSERT_TRUE(ba.ok());
  EXPECT_EQ(format_rfc3339_local(Utc(2026, 12, 2, 3), *ba), "2026-12-02T00:00:00-03:00");
  const auto kolkata = cron::load_zone("Asia/Kolkata");
  ASSERT_TRUE(kolkata.ok());
  EXPECT_EQ(format_rfc3339_local(Utc(2026, 12, 2), *kolkata), "2026-12-02T05:30:00+05:30");
}

// Inside the supported range the one formatter prints exactly what the log,
// the trace hash and the CLI printed before it (Abseil's %E*S form), so no
// stored trace or golden output changes.
TEST(Rfc3339Format, MatchesThePreviousFormInsideTheRange) {
  Random rng(20261201);
  const auto berlin = cron::load_zone("Europe/Berlin");
  ASSERT_TRUE(berlin.ok());
  for (int i = 0; i < 20000; ++i) {
    const std::int64_t secs = rng.between(0, kEndUnixSeconds - 1);
    const std::int64_t nanos = i % 3 == 0 ? 0 : rng.between(0, 999999999);
    const absl::Time t = absl::FromUnixSeconds(secs) + absl::Nanoseconds(nanos);
    ASSERT_EQ(format_rfc3339_utc(t),
              absl::FormatTime("%Y-%m-%dT%H:%M:%E*SZ", t, absl::UTCTimeZone()));
    ASSERT_EQ(format_rfc3339_local(t, *berlin),
              absl::FormatTime("%Y-%m-%dT%H:%M:%E*S%Ez", t, *berlin));
  }
}

TEST(CronSteps, LargeStepsAreQuotedWhole) {
  for (const auto& [expr, quoted] :
       {std::pair{"*/4294967296 * * * *", "step 4294967296 is larger"},
        std::pair{"*/99999999999999999999 * * * *", "step 99999999999999999999 is larger"},
        std::pair{"1-5/99999999999 * * * *", "step 99999999999 is larger"},
        std::pair{"H/1000000 * * * *", "step 1000000 is larger"}}) {
    const auto e = cron::CronExpr::parse(expr);
    ASSERT_FALSE(e.ok()) << expr;
    EXPECT_NE(e.status().message().find(quoted), std::string_view::npos) << e.status().message();
  }
  const auto big = cron::CronExpr::parse("99999999999 * * * *");
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("99999999999 is out of range 0-59"), std::string_view::npos)
      << big.status().message();
}

TEST(Excerpt, TruncatesAndEscapes) {
  EXPECT_EQ(excerpt("Europe/Berlin"), "Europe/Berlin");
  EXPECT_EQ(excerpt("a\x1b[31m\\b\xff"), "a\\x1b[31m\\\\b\\xff");
  EXPECT_EQ(excerpt(std::string(10240, 'a')),
            std::string(kExcerptBytes, 'a') + "... (10240 bytes)");
}

TEST(Excerpt, ErrorsThatQuoteInputStayShortAndPrintable) {
  const std::string huge(10000, '7');
  const std::string nasty = "2026-01-01T00:00:00Z\x1b]0;pwned\x07";
  for (const absl::Status& st :
       {cron::CronExpr::parse(huge + " * * * *").status(),
        cron::CronExpr::parse("1," + huge + "x * * * *").status(), parse_rfc3339(huge).status(),
        parse_rfc3339(nasty).status(), cron::load_zone(huge).status(),
        cron::load_zone("Europe/\x1b[2J").status(),
        parse_schedule_text("every " + huge, absl::UnixEpoch()).status()}) {
    ASSERT_FALSE(st.ok());
    EXPECT_LT(st.message().size(), 600u) << st.message().substr(0, 200);
    EXPECT_FALSE(has_control_bytes(st.message())) << st.message().substr(0, 200);
  }
}

TEST(CronCli, LeadingDashSaysHowToPassTheExpression) {
  const cron::CliResult r = cron::run_cron_cli({"next", "-1 * * * *"}, absl::UnixEpoch());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("put -- before it"), std::string::npos) << r.err;
  const cron::CliResult dashed =
      cron::run_cron_cli({"next", "--", "-1 * * * *"}, absl::UnixEpoch());
  EXPECT_EQ(dashed.exit_code, 2);
  EXPECT_NE(dashed.err.find("field 1 (minute)"), std::string::npos) << dashed.err;
  const cron::CliResult unknown =
      cron::run_cron_cli({"next", "--bogus", "* * * * *"}, absl::UnixEpoch());
  EXPECT_EQ(unknown.err.find("put -- before it"), std::string::npos) << unknown.err;
}

TEST(CronCli, TzPathIsRefused) {
  const cron::CliResult r =
      cron::run_cron_cli({"next", "--tz", "/etc/localtime", "0 0 * * *"}, absl::UnixEpoch());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--tz: time zone \"/etc/localtime\" is not an IANA zone name"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace kairos
