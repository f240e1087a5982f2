// `job-events-truthful` on hand-made histories: it fires when a job.created
// or job.updated event names no next due time, or another one, than the job
// record its commit wrote, and stays quiet on a faithful event and on an
// event whose record the store never held.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "core/kernel/event_kinds.h"
#include "core/kernel/keyspace.h"
#include "core/kernel/records.h"
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

}  // namespace
}  // namespace kairos::sim
