#include "tests/conformance/timers_conformance.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/ports/random.h"

namespace kairos::timers_test {
namespace {

constexpr absl::Duration kMs = absl::Milliseconds(1);

std::string order_text(const std::vector<int>& v) { return absl::StrJoin(v, ","); }
std::string fmt(absl::Duration d) { return absl::FormatDuration(d); }

std::string expect_order(const std::string& what, const std::vector<int>& got,
                         const std::vector<int>& want) {
  if (got == want) return "";
  return absl::StrCat(what, ": ran in order [", order_text(got), "], expected [", order_text(want),
                      "]");
}

}  // namespace

std::string check_post_is_deferred_and_in_order(TimersHarness& h) {
  std::vector<int> order;
  for (int i = 0; i < 5; ++i) {
    h.timers().post([&order, i] { order.push_back(i); });
    if (!order.empty()) return "post() ran a callback inside the call";
  }
  h.run_ready();
  return expect_order("post", order, {0, 1, 2, 3, 4});
}

std::string check_non_positive_delay_is_a_post(TimersHarness& h) {
  std::vector<int> order;
  const absl::Duration start = h.elapsed();
  Timers& t = h.timers();
  t.post([&] { order.push_back(0); });
  t.after(absl::ZeroDuration(), [&] { order.push_back(1); });
  t.after(-absl::Seconds(1), [&] { order.push_back(2); });
  t.post([&] { order.push_back(3); });
  t.after(-absl::Nanoseconds(1), [&] { order.push_back(4); });
  if (!order.empty()) return "after() with a non-positive delay ran inside the call";
  h.run_ready();
  if (auto v = expect_order("post and non-positive after", order, {0, 1, 2, 3, 4}); !v.empty())
    return v;
  if (h.virtual_time() && h.elapsed() != start)
    return absl::StrCat("running non-positive delays moved time by ", fmt(h.elapsed() - start));
  return "";
}

std::string check_after_waits_for_its_delay(TimersHarness& h) {
  const absl::Duration scheduled = h.elapsed();
  absl::Duration ran_at = -absl::InfiniteDuration();
  bool ran = false;
  h.timers().after(10 * kMs, [&] {
    ran = true;
    ran_at = h.elapsed();
  });
  if (h.virtual_time()) {
    h.run_ready();
    h.advance(9 * kMs);
    if (ran) return absl::StrCat("after(10ms) ran ", fmt(ran_at - scheduled), " after scheduling");
    h.advance(kMs);
    if (!ran) return "after(10ms) had not run once 10ms had passed";
    if (ran_at - scheduled != 10 * kMs)
      return absl::StrCat("after(10ms) ran at +", fmt(ran_at - scheduled),
                          ", expected exactly +10ms");
    return "";
  }
  h.advance(15 * kMs);
  for (int i = 0; i < 100 && !ran; ++i) h.advance(10 * kMs);
  if (!ran) return "after(10ms) had not run after a second";
  if (ran_at - scheduled < 10 * kMs)
    return absl::StrCat("after(10ms) ran early, at +", fmt(ran_at - scheduled));
  return "";
}

std::string check_deadline_then_scheduling_order(TimersHarness& h) {
  std::vector<int> order;
  Timers& t = h.timers();
  // Deadlines are far apart so that real time, too, gives one answer.
  t.after(60 * kMs, [&] { order.push_back(4); });
  t.after(20 * kMs, [&] { order.push_back(1); });
  t.after(40 * kMs, [&] { order.push_back(3); });
  t.after(20 * kMs, [&] { order.push_back(2); });
  t.post([&] { order.push_back(0); });
  h.advance(70 * kMs);
  return expect_order("deadline order", order, {0, 1, 2, 3, 4});
}

std::string check_equal_deadlines_run_in_scheduling_order(TimersHarness& h) {
  std::vector<int> order;
  std::vector<absl::Duration> at;
  for (int i = 0; i < 10; ++i)
    h.timers().after(5 * kMs, [&, i] {
      order.push_back(i);
      at.push_back(h.elapsed());
    });
  h.advance(10 * kMs);
  if (auto v = expect_order("equal deadlines", order, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}); !v.empty())
    return v;
  if (h.virtual_time() &&
      std::adjacent_find(at.begin(), at.end(), std::not_equal_to<>()) != at.end())
    return "equal deadlines ran at different instants";
  return "";
}

std::string check_cancel_before_run_prevents_it(TimersHarness& h) {
  std::vector<int> ran;
  Timers& t = h.timers();
  const TimerId timed = t.after(5 * kMs, [&] { ran.push_back(1); });
  const TimerId zero = t.after(absl::ZeroDuration(), [&] { ran.push_back(2); });
  t.after(5 * kMs, [&] { ran.push_back(3); });
  const TimerId later = t.after(30 * kMs, [&] { ran.push_back(4); });
  t.cancel(timed);
  t.cancel(zero);
  // Cancelled once time has passed and other callbacks have run.
  h.advance(10 * kMs);
  t.cancel(later);
  h.advance(40 * kMs);
  return expect_order("cancelled callbacks", ran, {3});
}

std::string check_cancel_after_run_is_harmless(TimersHarness& h) {
  std::vector<int> ran;
  Timers& t = h.timers();
  const TimerId first = t.after(kMs, [&] { ran.push_back(1); });
  const TimerId posted = t.after(absl::ZeroDuration(), [&] { ran.push_back(0); });
  h.advance(5 * kMs);
  if (auto v = expect_order("before cancelling", ran, {0, 1}); !v.empty()) return v;
  // New callbacks, which may take over the finished ones' storage.
  t.after(kMs, [&] { ran.push_back(2); });
  t.after(absl::ZeroDuration(), [&] { ran.push_back(3); });
  t.cancel(first);
  t.cancel(first);
  t.cancel(posted);
  t.cancel(0);
  t.cancel(~TimerId{0});
  h.advance(5 * kMs);
  return expect_order("after cancelling finished ids", ran, {0, 1, 3, 2});
}

std::string check_cancel_from_a_callback(TimersHarness& h) {
  std::vector<int> ran;
  Timers& t = h.timers();
  TimerId self = 0;
  TimerId victim = 0;
  self = t.after(5 * kMs, [&] {
    ran.push_back(1);
    t.cancel(self);    // itself, while running: harmless
    t.cancel(victim);  // due at the same instant, not yet run
  });
  // Scheduled right after `self` with the same delay: due at the same
  // instant on virtual time, a hair later on real time.
  victim = t.after(5 * kMs, [&] { ran.push_back(2); });
  t.after(6 * kMs, [&] { ran.push_back(3); });
  h.advance(20 * kMs);
  return expect_order("cancel from a callback", ran, {1, 3});
}

std::string check_schedule_from_a_callback(TimersHarness& h) {
  std::vector<int> order;
  std::vector<std::pair<int, absl::Duration>> at;
  Timers& t = h.timers();
  bool inside = false;
  std::string violation;
  auto note = [&](int i) {
    if (inside) violation = absl::StrCat("callback ", i, " ran inside the callback that made it");
    order.push_back(i);
    at.emplace_back(i, h.elapsed());
  };
  t.after(10 * kMs, [&] {
    inside = true;
    order.push_back(1);
    at.emplace_back(1, h.elapsed());
    t.post([&] { note(3); });
    t.after(absl::ZeroDuration(), [&] { note(4); });
    t.after(5 * kMs, [&] { note(5); });
    inside = false;
  });
  // Due at the same instant as callback 1 and scheduled before callback 1
  // ran, so it runs before what callback 1 posts (time, then sequence).
  t.after(10 * kMs, [&] { note(2); });
  h.advance(30 * kMs);
  if (!violation.empty()) return violation;
  if (h.virtual_time()) {
    if (auto v = expect_order("scheduled from a callback", order, {1, 2, 3, 4, 5}); !v.empty())
      return v;
    const absl::Duration base = at[0].second;
    for (const auto& [i, when] : at) {
      const absl::Duration want = i == 5 ? base + 5 * kMs : base;
      if (when != want)
        return absl::StrCat("callback ", i, " ran at +", fmt(when - base),
                            " after callback 1, expected +", fmt(want - base));
    }
    return "";
  }
  // Real time: callback 2's deadline is a hair after callback 1's, so only
  // the order of what callback 1 scheduled is fixed.
  std::vector<int> mine;
  for (int i : order)
    if (i != 2) mine.push_back(i);
  if (auto v = expect_order("scheduled from a callback", mine, {1, 3, 4, 5}); !v.empty()) return v;
  for (const auto& [i, when] : at)
    if (i == 5 && when - at[0].second < 5 * kMs) return "after(5ms) from a callback ran early";
  return "";
}

std::string check_periodic_rearm(TimersHarness& h) {
  std::vector<absl::Duration> at;
  const absl::Duration start = h.elapsed();
  std::function<void()> tick = [&] {
    at.push_back(h.elapsed() - start);
    if (at.size() < 5) h.timers().after(4 * kMs, tick);
  };
  h.timers().after(4 * kMs, tick);
  h.advance(40 * kMs);
  for (int i = 0; i < 100 && at.size() < 5; ++i) h.advance(10 * kMs);
  if (at.size() != 5) return absl::StrCat("a re-armed timer ran ", at.size(), " times, expected 5");
  for (std::size_t i = 0; i < at.size(); ++i) {
    const absl::Duration want = static_cast<std::int64_t>(i + 1) * 4 * kMs;
    if (h.virtual_time() ? at[i] != want : at[i] < want)
      return absl::StrCat("run ", i + 1, " of a 4ms periodic timer at +", fmt(at[i]));
  }
  return "";
}

std::string check_ids_are_unique(TimersHarness& h) {
  std::set<TimerId> ids;
  int ran = 0;
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 50; ++i) {
      const TimerId id = h.timers().after((i % 3) * kMs, [&] { ++ran; });
      if (id == 0) return "after() returned id 0";
      if (!ids.insert(id).second) return absl::StrCat("after() returned id ", id, " twice");
    }
    h.advance(5 * kMs);  // finished ids must not come back either
  }
  if (ran != 150) return absl::StrCat(ran, " of 150 callbacks ran");
  return "";
}

std::string check_many_timers_run_sorted(TimersHarness& h, std::uint64_t seed) {
  if (!h.virtual_time()) return "";
  Random random(seed);
  struct Planned {
    std::int64_t delay_ms;
    int index;
  };
  std::vector<Planned> plan;
  std::vector<int> order;
  for (int i = 0; i < 200; ++i) {
    // Whole milliseconds in [-2, 20]: many ties, some non-positive delays.
    const std::int64_t ms = random.between(-2, 20);
    plan.push_back({std::max<std::int64_t>(ms, 0), i});
    h.timers().after(ms * kMs, [&order, i] { order.push_back(i); });
  }
  h.advance(30 * kMs);
  std::stable_sort(plan.begin(), plan.end(),
                   [](const Planned& a, const Planned& b) { return a.delay_ms < b.delay_ms; });
  std::vector<int> want;
  for (const auto& p : plan) want.push_back(p.index);
  return expect_order(absl::StrCat("200 random timers, seed ", seed), order, want);
}

std::string check_stop_drops_pending(TimersHarness& h) {
  int ran = 0;
  h.timers().post([&] { ++ran; });
  h.timers().after(absl::ZeroDuration(), [&] { ++ran; });
  h.timers().after(5 * kMs, [&] { ++ran; });
  h.stop();
  h.run_ready();
  h.advance(10 * kMs);
  if (ran != 0) return absl::StrCat(ran, " callbacks ran after the node stopped");
  return "";
}

}  // namespace kairos::timers_test
