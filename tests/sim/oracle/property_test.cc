// Property-based exactly-once: RapidCheck generates workloads and fault
// schedules as values (a Scenario), the simulator runs the real kernel on
// them, and the checker must pass. When it does not, RapidCheck shrinks the
// scenario (fewer faults, fewer jobs, smaller topology, shorter faults) to a
// minimal failing one; every failing case is written out in the scenario
// format, so the file left behind is the minimal case, ready to be kept under
// scenarios/regressions/ and replayed with
//   kairos-sim --scenario FILE --seed N
// (N is in the file's first comment line). Set KAIROS_SIM_EMIT=PATH to choose
// where the property writes it.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "core/kernel/planted_bugs.h"
#include "sim/world/cluster.h"
#include "sim/world/fault_plan.h"
#include "tests/support/seeded_property.h"

namespace kairos::sim {
namespace {

struct Case {
  Scenario scenario;
  std::uint64_t seed = 1;
};

// How RapidCheck prints a counterexample: the scenario file and its seed.
void showValue(const Case& c, std::ostream& os) {
  os << "seed " << c.seed << "\n" << format_scenario(c.scenario);
}

rc::Gen<FaultSpec> fault_gen() {
  return rc::gen::exec([] {
    FaultSpec f;
    f.kind =
        *rc::gen::element(FaultKind::kPause, FaultKind::kCrash, FaultKind::kCrashAt,
                          FaultKind::kPartition, FaultKind::kOneWay, FaultKind::kIsolate,
                          FaultKind::kNet, FaultKind::kStoreOutage, FaultKind::kStoreSlow,
                          FaultKind::kStoreCrash, FaultKind::kClockJump, FaultKind::kClockDrift,
                          FaultKind::kSinkFaults, FaultKind::kFleetRestart, FaultKind::kSwizzle);
    f.at = absl::Seconds(*rc::gen::inRange(0, 540));
    f.length = absl::Seconds(*rc::gen::inRange(1, 40));
    f.node = *rc::gen::element<std::string>("any-worker", "any-scheduler", "leader", "any");
    switch (f.kind) {
      case FaultKind::kCrashAt:
        f.point = std::string(
            kKnownCrashPoints[*rc::gen::inRange<std::size_t>(0, std::size(kKnownCrashPoints))]);
        f.length = absl::ZeroDuration();
        break;
      case FaultKind::kPartition:
      case FaultKind::kOneWay:
        f.peer = *rc::gen::element<std::string>("store", "any", "sink");
        break;
      case FaultKind::kNet:
        f.loss = *rc::gen::inRange<std::uint32_t>(0, 400);
        f.duplicate = *rc::gen::inRange<std::uint32_t>(0, 200);
        f.replay = *rc::gen::inRange<std::uint32_t>(0, 100);
        break;
      case FaultKind::kStoreSlow:
        f.amount = absl::Milliseconds(*rc::gen::inRange(10, 2000));
        break;
      case FaultKind::kStoreOutage:
      case FaultKind::kStoreCrash:
        f.node = "store";
        break;
      case FaultKind::kClockJump:
        f.amount = absl::Seconds(*rc::gen::inRange(-30, 30));
        f.length = absl::ZeroDuration();
        break;
      case FaultKind::kClockDrift:
        f.drift_ppm = *rc::gen::inRange(-100000, 100000);
        break;
      case FaultKind::kSinkFaults:
        f.node = "sink";
        f.error = *rc::gen::inRange<std::uint32_t>(0, 500);
        f.timeout = *rc::gen::inRange<std::uint32_t>(0, 300);
        break;
      default:
        break;
    }
    return f;
  });
}

rc::Gen<Case> case_gen() {
  return rc::gen::exec([] {
    Case c;
    Scenario& s = c.scenario;
    s.name = "property";
    s.description = "shrunk by tests/sim/oracle/property_test.cc";
    s.duration = absl::Minutes(16);
    s.quiet_tail = absl::Minutes(6);
    s.topology.schedulers = *rc::gen::inRange<std::uint32_t>(1, 4);
    s.topology.workers = *rc::gen::inRange<std::uint32_t>(1, 4);
    s.topology.shards = *rc::gen::inRange<std::uint32_t>(1, 5);
    JobSpec every;
    every.kind = JobSpec::Kind::kInterval;
    every.count = *rc::gen::inRange<std::uint32_t>(1, 8);
    every.every = absl::Seconds(*rc::gen::element(15, 20, 30, 45));
    s.jobs.push_back(every);
    if (const auto n = *rc::gen::inRange<std::uint32_t>(0, 4); n != 0) {
      JobSpec cron;
      cron.kind = JobSpec::Kind::kCron;
      cron.count = n;
      cron.expr = "*/2 * * * *";
      cron.zone = *rc::gen::element<std::string>("UTC", "Europe/Berlin", "Asia/Kolkata");
      s.jobs.push_back(cron);
    }
    if (const auto n = *rc::gen::inRange<std::uint32_t>(0, 12); n != 0) {
      JobSpec once;
      once.kind = JobSpec::Kind::kOnce;
      once.count = n;
      once.within = absl::Minutes(9);
      s.jobs.push_back(once);
    }
    if (*rc::gen::inRange(0, 3) == 0)
      s.cancels.push_back({1, absl::Seconds(*rc::gen::inRange(0, 540))});
    s.runner.fail_permille = *rc::gen::inRange<std::uint32_t>(0, 100);
    const auto faults = *rc::gen::inRange(0, 9);
    for (int i = 0; i < faults; ++i) s.faults.push_back(*fault_gen());
    c.seed = *rc::gen::inRange<std::uint64_t>(1, 1000);
    return c;
  });
}

std::string emit_path() {
  const char* p = std::getenv("KAIROS_SIM_EMIT");
  return p != nullptr ? p : ::testing::TempDir() + "kairos-sim-minimal.scenario";
}

void write_case(const Case& c, std::string_view bug) {
  std::ofstream out(emit_path());
  out << "# replay: kairos-sim --scenario FILE --seed " << c.seed;
  if (!bug.empty()) out << " --inject-bug " << bug;
  out << "\n" << format_scenario(c.scenario);
}

// `bug`: a planted bug's name, or empty.
void property(std::string_view bug) {
  const Case c = *case_gen();
  RC_PRE(Cluster::validate(c.scenario).ok());
  PlantedBugs bugs;
  if (!bug.empty()) set_planted_bug(bugs, bug);
  Cluster cluster(c.scenario, c.seed, bugs);
  const RunSummary r = cluster.run();
  if (!r.ok) write_case(c, bug);
  RC_ASSERT(r.ok);
}

// The property on its own seed and test count (see seeded_property.h).
bool check(std::uint64_t seed, int tests, std::string_view bug) {
  return test_support::check_seeded("exactly once", seed, tests, [bug] { property(bug); });
}

TEST(SimProperty, ExactlyOnceUnderGeneratedWorkloadsAndFaults) {
  EXPECT_TRUE(check(1, 60, "")) << "minimal failing scenario written to " << emit_path();
}

// The property fails with a planted bug, and what shrinking leaves is a
// small scenario that still fails with the bug and passes without it.
TEST(SimProperty, ShrinksAPlantedBugToAMinimalScenario) {
  PlantedBugs bugs;
  ASSERT_TRUE(set_planted_bug(bugs, "reuse-token"));
  std::fprintf(stderr, "--- expecting a failure with --inject-bug=reuse-token\n");
  ASSERT_FALSE(check(7, 100, "reuse-token"));
  std::ifstream in(emit_path());
  std::stringstream text;
  text << in.rdbuf();
  std::string first_line;
  std::getline(text, first_line);
  ASSERT_NE(first_line.find("--seed "), std::string::npos) << first_line;
  const std::uint64_t seed = std::stoull(first_line.substr(first_line.find("--seed ") + 7));
  auto s = parse_scenario(text.str(), emit_path());
  ASSERT_TRUE(s.ok()) << s.status();
  // Shrinking takes the topology to its minimum and drops the faults the bug
  // does not need.
  EXPECT_EQ(s->topology.schedulers, 1u);
  EXPECT_EQ(s->topology.workers, 1u);
  EXPECT_LE(s->faults.size(), 3u);
  Cluster with(*s, seed, bugs), without(*s, seed);
  EXPECT_FALSE(with.run().ok);
  EXPECT_TRUE(without.run().ok);
}

}  // namespace
}  // namespace kairos::sim
