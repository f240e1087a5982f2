// `kairos cron next|explain` through core/schedule/cron_cli.h (the same function
// prod/cli/cron_command.cc calls), with a fixed "now".
#include "core/schedule/cron_cli.h"

#include <gtest/gtest.h>

#include "absl/strings/str_split.h"
#include "tests/support/cron_test_util.h"

namespace kairos::cron {
namespace {

CliResult Cli(std::vector<std::string> args) {
  return run_cron_cli(args, test_support::T("2026-03-01T00:00:00Z"));
}

TEST(CronCliTest, NextPrintsUtcLocalAndNote) {
  const CliResult r = Cli(
      {"next", "--tz", "Europe/Berlin", "--from", "2026-03-28T00:00:00Z", "-n", "3", "30 2 * * *"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "2026-03-28T01:30:00Z\t2026-03-28T02:30:00+01:00\n"
            "2026-03-29T01:00:00Z\t2026-03-29T03:00:00+02:00\tDST gap: 02:30 does not exist; fired "
            "at the end of "
            "the gap (--dst-gap shift)\n"
            "2026-03-30T00:30:00Z\t2026-03-30T02:30:00+02:00\n");
  EXPECT_EQ(r.err, "");
}

TEST(CronCliTest, FlagsForms) {
  const CliResult skip = Cli({"next", "--tz=Europe/Berlin", "--from=2026-03-28T00:00:00Z", "-n",
                              "2", "--dst-gap", "skip", "30", "2", "*", "*", "*"});
  EXPECT_EQ(skip.exit_code, 0) << skip.err;
  EXPECT_EQ(skip.out,
            "2026-03-28T01:30:00Z\t2026-03-28T02:30:00+01:00\n2026-03-30T00:30:00Z\t2026-03-30T02:"
            "30:00+02:00\n");
  const CliResult both = Cli({"next", "--tz", "Europe/Berlin", "--from", "2026-10-24T12:00:00Z",
                              "-n", "2", "--dst-fold", "both", "30 2 * * *"});
  EXPECT_EQ(both.exit_code, 0);
  EXPECT_EQ(both.out,
            "2026-10-25T00:30:00Z\t2026-10-25T02:30:00+02:00\tDST fold: 02:30 occurs twice; first "
            "pass (--dst-fold both)\n"
            "2026-10-25T01:30:00Z\t2026-10-25T02:30:00+01:00\tDST fold: 02:30 occurs twice; second "
            "pass (--dst-fold both)\n");
  // Default: 5 fires after "now", in UTC.
  const CliResult def = Cli({"next", "@daily"});
  EXPECT_EQ(def.exit_code, 0);
  EXPECT_EQ(std::count(def.out.begin(), def.out.end(), '\n'), 5);
  EXPECT_EQ(def.out.substr(0, 20), "2026-03-02T00:00:00Z");
  // --id seeds H.
  EXPECT_EQ(Cli({"next", "--id", "job-7", "H H * * *"}).out,
            Cli({"next", "--id", "job-7", "H H * * *"}).out);
}

TEST(CronCliTest, BadInputExitsTwoNamingTheProblem) {
  auto expect2 = [](const CliResult& r, std::string_view needle) {
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
  };
  expect2(Cli({"next", "0 25 * * *"}), "field 2 (hour): 25 is out of range 0-23");
  expect2(Cli({"explain", "0 25 * * *"}), "field 2 (hour): 25 is out of range 0-23");
  expect2(Cli({"next", "0 0 30 2 *"}), "never fires");
  expect2(Cli({"next", "--tz", "Mars/Olympus", "@daily"}), "unknown time zone \"Mars/Olympus\"");
  expect2(Cli({"next", "--bogus", "@daily"}), "unknown flag '--bogus'");
  expect2(Cli({"next", "@daily", "--tz"}), "--tz needs a value");
  expect2(Cli({"next", "-n", "abc", "@daily"}), "-n: 'abc' is not a number");
  expect2(Cli({"next", "-n", "0", "@daily"}), "-n: '0' is not a number from 1 to 100000");
  expect2(Cli({"next", "--from", "yesterday", "@daily"}), "--from: invalid time \"yesterday\"");
  expect2(Cli({"next", "--dst-gap", "later", "@daily"}), "--dst-gap: 'later' is not shift or skip");
  expect2(Cli({"next", "--dst-fold", "middle", "@daily"}),
          "--dst-fold: 'middle' is not first, last or both");
  expect2(Cli({"next"}), "missing EXPR");
  expect2(Cli({"explain", "-n", "3", "@daily"}), "unknown flag '-n'");
  expect2(Cli({"frobnicate"}), "unknown subcommand 'frobnicate'");
  EXPECT_EQ(Cli({}).exit_code, 2);
  EXPECT_EQ(Cli({"--help"}).exit_code, 0);
}

TEST(CronCliTest, ExplainWarnsAboutDstAndRareSchedules) {
  const CliResult r = run_cron_cli({"explain", "--tz", "Europe/Berlin", "30 2 * * *"},
                                   test_support::T("2026-01-10T00:00:00Z"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("30 2 * * *: at 02:30 every day, in Europe/Berlin."), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("Fixed-time schedule"), std::string::npos);
  EXPECT_NE(
      r.out.find(
          "warning: on 2026-03-29 02:30 does not exist in Europe/Berlin (clocks jump from 02:00 to "
          "03:00); Kairos fires once at 03:00 CEST (2026-03-29T01:00:00Z) instead"),
      std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("warning: on 2026-10-25 02:30 occurs twice in Europe/Berlin (clocks go back "
                       "from 03:00 to "
                       "02:00); Kairos fires once, on the first pass (2026-10-25T00:30:00Z)"),
            std::string::npos)
      << r.out;
  // Safe time: no DST warning.
  const CliResult safe = run_cron_cli({"explain", "--tz", "Europe/Berlin", "0 9 * * 1-5"},
                                      test_support::T("2026-01-10T00:00:00Z"));
  EXPECT_EQ(safe.out.find("warning"), std::string::npos) << safe.out;
  EXPECT_NE(safe.out.find("at 09:00 on Monday through Friday"), std::string::npos) << safe.out;
  // Rare.
  const CliResult rare = Cli({"explain", "0 0 29 2 *"});
  EXPECT_NE(rare.out.find("warning: fires less than once a year (no fire at all in 2027)"),
            std::string::npos)
      << rare.out;
  // Wildcard: described, no fixed-time warning.
  const CliResult wild = Cli({"explain", "--tz", "Europe/Berlin", "*/15 * * * *"});
  EXPECT_NE(wild.out.find("Wildcard schedule"), std::string::npos);
  EXPECT_NE(wild.out.find("every 15 minutes every day"), std::string::npos) << wild.out;
  EXPECT_EQ(wild.out.find("warning"), std::string::npos);
}

TEST(CronCliTest, DescribeSpecials) {
  auto out = [](std::string e) { return Cli({"explain", e}).out; };
  EXPECT_NE(out("0 0 L * *").find("on the last day of the month"), std::string::npos);
  EXPECT_NE(out("0 9 * * 5#3").find("on the third Friday of the month"), std::string::npos);
  EXPECT_NE(out("0 9 15W * *").find("the weekday nearest day 15 of the month"), std::string::npos);
  EXPECT_NE(out("0 9 13 * FRI").find("on day 13 of the month or on Friday"), std::string::npos);
}

}  // namespace
}  // namespace kairos::cron
