// The job-control rules (sim/oracle/control_checks.cc) on hand-made
// histories: `paused-fires-nothing` (no scheduled run is created while the
// job's record says paused) and `reschedule-withdraws-unclaimed` (a schedule
// change cancels the job's unclaimed runs in its own commit, and no manual
// or claimed one), each firing on
// the history that breaks it and quiet on a correct one.
#include <gtest/gtest.h>

#include "core/kernel/keyspace.h"
#include "tests/support/history_builder.h"

namespace kairos::sim {
namespace {

using test_support::granted;
using test_support::Hist;

constexpr NodeId kLeader = 1;

struct ControlHist : Hist {
  JobRecord job;
  ControlHist() {
    job.spec.id = "job-a";
    job.spec.schedule.kind = ScheduleSpec::Kind::kInterval;
    job.spec.schedule.every = absl::Seconds(10);
    job.spec.schedule.start = t0;
    job.incarnation = 1;
    write_job(absl::ZeroDuration());
  }
  void write_job(absl::Duration at, std::vector<WriteOp> more = {}) {
    more.insert(more.begin(), {WriteOp::Kind::kPut, keys::job(job.spec.id), encode(job)});
    commit_ops(at, kLeader, more);
  }
  RunRecord run(absl::Duration nominal) const {
    RunRecord r;
    r.id = RunId{"job-a", 1, t0 + nominal};
    r.due_at = r.ready_at = r.dispatched_at = r.id.nominal;
    return r;
  }
  absl::Time at_time(absl::Duration d) const { return t0 + d; }
  bool fires(std::string_view name) const {
    for (const auto& v : Checker::with_defaults().run(history(), {}).violations)
      if (v.invariant == name) return true;
    return false;
  }
};

constexpr std::string_view kPaused = "paused-fires-nothing";
constexpr std::string_view kWithdraw = "reschedule-withdraws-unclaimed";

TEST(ControlChecks, AScheduledRunCreatedWhileTheJobSaysPausedIsAViolation) {
  auto make = [](bool pause, bool manual) {
    ControlHist x;
    if (pause) {
      x.job.paused = true;
      x.write_job(absl::Seconds(5));
    }
    RunRecord r = x.run(absl::Seconds(10));
    if (manual) r.kind = RunKind::kManual;
    x.job.paused = pause;  // a dispatch rewrites the record as it stands
    x.write_job(absl::Seconds(10), {Hist::put(r)});
    return x;
  };
  EXPECT_FALSE(make(false, false).fires(kPaused));
  EXPECT_TRUE(make(true, false).fires(kPaused));
  EXPECT_FALSE(make(true, true).fires(kPaused));  // a manual run is not the schedule firing
  // Resumed (the record says so) before the run is created: correct.
  ControlHist y;
  y.job.paused = true;
  y.write_job(absl::Seconds(5));
  y.job.paused = false;
  y.write_job(absl::Seconds(8));
  y.commit(absl::Seconds(10), kLeader, y.run(absl::Seconds(10)));
  EXPECT_FALSE(y.fires(kPaused));
}

TEST(ControlChecks, AScheduleChangeLeavingAnUnclaimedRunIsAViolation) {
  auto make = [](bool withdraw, bool claimed) {
    ControlHist x;
    RunRecord r = x.run(absl::Seconds(10));
    x.commit(absl::Seconds(10), kLeader, r);
    if (claimed) {
      r = granted(r, 1, x.at_time(absl::Seconds(11)));
      x.commit(absl::Seconds(11), kLeader, r);
    }
    x.job.spec.schedule.every = absl::Seconds(45);  // the reschedule
    std::vector<WriteOp> ops;
    if (withdraw && !claimed) {
      r.state = RunState::kCancelled;
      ops.push_back(Hist::put(r));
    }
    x.write_job(absl::Seconds(12), ops);
    return x;
  };
  EXPECT_FALSE(make(true, false).fires(kWithdraw));
  EXPECT_TRUE(make(false, false).fires(kWithdraw));
  EXPECT_FALSE(make(false, true).fires(kWithdraw));  // a claimed run finishes
  // A record rewrite that keeps the schedule (a dispatch) withdraws nothing.
  ControlHist same;
  same.commit(absl::Seconds(10), kLeader, same.run(absl::Seconds(10)));
  same.write_job(absl::Seconds(12));
  EXPECT_FALSE(same.fires(kWithdraw));
}

TEST(ControlChecks, AScheduleChangeWithdrawingAManualOrClaimedRunIsAViolation) {
  // A ready run that is manual, or was claimed once and waits for its
  // retry; the reschedule leaves it (quiet) or cancels it (a violation).
  auto make = [](bool manual, bool withdraw) {
    ControlHist x;
    RunRecord r = x.run(absl::Seconds(10));
    if (manual) r.kind = RunKind::kManual;
    x.commit(absl::Seconds(10), kLeader, r);
    if (!manual) {
      r = granted(r, 1, x.at_time(absl::Seconds(11)));
      x.commit(absl::Seconds(11), kLeader, r);
      r.state = RunState::kReady;  // failed, back for its retry
      r.attempts.back().end = AttemptEnd::kFailed;
      r.attempt = 2;
      r.owner.clear();
      x.commit(absl::Seconds(11) + absl::Milliseconds(500), kLeader, r);
    }
    x.job.spec.schedule.every = absl::Seconds(45);  // the reschedule
    std::vector<WriteOp> ops;
    if (withdraw) {
      r.state = RunState::kCancelled;
      ops.push_back(Hist::put(r));
    }
    x.write_job(absl::Seconds(12), ops);
    return x;
  };
  for (bool manual : {true, false}) {
    EXPECT_FALSE(make(manual, false).fires(kWithdraw)) << manual;
    EXPECT_TRUE(make(manual, true).fires(kWithdraw)) << manual;
  }
}

}  // namespace
}  // namespace kairos::sim
