// ManualLoop: a single-threaded event loop driven by a ManualClock, for unit
// tests of core logic and for simple embeddings. Implements Timers.
//
// Nothing runs until the test asks: run_ready() runs every callback that is
// due at the clock's current time (including ones posted while running);
// advance(d) moves the clock forward, running timers in deadline order at
// their deadlines. Equal deadlines run in scheduling order.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <utility>

#include "core/ports/clock.h"
#include "core/ports/timers.h"
#include "core/twins/manual_clock.h"

namespace kairos {

class ManualLoop final : public Timers {
 public:
  explicit ManualLoop(ManualClock& clock) : clock_(clock) {}

  void post(std::function<void()> fn) override { after(absl::ZeroDuration(), std::move(fn)); }

  TimerId after(absl::Duration delay, std::function<void()> fn) override {
    const TimerId id = ++next_id_;
    const absl::Time at = delay > absl::ZeroDuration() ? clock_.now() + delay : clock_.now();
    queue_.emplace(Key{at, id}, std::move(fn));
    return id;
  }

  void cancel(TimerId id) override {
    for (auto it = queue_.begin(); it != queue_.end(); ++it) {
      if (it->first.id == id) {
        queue_.erase(it);
        return;
      }
    }
  }

  // Runs callbacks due now until none is left. Returns how many ran.
  std::size_t run_ready() {
    std::size_t n = 0;
    while (!queue_.empty() && queue_.begin()->first.at <= clock_.now()) {
      auto fn = std::move(queue_.begin()->second);
      queue_.erase(queue_.begin());
      fn();
      ++n;
    }
    return n;
  }

  // Moves time forward by `d`, running each timer at its deadline.
  void advance(absl::Duration d) {
    const absl::Time end = clock_.now() + d;
    run_ready();
    while (!queue_.empty() && queue_.begin()->first.at <= end) {
      clock_.set(queue_.begin()->first.at);
      run_ready();
    }
    clock_.set(end);
    run_ready();
  }

  std::size_t pending() const { return queue_.size(); }

 private:
  struct Key {
    absl::Time at;
    TimerId id;
    bool operator<(const Key& o) const { return at != o.at ? at < o.at : id < o.id; }
  };
  ManualClock& clock_;
  TimerId next_id_ = 0;
  std::map<Key, std::function<void()>> queue_;
};

}  // namespace kairos
