#include "sim/scenario/scenario.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "core/kernel/job_store.h"
#include "sim/scenario/workload.h"
#include "sim/world/fault_plan.h"
#include "sim/world/sim_runner.h"

namespace kairos::sim {
namespace {

constexpr char kGood[] = R"(# a comment
name paused-worker
description A worker pauses past its lease.
duration 2h
quiet-tail 10m
topology schedulers=3 workers=8 shards=4
timing poll=1s lease=10s job-timeout=30s max-attempts=3
network delay=1ms..5ms loss=2 duplicate=1 replay=1
store sync=2ms service=0s..1ms timeout=1s record-writes=no
sink error=5 timeout=5 wait=2s
runner duration=100ms..20s fail=10 hang=1
clock worker-2 offset=-2s drift=150
job cron count=10 expr="*/5 * * * *" zone=Europe/Berlin
job once count=100 within=1h
job interval count=5 every=90s
cancel count=2 at=30m
fault pause at=10m for=45s node=worker-1
fault partition at=20m for=1m node=leader peer=store
fault clock-jump at=30m node=any amount=-30s
swarm per-hour=10 for=1s..30s kinds=pause,crash,net
ignore timeliness
)";

TEST(Scenario, ParsesEveryDirectiveAndRoundTrips) {
  auto s = parse_scenario(kGood, "good.scenario");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->name, "paused-worker");
  EXPECT_EQ(s->topology.workers, 8u);
  EXPECT_EQ(s->network.max_delay, absl::Milliseconds(5));
  EXPECT_EQ(s->clocks[0].offset, absl::Seconds(-2));
  EXPECT_EQ(s->jobs[0].expr, "*/5 * * * *");
  EXPECT_EQ(s->faults[2].amount, absl::Seconds(-30));
  EXPECT_EQ(s->random_faults.kinds.size(), 3u);
  auto again = parse_scenario(format_scenario(*s), "emitted");
  ASSERT_TRUE(again.ok()) << again.status() << "\n" << format_scenario(*s);
  EXPECT_EQ(*again, *s);
}

void expect_error(const char* text, const char* needle) {
  auto s = parse_scenario(text, "bad.scenario");
  ASSERT_FALSE(s.ok()) << text;
  EXPECT_NE(std::string(s.status().message()).find(needle), std::string::npos)
      << s.status().message();
}

TEST(Scenario, ErrorsNameFileLineAndWhatWasExpected) {
  expect_error("name x\nnetwork loss=5%\n",
               "bad.scenario:2: network: loss: expected an integer per-mille");
  expect_error("duration 1.5h\n", "bad.scenario:1: duration:");
  expect_error("\n\nbogus 1\n", "bad.scenario:3: unknown directive \"bogus\"");
  expect_error("fault explode at=1m\n", "bad.scenario:1: fault: unknown kind \"explode\"");
  expect_error("fault pause for=1m\n", "bad.scenario:1: fault pause: expected at=<duration>");
  expect_error("topology workers=2\nfault pause at=1m node=worker-3\n",
               "bad.scenario:2: unknown node \"worker-3\"");
  expect_error("job cron count=1\n", "bad.scenario:1: job: cron: expected expr=");
  expect_error("network delay=5ms..1ms\n", "range start exceeds its end");
  expect_error("sink error=1 colour=red\n", "bad.scenario:1: sink: unknown attribute \"colour\"");
  expect_error("description \"open\n", "bad.scenario:1: unterminated double quote");
  expect_error("name a\nname b\n", "bad.scenario:2: name: given twice");
  expect_error("swarm per-hour=4 jumps-last=0s kinds=clock-jump\n",
               "bad.scenario:1: swarm: jumps-last: expected a positive duration");
  expect_error("batches every=50ms\n",
               "bad.scenario:1: batches: every: expected a duration in [100ms, 24h]");
  expect_error("updates every=500ms\n",
               "bad.scenario:1: updates: every: expected a duration in [1s, 24h]");
  expect_error("updates every=10s\nqueries every=5s\n", "updates: cannot be combined with queries");
}

constexpr char kPolicies[] = R"(name policies
timing job-timeout=45s max-attempts=5
network delay=1ms..5ms
store service=0s..1ms
job interval count=4 every=30s misfire=catch-up threshold=5s catch-up-max=3 catch-up-spacing=2s overlap=allow max-concurrent=2 priority=0..9 attempts=4 retry=2s..30s retry-multiplier=150 jitter=10 timeout=2m run=20s..40s fail=300 permanent-fail=10
job cron count=2 expr="*/5 * * * *" zone=Europe/Berlin misfire=skip overlap=queue priority=7
job once count=3 within=10m
job interval count=1 every=1m misfire=run-once priority=5 retry=10s..5m
pause at=5m count=2 for=3m job=1
pause at=6m count=1
reschedule at=7m count=1 job=2 expr="*/2 * * * *" zone=UTC
reschedule at=8m count=2 every=45s
trigger at=9m count=3 job=1
)";

TEST(Scenario, ParsesPoliciesRunProfilesAndControlDirectives) {
  auto s = parse_scenario(kPolicies, "policies.scenario");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->jobs.size(), 4u);
  const JobSpec& a = s->jobs[0];
  EXPECT_EQ(a.policy.misfire, MisfirePolicy::kCatchUp);
  EXPECT_EQ(a.policy.misfire_threshold, absl::Seconds(5));
  EXPECT_EQ(a.policy.catch_up_max, 3u);
  EXPECT_EQ(a.policy.catch_up_spacing, absl::Seconds(2));
  EXPECT_EQ(a.policy.overlap, OverlapPolicy::kAllow);
  EXPECT_EQ(a.policy.max_concurrent, 2u);
  EXPECT_EQ(a.priority_min, 0);
  EXPECT_EQ(a.priority_max, 9);
  EXPECT_EQ(a.max_attempts, 4u);
  EXPECT_EQ(a.policy.retry_initial, absl::Seconds(2));
  EXPECT_EQ(a.policy.retry_max, absl::Seconds(30));
  EXPECT_EQ(a.policy.retry_multiplier_percent, 150u);
  EXPECT_EQ(a.policy.retry_jitter_percent, 10u);
  EXPECT_EQ(a.timeout, absl::Minutes(2));
  EXPECT_EQ(a.run.min_duration, absl::Seconds(20));
  EXPECT_EQ(a.run.max_duration, absl::Seconds(40));
  EXPECT_EQ(a.run.fail_permille, 300u);
  EXPECT_EQ(a.run.permanent_fail_permille, 10u);
  // The resolved policy: the line's attributes, else timing, else defaults.
  const JobPolicy pa = job_policy(a, s->timing, 3);
  EXPECT_EQ(pa.timeout, absl::Minutes(2));
  EXPECT_EQ(pa.max_attempts, 4u);
  EXPECT_EQ(pa.priority, 3);
  const JobPolicy pc = job_policy(s->jobs[2], s->timing, 5);
  EXPECT_EQ(pc.timeout, absl::Seconds(45));
  EXPECT_EQ(pc.max_attempts, 5u);
  EXPECT_EQ(pc.misfire, JobPolicy{}.misfire);
  EXPECT_TRUE(s->jobs[2].run.empty());
  EXPECT_EQ(s->jobs[1].priority_min, 7);
  EXPECT_EQ(s->jobs[1].priority_max, 7);
  // An attribute equal to its default is the same scenario as none.
  EXPECT_EQ(s->jobs[3].policy, JobPolicy{});
  EXPECT_EQ(s->jobs[3].priority_min, 5);

  ASSERT_EQ(s->controls.size(), 5u);
  EXPECT_EQ(s->controls[0].op, ControlSpec::Op::kPause);
  EXPECT_EQ(s->controls[0].job, 1u);
  EXPECT_EQ(s->controls[0].resume_after, absl::Minutes(3));
  EXPECT_FALSE(s->controls[1].resume_after.has_value());
  EXPECT_EQ(s->controls[1].job, 0u);
  EXPECT_EQ(s->controls[2].op, ControlSpec::Op::kReschedule);
  EXPECT_EQ(s->controls[2].expr, "*/2 * * * *");
  EXPECT_EQ(s->controls[3].every, absl::Seconds(45));
  EXPECT_EQ(s->controls[4].op, ControlSpec::Op::kTrigger);
  EXPECT_EQ(s->controls[4].count, 3u);

  auto again = parse_scenario(format_scenario(*s), "emitted");
  ASSERT_TRUE(again.ok()) << again.status() << "\n" << format_scenario(*s);
  EXPECT_EQ(*again, *s);
}

TEST(Scenario, PolicyAndControlErrorsNameTheAttributeAndWhatWasExpected) {
  expect_error("job interval misfire=later\n",
               "bad.scenario:1: job: misfire: expected run-once, catch-up, skip; got \"later\"");
  expect_error("job interval overlap=never\n",
               "bad.scenario:1: job: overlap: expected skip, queue, allow");
  expect_error("job interval threshold=-5s\n", "bad.scenario:1: job: threshold:");
  expect_error("job interval catch-up-max=0\n",
               "bad.scenario:1: job: catch-up-max: expected a count 1..1000");
  expect_error("job interval catch-up-max=1001\n",
               "catch-up-max: expected a count 1..1000, got \"1001\"");
  expect_error("job interval catch-up-spacing=25h\n",
               "bad.scenario:1: job: catch-up-spacing: expected a duration 0s..24h");
  expect_error("job interval max-concurrent=101\n", "job: max-concurrent: expected a count 1..100");
  expect_error("job interval priority=10\n", "job: priority: expected a priority 0..9");
  expect_error("job interval priority=7..3\n",
               "job: priority: expected a priority 0..9 or a range");
  expect_error("job interval priority=high\n", "job: priority:");
  expect_error("job interval attempts=0\n", "job: attempts: expected a count 1..100");
  expect_error("job interval retry=1m..10s\n", "job: retry: range start exceeds its end");
  expect_error("job interval retry=10s\n", "job: retry: expected a range <duration>..<duration>");
  expect_error("job interval retry-multiplier=99\n",
               "job: retry-multiplier: expected a percentage 100..1000");
  expect_error("job interval jitter=101\n", "job: jitter: expected a percentage 0..100");
  expect_error("job interval timeout=0s\n",
               "bad.scenario:1: job: timeout: expected a duration in (0s, 7d]");
  expect_error("job interval timeout=8d\n", "job: timeout: expected a duration in (0s, 7d]");
  expect_error("job interval run=5s\n", "job: run: expected a range");
  expect_error("job interval fail=1001\n", "job: fail: expected an integer per-mille rate 0..1000");
  expect_error("job interval fail=600 permanent-fail=500\n",
               "job: fail, permanent-fail: their sum");
  expect_error("job interval colour=red\n", "bad.scenario:1: job: unknown attribute \"colour\"");
  // The kernel's own validation runs on the whole job (validate_job_spec).
  expect_error("name x\n\njob cron count=1 expr=\"61 * * * *\"\n",
               "bad.scenario:3: job: expr, zone: the kernel refuses this job: schedule");
  expect_error("job cron count=1 expr=\"* * * * *\" zone=Mars/Olympus\n",
               "bad.scenario:1: job: expr, zone: the kernel refuses this job");
  expect_error("timing job-timeout=8d\njob interval\n",
               "bad.scenario:2: job: timeout (from timing job-timeout): the kernel refuses this "
               "job: policy.timeout");

  expect_error("pause count=1\n", "bad.scenario:1: pause: expected at=<duration>");
  expect_error("trigger at=1m\n", "bad.scenario:1: trigger: expected count=N");
  expect_error("pause at=1m count=0\n", "pause: count: expected a count");
  expect_error("pause at=1m count=1 for=0s\n",
               "bad.scenario:1: pause: for: expected a positive duration");
  expect_error("trigger at=1m count=1 for=1m\n",
               "bad.scenario:1: trigger: unknown attribute \"for\"");
  expect_error("trigger at=1m count=1 repeat=0\n", "trigger: repeat: expected a trigger count");
  expect_error("trigger at=1m count=1 spacing=1s\n",
               "bad.scenario:1: trigger: spacing: only with repeat= above 1");
  expect_error("trigger at=1m count=1 force=maybe\n",
               "trigger: force: expected yes or no, got \"maybe\"");
  expect_error("pause at=1m count=1 force=yes\n",
               "bad.scenario:1: pause: unknown attribute \"force\"");
  expect_error("reschedule at=1m count=1\n",
               "bad.scenario:1: reschedule: expected exactly one new schedule");
  expect_error("reschedule at=1m count=1 every=1m expr=\"* * * * *\"\n",
               "expected exactly one new schedule");
  expect_error("reschedule at=1m count=1 every=1m zone=UTC\n", "reschedule: zone: only with expr=");
  expect_error("reschedule at=1m count=1 every=0s\n", "reschedule: every: must be positive");
  expect_error("reschedule at=1m count=1 expr=\"nonsense\"\n",
               "bad.scenario:1: reschedule: expr, zone:");
  expect_error("job interval\npause at=1m count=1 job=2\n",
               "bad.scenario:2: pause: job: the file has 1 job lines, no job line 2");
  expect_error("job once count=1\ntrigger at=1m count=1 job=1\n",
               "bad.scenario:2: trigger: job: job line 1 is a one-off; expected a cron or interval "
               "job line");
}

// A job line the kernel accepts, drawn at random within the documented ranges.
rc::Gen<JobSpec> job_gen() {
  return rc::gen::exec([] {
    JobSpec j;
    j.kind =
        *rc::gen::element(JobSpec::Kind::kCron, JobSpec::Kind::kOnce, JobSpec::Kind::kInterval);
    j.count = *rc::gen::inRange<std::uint32_t>(1, 50);
    const auto ms = [](std::int64_t lo, std::int64_t hi) {
      return absl::Milliseconds(*rc::gen::inRange<std::int64_t>(lo, hi));
    };
    switch (j.kind) {
      case JobSpec::Kind::kCron:
        j.expr = *rc::gen::element<std::string>("*/5 * * * *", "30 2 * * *", "*/10 * * * * *");
        j.zone = *rc::gen::element<std::string>("UTC", "Europe/Berlin", "America/New_York");
        break;
      case JobSpec::Kind::kOnce:
        j.within = ms(1, 7'200'000);
        break;
      case JobSpec::Kind::kInterval:
        j.every = ms(1, 3'600'000);
        break;
    }
    JobPolicy& p = j.policy;
    if (*rc::gen::arbitrary<bool>())
      p.misfire =
          *rc::gen::element(MisfirePolicy::kRunOnce, MisfirePolicy::kCatchUp, MisfirePolicy::kSkip);
    if (*rc::gen::arbitrary<bool>()) p.misfire_threshold = ms(0, 600'000);
    if (*rc::gen::arbitrary<bool>()) p.catch_up_max = *rc::gen::inRange<std::uint32_t>(1, 1001);
    if (*rc::gen::arbitrary<bool>()) p.catch_up_spacing = ms(0, 86'400'001);
    if (*rc::gen::arbitrary<bool>())
      p.overlap =
          *rc::gen::element(OverlapPolicy::kSkip, OverlapPolicy::kQueue, OverlapPolicy::kAllow);
    if (*rc::gen::arbitrary<bool>()) p.max_concurrent = *rc::gen::inRange<std::uint32_t>(1, 101);
    if (*rc::gen::arbitrary<bool>()) {
      j.priority_min = *rc::gen::inRange(0, 10);
      j.priority_max = *rc::gen::inRange(j.priority_min, 10);
    }
    if (*rc::gen::arbitrary<bool>()) j.max_attempts = *rc::gen::inRange<std::uint32_t>(1, 101);
    if (*rc::gen::arbitrary<bool>()) {
      p.retry_initial = ms(0, 600'000);
      p.retry_max = p.retry_initial + ms(0, 600'000);
    }
    if (*rc::gen::arbitrary<bool>())
      p.retry_multiplier_percent = *rc::gen::inRange<std::uint32_t>(100, 1001);
    if (*rc::gen::arbitrary<bool>())
      p.retry_jitter_percent = *rc::gen::inRange<std::uint32_t>(0, 101);
    if (*rc::gen::arbitrary<bool>()) j.timeout = ms(1, 7 * 86'400'000 + 1);
    if (*rc::gen::arbitrary<bool>()) {
      j.run.min_duration = ms(0, 100'000);
      j.run.max_duration = *j.run.min_duration + ms(0, 100'000);
    }
    if (*rc::gen::arbitrary<bool>()) j.run.fail_permille = *rc::gen::inRange<std::uint32_t>(0, 501);
    if (*rc::gen::arbitrary<bool>())
      j.run.permanent_fail_permille = *rc::gen::inRange<std::uint32_t>(0, 501);
    return j;
  });
}

// parse(format(s)) == s for every policy, run profile and control directive.
RC_GTEST_PROP(Scenario, PoliciesAndControlsRoundTrip, ()) {
  // The base has millisecond-resolution network and store settings (the
  // duration grammar's unit; the built-in defaults are finer).
  auto base = parse_scenario(kGood, "good.scenario");
  RC_ASSERT(base.ok());
  Scenario s = *base;
  s.cancels.clear();
  s.jobs =
      *rc::gen::container<std::vector<JobSpec>>(*rc::gen::inRange<std::size_t>(1, 6), job_gen());
  std::vector<std::uint32_t> recurring;  // 1-based job lines
  for (std::size_t i = 0; i < s.jobs.size(); ++i)
    if (s.jobs[i].recurring()) recurring.push_back(static_cast<std::uint32_t>(i + 1));
  const auto n_controls = *rc::gen::inRange<std::size_t>(0, 6);
  for (std::size_t i = 0; i < n_controls; ++i) {
    ControlSpec c;
    c.op = *rc::gen::element(ControlSpec::Op::kPause, ControlSpec::Op::kReschedule,
                             ControlSpec::Op::kTrigger);
    c.at = absl::Milliseconds(*rc::gen::inRange<std::int64_t>(0, 3'600'000));
    c.count = *rc::gen::inRange<std::uint32_t>(1, 20);
    if (!recurring.empty() && *rc::gen::arbitrary<bool>()) c.job = *rc::gen::elementOf(recurring);
    if (c.op == ControlSpec::Op::kPause && *rc::gen::arbitrary<bool>())
      c.resume_after = absl::Milliseconds(*rc::gen::inRange<std::int64_t>(1, 3'600'000));
    if (c.op == ControlSpec::Op::kReschedule) {
      if (*rc::gen::arbitrary<bool>()) {
        c.every = absl::Milliseconds(*rc::gen::inRange<std::int64_t>(1, 3'600'000));
      } else {
        c.expr = *rc::gen::element<std::string>("*/2 * * * *", "0 3 * * *");
        c.zone = *rc::gen::element<std::string>("UTC", "Europe/Berlin");
      }
    }
    s.controls.push_back(c);
  }
  const std::string text = format_scenario(s);
  auto again = parse_scenario(text, "generated");
  RC_ASSERT(again.ok());
  RC_ASSERT(*again == s);
  RC_ASSERT(format_scenario(*again) == text);
}

TEST(RunProfile, PayloadCarriesTheJobsProfileAndFallsBackToTheRunner) {
  RunnerConfig base;
  base.tail_permille = 7;
  base.hang_permille = 3;
  JobRunProfile p;
  EXPECT_EQ(job_payload(p), Payload(CommandPayload{{"sim-job"}, {}, {}}));
  EXPECT_EQ(apply_run_profile(job_payload(p), base), base);
  p.min_duration = absl::Seconds(20);
  p.max_duration = absl::Seconds(40);
  p.fail_permille = 300;
  const Payload payload = job_payload(p);
  EXPECT_EQ(payload, Payload(CommandPayload{{"sim-job", "run=20s..40s", "fail=300"}, {}, {}}));
  const RunnerConfig c = apply_run_profile(payload, base);
  EXPECT_EQ(c.min_duration, absl::Seconds(20));
  EXPECT_EQ(c.max_duration, absl::Seconds(40));
  EXPECT_EQ(c.fail_permille, 300u);
  EXPECT_EQ(c.permanent_fail_permille, base.permanent_fail_permille);
  EXPECT_EQ(c.tail_permille, 7u);  // tail and hang always from the runner
  EXPECT_EQ(c.hang_permille, 3u);
  // Unknown or malformed words are ignored.
  EXPECT_EQ(apply_run_profile(CommandPayload{{"sim-job", "run=9s..1s", "fail=2000", "x=1"}, {}, {}},
                              base),
            base);
  EXPECT_EQ(apply_run_profile(HttpPayload{}, base), base);
}

// Workload::expected() under control requests, through its pure helper.
class ExpectedOccurrences : public ::testing::Test {
 protected:
  const absl::Time t0 = absl::FromUnixSeconds(1767225600);  // 2026-01-01T00:00:00Z
  absl::Time at(absl::Duration d) const { return t0 + d; }
  JobTimeline every_minute() const {
    JobTimeline j;
    j.id = "every-0-0";
    j.incarnation = 1;
    j.schedule.kind = ScheduleSpec::Kind::kInterval;
    j.schedule.every = absl::Minutes(1);
    j.schedule.start = t0;
    j.created_at = t0 - absl::Seconds(1);
    return j;
  }
  // Fire times, as offsets from t0 in minutes.
  std::vector<std::int64_t> minutes(const JobTimeline& j, absl::Duration until) const {
    std::vector<std::int64_t> out;
    for (const auto& o : expected_occurrences(j, t0 + until)) {
      EXPECT_EQ(o.job, j.id);
      EXPECT_EQ(o.incarnation, j.incarnation);
      out.push_back(absl::ToInt64Seconds(o.due - t0) / 60);
    }
    return out;
  }
  static std::vector<std::int64_t> range(std::int64_t from, std::int64_t to) {
    std::vector<std::int64_t> v;
    for (std::int64_t i = from; i <= to; ++i) v.push_back(i);
    return v;
  }
  static std::vector<std::int64_t> join(std::vector<std::int64_t> a,
                                        const std::vector<std::int64_t>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }
};

TEST_F(ExpectedOccurrences, WithoutControlEveryFireFromCreationToUntil) {
  EXPECT_EQ(minutes(every_minute(), absl::Minutes(10)), range(0, 10));
  JobTimeline late = every_minute();
  late.created_at = at(absl::Seconds(150));
  EXPECT_EQ(minutes(late, absl::Minutes(10)), range(3, 10));
}

TEST_F(ExpectedOccurrences, APauseWithAnAcknowledgedResumeChangesNothing) {
  JobTimeline j = every_minute();
  j.pauses.push_back({at(absl::Minutes(5)), /*resumed=*/true});
  EXPECT_EQ(minutes(j, absl::Minutes(20)), range(0, 20));
}

TEST_F(ExpectedOccurrences, APauseNeverResumedEndsTheJobTwoMinutesBeforeItWasSent) {
  JobTimeline j = every_minute();
  j.pauses.push_back({at(absl::Minutes(10) + absl::Seconds(30)), /*resumed=*/false});
  EXPECT_EQ(minutes(j, absl::Minutes(20)), range(0, 8));  // fire < 8m30s
}

TEST_F(ExpectedOccurrences, ARescheduleSplitsOldBeforeTheSendAndNewAfterTheAnswer) {
  JobTimeline j = every_minute();
  ScheduleSpec every5;
  every5.kind = ScheduleSpec::Kind::kInterval;
  every5.every = absl::Minutes(5);
  every5.start = at(absl::Minutes(15));
  // Sent at 10m, answered at 10m20s: old fires < 8m, new fires > 12m20s.
  j.reschedules.push_back(
      {at(absl::Minutes(10)), at(absl::Minutes(10) + absl::Seconds(20)), every5});
  EXPECT_EQ(minutes(j, absl::Minutes(40)), join(range(0, 7), {15, 20, 25, 30, 35, 40}));
  // A cron schedule: its first fire after the answer plus the margin.
  JobTimeline c = every_minute();
  ScheduleSpec cron;
  cron.kind = ScheduleSpec::Kind::kCron;
  cron.cron = "*/10 * * * *";
  c.reschedules.push_back({at(absl::Minutes(29)), at(absl::Minutes(29)), cron});
  EXPECT_EQ(minutes(c, absl::Minutes(60)), join(range(0, 26), {40, 50, 60}));
}

TEST_F(ExpectedOccurrences, ARescheduleNeverAcknowledgedEndsEverything) {
  JobTimeline j = every_minute();
  ScheduleSpec every5;
  every5.kind = ScheduleSpec::Kind::kInterval;
  every5.every = absl::Minutes(5);
  every5.start = at(absl::Minutes(15));
  j.reschedules.push_back({at(absl::Minutes(10)), std::nullopt, every5});
  // A later acknowledged one does not bring anything back.
  j.reschedules.push_back({at(absl::Minutes(20)), at(absl::Minutes(20)), every5});
  EXPECT_EQ(minutes(j, absl::Minutes(40)), range(0, 7));
}

TEST_F(ExpectedOccurrences, ReschedulesAndPausesCompose) {
  JobTimeline j = every_minute();
  ScheduleSpec every5;
  every5.kind = ScheduleSpec::Kind::kInterval;
  every5.every = absl::Minutes(5);
  every5.start = at(absl::Minutes(5));
  ScheduleSpec every2 = every5;
  every2.every = absl::Minutes(2);
  every2.start = at(absl::Minutes(31));
  // Given out of order: they compose in the order of their first send.
  j.reschedules.push_back({at(absl::Minutes(30)), at(absl::Minutes(30)), every2});
  j.reschedules.push_back({at(absl::Minutes(10)), at(absl::Minutes(11)), every5});
  // every=1m: 0..7; every=5m after 13m and before 28m: 15, 20, 25;
  // every=2m after 32m: 33, 35, ...; a pause never resumed, sent at 42m: < 40m.
  j.pauses.push_back({at(absl::Minutes(42)), false});
  j.pauses.push_back({at(absl::Minutes(36)), true});
  EXPECT_EQ(minutes(j, absl::Minutes(60)), join(range(0, 7), {15, 20, 25, 33, 35, 37, 39}));
}

TEST_F(ExpectedOccurrences, AOneOffFiresOnceEvenWhenCreatedLate) {
  JobTimeline j;
  j.id = "once-0-0";
  j.incarnation = 3;
  j.schedule.kind = ScheduleSpec::Kind::kOnce;
  j.schedule.at = at(absl::Minutes(1));
  j.created_at = at(absl::Minutes(5));
  EXPECT_EQ(minutes(j, absl::Minutes(10)), std::vector<std::int64_t>{1});
  EXPECT_TRUE(minutes(j, absl::Seconds(59)).empty());
}

TEST(FaultPlan, SwarmBaseExercisesEveryPolicyAndControl) {
  const Scenario base = default_swarm_base();
  bool overlap[3] = {}, misfire_catch_up = false, retries = false, priorities = false;
  for (const auto& j : base.jobs) {
    overlap[static_cast<int>(j.policy.overlap)] |=
        j.run.max_duration && *j.run.min_duration > j.every;
    misfire_catch_up |= j.policy.misfire == MisfirePolicy::kCatchUp && j.policy.catch_up_max <= 3;
    retries |= j.max_attempts.value_or(0) >= 4 && j.run.fail_permille.value_or(0) > 0;
    priorities |= j.priority_max > j.priority_min;
  }
  EXPECT_TRUE(overlap[0] && overlap[1] && overlap[2]);
  EXPECT_TRUE(misfire_catch_up && retries && priorities);
  bool ops[3] = {};
  for (const auto& c : base.controls) ops[static_cast<int>(c.op)] = true;
  EXPECT_TRUE(ops[0] && ops[1] && ops[2]);
  // Half the seeds or so get a fleet-wide scheduler outage.
  int outages = 0;
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    Random r(seed);
    const Scenario s = swarm_scenario(base, r);
    std::uint32_t crashed = 0;
    for (const auto& f : s.faults) crashed += f.kind == FaultKind::kCrash;
    if (crashed > 0) {
      EXPECT_EQ(crashed, s.topology.schedulers);
      ++outages;
    }
  }
  EXPECT_GT(outages, 10);
  EXPECT_LT(outages, 30);
}

TEST(FaultPlan, SameSeedSamePlanAndFaultsHealBeforeTheQuietTail) {
  auto s = parse_scenario(kGood, "good.scenario");
  ASSERT_TRUE(s.ok());
  Random a(9), b(9);
  const auto pa = plan_faults(*s, a), pb = plan_faults(*s, b);
  ASSERT_EQ(pa.size(), pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) {
    EXPECT_EQ(pa[i].spec, pb[i].spec);
    if (i > 0) {
      EXPECT_LE(pa[i - 1].spec.at, pa[i].spec.at);
    }
    if (pa[i].random) {
      EXPECT_LE(pa[i].spec.at + pa[i].spec.length, s->duration - s->quiet_tail);
    }
  }
  EXPECT_GT(pa.size(), 3u);
}

TEST(CrashPoints, FireOncePerArming) {
  CrashPoints cp;
  cp.arm(3, "effect-before-complete");
  EXPECT_FALSE(cp.should_crash(2, "effect-before-complete"));
  EXPECT_TRUE(cp.should_crash(3, "effect-before-complete"));
  EXPECT_FALSE(cp.should_crash(3, "effect-before-complete"));
}

}  // namespace
}  // namespace kairos::sim
