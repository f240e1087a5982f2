// The Timers adapters under test, each behind a TimersHarness
// (timers_conformance.h).
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <memory>
#include <optional>

#include "core/twins/manual_clock.h"
#include "core/twins/manual_loop.h"
#include "prod/runtime/asio_runtime.h"
#include "sim/world/sim_clock.h"
#include "sim/world/sim_timers.h"
#include "sim/world/world.h"
#include "tests/conformance/timers_conformance.h"

namespace kairos::timers_test {
namespace {

class ManualLoopHarness final : public TimersHarness {
 public:
  std::string name() const override { return "ManualLoop"; }
  Timers& timers() override { return *loop_; }
  void run_ready() override {
    if (loop_) loop_->run_ready();
  }
  void advance(absl::Duration d) override {
    if (loop_) {
      loop_->advance(d);
    } else {
      clock_.set(clock_.now() + d);
    }
  }
  absl::Duration elapsed() const override { return clock_.now() - start_; }
  bool virtual_time() const override { return true; }
  void stop() override { loop_.reset(); }  // the loop's destructor drops what is queued

 private:
  const absl::Time start_ = absl::FromUnixSeconds(1'700'000'000);
  ManualClock clock_{start_};
  std::unique_ptr<ManualLoop> loop_ = std::make_unique<ManualLoop>(clock_);
};

class SimTimersHarness final : public TimersHarness {
 public:
  std::string name() const override { return "SimTimers"; }
  Timers& timers() override { return timers_; }
  void run_ready() override { world_.run_until(world_.now()); }
  void advance(absl::Duration d) override { world_.run_until(world_.now() + d); }
  absl::Duration elapsed() const override { return world_.elapsed(); }
  bool virtual_time() const override { return true; }
  void stop() override { world_.crash(node_); }

 private:
  sim::World world_{/*seed=*/1};
  sim::NodeId node_ = world_.add_node("node");
  sim::SimClock clock_{world_};
  sim::SimTimers timers_{world_, node_, clock_};
};

// Real time: advance() runs the io_context until the steady clock has moved
// by `d` (a work guard keeps it waiting when nothing is due).
class AsioTimersHarness final : public TimersHarness {
 public:
  std::string name() const override { return "AsioTimers"; }
  Timers& timers() override { return *timers_; }
  void run_ready() override {
    io_.restart();
    while (io_.poll() > 0) {
    }
  }
  void advance(absl::Duration d) override {
    const auto until =
        std::chrono::steady_clock::now() + std::chrono::nanoseconds(absl::ToInt64Nanoseconds(d));
    {
      auto guard = boost::asio::make_work_guard(io_);
      io_.restart();
      io_.run_until(until);
    }
    run_ready();
  }
  absl::Duration elapsed() const override {
    return absl::FromChrono(std::chrono::steady_clock::now() - start_);
  }
  bool virtual_time() const override { return false; }
  void stop() override { timers_.reset(); }

 private:
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  boost::asio::io_context io_;
  std::unique_ptr<AsioTimers> timers_ = std::make_unique<AsioTimers>(io_);
};

class WrappedHarness final : public TimersHarness {
 public:
  WrappedHarness(std::unique_ptr<TimersHarness> inner, std::string name,
                 std::function<std::unique_ptr<Timers>(Timers&)> wrap)
      : inner_(std::move(inner)), name_(std::move(name)), timers_(wrap(inner_->timers())) {}
  std::string name() const override { return name_; }
  Timers& timers() override { return *timers_; }
  void run_ready() override { inner_->run_ready(); }
  void advance(absl::Duration d) override { inner_->advance(d); }
  absl::Duration elapsed() const override { return inner_->elapsed(); }
  bool virtual_time() const override { return inner_->virtual_time(); }
  void stop() override {
    timers_.reset();
    inner_->stop();
  }

 private:
  std::unique_ptr<TimersHarness> inner_;
  std::string name_;
  std::unique_ptr<Timers> timers_;
};

}  // namespace

std::unique_ptr<TimersHarness> make_wrapped_harness(
    std::unique_ptr<TimersHarness> inner, std::string name,
    std::function<std::unique_ptr<Timers>(Timers&)> wrap) {
  return std::make_unique<WrappedHarness>(std::move(inner), std::move(name), std::move(wrap));
}

std::unique_ptr<TimersHarness> make_manual_loop_harness() {
  return std::make_unique<ManualLoopHarness>();
}
std::unique_ptr<TimersHarness> make_sim_timers_harness() {
  return std::make_unique<SimTimersHarness>();
}
std::unique_ptr<TimersHarness> make_asio_timers_harness() {
  return std::make_unique<AsioTimersHarness>();
}

}  // namespace kairos::timers_test
