// A tiny in-test world: an in-memory network of Transport endpoints, a fake
// Runner whose jobs take a fixed time and write their effect to a Sink, and
// a stepping driver for several ManualLoops over one ManualClock.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/ports/runner.h"
#include "core/ports/transport.h"
#include "core/twins/manual_clock.h"
#include "core/twins/manual_loop.h"

namespace kairos::test_support {

class Net {
 public:
  class Endpoint final : public Transport {
   public:
    Endpoint(Net& net, PeerId id, Timers& loop) : net_(net), id_(id), loop_(loop) {}
    void send(PeerId to, std::string message) override {
      net_.deliver(id_, to, std::move(message));
    }
    void set_handler(Handler h) override { handler_ = std::move(h); }
    PeerId id() const { return id_; }
    bool down = false;  // messages to a down endpoint are dropped

   private:
    friend class Net;
    Net& net_;
    PeerId id_;
    Timers& loop_;
    Handler handler_;
  };

  Endpoint& add(Timers& loop) {
    const PeerId id = endpoints_.size() + 1;
    endpoints_.push_back(std::make_unique<Endpoint>(*this, id, loop));
    return *endpoints_.back();
  }
  // Return true to drop a message.
  std::function<bool(PeerId from, PeerId to)> drop;
  std::size_t delivered = 0;

 private:
  void deliver(PeerId from, PeerId to, std::string m) {
    if (to == 0 || to > endpoints_.size()) return;
    if (drop && drop(from, to)) return;
    Endpoint* ep = endpoints_[to - 1].get();
    ep->loop_.post([this, ep, from, m = std::move(m)] {
      if (ep->down || !ep->handler_) return;
      ++delivered;
      ep->handler_(from, m);
    });
  }
  std::vector<std::unique_ptr<Endpoint>> endpoints_;
};

// Records every effect that reached the "downstream system".
struct Sink {
  struct Effect {
    std::string key;
    std::uint64_t token;
    absl::Time at;
  };
  std::vector<Effect> effects;
  std::map<std::string, std::vector<std::uint64_t>> by_key() const {
    std::map<std::string, std::vector<std::uint64_t>> m;
    for (const auto& e : effects) m[e.key].push_back(e.token);
    return m;
  }
};

class FakeRunner final : public Runner {
 public:
  FakeRunner(Timers& loop, const Clock& clock, Sink& sink, absl::Duration duration)
      : loop_(loop), clock_(clock), sink_(sink), duration_(duration) {}

  RunHandle start(RunRequest req, std::function<void(RunOutcome)> done) override {
    const RunHandle h = ++next_;
    auto shared_done = std::make_shared<std::function<void(RunOutcome)>>(std::move(done));
    const TimerId t = loop_.after(duration_, [this, h, req, shared_done] {
      running_.erase(h);
      sink_.effects.push_back({req.idempotency_key, req.fencing_token, clock_.now()});
      (*shared_done)(RunOutcome{RunStatus::kSucceeded, 0, "ok"});
    });
    running_[h] = {t, shared_done};
    return h;
  }
  void stop(RunHandle h) override {
    auto it = running_.find(h);
    if (it == running_.end()) return;
    loop_.cancel(it->second.first);
    auto done = it->second.second;
    running_.erase(it);
    loop_.post([done] { (*done)(RunOutcome{RunStatus::kStopped, 0, "stopped"}); });
  }
  std::size_t running() const { return running_.size(); }

 private:
  Timers& loop_;
  const Clock& clock_;
  Sink& sink_;
  absl::Duration duration_;
  RunHandle next_ = 0;
  std::map<RunHandle, std::pair<TimerId, std::shared_ptr<std::function<void(RunOutcome)>>>>
      running_;
};

// Several loops over one clock, advanced in lockstep in small steps; a loop
// can be paused (its callbacks wait, as in a GC pause).
class Stepper {
 public:
  explicit Stepper(ManualClock& clock) : clock_(clock) {}
  ManualLoop& add_loop() {
    loops_.push_back(std::make_unique<ManualLoop>(clock_));
    paused_.push_back(false);
    return *loops_.back();
  }
  void pause(std::size_t i, bool p) { paused_[i] = p; }
  void run(absl::Duration total, absl::Duration step = absl::Milliseconds(50)) {
    const absl::Time end = clock_.now() + total;
    while (clock_.now() < end) {
      clock_.advance(std::min(step, end - clock_.now()));
      for (int round = 0; round < 100; ++round) {
        std::size_t ran = 0;
        for (std::size_t i = 0; i < loops_.size(); ++i)
          if (!paused_[i]) ran += loops_[i]->run_ready();
        if (ran == 0) break;
      }
    }
  }

 private:
  ManualClock& clock_;
  std::vector<std::unique_ptr<ManualLoop>> loops_;
  std::vector<bool> paused_;
};

}  // namespace kairos::test_support
