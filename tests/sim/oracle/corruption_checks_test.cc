// The rules a corrupt-record fault brings in, on hand-made histories: a
// record that stops decoding stops at most its own job, and only from the
// moment it stopped decoding (corruption-contained); the corrupted job's
// unfinished runs are not required to end (occurrences-complete) and its
// ready runs, which claims pass over, are owed no place in the claim order
// (priority-order). Each rule fires on the history it is written against
// and stays quiet on a correct one and on the excuse it states. A request
// the client saw refused for an undecodable record names a job a fault had
// corrupted before the answer (undecodable-only-where-corrupted).
#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/kernel/event_kinds.h"
#include "sim/scenario/client_events.h"
#include "tests/support/history_builder.h"

namespace kairos::sim {
namespace {

using test_support::granted;
using test_support::Hist;
using test_support::violated;

constexpr NodeId kLeader = 1;  // scheduler-1

RunRecord ready_run(std::string job, absl::Time nominal) {
  RunRecord r;
  r.id = RunId{std::move(job), 1, nominal};
  r.due_at = r.ready_at = r.dispatched_at = nominal;
  return r;
}

RunRecord succeeded(RunRecord r, absl::Time now) {
  r.state = RunState::kSucceeded;
  r.attempts.back().end = AttemptEnd::kSucceeded;
  r.attempts.back().finished_at = now;
  r.lease_expiry = absl::InfinitePast();
  return r;
}

Occurrence occurrence(std::string job, absl::Time due) {
  Occurrence o;
  o.job = std::move(job);
  o.incarnation = 1;
  o.nominal = o.due = due;
  return o;
}

// job-b's occurrence due at 10m is never dispatched; job-a's record stops
// decoding at 5m; job-b's own record (when `b_at` is set) at `b_at`.
std::set<std::string> undispatched(std::optional<absl::Duration> b_at) {
  Hist x;
  x.expected.push_back(occurrence("job-b", x.t0 + absl::Minutes(10)));
  x.commit_ops(absl::Minutes(5), kWorldNode, {});  // the fault's commit
  std::vector<CorruptedRecord> corrupted{{"job-a", x.t0 + absl::Minutes(5), 0}};
  if (b_at) {
    x.commit_ops(*b_at, kWorldNode, {});
    corrupted.push_back({"job-b", x.t0 + *b_at, x.commits.back().index});
  }
  History h = x.history();
  h.corrupted = &corrupted;
  return test_support::violated(h);
}

TEST(CorruptionChecks, AnotherJobsOccurrenceNeverDispatchedIsAViolation) {
  EXPECT_EQ(undispatched(std::nullopt).count("corruption-contained"), 1u);
  // job-b's own record stopped decoding before its occurrence was due: excused.
  EXPECT_EQ(undispatched(absl::Minutes(8)).count("corruption-contained"), 0u);
  // ... and only from then on: corrupted after the due time, it is judged.
  EXPECT_EQ(undispatched(absl::Minutes(15)).count("corruption-contained"), 1u);
}

TEST(CorruptionChecks, AnotherJobsOccurrenceWithARunIsQuiet) {
  Hist x;
  const RunRecord b = ready_run("job-b", x.t0 + absl::Minutes(10));
  x.expected.push_back(occurrence("job-b", b.due_at));
  x.commit_ops(absl::Minutes(5), kWorldNode, {});
  x.commit(absl::Minutes(10), kLeader, b);
  x.commit(absl::Minutes(10) + absl::Seconds(1), kLeader,
           granted(b, 1, b.due_at + absl::Seconds(1)));
  x.commit(absl::Minutes(10) + absl::Seconds(3), kLeader,
           succeeded(granted(b, 1, b.due_at + absl::Seconds(1)), b.due_at + absl::Seconds(3)));
  std::vector<CorruptedRecord> corrupted{{"job-a", x.t0 + absl::Minutes(5), 0}};
  History h = x.history();
  h.corrupted = &corrupted;
  const std::set<std::string> v = violated(h);
  EXPECT_EQ(v.count("corruption-contained"), 0u);
  EXPECT_EQ(v.count("occurrences-complete"), 0u);
}

// A run of job-a left ready (its run record stopped decoding, so claims pass
// it over): occurrences-complete does not require it to end once job-a is
// corrupted, and still does for any other job.
TEST(CorruptionChecks, ARunLeftReadyOfACorruptedJobIsNotRequiredToEnd) {
  auto make = [](std::string corrupted_job) {
    Hist x;
    const RunRecord a = ready_run("job-a", x.t0 + absl::Seconds(1));
    x.expected.push_back(occurrence("job-a", a.due_at));
    x.commit(absl::Seconds(1), kLeader, a);
    x.commit_ops(absl::Seconds(5), kWorldNode, {});
    std::vector<CorruptedRecord> corrupted{
        {std::move(corrupted_job), x.t0 + absl::Seconds(5), x.commits.back().index}};
    History h = x.history();
    h.corrupted = &corrupted;
    return violated(h);
  };
  EXPECT_EQ(make("job-a").count("occurrences-complete"), 0u);
  EXPECT_EQ(make("job-b").count("occurrences-complete"), 1u);
}

// job-a's run is ready from 1s, job-b's (same priority, same shard) from
// 10s and granted at 11s: FIFO within a band says job-a's first, unless
// job-a's records stopped decoding before the grant (claims pass its runs
// over); corrupted only after the grant, the order is still owed.
TEST(CorruptionChecks, ClaimsOweACorruptedJobsReadyRunNoPlace) {
  auto make = [](std::optional<absl::Duration> corrupted_at) {
    Hist x;
    const RunRecord a = ready_run("job-a", x.t0 + absl::Seconds(1));
    const RunRecord b = ready_run("job-b", x.t0 + absl::Seconds(10));
    std::vector<CorruptedRecord> corrupted;
    x.commit(absl::Seconds(1), kLeader, a);
    auto corrupt = [&] {
      x.commit_ops(*corrupted_at, kWorldNode, {});
      corrupted.push_back({"job-a", x.t0 + *corrupted_at, x.commits.back().index});
    };
    if (corrupted_at && *corrupted_at < absl::Seconds(11)) corrupt();
    x.commit(absl::Seconds(10), kLeader, b);
    x.commit(absl::Seconds(11), kLeader, granted(b, 1, x.t0 + absl::Seconds(11)));
    if (corrupted_at && *corrupted_at >= absl::Seconds(11)) corrupt();
    History h = x.history();
    h.corrupted = &corrupted;
    return violated(h);
  };
  EXPECT_EQ(make(std::nullopt).count("priority-order"), 1u);
  EXPECT_EQ(make(absl::Seconds(5)).count("priority-order"), 0u);
  EXPECT_EQ(make(absl::Seconds(20)).count("priority-order"), 1u);
}

// The client was refused for an undecodable record (DataLoss) on `job` at
// t0 + `answered`; job-a's record stopped decoding at 5m.
// A request of `job` refused for an undecodable record at `answered`, or
// (`by_node`) a node's record.undecodable event of it then; job-a's record
// was corrupted at 5 min.
std::set<std::string> refused_undecodable(const std::string& job, absl::Duration answered,
                                          bool by_node = false) {
  Hist x;
  x.commit_ops(absl::Minutes(5), kWorldNode, {});  // the fault's commit
  std::vector<CorruptedRecord> corrupted{{"job-a", x.t0 + absl::Minutes(5), 0}};
  x.names.push_back("client");
  NodeEvent e;
  e.node = 3;  // the client
  e.at = x.t0 + answered;
  if (by_node) {
    e.event.kind = event_kinds::kRecordUndecodable;
    e.event.with("shard", std::uint64_t{0})
        .with("op", std::string("reap"))
        .with("job", job)
        .with("key", std::string("J") + job)
        .with("error", std::string("job: bad"));
    x.facts.observe_event(e.event, e.at);
  } else {
    e.event.kind = client_events::kRequestUndecodable;
    e.event.with("job", job)
        .with("op", std::string("cancel"))
        .with("error", std::string("job: bad"));
    x.events.push_back(e);
  }
  History h = x.history();
  h.corrupted = &corrupted;
  return violated(h);
}

TEST(CorruptionChecks, ARequestRefusedForAnUndecodableRecordNamesACorruptedJob) {
  constexpr std::string_view kRule = "undecodable-only-where-corrupted";
  // The corrupted job, after its corruption: quiet.
  EXPECT_EQ(refused_undecodable("job-a", absl::Minutes(6)).count(std::string(kRule)), 0u);
  // Another job (its record is fine), or the corrupted one before it went bad.
  EXPECT_EQ(refused_undecodable("job-b", absl::Minutes(6)).count(std::string(kRule)), 1u);
  EXPECT_EQ(refused_undecodable("job-a", absl::Minutes(4)).count(std::string(kRule)), 1u);
  // A node passing a record over as undecodable: the same rule.
  EXPECT_EQ(refused_undecodable("job-a", absl::Minutes(6), true).count(std::string(kRule)), 0u);
  EXPECT_EQ(refused_undecodable("job-b", absl::Minutes(6), true).count(std::string(kRule)), 1u);
  EXPECT_EQ(refused_undecodable("job-a", absl::Minutes(4), true).count(std::string(kRule)), 1u);
}

}  // namespace
}  // namespace kairos::sim
