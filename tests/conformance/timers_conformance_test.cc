// The timers conformance suite: every adapter of core/ports/timers.h must
// pass every test here. Adapters: ManualLoop (core/twins), SimTimers
// (sim/world) and AsioTimers (prod/runtime, on real time: ordering and
// never-early only, see timers_conformance.h).
#include "tests/conformance/timers_conformance.h"

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

namespace kairos::timers_test {
namespace {

struct Adapter {
  std::string name;
  TimersHarnessFactory make;
};

void PrintTo(const Adapter& a, std::ostream* os) { *os << a.name; }

std::vector<Adapter> adapters() {
  return {
      {"ManualLoop", [] { return make_manual_loop_harness(); }},
      {"SimTimers", [] { return make_sim_timers_harness(); }},
      {"AsioTimers", [] { return make_asio_timers_harness(); }},
  };
}

class TimersConformance : public ::testing::TestWithParam<Adapter> {
 protected:
  void SetUp() override { h_ = GetParam().make(); }
  TimersHarness& h() { return *h_; }
  std::unique_ptr<TimersHarness> h_;
};

TEST_P(TimersConformance, PostIsDeferredAndInOrder) {
  EXPECT_EQ(check_post_is_deferred_and_in_order(h()), "");
}

TEST_P(TimersConformance, ZeroAndNegativeDelaysBehaveLikePost) {
  EXPECT_EQ(check_non_positive_delay_is_a_post(h()), "");
}

TEST_P(TimersConformance, AfterWaitsForItsDelay) {
  EXPECT_EQ(check_after_waits_for_its_delay(h()), "");
}

TEST_P(TimersConformance, DeadlineOrderThenSchedulingOrder) {
  EXPECT_EQ(check_deadline_then_scheduling_order(h()), "");
}

TEST_P(TimersConformance, EqualDeadlinesRunInSchedulingOrder) {
  EXPECT_EQ(check_equal_deadlines_run_in_scheduling_order(h()), "");
}

TEST_P(TimersConformance, CancelBeforeRunPreventsIt) {
  EXPECT_EQ(check_cancel_before_run_prevents_it(h()), "");
}

TEST_P(TimersConformance, CancelAfterRunIsHarmless) {
  EXPECT_EQ(check_cancel_after_run_is_harmless(h()), "");
}

TEST_P(TimersConformance, CancelFromACallback) { EXPECT_EQ(check_cancel_from_a_callback(h()), ""); }

TEST_P(TimersConformance, ScheduleFromACallback) {
  EXPECT_EQ(check_schedule_from_a_callback(h()), "");
}

TEST_P(TimersConformance, PeriodicRearm) { EXPECT_EQ(check_periodic_rearm(h()), ""); }

TEST_P(TimersConformance, IdsAreUniqueAndNonZero) { EXPECT_EQ(check_ids_are_unique(h()), ""); }

TEST_P(TimersConformance, ManyRandomTimersRunSorted) {
  if (!h().virtual_time()) GTEST_SKIP() << "needs virtual time";
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    h_ = GetParam().make();
    EXPECT_EQ(check_many_timers_run_sorted(h(), seed), "") << "seed " << seed;
  }
}

TEST_P(TimersConformance, StopDropsPendingCallbacks) {
  EXPECT_EQ(check_stop_drops_pending(h()), "");
}

INSTANTIATE_TEST_SUITE_P(Adapters, TimersConformance, ::testing::ValuesIn(adapters()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace kairos::timers_test
