#include "prod/runtime/asio_runtime.h"

#include <boost/asio/post.hpp>

#include "absl/time/clock.h"
#include "core/base/check.h"

namespace kairos {

absl::Time SystemClock::now() const { return absl::Now(); }

AsioTimers::AsioTimers(boost::asio::io_context& io) : io_(io), wake_(io) {}

AsioTimers::~AsioTimers() {
  state_->stopped = true;
  state_->timed.clear();
  state_->posted.clear();
  state_->deadline_of.clear();
  wake_.cancel();
}

void AsioTimers::post(std::function<void()> fn) {
  // Any thread: only the shared_ptr copy (atomic) and asio::post happen here.
  boost::asio::post(io_, [state = state_, fn = std::move(fn)]() mutable {
    if (!state->stopped) fn();
  });
}

TimerId AsioTimers::after(absl::Duration delay, std::function<void()> fn) {
  const TimerId id = ++next_id_;
  if (delay <= absl::ZeroDuration()) {
    state_->posted.emplace(id, std::move(fn));
    boost::asio::post(io_, [state = state_, id] {
      if (state->stopped) return;
      auto it = state->posted.find(id);
      if (it == state->posted.end()) return;  // cancelled
      auto f = std::move(it->second);
      state->posted.erase(it);
      f();
    });
    return id;
  }
  const auto at =
      std::chrono::steady_clock::now() + std::chrono::nanoseconds(absl::ToInt64Nanoseconds(delay));
  state_->timed.emplace(Key{at, id}, std::move(fn));
  state_->deadline_of.emplace(id, at);
  arm();
  return id;
}

void AsioTimers::cancel(TimerId id) {
  if (state_->posted.erase(id) > 0) return;
  auto it = state_->deadline_of.find(id);
  if (it == state_->deadline_of.end()) return;
  state_->timed.erase(Key{it->second, id});
  state_->deadline_of.erase(it);
  // The wake-up timer may stay armed for the cancelled deadline; run_due()
  // then finds nothing due and re-arms for the next one.
}

void AsioTimers::arm() {
  if (state_->timed.empty()) return;
  const TimePoint next = state_->timed.begin()->first.at;
  if (armed_ && armed_at_ <= next) return;
  armed_ = true;
  armed_at_ = next;
  wake_.expires_at(next);  // cancels an earlier wait; its handler sees aborted
  wake_.async_wait([this, state = state_](const boost::system::error_code& ec) {
    if (state->stopped || ec == boost::asio::error::operation_aborted) return;
    armed_ = false;
    run_due();
  });
}

void AsioTimers::run_due() {
  const TimePoint now = std::chrono::steady_clock::now();
  // Hold our own reference: a callback may destroy this AsioTimers.
  const std::shared_ptr<State> state = state_;
  while (!state->stopped && !state->timed.empty() && state->timed.begin()->first.at <= now) {
    auto node = state->timed.extract(state->timed.begin());
    state->deadline_of.erase(node.key().id);
    node.mapped()();
  }
  if (!state->stopped) arm();
}

}  // namespace kairos
