// AsioTimers against the core/ports/timers.h contract, on a real io_context.
#include "prod/runtime/asio_runtime.h"

#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <set>
#include <thread>
#include <vector>

#include "absl/time/clock.h"

namespace kairos {
namespace {

TEST(AsioTimers, PostRunsInOrderAndNeverReentrantly) {
  boost::asio::io_context io;
  AsioTimers timers(io);
  std::vector<int> order;
  for (int i = 0; i < 5; ++i) timers.post([&, i] { order.push_back(i); });
  EXPECT_TRUE(order.empty());
  io.run();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(AsioTimers, TimersRunInDeadlineThenSchedulingOrder) {
  boost::asio::io_context io;
  AsioTimers timers(io);
  std::vector<int> order;
  timers.after(absl::Milliseconds(20), [&] { order.push_back(3); });
  timers.after(absl::Milliseconds(5), [&] { order.push_back(1); });
  timers.after(absl::Milliseconds(5), [&] { order.push_back(2); });
  timers.after(absl::ZeroDuration(), [&] { order.push_back(0); });
  io.run();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(timers.pending(), 0u);
}

TEST(AsioTimers, CancelBeforeRunMeansNeverRuns) {
  boost::asio::io_context io;
  AsioTimers timers(io);
  std::vector<int> ran;
  const TimerId a = timers.after(absl::Milliseconds(1), [&] { ran.push_back(1); });
  const TimerId b = timers.after(absl::ZeroDuration(), [&] { ran.push_back(2); });
  timers.after(absl::Milliseconds(2), [&] { ran.push_back(3); });
  // Cancelled from inside an earlier callback, after its deadline passed too.
  TimerId late = 0;
  timers.post([&] {
    timers.cancel(late);
    timers.cancel(999);  // unknown id: no-op
  });
  late = timers.after(absl::Microseconds(1), [&] { ran.push_back(4); });
  timers.cancel(a);
  timers.cancel(b);
  io.run();
  EXPECT_EQ(ran, (std::vector<int>{3}));
  timers.cancel(a);  // finished/cancelled id: no-op
}

TEST(AsioTimers, IdsAreNeverReused) {
  boost::asio::io_context io;
  AsioTimers timers(io);
  std::set<TimerId> ids;
  for (int i = 0; i < 100; ++i) {
    const TimerId id = timers.after(absl::Microseconds(i % 3), [] {});
    EXPECT_TRUE(ids.insert(id).second);
    if (i % 2) timers.cancel(id);
  }
  io.run();
  EXPECT_TRUE(ids.insert(timers.after(absl::ZeroDuration(), [] {})).second);
}

TEST(AsioTimers, DestroyingDropsPendingCallbacks) {
  boost::asio::io_context io;
  int ran = 0;
  {
    AsioTimers timers(io);
    timers.post([&] { ++ran; });
    timers.after(absl::ZeroDuration(), [&] { ++ran; });
    timers.after(absl::Milliseconds(1), [&] { ++ran; });
  }
  io.run();
  EXPECT_EQ(ran, 0);
}

TEST(AsioTimers, PostIsSafeFromAnotherThread) {
  boost::asio::io_context io;
  auto work = boost::asio::make_work_guard(io);
  AsioTimers timers(io);
  int ran = 0;
  std::thread other([&] {
    for (int i = 0; i < 1000; ++i) timers.post([&] { ++ran; });
    timers.post([&] { work.reset(); });
  });
  io.run();
  other.join();
  EXPECT_EQ(ran, 1000);
}

TEST(SystemClock, ReadsRealtime) {
  SystemClock clock;
  const absl::Time t = clock.now();
  EXPECT_LT(absl::AbsDuration(t - absl::Now()), absl::Minutes(1));
}

}  // namespace
}  // namespace kairos
