// Runs a real Asio loop until a condition holds, with a generous bound: the
// one event-driven wait of the tests that drive real processes, sockets and
// timers (no sleeps; the loop runs the events the condition waits for).
#pragma once

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <chrono>

namespace kairos::test_support {

// Turns `io` (20 ms at a time, calling `each` after every turn) until
// pred() is true; a test failure and false once `bound` has passed.
template <typename Pred, typename Each>
bool run_until(boost::asio::io_context& io, Pred pred, Each each,
               std::chrono::seconds bound = std::chrono::seconds(30)) {
  const auto end = std::chrono::steady_clock::now() + bound;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > end) {
      ADD_FAILURE() << "condition not met within " << bound.count() << " s";
      return false;
    }
    io.run_one_for(std::chrono::milliseconds(20));
    each();
  }
  return true;
}

template <typename Pred>
bool run_until(boost::asio::io_context& io, Pred pred,
               std::chrono::seconds bound = std::chrono::seconds(30)) {
  return run_until(
      io, pred, [] {}, bound);
}

}  // namespace kairos::test_support
