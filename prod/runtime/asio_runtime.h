// The production event-loop adapters: a realtime Clock and Timers over a
// Boost.Asio io_context.
//
// Purpose. A production node is one io_context run by one thread (its event
// loop). SystemClock reads the machine's realtime clock; AsioTimers implements
// the core/ports/timers.h contract on that io_context, so core logic runs unchanged
// in production.
//
// Guarantees (AsioTimers, beyond core/ports/timers.h).
// - post() may be called from any thread (it is asio::post); the store's
//   writer thread uses it to hand results back to the loop. after() and
//   cancel() must be called on the loop thread (or while the loop is not
//   running).
// - Deadlines are measured on std::chrono::steady_clock, so a realtime clock
//   jump never makes a timer fire early or late.
// - One Asio steady_timer is armed for the earliest deadline; due callbacks
//   run in (deadline, id) order, so callbacks due at the same instant run in
//   scheduling order.
// - Ids start at 1 and are never reused by one instance.
// - Destroying AsioTimers drops every pending callback (posted or timed)
//   without running it, even if the io_context keeps running. Destroy it on
//   the loop thread or after the loop stopped.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <utility>

#include "core/ports/clock.h"
#include "core/ports/timers.h"

namespace kairos {

// The machine's realtime clock (absl::Now). Thread-safe.
class SystemClock final : public Clock {
 public:
  absl::Time now() const override;
};

class AsioTimers final : public Timers {
 public:
  explicit AsioTimers(boost::asio::io_context& io);
  ~AsioTimers() override;
  AsioTimers(const AsioTimers&) = delete;
  AsioTimers& operator=(const AsioTimers&) = delete;

  void post(std::function<void()> fn) override;
  TimerId after(absl::Duration delay, std::function<void()> fn) override;
  void cancel(TimerId id) override;

  // Callbacks scheduled with after() that have neither run nor been cancelled.
  std::size_t pending() const { return state_->timed.size() + state_->posted.size(); }

  boost::asio::io_context& io() { return io_; }

 private:
  using TimePoint = std::chrono::steady_clock::time_point;
  struct Key {
    TimePoint at;
    TimerId id;
    bool operator<(const Key& o) const { return at != o.at ? at < o.at : id < o.id; }
  };
  // Shared with queued Asio handlers so that they can tell, after this object
  // is gone, that they must not run. Touched only on the loop thread.
  struct State {
    bool stopped = false;
    std::map<Key, std::function<void()>> timed;
    // after() with a non-positive delay: id -> callback, run by an asio::post.
    std::map<TimerId, std::function<void()>> posted;
    std::map<TimerId, TimePoint> deadline_of;
  };

  void arm();
  void run_due();

  boost::asio::io_context& io_;
  boost::asio::steady_timer wake_;
  std::shared_ptr<State> state_ = std::make_shared<State>();
  TimerId next_id_ = 0;
  bool armed_ = false;
  TimePoint armed_at_{};
};

}  // namespace kairos
