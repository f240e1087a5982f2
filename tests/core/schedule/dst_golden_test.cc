// Golden tables: expected fires on real transition dates, for each DST rule,
// in zones with ordinary (Europe/Berlin, America/New_York), 30-minute
// (Australia/Lord_Howe), odd-offset (Asia/Kathmandu) and midnight
// (America/Sao_Paulo, 2018) transitions, and a zone redefinition
// (Pacific/Apia skipped 2011-12-30). Every zone is named explicitly.
#include <gtest/gtest.h>

#include "tests/support/cron_test_util.h"

namespace kairos::cron {
namespace {

using test_support::Fires;
using test_support::Sched;
using V = std::vector<std::string>;

// --- Europe/Berlin: 2026-03-29 02:00 CET -> 03:00 CEST (01:00Z);
//                    2026-10-25 03:00 CEST -> 02:00 CET (01:00Z).
TEST(DstGoldenBerlin, GapShiftFiresAtTransition) {
  EXPECT_EQ(Fires(Sched("30 2 * * *", "Europe/Berlin"), "2026-03-28T00:00:00Z", 3),
            (V{"2026-03-28T01:30:00Z", "2026-03-29T01:00:00Z gap", "2026-03-30T00:30:00Z"}));
}
TEST(DstGoldenBerlin, GapSkip) {
  EXPECT_EQ(Fires(Sched("30 2 * * *", "Europe/Berlin", DstGap::kSkip), "2026-03-28T00:00:00Z", 2),
            (V{"2026-03-28T01:30:00Z", "2026-03-30T00:30:00Z"}));
}
TEST(DstGoldenBerlin, FoldFirstLastBoth) {
  EXPECT_EQ(Fires(Sched("30 2 * * *", "Europe/Berlin"), "2026-10-24T00:00:00Z", 3),
            (V{"2026-10-24T00:30:00Z", "2026-10-25T00:30:00Z fold1", "2026-10-26T01:30:00Z"}));
  EXPECT_EQ(Fires(Sched("30 2 * * *", "Europe/Berlin", DstGap::kShift, DstFold::kLast),
                  "2026-10-24T00:00:00Z", 3),
            (V{"2026-10-24T00:30:00Z", "2026-10-25T01:30:00Z fold2", "2026-10-26T01:30:00Z"}));
  EXPECT_EQ(Fires(Sched("30 2 * * *", "Europe/Berlin", DstGap::kShift, DstFold::kBoth),
                  "2026-10-24T00:00:00Z", 4),
            (V{"2026-10-24T00:30:00Z", "2026-10-25T00:30:00Z fold1", "2026-10-25T01:30:00Z fold2",
               "2026-10-26T01:30:00Z"}));
}
TEST(DstGoldenBerlin, WildcardEveryRealOccurrence) {
  // Every 30 real minutes across spring-forward: no burst, no hole.
  EXPECT_EQ(Fires(Sched("*/30 * * * *", "Europe/Berlin"), "2026-03-29T00:00:00Z", 3),
            (V{"2026-03-29T00:30:00Z", "2026-03-29T01:00:00Z", "2026-03-29T01:30:00Z"}));
  // Across fall-back: both passes of 02:00 and 02:30.
  EXPECT_EQ(Fires(Sched("*/30 * * * *", "Europe/Berlin"), "2026-10-25T00:00:00Z", 4),
            (V{"2026-10-25T00:30:00Z fold1", "2026-10-25T01:00:00Z fold2",
               "2026-10-25T01:30:00Z fold2", "2026-10-25T02:00:00Z"}));
  // Wildcard minute with a fixed hour: hour 2 does not exist on 03-29.
  EXPECT_EQ(Fires(Sched("*/30 2 * * *", "Europe/Berlin"), "2026-03-28T01:45:00Z", 1),
            (V{"2026-03-30T00:00:00Z"}));
  EXPECT_EQ(Fires(Sched("*/30 2 * * *", "Europe/Berlin"), "2026-10-24T23:00:00Z", 4),
            (V{"2026-10-25T00:00:00Z fold1", "2026-10-25T00:30:00Z fold1",
               "2026-10-25T01:00:00Z fold2", "2026-10-25T01:30:00Z fold2"}));
  // --dst-fold / --dst-gap do not change wildcard schedules.
  EXPECT_EQ(Fires(Sched("*/30 2 * * *", "Europe/Berlin", DstGap::kShift, DstFold::kFirst),
                  "2026-10-24T23:00:00Z", 4),
            Fires(Sched("*/30 2 * * *", "Europe/Berlin", DstGap::kSkip, DstFold::kLast),
                  "2026-10-24T23:00:00Z", 4));
}
TEST(DstGoldenBerlin, AfterYear2038KeepsRules) {
  EXPECT_EQ(Fires(Sched("30 2 * * *", "Europe/Berlin"), "2090-03-25T12:00:00Z", 2),
            (V{"2090-03-26T01:00:00Z gap", "2090-03-27T00:30:00Z"}));
}
TEST(DstGoldenBerlin, StartingInsideTheFold) {
  // From the first pass of the fold, fold=last still reaches the second pass.
  EXPECT_EQ(Fires(Sched("45 2 * * *", "Europe/Berlin", DstGap::kShift, DstFold::kLast),
                  "2026-10-25T00:50:00Z", 1),
            (V{"2026-10-25T01:45:00Z fold2"}));
  // From the second pass, fold=first has already fired today.
  EXPECT_EQ(Fires(Sched("45 2 * * *", "Europe/Berlin"), "2026-10-25T01:10:00Z", 1),
            (V{"2026-10-26T01:45:00Z"}));
  // The wildcard sees first-pass fires before second-pass ones.
  EXPECT_EQ(Fires(Sched("*/20 * * * *", "Europe/Berlin"), "2026-10-25T00:50:00Z", 3),
            (V{"2026-10-25T01:00:00Z fold2", "2026-10-25T01:20:00Z fold2",
               "2026-10-25T01:40:00Z fold2"}));
}

// --- America/New_York: 2026-03-08 02:00 EST -> 03:00 EDT (07:00Z);
//                       2026-11-01 02:00 EDT -> 01:00 EST (06:00Z).
TEST(DstGoldenNewYork, Gap) {
  EXPECT_EQ(Fires(Sched("30 2 * * *", "America/New_York"), "2026-03-07T00:00:00Z", 3),
            (V{"2026-03-07T07:30:00Z", "2026-03-08T07:00:00Z gap", "2026-03-09T06:30:00Z"}));
  EXPECT_EQ(
      Fires(Sched("30 2 * * *", "America/New_York", DstGap::kSkip), "2026-03-07T00:00:00Z", 2),
      (V{"2026-03-07T07:30:00Z", "2026-03-09T06:30:00Z"}));
  // 02:00 shifts onto 03:00, which fires anyway: one fire, the natural one.
  EXPECT_EQ(Fires(Sched("0 2,3 * * *", "America/New_York"), "2026-03-08T06:00:00Z", 3),
            (V{"2026-03-08T07:00:00Z", "2026-03-09T06:00:00Z", "2026-03-09T07:00:00Z"}));
  // Several gap times fire once.
  EXPECT_EQ(Fires(Sched("0,15,30,45 2 * * *", "America/New_York"), "2026-03-08T06:00:00Z", 2),
            (V{"2026-03-08T07:00:00Z gap", "2026-03-09T06:00:00Z"}));
}
TEST(DstGoldenNewYork, Fold) {
  EXPECT_EQ(Fires(Sched("30 1 * * *", "America/New_York"), "2026-10-31T00:00:00Z", 3),
            (V{"2026-10-31T05:30:00Z", "2026-11-01T05:30:00Z fold1", "2026-11-02T06:30:00Z"}));
  EXPECT_EQ(Fires(Sched("30 1 * * *", "America/New_York", DstGap::kShift, DstFold::kLast),
                  "2026-10-31T00:00:00Z", 3),
            (V{"2026-10-31T05:30:00Z", "2026-11-01T06:30:00Z fold2", "2026-11-02T06:30:00Z"}));
  EXPECT_EQ(Fires(Sched("30 1 * * *", "America/New_York", DstGap::kShift, DstFold::kBoth),
                  "2026-10-31T00:00:00Z", 4),
            (V{"2026-10-31T05:30:00Z", "2026-11-01T05:30:00Z fold1", "2026-11-01T06:30:00Z fold2",
               "2026-11-02T06:30:00Z"}));
  // @hourly is wildcard: 01:00 fires on both passes.
  EXPECT_EQ(Fires(Sched("@hourly", "America/New_York"), "2026-11-01T04:30:00Z", 4),
            (V{"2026-11-01T05:00:00Z fold1", "2026-11-01T06:00:00Z fold2", "2026-11-01T07:00:00Z",
               "2026-11-01T08:00:00Z"}));
}

// --- Australia/Lord_Howe: 30-minute DST.
//     2026-04-05 02:00 (+11) -> 01:30 (+10:30) at 2026-04-04T15:00Z;
//     2026-10-04 02:00 (+10:30) -> 02:30 (+11) at 2026-10-03T15:30Z.
TEST(DstGoldenLordHowe, HalfHourGap) {
  EXPECT_EQ(Fires(Sched("15 2 * * *", "Australia/Lord_Howe"), "2026-10-02T00:00:00Z", 3),
            (V{"2026-10-02T15:45:00Z", "2026-10-03T15:30:00Z gap", "2026-10-04T15:15:00Z"}));
  EXPECT_EQ(
      Fires(Sched("15 2 * * *", "Australia/Lord_Howe", DstGap::kSkip), "2026-10-02T00:00:00Z", 2),
      (V{"2026-10-02T15:45:00Z", "2026-10-04T15:15:00Z"}));
}
TEST(DstGoldenLordHowe, HalfHourFold) {
  EXPECT_EQ(Fires(Sched("45 1 * * *", "Australia/Lord_Howe"), "2026-04-03T00:00:00Z", 3),
            (V{"2026-04-03T14:45:00Z", "2026-04-04T14:45:00Z fold1", "2026-04-05T15:15:00Z"}));
  EXPECT_EQ(Fires(Sched("45 1 * * *", "Australia/Lord_Howe", DstGap::kShift, DstFold::kBoth),
                  "2026-04-03T00:00:00Z", 4),
            (V{"2026-04-03T14:45:00Z", "2026-04-04T14:45:00Z fold1", "2026-04-04T15:15:00Z fold2",
               "2026-04-05T15:15:00Z"}));
  // 01:15 is before the repeated half hour: unaffected.
  EXPECT_EQ(Fires(Sched("15 1 * * *", "Australia/Lord_Howe"), "2026-04-04T00:00:00Z", 1),
            (V{"2026-04-04T14:15:00Z"}));
}

// --- Asia/Kathmandu: 1986-01-01 00:00 (+05:30) -> 00:15 (+05:45) at 1985-12-31T18:30Z.
TEST(DstGoldenKathmandu, FifteenMinuteOffsetChange) {
  EXPECT_EQ(Fires(Sched("5 0 * * *", "Asia/Kathmandu"), "1985-12-30T00:00:00Z", 3),
            (V{"1985-12-30T18:35:00Z", "1985-12-31T18:30:00Z gap", "1986-01-01T18:20:00Z"}));
  EXPECT_EQ(Fires(Sched("5 0 * * *", "Asia/Kathmandu", DstGap::kSkip), "1985-12-30T00:00:00Z", 2),
            (V{"1985-12-30T18:35:00Z", "1986-01-01T18:20:00Z"}));
  EXPECT_EQ(Fires(Sched("*/5 * * * *", "Asia/Kathmandu"), "1985-12-31T18:20:00Z", 3),
            (V{"1985-12-31T18:25:00Z", "1985-12-31T18:30:00Z", "1985-12-31T18:35:00Z"}));
}

// --- America/Sao_Paulo (2018, before Brazil abolished DST): midnight
//     transitions. 2018-02-18 00:00 (-02) -> 2018-02-17 23:00 (-03) at
//     02:00Z; 2018-11-04 00:00 (-03) -> 01:00 (-02) at 03:00Z.
TEST(DstGoldenSaoPaulo, MidnightGap) {
  EXPECT_EQ(Fires(Sched("@daily", "America/Sao_Paulo"), "2018-11-02T12:00:00Z", 3),
            (V{"2018-11-03T03:00:00Z", "2018-11-04T03:00:00Z gap", "2018-11-05T02:00:00Z"}));
  EXPECT_EQ(Fires(Sched("@daily", "America/Sao_Paulo", DstGap::kSkip), "2018-11-02T12:00:00Z", 2),
            (V{"2018-11-03T03:00:00Z", "2018-11-05T02:00:00Z"}));
  EXPECT_EQ(Fires(Sched("@hourly", "America/Sao_Paulo"), "2018-11-04T01:30:00Z", 3),
            (V{"2018-11-04T02:00:00Z", "2018-11-04T03:00:00Z", "2018-11-04T04:00:00Z"}));
}
TEST(DstGoldenSaoPaulo, MidnightFoldRepeatsTheEveningBefore) {
  EXPECT_EQ(Fires(Sched("30 23 * * *", "America/Sao_Paulo"), "2018-02-16T12:00:00Z", 3),
            (V{"2018-02-17T01:30:00Z", "2018-02-18T01:30:00Z fold1", "2018-02-19T02:30:00Z"}));
  EXPECT_EQ(Fires(Sched("30 23 * * *", "America/Sao_Paulo", DstGap::kShift, DstFold::kLast),
                  "2018-02-16T12:00:00Z", 3),
            (V{"2018-02-17T01:30:00Z", "2018-02-18T02:30:00Z fold2", "2018-02-19T02:30:00Z"}));
  EXPECT_EQ(Fires(Sched("@daily", "America/Sao_Paulo"), "2018-02-17T12:00:00Z", 2),
            (V{"2018-02-18T03:00:00Z", "2018-02-19T03:00:00Z"}));
}

// --- Pacific/Apia: 2011-12-29 24:00 (-10) -> 2011-12-31 00:00 (+14) at
//     2011-12-30T10:00Z. A 24-hour redefinition: the skipped day never fires,
//     whatever the gap policy, and nothing catches up.
TEST(DstGoldenApia, SkippedDayNeverFires) {
  for (const DstGap gap : {DstGap::kShift, DstGap::kSkip}) {
    EXPECT_EQ(Fires(Sched("0 12 * * *", "Pacific/Apia", gap), "2011-12-28T00:00:00Z", 3),
              (V{"2011-12-28T22:00:00Z", "2011-12-29T22:00:00Z", "2011-12-30T22:00:00Z"}));
    EXPECT_EQ(Fires(Sched("0 0 30 12 *", "Pacific/Apia", gap), "2011-12-01T00:00:00Z", 1),
              (V{"2012-12-29T10:00:00Z"}));
  }
  EXPECT_EQ(Fires(Sched("0 * * * *", "Pacific/Apia"), "2011-12-30T08:30:00Z", 3),
            (V{"2011-12-30T09:00:00Z", "2011-12-30T10:00:00Z", "2011-12-30T11:00:00Z"}));
}

TEST(DstGolden, PrevBeforeMirrorsNextAfter) {
  struct Case {
    const char* expr;
    const char* zone;
    DstGap gap;
    DstFold fold;
    const char* from;
  };
  const Case cases[] = {
      {"30 2 * * *", "Europe/Berlin", DstGap::kShift, DstFold::kFirst, "2026-03-27T00:00:00Z"},
      {"30 2 * * *", "Europe/Berlin", DstGap::kShift, DstFold::kBoth, "2026-10-23T00:00:00Z"},
      {"30 2 * * *", "Europe/Berlin", DstGap::kSkip, DstFold::kLast, "2026-10-23T00:00:00Z"},
      {"*/20 * * * *", "Europe/Berlin", DstGap::kShift, DstFold::kFirst, "2026-10-24T23:00:00Z"},
      {"0 2,3 * * *", "America/New_York", DstGap::kShift, DstFold::kFirst, "2026-03-07T00:00:00Z"},
      {"@daily", "America/Sao_Paulo", DstGap::kShift, DstFold::kFirst, "2018-11-01T00:00:00Z"},
      {"0 12 * * *", "Pacific/Apia", DstGap::kShift, DstFold::kFirst, "2011-12-27T00:00:00Z"},
      {"45 1 * * *", "Australia/Lord_Howe", DstGap::kShift, DstFold::kLast, "2026-04-02T00:00:00Z"},
  };
  for (const Case& c : cases) {
    const CronSchedule s = Sched(c.expr, c.zone, c.gap, c.fold);
    absl::Time t = test_support::T(c.from);
    std::vector<Fire> fires;
    for (int i = 0; i < 80; ++i) {
      auto f = s.next_after(t);
      ASSERT_TRUE(f.has_value());
      fires.push_back(*f);
      t = f->nominal;
    }
    for (std::size_t i = 1; i < fires.size(); ++i) {
      auto p = s.prev_before(fires[i].nominal);
      ASSERT_TRUE(p.has_value());
      EXPECT_EQ(p->nominal, fires[i - 1].nominal)
          << c.expr << " " << c.zone << " at " << test_support::Z(fires[i].nominal);
      EXPECT_EQ(p->note, fires[i - 1].note);
      EXPECT_TRUE(s.matches(fires[i].nominal));
      EXPECT_FALSE(s.matches(fires[i].nominal - absl::Seconds(1)) &&
                   fires[i - 1].nominal != fires[i].nominal - absl::Seconds(1));
    }
  }
}

}  // namespace
}  // namespace kairos::cron
