// The ledger-retention rule (sim/oracle/retention_checks.cc) on hand-made
// histories, in both directions: a record pruned inside both bounds, not
// the oldest, or past its open run is a violation, and so is a ledger left
// past its bounds by a dispatch (or a prune) that had budget left; correct
// pruning, and pruning held back by an open run or the budget, is not.
#include <gtest/gtest.h>

#include "core/kernel/keyspace.h"
#include "tests/support/history_builder.h"

namespace kairos::sim {
namespace {

using test_support::Hist;

constexpr NodeId kLeader = 1;
constexpr std::string_view kRetention = "ledger-retention";

struct RetentionHist : Hist {
  std::uint32_t keep = 3;
  absl::Duration max_age = absl::Hours(1);
  std::uint32_t budget = 2;

  RunRecord run(absl::Duration nominal, RunState state = RunState::kSucceeded) const {
    RunRecord r;
    r.id = RunId{"job-a", 1, t0 + nominal};
    r.due_at = r.ready_at = r.dispatched_at = r.id.nominal;
    r.attempt = 1;
    r.state = state;
    return r;
  }
  LedgerRecord rec(absl::Duration nominal) const {
    LedgerRecord l;
    l.incarnation = 1;
    l.nominal = l.through = l.fire_at = l.run_nominal = t0 + nominal;
    l.recorded_at = t0 + nominal;
    return l;
  }
  static WriteOp erase(absl::Time nominal) {
    return {WriteOp::Kind::kErase, keys::ledger("job-a", nominal, 1), {}};
  }
  static WriteOp erase_run(absl::Time nominal) {
    return {WriteOp::Kind::kErase, keys::run(RunId{"job-a", 1, nominal}), {}};
  }
  // A dispatch at t0 + `at`: the occurrence's finished run and its fired
  // record, then the erasures of the records at `pruned` (nominals) and of
  // their runs (unless `keep_runs`).
  void dispatch(absl::Duration at, std::vector<absl::Duration> pruned = {},
                RunState state = RunState::kSucceeded, bool keep_runs = false) {
    std::vector<WriteOp> ops{put(run(at, state)), put("job-a", rec(at))};
    for (absl::Duration p : pruned) {
      ops.push_back(erase(t0 + p));
      if (!keep_runs) ops.push_back(erase_run(t0 + p));
    }
    commit_ops(at, kLeader, ops);
  }
  bool fires() const {
    History h = history();
    h.ledger_keep = keep;
    h.ledger_max_age = max_age;
    h.prune_budget = budget;
    for (const auto& v : Checker::with_defaults().run(h, {}).violations)
      if (v.invariant == kRetention) return true;
    return false;
  }
};

absl::Duration s(int n) { return absl::Seconds(n); }

TEST(RetentionChecks, PruningPastTheCountKeepsTheNewestRecords) {
  RetentionHist ok;
  for (int t : {10, 20, 30}) ok.dispatch(s(t));
  ok.dispatch(s(40), {s(10)});  // 4 records: the oldest goes
  ok.dispatch(s(50), {s(20)});
  EXPECT_FALSE(ok.fires());
}

TEST(RetentionChecks, APrunedRecordLeavingItsFinishedRunBehindIsAViolation) {
  RetentionHist left;
  for (int t : {10, 20, 30}) left.dispatch(s(t));
  left.dispatch(s(40), {s(10)}, RunState::kSucceeded, /*keep_runs=*/true);
  EXPECT_TRUE(left.fires());
}

TEST(RetentionChecks, ARecordPrunedInsideBothBoundsIsAViolation) {
  RetentionHist early;
  for (int t : {10, 20}) early.dispatch(s(t));
  early.dispatch(s(30), {s(10)});  // 3 records, keep 3, none old: nothing may go
  EXPECT_TRUE(early.fires());
}

TEST(RetentionChecks, PruningAnyButTheOldestIsAViolation) {
  RetentionHist wrong;
  for (int t : {10, 20, 30}) wrong.dispatch(s(t));
  wrong.dispatch(s(40), {s(20)});
  EXPECT_TRUE(wrong.fires());
}

TEST(RetentionChecks, ALedgerLeftPastItsCountByADispatchIsAViolation) {
  RetentionHist behind;
  for (int t : {10, 20, 30, 40}) behind.dispatch(s(t));  // 4 records, nothing pruned
  EXPECT_TRUE(behind.fires());
  // Pruning stops at the budget: 2 of the 3 over the count, the rest next time.
  RetentionHist budget;
  budget.keep = 1;
  for (int t : {10, 20}) budget.dispatch(s(t), {}, RunState::kSucceeded);
  EXPECT_TRUE(budget.fires());  // 2 records, keep 1, budget left: behind
  RetentionHist spent;
  spent.keep = 1;
  spent.commit_ops(
      s(10), kLeader,
      {Hist::put(spent.run(s(10))), Hist::put("job-a", spent.rec(s(10))),
       Hist::put(spent.run(s(11))), Hist::put("job-a", spent.rec(s(11))),
       Hist::put(spent.run(s(12))), Hist::put("job-a", spent.rec(s(12))),
       Hist::put(spent.run(s(13))), Hist::put("job-a", spent.rec(s(13))),
       RetentionHist::erase(spent.t0 + s(10)), RetentionHist::erase(spent.t0 + s(11))});
  EXPECT_FALSE(spent.fires());  // 2 left over keep 1, but the budget of 2 is spent
  RetentionHist short_of_budget;
  short_of_budget.keep = 1;
  short_of_budget.commit_ops(
      s(10), kLeader,
      {Hist::put(short_of_budget.run(s(10))), Hist::put("job-a", short_of_budget.rec(s(10))),
       Hist::put(short_of_budget.run(s(11))), Hist::put("job-a", short_of_budget.rec(s(11))),
       Hist::put(short_of_budget.run(s(12))), Hist::put("job-a", short_of_budget.rec(s(12))),
       RetentionHist::erase(short_of_budget.t0 + s(10)),
       RetentionHist::erase_run(short_of_budget.t0 + s(10))});
  EXPECT_TRUE(short_of_budget.fires());  // stopped after 1 of 2 with 2 over keep 1
}

TEST(RetentionChecks, AnOpenRunHoldsPruningBackAndIsNeverPrunedPast) {
  // The oldest record's run is still leased: pruning must stop there.
  RetentionHist held;
  held.dispatch(s(10), {}, RunState::kLeased);
  for (int t : {20, 30, 40}) held.dispatch(s(t));
  EXPECT_FALSE(held.fires());
  RetentionHist past;
  past.dispatch(s(10), {}, RunState::kLeased);
  for (int t : {20, 30}) past.dispatch(s(t));
  past.dispatch(s(40), {s(10)});  // prunes the record whose run is open
  EXPECT_TRUE(past.fires());
}

TEST(RetentionChecks, AgeBoundsPruneOldRecordsAndNothingYounger) {
  RetentionHist aged;
  aged.keep = 100;
  aged.max_age = absl::Minutes(1);
  aged.dispatch(s(10));
  aged.dispatch(s(100), {s(10)});  // 90s old: past the maximum age
  EXPECT_FALSE(aged.fires());
  RetentionHist young;
  young.keep = 100;
  young.max_age = absl::Minutes(1);
  young.dispatch(s(10));
  young.dispatch(s(40), {s(10)});  // 30s old: kept
  EXPECT_TRUE(young.fires());
  RetentionHist kept;
  kept.keep = 100;
  kept.max_age = absl::Minutes(1);
  kept.dispatch(s(10));
  kept.dispatch(s(100));  // 90s old and not pruned, budget left
  EXPECT_TRUE(kept.fires());
}

// P14: the job record's ledger count against the records its id holds.
struct CountHist : RetentionHist {
  static WriteOp job(std::uint64_t count) {
    JobRecord j;
    j.spec.id = "job-a";
    j.incarnation = 1;
    j.ledger_count = count;
    return {WriteOp::Kind::kPut, keys::job("job-a"), encode(j)};
  }
  // A dispatch at t0 + `at` recording one occurrence and storing `count`.
  void record(absl::Duration at, std::uint64_t count) {
    commit_ops(at, kLeader, {put(run(at)), put("job-a", rec(at)), job(count)});
  }
  bool count_fires() const {
    History h = history();
    for (const auto& v : Checker::with_defaults().run(h, {}).violations)
      if (v.invariant == "ledger-count-matches") return true;
    return false;
  }
};

TEST(RetentionChecks, AJobRecordCountsTheLedgerRecordsItsIdHolds) {
  CountHist ok;
  ok.commit_ops(s(1), kLeader, {CountHist::job(0)});  // created
  ok.record(s(10), 1);
  ok.record(s(20), 2);
  // A sweep prunes the oldest and stores the count it left.
  ok.commit_ops(
      s(30), kLeader,
      {CountHist::erase(ok.t0 + s(10)), CountHist::erase_run(ok.t0 + s(10)), CountHist::job(1)});
  EXPECT_FALSE(ok.count_fires());

  // A dispatch that recorded an occurrence without counting it.
  CountHist uncounted;
  uncounted.record(s(10), 1);
  uncounted.record(s(20), 1);
  EXPECT_TRUE(uncounted.count_fires());

  // A prune whose commit did not store the job record: the count stays too
  // high to the end of the run.
  CountHist stale;
  stale.record(s(10), 1);
  stale.record(s(20), 2);
  stale.commit_ops(s(30), kLeader,
                   {CountHist::erase(stale.t0 + s(10)), CountHist::erase_run(stale.t0 + s(10))});
  EXPECT_TRUE(stale.count_fires());

  // A commit the store lost (crash before sync) wrote a record and its count;
  // the replayed store holds neither, and the next dispatch counts again.
  CountHist lost;
  lost.record(s(10), 1);
  lost.record(s(20), 2);
  lost.commits.back().state = StoreCommit::State::kLost;
  lost.record(s(25), 2);
  EXPECT_FALSE(lost.count_fires());
}

}  // namespace
}  // namespace kairos::sim
