// The two-sided policy rules on hand-made histories: each fires on a kernel
// that does too little -- refuses an occurrence for overlap below the
// policy's limit, miscounts or gives up attempts early, holds a catch-up
// backlog longer than its spacing, restarts a job's tokens at a re-creation
// -- and stays quiet on the history the documented policy writes.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "tests/support/history_builder.h"

namespace kairos::sim {
namespace {

using test_support::granted;
using test_support::Hist;
using test_support::violated;

constexpr NodeId kLeader = 1;

struct ModelHist : Hist {
  ModelHist() {
    LeaderRecord l{"scheduler-1", 1, t0 + absl::Hours(2)};
    commit(absl::ZeroDuration(), kLeader, std::nullopt, std::make_pair(0u, l));
  }
  absl::Time at(absl::Duration d) const { return t0 + d; }
  ClientJob& job(const std::string& id) {
    ClientJob j;
    j.id = id;
    j.incarnation = 1;
    j.created_at = t0;
    j.recurring = true;
    j.longest_run = absl::Seconds(1);
    jobs.push_back(j);
    return jobs.back();
  }
  bool fires(std::string_view name) const { return violated(history()).count(std::string(name)); }
};

RunRecord ready_run(const std::string& job, absl::Time nominal, std::uint64_t incarnation = 1) {
  RunRecord r;
  r.id = RunId{job, incarnation, nominal};
  r.due_at = r.ready_at = r.dispatched_at = nominal;
  r.attempt = 1;
  return r;
}

// The attempt of leased `r` ends with `end` at `now`: re-queued with the next
// attempt number (`next` false: the number left as it was, a miscount).
RunRecord requeued(RunRecord r, AttemptEnd end, absl::Time now, bool next = true) {
  r.state = RunState::kReady;
  r.attempts.back().end = end;
  r.attempts.back().finished_at = now;
  if (next) r.attempt += 1;
  r.ready_at = now;
  r.owner.clear();
  return r;
}

RunRecord failed(RunRecord r, AttemptEnd end, absl::Time now) {
  r.state = RunState::kFailed;
  r.attempts.back().end = end;
  r.attempts.back().finished_at = now;
  r.owner.clear();
  return r;
}

LedgerRecord record(absl::Time nominal, LedgerOutcome outcome) {
  LedgerRecord l;
  l.incarnation = 1;
  l.nominal = l.through = l.fire_at = nominal;
  l.count = 1;
  l.outcome = outcome;
  return l;
}

// ---- overlap-reaches-limit -------------------------------------------------

// `active` runs of job j are unfinished (created at 1s, 2s, ...), then at
// 30s the occurrence due at 30s is recorded skipped_overlap.
// The detail dispatch writes on a skipped_overlap record (docs/POLICIES.md).
std::string skip_detail(std::string_view policy, int active, int waiting) {
  return std::string("overlap ") + std::string(policy) + ": " + std::to_string(active) +
         " unfinished, " + std::to_string(waiting) + " waiting";
}

std::string_view policy_name(OverlapPolicy p) {
  return p == OverlapPolicy::kSkip ? "skip" : p == OverlapPolicy::kQueue ? "queue" : "allow";
}

ModelHist overlap_refusal(OverlapPolicy policy, int active, int waiting = 0,
                          std::optional<std::string> detail = std::nullopt) {
  ModelHist x;
  ClientJob& j = x.job("j");
  j.policy.overlap = policy;
  j.policy.max_concurrent = 3;
  for (int i = 1; i <= active + waiting; ++i) {
    RunRecord r = ready_run("j", x.at(absl::Seconds(i)));
    if (i > active) r.state = RunState::kWaiting;
    x.commit(absl::Seconds(i), kLeader, r);
  }
  LedgerRecord l = record(x.at(absl::Seconds(30)), LedgerOutcome::kSkippedOverlap);
  l.detail = detail.value_or(skip_detail(policy_name(policy), active, waiting));
  x.commit_ops(absl::Seconds(30), kLeader, {Hist::put("j", l)});
  return x;
}

TEST(PolicyModel, AllowRefusingBelowMaxConcurrentIsAViolation) {
  // allow max_concurrent=3 behaving as if it allowed 1 or 2.
  EXPECT_TRUE(overlap_refusal(OverlapPolicy::kAllow, 1).fires("overlap-reaches-limit"));
  EXPECT_TRUE(overlap_refusal(OverlapPolicy::kAllow, 2).fires("overlap-reaches-limit"));
  EXPECT_FALSE(overlap_refusal(OverlapPolicy::kAllow, 3).fires("overlap-reaches-limit"));
}

TEST(PolicyModel, SkipAndQueueRefuseOnlyWhenTheirSlotIsTaken) {
  EXPECT_TRUE(overlap_refusal(OverlapPolicy::kSkip, 0).fires("overlap-reaches-limit"));
  EXPECT_FALSE(overlap_refusal(OverlapPolicy::kSkip, 1).fires("overlap-reaches-limit"));
  // Queue: one active and none waiting: the occurrence must wait, not be refused.
  EXPECT_TRUE(overlap_refusal(OverlapPolicy::kQueue, 1).fires("overlap-reaches-limit"));
  EXPECT_FALSE(overlap_refusal(OverlapPolicy::kQueue, 1, 1).fires("overlap-reaches-limit"));
}

TEST(PolicyModel, ARefusalJustifiedByARunCreatedInTheSameCommitIsNot) {
  // One dispatch commit creates a run for 30s and refuses 31s (skip): the
  // count after the commit justifies it.
  ModelHist x;
  x.job("j");
  x.commit_ops(
      absl::Seconds(31), kLeader,
      {Hist::put(ready_run("j", x.at(absl::Seconds(30)))),
       Hist::put("j", record(x.at(absl::Seconds(30)), LedgerOutcome::kFired)), Hist::put("j", [&] {
         LedgerRecord l = record(x.at(absl::Seconds(31)), LedgerOutcome::kSkippedOverlap);
         l.detail = skip_detail("skip", 1, 0);
         return l;
       }())});
  EXPECT_FALSE(x.fires("overlap-reaches-limit"));
}

TEST(PolicyModel, ARefusalsDetailNamesTheJobsPolicyAndWhatItCounted) {
  EXPECT_FALSE(overlap_refusal(OverlapPolicy::kQueue, 1, 1).fires("overlap-reaches-limit"));
  // Another policy's name, counts the decision cannot have seen, no detail.
  EXPECT_TRUE(overlap_refusal(OverlapPolicy::kQueue, 1, 1, skip_detail("allow", 1, 1))
                  .fires("overlap-reaches-limit"));
  EXPECT_TRUE(overlap_refusal(OverlapPolicy::kAllow, 3, 0, skip_detail("allow", 2, 0))
                  .fires("overlap-reaches-limit"));
  EXPECT_TRUE(overlap_refusal(OverlapPolicy::kQueue, 1, 1, skip_detail("queue", 1, 0))
                  .fires("overlap-reaches-limit"));
  EXPECT_TRUE(overlap_refusal(OverlapPolicy::kSkip, 1, 0, "").fires("overlap-reaches-limit"));
  EXPECT_TRUE(overlap_refusal(OverlapPolicy::kSkip, 1, 0, "overlap skip: 1 unfinished")
                  .fires("overlap-reaches-limit"));
}

TEST(PolicyModel, QueueCreatingAWaitingRunWithNothingActiveIsAViolation) {
  auto make = [](bool predecessor) {
    ModelHist x;
    x.job("j").policy.overlap = OverlapPolicy::kQueue;
    if (predecessor) x.commit(absl::Seconds(1), kLeader, ready_run("j", x.at(absl::Seconds(1))));
    RunRecord w = ready_run("j", x.at(absl::Seconds(2)));
    w.state = RunState::kWaiting;
    x.commit(absl::Seconds(2), kLeader, w);
    return x;
  };
  EXPECT_FALSE(make(true).fires("overlap-reaches-limit"));
  EXPECT_TRUE(make(false).fires("overlap-reaches-limit"));
}

// ---- attempts-counted --------------------------------------------------------

// A run granted, ended by `ends` (all but the last re-queue it), each end
// 10 s after its grant; the last one fails the run when `fail_last`.
ModelHist attempts(std::uint32_t max_attempts, const std::vector<AttemptEnd>& ends, bool fail_last,
                   bool count_lapses = true) {
  ModelHist x;
  x.job("j").policy.max_attempts = max_attempts;
  RunRecord r = ready_run("j", x.at(absl::Seconds(1)));
  x.commit(absl::Seconds(1), kLeader, r);
  absl::Duration t = absl::Seconds(2);
  for (std::size_t i = 0; i < ends.size(); ++i) {
    r = granted(r, i + 1, x.at(t));
    x.commit(t, kLeader, r);
    t += absl::Seconds(10);
    const bool last = i + 1 == ends.size();
    const bool counted = count_lapses || ends[i] != AttemptEnd::kLapsed;
    r = last && fail_last ? failed(r, ends[i], x.at(t)) : requeued(r, ends[i], x.at(t), counted);
    x.commit(t, kLeader, r);
    t += absl::Seconds(1);
  }
  return x;
}

TEST(PolicyModel, EveryGrantIsTheNextAttemptWhateverEndedThePrevious) {
  const std::vector<AttemptEnd> ends{AttemptEnd::kLapsed, AttemptEnd::kReleased,
                                     AttemptEnd::kFailed};
  EXPECT_FALSE(attempts(3, ends, /*fail_last=*/true).fires("attempts-counted"));
  // A lapse not counted: the next grant is attempt 1 again.
  EXPECT_TRUE(attempts(3, ends, true, /*count_lapses=*/false).fires("attempts-counted"));
}

TEST(PolicyModel, ARetryableFailureBeforeTheLastAttemptIsAViolation) {
  // Gives up after 2 of 3 attempts.
  EXPECT_TRUE(
      attempts(3, {AttemptEnd::kFailed, AttemptEnd::kTimedOut}, true).fires("attempts-counted"));
  EXPECT_TRUE(attempts(3, {AttemptEnd::kLapsed}, true).fires("attempts-counted"));
  EXPECT_FALSE(attempts(3, {AttemptEnd::kFailed, AttemptEnd::kFailed, AttemptEnd::kLapsed}, true)
                   .fires("attempts-counted"));
  // A permanent failure ends the run at any attempt.
  EXPECT_FALSE(attempts(3, {AttemptEnd::kFailedPermanent}, true).fires("attempts-counted"));
  // A cancelled job's run ends with its attempt.
  ModelHist c = attempts(3, {AttemptEnd::kFailed}, true);
  c.cancels.push_back({"j", 1, c.at(absl::Seconds(5))});
  EXPECT_FALSE(c.fires("attempts-counted"));
}

// ---- catch-up-bounded, the upper side of the spacing -------------------------

// A job due every minute from t0 + 1m (catch-up, bound 3, spacing 10 s),
// whose dispatcher was away until 10m: 1..7 beyond the bound, 8 late, 9
// waits the spacing until 10m10s.
ModelHist catch_up(absl::Duration second_decision) {
  ModelHist x;
  ClientJob& j = x.job("j");
  j.policy.misfire = MisfirePolicy::kCatchUp;
  j.policy.catch_up_max = 3;
  j.policy.catch_up_spacing = absl::Seconds(10);
  auto occ = [&](int k) { return x.at(k * absl::Minutes(1)); };
  for (int k = 1; k <= 60; ++k) x.expected.push_back({"j", 1, occ(k), occ(k)});
  LedgerRecord skipped = record(occ(1), LedgerOutcome::kSkippedMisfire);
  skipped.through = occ(7);
  skipped.count = 7;
  LedgerRecord late8 = record(occ(8), LedgerOutcome::kLate);
  late8.run_nominal = occ(8);
  LedgerRecord late9 = record(occ(9), LedgerOutcome::kLate);
  late9.run_nominal = occ(9);
  x.commit_ops(absl::Minutes(10), kLeader, {Hist::put("j", skipped), Hist::put("j", late8)});
  x.commit_ops(absl::Minutes(10) + second_decision, kLeader, {Hist::put("j", late9)});
  return x;
}

TEST(PolicyModel, ACatchUpBacklogHeldPastItsSpacingIsAViolation) {
  // Start bound 3 s (the history builder's): 9 is due by 10m13s.
  EXPECT_FALSE(catch_up(absl::Seconds(10)).fires("catch-up-bounded"));
  EXPECT_FALSE(catch_up(absl::Seconds(13)).fires("catch-up-bounded"));
  // Two spacings: too late.
  EXPECT_TRUE(catch_up(absl::Seconds(20)).fires("catch-up-bounded"));
  // A fault during the wait excuses it.
  ModelHist f = catch_up(absl::Seconds(20));
  f.faults.push_back({f.at(absl::Minutes(10) + absl::Seconds(5)),
                      f.at(absl::Minutes(10) + absl::Seconds(6)), "crash scheduler-1"});
  EXPECT_FALSE(f.fires("catch-up-bounded"));
}

// ---- tokens-increase across incarnations ------------------------------------

TEST(PolicyModel, AReCreatedJobsTokensContinueFromItsPreviousIncarnation) {
  // Incarnation 1 holds token 5 on its occurrence at 1m, is cancelled, and
  // the job is re-created: incarnation 2's grant of the same occurrence must
  // carry a higher token (the job's counter survives the re-creation).
  auto make = [](std::uint64_t second_token) {
    ModelHist x;
    x.job("j");
    ClientJob& again = x.job("j");
    again.incarnation = 2;
    const absl::Time nominal = x.at(absl::Minutes(1));
    RunRecord a = ready_run("j", nominal, 1);
    x.commit(absl::Minutes(1), kLeader, a);
    x.commit(absl::Minutes(1) + absl::Seconds(1), kLeader,
             granted(a, 5, x.at(absl::Minutes(1) + absl::Seconds(1))));
    x.cancels.push_back({"j", 1, x.at(absl::Minutes(2))});
    RunRecord b = ready_run("j", nominal, 2);
    x.commit(absl::Minutes(3), kLeader, b);
    x.commit(absl::Minutes(3) + absl::Seconds(1), kLeader,
             granted(b, second_token, x.at(absl::Minutes(3) + absl::Seconds(1))));
    return x;
  };
  EXPECT_FALSE(make(6).fires("tokens-increase"));
  EXPECT_TRUE(make(1).fires("tokens-increase"));
  EXPECT_TRUE(make(5).fires("tokens-increase"));
}

}  // namespace
}  // namespace kairos::sim
