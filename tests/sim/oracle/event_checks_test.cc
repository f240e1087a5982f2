// `job-events-truthful` on hand-made histories: it fires when a job.created
// or job.updated event names no next due time, or another one, than the job
// record its commit wrote, and stays quiet on a faithful event and on an
// event whose record the store never held; and when a run.retry_scheduled
// event states another window or delay than the documented backoff; and
// when a misfire.decided event names another policy or threshold than the
// job's, or counts that cannot be.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "core/base/stable_hash.h"
#include "core/kernel/event_kinds.h"
#include "core/kernel/keyspace.h"
#include "core/kernel/records.h"
#include "core/ports/random.h"
#include "tests/support/history_builder.h"

namespace kairos::sim {
namespace {

using test_support::Hist;
using test_support::violated;

constexpr std::string_view kRule = "job-events-truthful";

struct EventHist : Hist {
  // The job record of `id` written at t0 + `at`, generation `gen`, next due
  // `due` (none: nullopt).
  void write(absl::Duration at, std::uint64_t gen, std::optional<absl::Time> due) {
    JobRecord job;
    job.spec.id = "j";
    job.spec.schedule.kind = ScheduleSpec::Kind::kInterval;
    job.spec.schedule.every = absl::Minutes(1);
    job.spec.schedule.start = t0;
    job.incarnation = 1;
    job.generation = gen;
    job.next_due_at = due;
    commit_ops(at, 1, {{WriteOp::Kind::kPut, keys::job("j"), encode(job)}});
  }
  void event(absl::Duration at, std::string_view kind, std::optional<std::uint64_t> gen,
             std::optional<absl::Time> due) {
    NodeEvent ne;
    ne.at = t0 + at;
    ne.node = 1;
    ne.event.at = ne.at;
    ne.event.kind = kind;
    ne.event.with("job", std::string("j")).with("incarnation", std::uint64_t{1});
    if (gen) ne.event.with("generation", *gen);
    if (due) ne.event.with("next_due", *due);
    events.push_back(ne);
  }
  bool fires() const { return violated(history()).count(std::string(kRule)) > 0; }
};

TEST(EventChecks, AJobEventNamesTheNextDueItsRecordHolds) {
  const absl::Time due = absl::FromUnixSeconds(1767225660);
  EventHist ok;
  ok.write(absl::Seconds(1), 1, due);
  ok.event(absl::Seconds(1), event_kinds::kJobCreated, std::nullopt, due);
  ok.write(absl::Seconds(5), 2, std::nullopt);  // paused, say: no next due
  ok.event(absl::Seconds(5), event_kinds::kJobUpdated, 2, std::nullopt);
  EXPECT_FALSE(ok.fires());

  EventHist missing;  // the record names a next due, the event none
  missing.write(absl::Seconds(1), 1, due);
  missing.event(absl::Seconds(1), event_kinds::kJobCreated, std::nullopt, std::nullopt);
  EXPECT_TRUE(missing.fires());

  EventHist other;  // another instant
  other.write(absl::Seconds(1), 1, due);
  other.event(absl::Seconds(1), event_kinds::kJobCreated, std::nullopt, due + absl::Seconds(60));
  EXPECT_TRUE(other.fires());

  EventHist extra;  // an update whose record names none, an event that names one
  extra.write(absl::Seconds(1), 1, due);
  extra.write(absl::Seconds(5), 2, std::nullopt);
  extra.event(absl::Seconds(5), event_kinds::kJobUpdated, 2, due);
  EXPECT_TRUE(extra.fires());

  EventHist unknown;  // no write of that generation: not judged
  unknown.write(absl::Seconds(1), 1, due);
  unknown.event(absl::Seconds(5), event_kinds::kJobResumed, 7, std::nullopt);
  EXPECT_FALSE(unknown.fires());
}

// A retry after attempt 1 of the default policy (docs/POLICIES.md): the
// window [10s - 10s x 20%, 10s] = [8s, 10s], the delay 10s less the run's
// deterministic cut 10s x 20% x u / 2^32.
struct RetryHist : EventHist {
  RetryHist() {
    sim::ClientJob j;
    j.id = "j";
    j.incarnation = 1;
    j.created_at = t0;
    j.recurring = true;
    jobs.push_back(j);
    write(absl::Seconds(1), 1, t0 + absl::Minutes(1));  // interns the job
  }
  RunId run() const { return RunId{"j", 1, t0 + absl::Minutes(1)}; }
  absl::Duration documented() const {
    const std::uint64_t u = stable_hash(idempotency_key(run()), 1) >> 32;
    return absl::Microseconds(
        10'000'000 - static_cast<std::int64_t>(static_cast<uint128_t>(2'000'000) * u >> 32));
  }
  void retry(absl::Duration delay, absl::Duration lo, absl::Duration hi) {
    NodeEvent ne;
    ne.at = t0 + absl::Minutes(2);
    ne.node = 1;
    ne.event.at = ne.at;
    ne.event.kind = event_kinds::kRunRetryScheduled;
    ne.event.with("job", std::string("j"))
        .with("incarnation", std::uint64_t{1})
        .with("nominal", run().nominal)
        .with("failed_attempt", std::uint64_t{1})
        .with("delay", delay)
        .with("delay_min", lo)
        .with("delay_max", hi);
    events.push_back(ne);
  }
};

TEST(EventChecks, ARetryEventStatesTheDocumentedBackoff) {
  RetryHist ok;
  ok.retry(ok.documented(), absl::Seconds(8), absl::Seconds(10));
  EXPECT_FALSE(ok.fires());

  RetryHist floor;  // a window floor off by the jitter's rounding: 10s x 20/101
  floor.retry(floor.documented(), absl::Microseconds(10'000'000 - 1'980'198), absl::Seconds(10));
  EXPECT_TRUE(floor.fires());

  RetryHist ceiling;  // the next attempt's base
  ceiling.retry(ceiling.documented(), absl::Seconds(8), absl::Seconds(20));
  EXPECT_TRUE(ceiling.fires());

  RetryHist point;  // inside the window, not the run's point
  point.retry(point.documented() + absl::Microseconds(1), absl::Seconds(8), absl::Seconds(10));
  EXPECT_TRUE(point.fires());

  RetryHist stranger;  // a job the client does not know: not judged
  stranger.jobs.clear();
  stranger.retry(absl::Seconds(1), absl::Seconds(1), absl::Seconds(1));
  EXPECT_FALSE(stranger.fires());
}

// A misfire decision of job j, created with misfire=catch-up and a 30s
// threshold.
struct MisfireHist : RetryHist {
  MisfireHist() {
    jobs.back().policy.misfire = MisfirePolicy::kCatchUp;
    jobs.back().policy.misfire_threshold = absl::Seconds(30);
  }
  void decided(std::string policy, absl::Duration threshold, std::uint64_t due = 3,
               std::uint64_t misfired = 2, std::uint64_t capped = 0) {
    NodeEvent ne;
    ne.at = t0 + absl::Minutes(3);
    ne.node = 1;
    ne.event.at = ne.at;
    ne.event.kind = event_kinds::kMisfireDecided;
    ne.event.with("job", std::string("j"))
        .with("incarnation", std::uint64_t{1})
        .with("nominal", t0 + absl::Minutes(1))
        .with("policy", std::move(policy))
        .with("threshold", threshold)
        .with("due", due)
        .with("misfired", misfired)
        .with("capped", capped);
    events.push_back(ne);
  }
};

TEST(EventChecks, AMisfireEventNamesTheJobsPolicyAndCountsThatAddUp) {
  MisfireHist ok;
  ok.decided("catch-up", absl::Seconds(30));
  ok.decided("catch-up", absl::Seconds(30), 1001, 1001, 1);
  EXPECT_FALSE(ok.fires());

  MisfireHist name;  // another policy's name
  name.decided("run-once", absl::Seconds(30));
  EXPECT_TRUE(name.fires());

  MisfireHist threshold;  // the default threshold, not the job's
  threshold.decided("catch-up", absl::Minutes(1));
  EXPECT_TRUE(threshold.fires());

  MisfireHist capped;  // capped is a flag
  capped.decided("catch-up", absl::Seconds(30), 1001, 1001, 2);
  EXPECT_TRUE(capped.fires());

  MisfireHist counts;  // more misfired than due
  counts.decided("catch-up", absl::Seconds(30), 2, 3);
  EXPECT_TRUE(counts.fires());

  MisfireHist bare;  // a field missing
  NodeEvent ne;
  ne.at = ne.event.at = bare.t0 + absl::Minutes(3);
  ne.node = 1;
  ne.event.kind = event_kinds::kMisfireDecided;
  ne.event.with("job", std::string("j")).with("incarnation", std::uint64_t{1});
  bare.events.push_back(ne);
  EXPECT_TRUE(bare.fires());

  MisfireHist stranger;  // a job the client does not know: only the counts judged
  stranger.jobs.clear();
  stranger.decided("skip", absl::Seconds(1));
  EXPECT_FALSE(stranger.fires());
}

}  // namespace
}  // namespace kairos::sim
