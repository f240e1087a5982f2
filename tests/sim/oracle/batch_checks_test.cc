// The rules over the client's batches, conditional applies and in-place
// updates (sim/oracle/batch_checks.cc) on hand-made histories:
// `batches-all-or-nothing` (an invalid batch refused whole, naming its item
// and field, storing nothing; a valid one stored exactly, in one commit) and
// `updates-follow-if-match` (a stale update refused and not stored, an
// accepted one one generation on with the spec asked for, runs following a
// new priority), each firing on the history that breaks it and quiet on a
// correct one.
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "core/kernel/keyspace.h"
#include "sim/scenario/client_events.h"
#include "tests/support/history_builder.h"

namespace kairos::sim {
namespace {

using test_support::Hist;
namespace ce = client_events;

constexpr std::string_view kBatches = "batches-all-or-nothing";
constexpr std::string_view kUpdates = "updates-follow-if-match";
constexpr NodeId kClient = 2;

JobSpec spec_of(std::string id, std::int32_t priority = 5) {
  JobSpec s;
  s.id = std::move(id);
  s.ns = "batches";
  s.schedule.kind = ScheduleSpec::Kind::kInterval;
  s.schedule.every = absl::Hours(24);
  s.schedule.start = absl::FromUnixSeconds(1767225600) + absl::Hours(24 * 30);
  s.policy.priority = priority;
  return s;
}

struct BatchHist : Hist {
  absl::Duration now = absl::ZeroDuration();
  Event& event(std::string_view kind) {
    now += absl::Seconds(1);
    NodeEvent e;
    e.at = t0 + now;
    e.node = kClient;
    e.event.at = e.at;
    e.event.kind = kind;
    events.push_back(std::move(e));
    return events.back().event;
  }
  // One commit writing the records of `jobs` (at their generations).
  void store(const std::vector<JobRecord>& jobs) {
    now += absl::Seconds(1);
    std::vector<WriteOp> ops;
    for (const JobRecord& j : jobs)
      ops.push_back({WriteOp::Kind::kPut, keys::job(j.spec.id), encode(j)});
    commit_ops(now, 1, ops);
  }
  static JobRecord record(const JobSpec& s, std::uint64_t generation) {
    JobRecord r;
    r.spec = s;
    r.incarnation = 1;
    r.generation = generation;
    return r;
  }
  // A batch answer: every spec sent, the answer's generations (empty when
  // refused), the planted items and field.
  void batch(const std::vector<JobSpec>& specs, std::string code, std::string message,
             std::string errors, std::string planted, std::string field,
             const std::vector<std::uint64_t>& got = {}, std::string changed = "") {
    std::string ids, sent, want, gots, got_spec;
    for (std::size_t i = 0; i < specs.size(); ++i) {
      const char* sep = i == 0 ? "" : ",";
      absl::StrAppend(&ids, sep, specs[i].id);
      absl::StrAppend(&sent, sep, spec_digest(specs[i]));
      absl::StrAppend(&want, sep, "-");
      if (i < got.size()) {
        absl::StrAppend(&gots, sep, got[i]);
        absl::StrAppend(&got_spec, sep, spec_digest(specs[i]));
      }
    }
    event(ce::kBatchAnswered)
        .with("probe", "p")
        .with("op", "batch")
        .with("code", std::move(code))
        .with("message", std::move(message))
        .with("errors", std::move(errors))
        .with("planted", std::move(planted))
        .with("field", std::move(field))
        .with("ids", ids)
        .with("sent", sent)
        .with("want", want)
        .with("got", gots)
        .with("got_spec", got_spec)
        .with("changed", std::move(changed));
  }
  void update(std::string kind, std::string code, const JobSpec& want, std::uint64_t if_match,
              std::uint64_t known, std::optional<std::uint64_t> generation, bool mismatch) {
    Event& e = event(ce::kUpdateAnswered);
    e.with("job", want.id)
        .with("incarnation", std::uint64_t{1})
        .with("kind", std::move(kind))
        .with("if_match", if_match)
        .with("known", known)
        .with("code", std::move(code))
        .with("mismatch", std::uint64_t{mismatch})
        .with("want", spec_digest(want))
        .with("before", std::uint64_t{0});
    if (generation)
      e.with("generation", *generation)
          .with("changed", std::uint64_t{1})
          .with("got", spec_digest(want));
  }
  bool fires(std::string_view name) const {
    for (const auto& v : Checker::with_defaults().run(history(), {}).violations)
      if (v.invariant == name) return true;
    return false;
  }
};

TEST(BatchChecks, AnInvalidBatchIsRefusedWholeNamingItsItemAndStoresNothing) {
  const std::vector<JobSpec> specs = {spec_of("a"), spec_of("b", 10), spec_of("c")};
  const std::string msg =
      "jobs[1]: policy.priority: must be in [0, 9], got 10 (1 of 3 jobs invalid)";
  {
    BatchHist x;
    x.batch(specs, "INVALID_ARGUMENT", msg, "1", "1", "policy.priority");
    EXPECT_FALSE(x.fires(kBatches));
  }
  {
    BatchHist x;  // a good item of the refused batch was stored
    x.store({BatchHist::record(specs[0], 1)});
    x.batch(specs, "INVALID_ARGUMENT", msg, "1", "1", "policy.priority");
    EXPECT_TRUE(x.fires(kBatches));
  }
  {
    BatchHist x;  // the refusal names another item
    x.batch(specs, "INVALID_ARGUMENT", "jobs[0]: id: ...", "0", "1", "policy.priority");
    EXPECT_TRUE(x.fires(kBatches));
  }
  {
    BatchHist x;  // accepted
    x.batch(specs, "OK", "", "", "1", "policy.priority");
    EXPECT_TRUE(x.fires(kBatches));
  }
}

TEST(BatchChecks, AValidBatchStoresExactlyItsSpecsInOneCommit) {
  const std::vector<JobSpec> specs = {spec_of("a"), spec_of("b")};
  {
    BatchHist x;
    x.store({BatchHist::record(specs[0], 1), BatchHist::record(specs[1], 1)});
    x.batch(specs, "OK", "", "", "", "", {1, 1}, "1,1");
    EXPECT_FALSE(x.fires(kBatches));
  }
  {
    BatchHist x;  // half in one commit, half in another
    x.store({BatchHist::record(specs[0], 1)});
    x.store({BatchHist::record(specs[1], 1)});
    x.batch(specs, "OK", "", "", "", "", {1, 1}, "1,1");
    EXPECT_TRUE(x.fires(kBatches));
  }
  {
    BatchHist x;  // b stored with another spec than the one sent
    x.store({BatchHist::record(specs[0], 1), BatchHist::record(spec_of("b", 7), 1)});
    x.batch(specs, "OK", "", "", "", "", {1, 1}, "1,1");
    EXPECT_TRUE(x.fires(kBatches));
  }
}

TEST(BatchChecks, AStaleUpdateIsRefusedAndAnAcceptedOneMovesTheGeneration) {
  const JobSpec before = spec_of("job-a", 5);
  const JobSpec asked = spec_of("job-a", 6);
  {
    BatchHist x;
    x.store({BatchHist::record(before, 3)});
    // Each update asks for a spec of its own (the workload's rev label).
    x.update("stale", "FAILED_PRECONDITION", spec_of("job-a", 7), 2, 3, std::nullopt, true);
    x.store({BatchHist::record(asked, 4)});
    x.update("change", "OK", asked, 3, 3, 4, false);
    EXPECT_FALSE(x.fires(kUpdates));
  }
  {
    BatchHist x;  // the stale update went through
    x.store({BatchHist::record(before, 3)});
    x.store({BatchHist::record(asked, 4)});
    x.update("stale", "OK", asked, 2, 3, 4, false);
    EXPECT_TRUE(x.fires(kUpdates));
  }
  {
    BatchHist x;  // accepted, but the generation did not move
    x.store({BatchHist::record(before, 3)});
    x.store({BatchHist::record(asked, 3)});
    x.update("change", "OK", asked, 3, 3, 3, false);
    EXPECT_TRUE(x.fires(kUpdates));
  }
}

TEST(BatchChecks, ASpecChangeUnderTheSameGenerationBreaksGenerationMovesWithChanges) {
  auto make = [](std::uint64_t second) {
    BatchHist x;
    x.store({BatchHist::record(spec_of("job-a", 5), 3)});
    JobSpec s = spec_of("job-a", 5);
    s.labels["rev"] = "1";  // a label change: a spec change like any other
    x.store({BatchHist::record(s, second)});
    return x;
  };
  EXPECT_FALSE(make(4).fires("generation-moves-with-changes"));
  EXPECT_TRUE(make(3).fires("generation-moves-with-changes"));
}

TEST(BatchChecks, RunsCreatedAfterAPriorityChangeCarryIt) {
  auto make = [](std::int32_t run_priority) {
    BatchHist x;
    JobSpec s = spec_of("job-a", 5);
    x.store({BatchHist::record(s, 1)});
    s.policy.priority = 8;
    x.store({BatchHist::record(s, 2)});
    RunRecord run;
    run.id = RunId{"job-a", 1, x.t0 + absl::Minutes(1)};
    run.state = RunState::kReady;
    run.priority = run_priority;
    run.due_at = run.ready_at = run.id.nominal;
    x.now += absl::Seconds(1);
    x.commit(x.now, 1, run);
    return x;
  };
  EXPECT_FALSE(make(8).fires(kUpdates));
  EXPECT_TRUE(make(5).fires(kUpdates));
}

TEST(BatchChecks, APriorityChangeMovesTheQueuedRunsInItsCommit) {
  auto make = [](bool moved) {
    BatchHist x;
    JobSpec s = spec_of("job-a", 5);
    x.store({BatchHist::record(s, 1)});
    RunRecord run;
    run.id = RunId{"job-a", 1, x.t0 + absl::Minutes(1)};
    run.state = RunState::kWaiting;
    run.priority = 5;
    run.due_at = run.ready_at = run.id.nominal;
    x.now += absl::Seconds(1);
    x.commit(x.now, 1, run);
    s.policy.priority = 8;
    std::vector<WriteOp> ops = {
        {WriteOp::Kind::kPut, keys::job("job-a"), encode(BatchHist::record(s, 2))}};
    run.priority = 8;
    if (moved) ops.push_back(Hist::put(run));
    x.now += absl::Seconds(1);
    x.commit_ops(x.now, 1, ops);
    return x;
  };
  EXPECT_FALSE(make(true).fires(kUpdates));
  EXPECT_TRUE(make(false).fires(kUpdates));
}

}  // namespace
}  // namespace kairos::sim
