// What a job record must say after job control (sim/oracle/control_checks.cc),
// on hand-made histories:
// - the second clause of `paused-fires-nothing`: a pause removes the job's
//   due entry, so no applied commit may write an active job record that says
//   paused and still names a next due time -- not the pause itself, and not a
//   later write while paused such as a reschedule. It fires on a reschedule
//   of a paused job that brings a next due time back, and stays quiet on a
//   correct pause, reschedule-while-paused and resume, on a rolled-back write
//   and on a cancelled record;
// - `generation-moves-with-changes`: within an incarnation the generation
//   never goes back and every pause, resume or schedule change raises it.
//   It fires on a pause written under the generation it found and on a
//   generation that goes back, and stays quiet on a correct sequence, on a
//   dispatch rewrite (same generation, nothing changed) and on a new
//   incarnation starting over.
#include <gtest/gtest.h>

#include "core/kernel/keyspace.h"
#include "tests/support/history_builder.h"

namespace kairos::sim {
namespace {

using test_support::Hist;

constexpr NodeId kNode = 1;
constexpr std::string_view kPaused = "paused-fires-nothing";
constexpr std::string_view kGeneration = "generation-moves-with-changes";

struct PauseHist : Hist {
  JobRecord job;
  PauseHist() {
    job.spec.id = "job-p";
    job.spec.schedule.kind = ScheduleSpec::Kind::kInterval;
    job.spec.schedule.every = absl::Seconds(10);
    job.spec.schedule.start = t0;
    job.incarnation = 1;
    job.next_due_at = t0 + absl::Seconds(10);
    job.next_nominal = t0 + absl::Seconds(10);
    write_job(absl::ZeroDuration());
  }
  void write_job(absl::Duration at) {
    commit_ops(at, kNode, {{WriteOp::Kind::kPut, keys::job(job.spec.id), encode(job)}});
  }
  // The pause as the job API writes it: the due time goes, next_nominal stays.
  void pause(absl::Duration at) {
    job.generation += 1;
    job.paused = true;
    job.next_due_at.reset();
    write_job(at);
  }
  void reschedule(absl::Duration at, absl::Duration every, bool keep_due_removed) {
    job.generation += 1;
    job.spec.schedule.every = every;
    job.next_nominal = t0 + at + every;
    if (!keep_due_removed) job.next_due_at = job.next_nominal;
    write_job(at);
  }
  bool fires(std::string_view name = kPaused) const {
    for (const auto& v : Checker::with_defaults().run(history(), {}).violations)
      if (v.invariant == name) return true;
    return false;
  }
};

TEST(PausedDueChecks, ARescheduleOfAPausedJobThatBringsBackADueTimeIsAViolation) {
  PauseHist bad;
  bad.pause(absl::Seconds(5));
  bad.reschedule(absl::Seconds(20), absl::Seconds(7), /*keep_due_removed=*/false);
  EXPECT_TRUE(bad.fires());

  PauseHist good;
  good.pause(absl::Seconds(5));
  good.reschedule(absl::Seconds(20), absl::Seconds(7), /*keep_due_removed=*/true);
  EXPECT_FALSE(good.fires());
  // The resume brings the due time back: correct.
  good.job.generation += 1;
  good.job.paused = false;
  good.job.next_due_at = good.job.next_nominal;
  good.write_job(absl::Seconds(40));
  EXPECT_FALSE(good.fires());
}

TEST(PausedDueChecks, APauseThatKeepsItsDueTimeIsAViolation) {
  PauseHist bad;
  bad.job.generation += 1;
  bad.job.paused = true;  // the due time left in place
  bad.write_job(absl::Seconds(5));
  EXPECT_TRUE(bad.fires());

  PauseHist good;
  good.pause(absl::Seconds(5));
  EXPECT_FALSE(good.fires());
}

TEST(PausedDueChecks, RolledBackAndCancelledRecordsAreNotJudged) {
  // A store crash rolled the bad write back: it never took effect.
  PauseHist lost;
  lost.pause(absl::Seconds(5));
  lost.reschedule(absl::Seconds(20), absl::Seconds(7), /*keep_due_removed=*/false);
  lost.commits.back().state = StoreCommit::State::kLost;
  EXPECT_FALSE(lost.fires());

  // A cancelled record is out of the rule (no due entry is read for it).
  PauseHist cancelled;
  cancelled.job.paused = true;
  cancelled.job.state = JobState::kCancelled;
  cancelled.write_job(absl::Seconds(5));
  EXPECT_FALSE(cancelled.fires());
}

TEST(GenerationChecks, APauseOrRescheduleUnderTheSameGenerationIsAViolation) {
  PauseHist pause;
  pause.job.paused = true;  // written under the generation it found
  pause.job.next_due_at.reset();
  pause.write_job(absl::Seconds(5));
  EXPECT_TRUE(pause.fires(kGeneration));

  PauseHist resched;
  resched.job.spec.schedule.every = absl::Seconds(7);
  resched.write_job(absl::Seconds(5));
  EXPECT_TRUE(resched.fires(kGeneration));

  PauseHist back;
  back.pause(absl::Seconds(5));
  back.job.generation -= 1;  // a later write that goes back
  back.write_job(absl::Seconds(8));
  EXPECT_TRUE(back.fires(kGeneration));
}

TEST(GenerationChecks, CorrectChangesRewritesAndNewIncarnationsAreQuiet) {
  PauseHist good;
  good.pause(absl::Seconds(5));
  good.reschedule(absl::Seconds(20), absl::Seconds(7), /*keep_due_removed=*/true);
  good.job.generation += 1;  // the resume
  good.job.paused = false;
  good.job.next_due_at = good.job.next_nominal;
  good.write_job(absl::Seconds(40));
  good.write_job(absl::Seconds(47));  // a dispatch rewrite: same generation, nothing changed
  EXPECT_FALSE(good.fires(kGeneration));

  // A rolled-back pause under the same generation never took effect.
  PauseHist lost;
  lost.job.paused = true;
  lost.job.next_due_at.reset();
  lost.write_job(absl::Seconds(5));
  lost.commits.back().state = StoreCommit::State::kLost;
  EXPECT_FALSE(lost.fires(kGeneration));

  // A new incarnation (a re-create over the tombstone) may start its
  // generation anywhere.
  PauseHist again;
  again.job.generation = 5;
  again.write_job(absl::Seconds(5));
  again.job.incarnation = 2;
  again.job.generation = 1;
  again.write_job(absl::Seconds(9));
  EXPECT_FALSE(again.fires(kGeneration));
}

}  // namespace
}  // namespace kairos::sim
