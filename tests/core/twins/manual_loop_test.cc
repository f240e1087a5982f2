#include "core/twins/manual_loop.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/twins/manual_clock.h"

namespace kairos {
namespace {

TEST(ManualLoop, RunsTimersInDeadlineThenSchedulingOrder) {
  ManualClock clock(absl::FromUnixSeconds(100));
  ManualLoop loop(clock);
  std::vector<int> order;
  loop.after(absl::Seconds(2), [&] { order.push_back(3); });
  loop.after(absl::Seconds(1), [&] { order.push_back(1); });
  loop.after(absl::Seconds(1), [&] { order.push_back(2); });
  const TimerId cancelled = loop.after(absl::Seconds(1), [&] { order.push_back(99); });
  loop.cancel(cancelled);
  loop.post([&] { order.push_back(0); });
  EXPECT_TRUE(order.empty());  // nothing runs re-entrantly
  loop.advance(absl::Seconds(1));
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(clock.now(), absl::FromUnixSeconds(101));
  loop.advance(absl::Seconds(5));
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
}

TEST(ManualLoop, TimerSeesItsOwnDeadlineAsNow) {
  ManualClock clock(absl::UnixEpoch());
  ManualLoop loop(clock);
  absl::Time seen;
  loop.after(absl::Milliseconds(1500), [&] { seen = clock.now(); });
  loop.advance(absl::Seconds(10));
  EXPECT_EQ(seen, absl::UnixEpoch() + absl::Milliseconds(1500));
}

}  // namespace
}  // namespace kairos
