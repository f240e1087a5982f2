// The node-level test world: scheduler nodes and workers talking over a
// LoopbackHub, on ManualLoops over one ManualClock, with one MemoryStorage.
//
// Purpose. Every node- and worker-level kernel test needs the same rig: a
// clock, a loop (or several, stepped in lockstep so one can be paused), a
// store, a transport, and per process its own Random, Metrics and event log.
// NodeWorld builds it once; a test adds the nodes, workers and endpoints it
// needs, in the order it needs them (PeerIds are handed out in that order).
//
// Parts.
// - Sink and FakeRunner: a runner whose runs take a fixed loop time and then
//   write their effect (idempotency key, fencing token, time) to a Sink, the
//   stand-in for the downstream system.
// - Stepper: several ManualLoops over one clock, advanced in small steps.
// - TestWorker: a Worker with its own Random, event log and Metrics.
// - NodeWorld: the whole world. Nodes share the world's event log unless
//   asked otherwise; workers keep their own unless asked otherwise.
//
// Guarantees. Deterministic: nothing here reads a real clock or starts a
// thread, and every random choice comes from the seeds the test passes. The
// hub delivers on the world's main loop (`loop`), whatever loop a node's
// timers run on: a node on a paused extra loop still receives messages, so
// extra loops are for nodes that only talk to the store. Objects made with
// keep() outlive every node and worker; nodes and workers are destroyed
// before their endpoints, endpoints before the hub.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "core/kernel/records.h"
#include "core/kernel/scheduler_node.h"
#include "core/kernel/worker.h"
#include "core/ports/metrics.h"
#include "core/ports/random.h"
#include "core/ports/runner.h"
#include "core/ports/storage.h"
#include "core/twins/loopback_transport.h"
#include "core/twins/manual_clock.h"
#include "core/twins/manual_loop.h"
#include "core/twins/memory_event_log.h"
#include "core/twins/memory_storage.h"
#include "tests/support/kernel_test_util.h"

namespace kairos::test_support {

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

// Runs succeed `duration` after they start and record their effect.
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

// A node polling its shards every 500 ms.
inline SchedulerNodeConfig node_config(std::string id, std::uint32_t shards = 2) {
  SchedulerNodeConfig c;
  c.node_id = std::move(id);
  c.shard_count = shards;
  c.poll_interval = absl::Milliseconds(500);
  return c;
}

// A worker long-polling `nodes` (in order) for 5 s at a time.
inline WorkerConfig worker_config(std::string id, std::vector<PeerId> nodes) {
  WorkerConfig c;
  c.worker_id = std::move(id);
  c.nodes = std::move(nodes);
  c.claim_wait = absl::Seconds(5);
  return c;
}

// A worker process: its own Random and Metrics, and its own event log unless
// `shared_events` is given.
struct TestWorker {
  TestWorker(const Clock& clock, Timers& loop, Transport& endpoint, Runner& runner,
             WorkerConfig config, std::uint64_t seed, EventLog* shared_events = nullptr)
      : random(seed),
        worker(clock, loop, endpoint, runner, random, shared_events ? *shared_events : events,
               metrics, std::move(config)) {}
  // Worker "w1" polling `nodes`.
  TestWorker(const Clock& clock, Timers& loop, Transport& endpoint, Runner& runner,
             std::vector<PeerId> nodes, std::uint64_t seed)
      : TestWorker(clock, loop, endpoint, runner, worker_config("w1", std::move(nodes)), seed) {}
  Random random;
  MemoryEventLog events;
  Metrics metrics;
  Worker worker;
};

// Where NodeWorld::add_node runs a node; by default on the world's clock,
// main loop and store, logging to the world's shared event log.
struct NodeOptions {
  Storage* storage = nullptr;
  const Clock* clock = nullptr;
  Timers* loop = nullptr;
  bool own_events = false;
};

class NodeWorld {
 public:
  explicit NodeWorld(absl::Time start = T0()) : clock(start) {}
  NodeWorld(const NodeWorld&) = delete;
  NodeWorld& operator=(const NodeWorld&) = delete;

  // A scheduler node process: its endpoint, Random, Metrics and (if asked
  // for) its own event log.
  struct Node {
    Node(LoopbackHub& hub, const Clock& clock, Timers& loop, Storage& storage, EventLog* shared,
         std::uint64_t seed, SchedulerNodeConfig config)
        : ep(hub.connect()),
          random(seed),
          node(clock, loop, storage, *ep, random, shared ? *shared : own_events, metrics,
               std::move(config)) {}
    std::unique_ptr<LoopbackHub::Endpoint> ep;
    Random random;
    Metrics metrics;
    MemoryEventLog own_events;
    SchedulerNode node;
  };

  ManualClock clock;
  Stepper stepper{clock};
  ManualLoop& loop = stepper.add_loop();  // the main loop: store results and messages
  MemoryStorage mem{clock, loop};
  LoopbackHub hub{loop};
  MemoryEventLog events;  // shared by the nodes
  Sink sink;

  // A node with the next PeerId; not started.
  Node& add_node(SchedulerNodeConfig config, std::uint64_t seed, NodeOptions o = {}) {
    nodes_.push_back(std::make_unique<Node>(
        hub, o.clock ? *o.clock : clock, o.loop ? *o.loop : loop, o.storage ? *o.storage : mem,
        o.own_events ? nullptr : &events, seed, std::move(config)));
    return *nodes_.back();
  }
  // A worker with the next PeerId, on the main loop and the world's clock;
  // not started. Its events go to the world's log if `shared_events`.
  TestWorker& add_worker(Runner& runner, WorkerConfig config, std::uint64_t seed,
                         bool shared_events = false) {
    LoopbackHub::Endpoint& ep = add_endpoint();
    workers_.push_back(std::make_unique<TestWorker>(clock, loop, ep, runner, std::move(config),
                                                    seed, shared_events ? &events : nullptr));
    return *workers_.back();
  }
  // A bare endpoint with the next PeerId (for a hand-built or hand-driven peer).
  LoopbackHub::Endpoint& add_endpoint() {
    endpoints_.push_back(hub.connect());
    return *endpoints_.back();
  }
  // A FakeRunner writing to the world's sink.
  FakeRunner& add_runner(absl::Duration duration) {
    return keep<FakeRunner>(loop, clock, sink, duration);
  }
  // An object the world owns until after its nodes and workers are gone (a
  // store wrapper, a skewed clock, a runner they use).
  template <typename T, typename... Args>
  T& keep(Args&&... args) {
    auto p = std::make_shared<T>(std::forward<Args>(args)...);
    T& ref = *p;
    kept_.push_back(std::move(p));
    return ref;
  }
  // The node's process dies: it stops and its endpoint goes dark (messages
  // to it are dropped).
  static void crash(Node& n) {
    n.node.stop();
    n.ep->set_handler(nullptr);
  }

  std::vector<RunRecord> runs() const { return stored_runs(mem); }
  // How many keys in the store carry the tag (keys::kJob, keys::kDue, ...).
  std::size_t count_keys(std::uint8_t tag) const { return test_support::count_keys(mem, tag); }

 private:
  // Destroyed in reverse order: workers and nodes first, then the endpoints
  // they send through, then what they were given.
  std::vector<std::shared_ptr<void>> kept_;
  std::vector<std::unique_ptr<LoopbackHub::Endpoint>> endpoints_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::unique_ptr<TestWorker>> workers_;
};

}  // namespace kairos::test_support
