// The timers conformance checks. Each check drives one TimersHarness and
// returns "" when the adapter behaved as core/ports/timers.h requires, or a
// description of the first violation. The suite (timers_conformance_test.cc)
// runs every check against every adapter: ManualLoop, SimTimers and
// AsioTimers. Adding an adapter is one factory function.
//
// Time. A harness either owns its time (virtual_time(): ManualLoop and the
// simulator, where time moves only through advance() and every check may
// assert exact instants), or runs on the machine's steady clock (AsioTimers:
// advance() really waits). On real time the checks assert only what cannot
// flake: the order callbacks ran in, and that none ran before its delay had
// passed. Delays are a few milliseconds so the real-time adapter stays fast.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "core/ports/timers.h"

namespace kairos::timers_test {

class TimersHarness {
 public:
  virtual ~TimersHarness() = default;
  virtual std::string name() const = 0;
  // The adapter under test. Not to be used after stop().
  virtual Timers& timers() = 0;
  // Runs every callback that is due now, including the ones they schedule
  // for now, until none is left. Does not move virtual time.
  virtual void run_ready() = 0;
  // Lets `d` pass on the loop's own clock, running each callback when it is
  // due (virtual time: at its exact deadline), then runs what is due at the
  // end.
  virtual void advance(absl::Duration d) = 0;
  // The loop's own monotonic time since the harness was made.
  virtual absl::Duration elapsed() const = 0;
  // True when time moves only through advance().
  virtual bool virtual_time() const = 0;
  // Stops the node (a crash, destroying the adapter). Afterwards run_ready()
  // and advance() still work and must run nothing scheduled before.
  virtual void stop() = 0;
};

using TimersHarnessFactory = std::function<std::unique_ptr<TimersHarness>()>;

// ManualLoop on a ManualClock.
std::unique_ptr<TimersHarness> make_manual_loop_harness();
// SimTimers of one node of a World (its SimClock without drift).
std::unique_ptr<TimersHarness> make_sim_timers_harness();
// AsioTimers on an io_context run by the calling thread (real time).
std::unique_ptr<TimersHarness> make_asio_timers_harness();
// `inner` with its Timers replaced by `wrap(inner.timers())` (broken
// adapters, for the suite's own test).
std::unique_ptr<TimersHarness> make_wrapped_harness(
    std::unique_ptr<TimersHarness> inner, std::string name,
    std::function<std::unique_ptr<Timers>(Timers&)> wrap);

// The checks.
// post() never runs inside the call and runs callbacks in posted order.
std::string check_post_is_deferred_and_in_order(TimersHarness& h);
// after() with a zero or negative delay behaves like post(): deferred, and in
// one FIFO with post(), without time passing.
std::string check_non_positive_delay_is_a_post(TimersHarness& h);
// after(d) never runs before d has passed (virtual time: exactly at d).
std::string check_after_waits_for_its_delay(TimersHarness& h);
// Deadline order first; equal deadlines in scheduling order.
std::string check_deadline_then_scheduling_order(TimersHarness& h);
std::string check_equal_deadlines_run_in_scheduling_order(TimersHarness& h);
// cancel() before the run: never runs (timed and zero-delay alike).
std::string check_cancel_before_run_prevents_it(TimersHarness& h);
// cancel() of a finished, cancelled, unknown or zero id is a no-op and
// touches no other callback (even one that reuses the finished one's slot).
std::string check_cancel_after_run_is_harmless(TimersHarness& h);
// A callback cancels another callback due at the same instant, and itself.
std::string check_cancel_from_a_callback(TimersHarness& h);
// A callback schedules more work: none of it runs inside the callback; what
// it posts runs after everything already due at that instant; a delay counts
// from the callback's own time.
std::string check_schedule_from_a_callback(TimersHarness& h);
// A callback that re-arms itself runs once per period.
std::string check_periodic_rearm(TimersHarness& h);
// Ids of one instance are distinct and non-zero.
std::string check_ids_are_unique(TimersHarness& h);
// Many timers with random delays (many ties) run sorted by (deadline,
// scheduling order). Virtual time only.
std::string check_many_timers_run_sorted(TimersHarness& h, std::uint64_t seed);
// stop() drops every pending callback without running it.
std::string check_stop_drops_pending(TimersHarness& h);

}  // namespace kairos::timers_test
