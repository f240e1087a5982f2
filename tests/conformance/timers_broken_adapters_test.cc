// The timers suite's own test: deliberately broken Timers adapters (each a
// thin wrapper over a correct ManualLoop with one flaw) that the checks of
// timers_conformance.h must reject. A check that passes a broken adapter
// proves nothing about the real ones.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <utility>

#include "tests/conformance/timers_conformance.h"

namespace kairos::timers_test {
namespace {

// Forwards everything; the broken adapters override one behaviour.
class Forwarding : public Timers {
 public:
  explicit Forwarding(Timers& inner) : inner_(inner) {}
  void post(std::function<void()> fn) override { inner_.post(std::move(fn)); }
  TimerId after(absl::Duration d, std::function<void()> fn) override {
    return inner_.after(d, std::move(fn));
  }
  void cancel(TimerId id) override { inner_.cancel(id); }

 protected:
  Timers& inner_;
};

// Runs posted callbacks inside post().
class InlinePost final : public Forwarding {
 public:
  using Forwarding::Forwarding;
  void post(std::function<void()> fn) override { fn(); }
};

// cancel() does nothing.
class IgnoresCancel final : public Forwarding {
 public:
  using Forwarding::Forwarding;
  void cancel(TimerId) override {}
};

// Fires timers at half their delay.
class Early final : public Forwarding {
 public:
  using Forwarding::Forwarding;
  TimerId after(absl::Duration d, std::function<void()> fn) override {
    return inner_.after(d / 2, std::move(fn));
  }
};

// Equal deadlines in reverse scheduling order (each later call shaves a
// nanosecond off its deadline).
class LifoTies final : public Forwarding {
 public:
  using Forwarding::Forwarding;
  TimerId after(absl::Duration d, std::function<void()> fn) override {
    return inner_.after(d - absl::Nanoseconds(++n_), std::move(fn));
  }

 private:
  std::int64_t n_ = 0;
};

// Hands out ids from a ring of two, so finished ids come back; cancel(id)
// cancels whatever holds the id now.
class ReusedIds final : public Forwarding {
 public:
  using Forwarding::Forwarding;
  TimerId after(absl::Duration d, std::function<void()> fn) override {
    const TimerId mine = next_++ % 2 + 1;
    inner_ids_[mine] = inner_.after(d, std::move(fn));
    return mine;
  }
  void cancel(TimerId id) override {
    if (auto it = inner_ids_.find(id); it != inner_ids_.end()) inner_.cancel(it->second);
  }

 private:
  TimerId next_ = 0;
  std::map<TimerId, TimerId> inner_ids_;
};

// Posts go last: zero-delay timers jump ahead of earlier posts.
class PostAfterTimers final : public Forwarding {
 public:
  using Forwarding::Forwarding;
  void post(std::function<void()> fn) override {
    inner_.after(absl::Nanoseconds(1), std::move(fn));
  }
};

template <typename Broken>
std::unique_ptr<TimersHarness> broken(std::string name) {
  return make_wrapped_harness(make_manual_loop_harness(), std::move(name),
                              [](Timers& inner) { return std::make_unique<Broken>(inner); });
}

TEST(TimersBrokenAdapters, ACorrectWrapperPassesEveryCheck) {
  EXPECT_EQ(check_post_is_deferred_and_in_order(*broken<Forwarding>("forwarding")), "");
  EXPECT_EQ(check_cancel_before_run_prevents_it(*broken<Forwarding>("forwarding")), "");
  EXPECT_EQ(check_ids_are_unique(*broken<Forwarding>("forwarding")), "");
}

TEST(TimersBrokenAdapters, InlinePostIsCaught) {
  EXPECT_NE(check_post_is_deferred_and_in_order(*broken<InlinePost>("inline")), "");
}

TEST(TimersBrokenAdapters, IgnoredCancelIsCaught) {
  EXPECT_NE(check_cancel_before_run_prevents_it(*broken<IgnoresCancel>("no-cancel")), "");
  EXPECT_NE(check_cancel_from_a_callback(*broken<IgnoresCancel>("no-cancel")), "");
}

TEST(TimersBrokenAdapters, EarlyTimersAreCaught) {
  EXPECT_NE(check_after_waits_for_its_delay(*broken<Early>("early")), "");
  EXPECT_NE(check_periodic_rearm(*broken<Early>("early")), "");
}

TEST(TimersBrokenAdapters, ReversedTiesAreCaught) {
  EXPECT_NE(check_equal_deadlines_run_in_scheduling_order(*broken<LifoTies>("lifo")), "");
  EXPECT_NE(check_many_timers_run_sorted(*broken<LifoTies>("lifo"), 1), "");
}

TEST(TimersBrokenAdapters, ReusedIdsAreCaught) {
  EXPECT_NE(check_ids_are_unique(*broken<ReusedIds>("reused")), "");
  EXPECT_NE(check_cancel_after_run_is_harmless(*broken<ReusedIds>("reused")), "");
}

TEST(TimersBrokenAdapters, PostsOvertakenByZeroDelayTimersAreCaught) {
  EXPECT_NE(check_non_positive_delay_is_a_post(*broken<PostAfterTimers>("post-late")), "");
}

}  // namespace
}  // namespace kairos::timers_test
