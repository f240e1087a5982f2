// The rules over the client's boundary inputs and its filtered and bounded
// queries (sim/oracle/query_checks.cc) on hand-made histories:
// `inputs-within-documented-limits` (past a documented limit refused with
// InvalidArgument and nothing written, at it accepted) and
// `queries-match-the-model` (listings sorted, filtered exactly and complete;
// runs walks within their lower bounds and complete; ledger windows met and
// complete), each firing on the history that breaks it and quiet on a
// correct one.
#include <gtest/gtest.h>

#include <limits>

#include "absl/strings/str_cat.h"
#include "core/kernel/keyspace.h"
#include "sim/scenario/client_events.h"
#include "tests/support/history_builder.h"

namespace kairos::sim {
namespace {

using test_support::Hist;
namespace ce = client_events;

constexpr std::string_view kInputs = "inputs-within-documented-limits";
constexpr std::string_view kQueries = "queries-match-the-model";
constexpr NodeId kClient = 2;

struct QueryHist : Hist {
  absl::Duration now = absl::ZeroDuration();
  Event& event(std::string_view kind) {
    now += absl::Seconds(1);
    NodeEvent e;
    e.at = t0 + now;
    e.node = kClient;
    e.event.at = e.at;
    e.event.kind = kind;  // the kinds are constants (static storage)
    events.push_back(std::move(e));
    return events.back().event;
  }
  void input(std::string_view probe, bool past, std::string_view code, std::string job = "") {
    Event& e = event(ce::kInputAnswered);
    e.with("probe", std::string(probe))
        .with("bound", std::string(past ? "past" : "at"))
        .with("code", std::string(code));
    if (!job.empty()) e.with("job", job).with("namespace", "probes").with("labels", "");
  }
  void created(std::string job, std::string ns, std::string labels) {
    event(ce::kJobCreated)
        .with("job", std::move(job))
        .with("incarnation", std::uint64_t{1})
        .with("namespace", std::move(ns))
        .with("labels", std::move(labels));
  }
  void listing(std::uint64_t n, std::string ns, std::string selector, std::string ids) {
    event(ce::kListStarted)
        .with("listing", n)
        .with("namespace", ns)
        .with("selector", std::move(selector));
    event(ce::kListed).with("listing", n).with("limit", std::uint64_t{2}).with("ids", ids);
  }
  // `walk` and `records` give times as microseconds after t0 (rebased here).
  std::string rebase(std::string_view text) const {
    std::string out, num;
    auto flush = [&] {
      if (!num.empty()) out += absl::StrCat(absl::ToUnixMicros(t0) + std::stoll(num));
      num.clear();
    };
    for (char c : text) {
      if (c >= '0' && c <= '9') {
        num += c;
        continue;
      }
      flush();
      out += c;
    }
    flush();
    return out;
  }
  void walk(std::string walk) {
    walk = rebase(walk);
    event(ce::kRunsWalked)
        .with("job", "job-a")
        .with("incarnation", std::uint64_t{1})
        .with("limit", std::uint64_t{2})
        .with("more", std::uint64_t{0})
        .with("walk", std::move(walk));
  }
  void ledger(std::int64_t from, std::int64_t to, std::string records, bool more = false) {
    // Records "incarnation:nominal:through": only the times are rebased.
    std::string rebased;
    std::string_view rest = records;
    while (!rest.empty()) {
      const std::size_t comma = rest.find(',');
      const std::string_view r = rest.substr(0, comma);
      const std::size_t colon = r.find(':');
      absl::StrAppend(&rebased, rebased.empty() ? "" : ",", std::string(r.substr(0, colon + 1)),
                      rebase(r.substr(colon + 1)));
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
    records = rebased;
    const std::int64_t base = absl::ToUnixMicros(t0);
    if (from != std::numeric_limits<std::int64_t>::min()) from += base;
    if (to != std::numeric_limits<std::int64_t>::max()) to += base;
    event(ce::kLedgerQueried)
        .with("job", "job-a")
        .with("from", from)
        .with("to", to)
        .with("limit", std::uint64_t{3})
        .with("more", std::uint64_t{more})
        .with("records", std::move(records));
  }
  bool fires(std::string_view name) const {
    for (const auto& v : Checker::with_defaults().run(history(), {}).violations)
      if (v.invariant == name) return true;
    return false;
  }
};

TEST(QueryChecks, AnInputPastItsLimitMustBeRefusedAsInvalid) {
  QueryHist ok;
  ok.input("label-value-size", true, "INVALID_ARGUMENT", "probe-1");
  ok.input("label-value-size", false, "OK", "probe-2");
  ok.input("list-page-size-high", true, "INVALID_ARGUMENT");
  EXPECT_FALSE(ok.fires(kInputs));
  QueryHist accepted;
  accepted.input("priority-high", true, "OK", "probe-3");
  EXPECT_TRUE(accepted.fires(kInputs));
  QueryHist other;  // refused, but not as invalid
  other.input("runs-limit", true, "NOT_FOUND");
  EXPECT_TRUE(other.fires(kInputs));
}

TEST(QueryChecks, TheRunsOfAJobNobodyCreatedAreNotFound) {
  QueryHist ok;
  ok.input("runs-of-unknown-job", true, "NOT_FOUND");
  ok.input("runs-of-unknown-job", false, "OK");
  EXPECT_FALSE(ok.fires(kInputs));
  QueryHist empty;  // an empty list for an id nobody created
  empty.input("runs-of-unknown-job", true, "OK");
  EXPECT_TRUE(empty.fires(kInputs));
  QueryHist invalid;
  invalid.input("runs-of-unknown-job", true, "INVALID_ARGUMENT");
  EXPECT_TRUE(invalid.fires(kInputs));
}

TEST(QueryChecks, AnInputAtItsLimitMustBeAccepted) {
  QueryHist x;
  x.input("label-value-size", false, "INVALID_ARGUMENT", "probe-2");
  EXPECT_TRUE(x.fires(kInputs));
  QueryHist y;
  y.input("ledger-limit", false, "OK");
  EXPECT_FALSE(y.fires(kInputs));
}

TEST(QueryChecks, ARefusedCreateThatWroteItsJobIsAViolation) {
  auto make = [](bool written) {
    QueryHist x;
    if (written) {
      JobRecord job;
      job.spec.id = "probe-1";
      job.spec.schedule.kind = ScheduleSpec::Kind::kInterval;
      job.spec.schedule.every = absl::Hours(24);
      job.spec.schedule.start = x.t0;
      job.incarnation = 1;
      x.commit_ops(absl::Seconds(1), 1,
                   {{WriteOp::Kind::kPut, keys::job(job.spec.id), encode(job)}});
    }
    x.input("label-value-size", true, "INVALID_ARGUMENT", "probe-1");
    return x;
  };
  EXPECT_FALSE(make(false).fires(kInputs));
  EXPECT_TRUE(make(true).fires(kInputs));
}

TEST(QueryChecks, AFilteredListingShowsExactlyTheMatchingJobsSorted) {
  auto base = [] {
    QueryHist x;
    x.created("a-1", "ns-a", "tier=t0");
    x.created("a-2", "ns-a", "tier=t1");
    x.created("b-1", "ns-b", "tier=t1");
    return x;
  };
  {
    QueryHist x = base();
    x.listing(0, "ns-a", "", "a-1,a-2|");
    x.listing(1, "", "tier=t1", "a-2|b-1");
    x.listing(2, "", "", "a-1,a-2|b-1");
    EXPECT_FALSE(x.fires(kQueries));
  }
  {
    QueryHist x = base();  // a job of another namespace shown
    x.listing(0, "ns-a", "", "a-1,a-2|b-1");
    EXPECT_TRUE(x.fires(kQueries));
  }
  {
    QueryHist x = base();  // a matching job missing
    x.listing(0, "", "tier=t1", "b-1");
    EXPECT_TRUE(x.fires(kQueries));
  }
  {
    QueryHist x = base();  // a job on two pages
    x.listing(0, "ns-a", "", "a-1,a-2|a-2");
    EXPECT_TRUE(x.fires(kQueries));
  }
  {
    QueryHist x = base();  // a page above its size
    x.listing(0, "", "", "a-1,a-2,b-1");
    EXPECT_TRUE(x.fires(kQueries));
  }
  {
    QueryHist x = base();  // unsorted
    x.listing(0, "", "", "a-2,a-1|b-1");
    EXPECT_TRUE(x.fires(kQueries));
  }
  {
    // A job acknowledged only after the listing was sent need not be there.
    QueryHist x;
    x.created("a-1", "ns-a", "tier=t0");
    x.event(ce::kListStarted)
        .with("listing", std::uint64_t{0})
        .with("namespace", "ns-a")
        .with("selector", "");
    x.created("a-2", "ns-a", "tier=t0");
    x.event(ce::kListed)
        .with("listing", std::uint64_t{0})
        .with("limit", std::uint64_t{2})
        .with("ids", "a-1");
    EXPECT_FALSE(x.fires(kQueries));
  }
}

TEST(QueryChecks, ARunsWalkStaysWithinItsBoundsAndLosesNothingSeen) {
  {
    QueryHist x;
    x.walk("-:10,20;21:30");
    x.walk("-:10,20;21:30,40");
    EXPECT_FALSE(x.fires(kQueries));
  }
  {
    QueryHist x;  // a run below the page's lower bound (the bound ignored)
    x.walk("-:10,20;21:10,20");
    EXPECT_TRUE(x.fires(kQueries));
  }
  {
    QueryHist x;  // a run an earlier walk showed is gone
    x.walk("-:10,20;21:30");
    x.walk("-:10,30");
    EXPECT_TRUE(x.fires(kQueries));
  }
  {
    QueryHist x;  // a page above the limit
    x.walk("-:10,20,30");
    EXPECT_TRUE(x.fires(kQueries));
  }
}

TEST(QueryChecks, ALedgerWindowHoldsTheRecordReachingIntoIt) {
  constexpr std::int64_t kPast = std::numeric_limits<std::int64_t>::min();
  constexpr std::int64_t kFuture = std::numeric_limits<std::int64_t>::max();
  {
    QueryHist x;
    x.ledger(kPast, kFuture, "1:10:50,1:60:60");
    x.ledger(30, 100, "1:10:50,1:60:60");  // 10..50 reaches into [30, 100)
    EXPECT_FALSE(x.fires(kQueries));
  }
  {
    QueryHist x;  // the reaching range is missing
    x.ledger(kPast, kFuture, "1:10:50,1:60:60");
    x.ledger(30, 100, "1:60:60");
    EXPECT_TRUE(x.fires(kQueries));
  }
  {
    QueryHist x;  // a record outside the window
    x.ledger(55, 100, "1:10:50,1:60:60");
    EXPECT_TRUE(x.fires(kQueries));
  }
  {
    QueryHist x;  // with `more`, only records before the last returned are due
    x.ledger(kPast, kFuture, "1:10:10,1:20:20,1:30:30");
    x.ledger(kPast, kFuture, "1:10:10,1:20:20", true);
    EXPECT_FALSE(x.fires(kQueries));
    x.ledger(kPast, kFuture, "1:10:10,1:30:30", true);
    EXPECT_TRUE(x.fires(kQueries));
  }
}

}  // namespace
}  // namespace kairos::sim
