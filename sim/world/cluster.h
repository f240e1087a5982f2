// Cluster: builds one simulated deployment from a Scenario and a seed, runs
// it, applies the fault plan, and hands the history to the checker.
//
// Nodes (NodeIds in this order): store, sink, client, scheduler-1..S,
// worker-1..W. Every node gets its own SimClock, SimTimers, Transport
// endpoint, Storage client (through the store service), EventLog (recorded
// into the history and the trace), Metrics and a forked Random; workers also
// get a SimRunner writing to the sink. These adapters live as long as the
// cluster; the *process* on a node (a NodeProcess) is created at start and
// re-created at every restart, and a crash simply drops it (its pending
// callbacks are dropped by the world).
//
// Processes: schedulers run the kernel's SchedulerNode and workers its Worker
// (sim/world/kernel_nodes.h); set_scheduler_factory / set_worker_factory replace
// them (tests). The client node runs the Workload (sim/scenario/workload.h), which
// creates and cancels jobs through a live SchedulerNode's job API.
//
// Quiet tail. At end - quiet_tail the cluster heals everything: partitions,
// slow links, message faults, sink faults, store outage and slowness, clocks
// back to their configured offset and drift, and restarts every crashed node,
// so the checker can demand completion.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/kernel/planted_bugs.h"
#include "core/kernel/scheduler_node.h"
#include "core/kernel/worker.h"
#include "core/ports/event_log.h"
#include "core/ports/metrics.h"
#include "core/ports/random.h"
#include "sim/oracle/checker.h"
#include "sim/oracle/history.h"
#include "sim/scenario/scenario.h"
#include "sim/scenario/workload.h"
#include "sim/world/fault_plan.h"
#include "sim/world/marks.h"
#include "sim/world/sim_clock.h"
#include "sim/world/sim_network.h"
#include "sim/world/sim_runner.h"
#include "sim/world/sim_timers.h"
#include "sim/world/sink.h"
#include "sim/world/store_service.h"
#include "sim/world/world.h"

namespace kairos::sim {

class Cluster;

// Everything a node process needs; references stay valid for the cluster's
// lifetime.
struct NodeContext {
  Cluster& cluster;
  World& world;
  NodeId id;
  std::string name;
  std::uint32_t index;  // 0-based among schedulers or workers
  SimClock& clock;
  SimTimers& timers;
  Transport& transport;
  Storage& storage;
  Random& random;
  EventLog& log;
  Metrics& metrics;
  Runner* runner;  // workers only
  CrashPoints& crash_points;
  // The kernel calls this at each named crash point; true: the node has just
  // crashed, return from the handler at once (nothing after the point runs).
  std::function<bool(std::string_view point)> crash_here;
  const Scenario& scenario;
  const PlantedBugs& bugs;
};

class NodeProcess {
 public:
  virtual ~NodeProcess() = default;
  virtual void start() = 0;
  // The job API of a scheduler process; null for other processes.
  virtual SchedulerNode* scheduler() { return nullptr; }
  // The kernel's Worker of a worker process; null for other processes.
  virtual Worker* worker() { return nullptr; }
};
using ProcessFactory = std::function<std::unique_ptr<NodeProcess>(NodeContext&)>;

struct RunSummary {
  std::uint64_t seed = 0;
  std::string scenario;
  absl::Duration simulated;
  std::uint64_t events = 0;
  std::uint64_t runs_fired = 0;
  std::uint64_t faults = 0;
  std::uint64_t trace_hash = 0;
  bool ok = true;
  std::string line() const;  // the per-run summary line
};

class Cluster {
 public:
  Cluster(const Scenario& scenario, std::uint64_t seed, PlantedBugs bugs = {});
  ~Cluster();

  // Whether the kernel accepts the configuration this scenario implies.
  static absl::Status validate(const Scenario& scenario);

  void set_scheduler_factory(ProcessFactory f) { scheduler_factory_ = std::move(f); }
  void set_worker_factory(ProcessFactory f) { worker_factory_ = std::move(f); }
  void set_trace_writer(World::TraceWriter w) { world_.set_trace_writer(std::move(w)); }

  // Runs the whole scenario (workload, faults, quiet tail), then checks.
  RunSummary run();
  const Checker::Report& report() const { return report_; }

  // Fault application (also usable directly by tests).
  void apply(const FaultSpec& fault);
  void crash_node(NodeId node);
  void restart_node(NodeId node);

  World& world() { return world_; }
  SimNetwork& network() { return network_; }
  StoreService& store() { return *store_; }
  Sink& sink() { return *sink_; }
  CrashPoints& crash_points() { return crash_points_; }
  const Scenario& scenario() const { return scenario_; }
  const std::vector<NodeId>& schedulers() const { return schedulers_; }
  const std::vector<NodeId>& workers() const { return workers_; }
  NodeId client_node() const { return client_; }
  SimClock& clock(NodeId node);
  EventLog& log(NodeId node);
  const Workload& workload() const { return *workload_; }
  // The history recorded so far (valid while the cluster lives).
  History history() const;
  std::uint64_t faults_applied() const { return faults_applied_; }
  std::uint64_t runs_fired() const;
  // The `leader` selector: a live scheduler that leads shard 0 by its own
  // account, else the first live scheduler; kWorldNode when none is up.
  NodeId leader_hint() const;
  // A live scheduler's job API, chosen with `random`; null when none is up.
  SchedulerNode* pick_scheduler(Random& random);
  // `topology ... handback=yes`: the runs (and tokens) the worker's previous
  // process was executing when it crashed, which its restart hands back
  // (JobStore::release_abandoned); taken once, empty otherwise.
  std::vector<std::pair<RunId, std::uint64_t>> take_abandoned(NodeId worker);

 private:
  class NodeLog;
  struct Node;
  void start_process(NodeId node);
  void restart_later(NodeId node, absl::Duration after);
  void close_worker_connections(NodeId worker);
  void later(absl::Duration after, std::function<void()> fn);
  NodeId resolve(const std::string& selector);
  void schedule_faults();
  void heal_everything();
  // A corrupt-record fault: the records of its job that it names become
  // undecodable (StoreService::corrupt_records).
  void corrupt_records(const FaultSpec& f);
  void window(absl::Duration length, std::string what);
  // Store facts and coverage marks from one node event.
  void on_event(const Event& event);
  std::vector<std::unique_ptr<NodeProcess>> graveyard_;  // crashed processes

  Scenario scenario_;
  PlantedBugs bugs_;
  World world_;
  Random fault_random_;
  SimNetwork network_;
  NetworkConfig base_network_;  // what a message-fault window returns to
  SinkConfig base_sink_;        // what a sink-fault window returns to
  std::unique_ptr<StoreService> store_;
  std::unique_ptr<Sink> sink_;
  std::unique_ptr<Workload> workload_;
  CrashPoints crash_points_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::string> node_names_;
  NodeId client_ = kWorldNode;
  std::vector<NodeId> schedulers_;
  std::vector<NodeId> workers_;
  bool keep_events_ = false;
  std::vector<NodeEvent> events_;
  FactRecorder facts_;
  std::vector<FaultWindow> windows_;
  std::vector<Occurrence> expected_;
  std::vector<Occurrence> cancelled_due_;
  std::vector<CorruptedRecord> corrupted_;
  // True-time execution of every attempt (the runners' observers), open
  // ones by (worker, runner handle); and the nodes' time faults.
  std::vector<Execution> executions_;
  std::map<std::pair<NodeId, RunHandle>, std::size_t> open_executions_;
  // With handback: the run and token of each open execution, and what a
  // crash left for the node's next process to hand back.
  std::map<std::pair<NodeId, RunHandle>, std::pair<RunId, std::uint64_t>> held_;
  std::map<NodeId, std::vector<std::pair<RunId, std::uint64_t>>> abandoned_;
  // Every process start of every node (true time), for the hand-back rule.
  std::vector<ProcessStart> process_starts_;
  std::vector<ProcessEnd> process_ends_;
  std::vector<NodeWindow> time_faults_;
  std::vector<LeaseRefusal> refusals_;  // renewal refusals the workers handled
  std::vector<ReportFact> reports_;     // reports the workers sent, and their answers
  // Worker drains (fault drain) and when each node's process last started.
  std::vector<DrainFact> drains_;
  std::vector<absl::Time> process_started_;  // by NodeId

  // Leadership balance, probed once a second (the leadership-balanced rule).
  void probe_balance();
  std::vector<BalanceSample> balance_;
  std::vector<NodeId> balance_live_;
  std::vector<LiveSet> live_sets_;
  absl::Time balance_since_;
  void on_execution(NodeId worker, RunHandle handle, const RunRequest& request, bool started);
  void time_fault(NodeId node, absl::Duration length, std::string what);
  std::vector<absl::Time> paused_until_;      // by NodeId: end of the last pause
  std::vector<ClockSpec> configured_clocks_;  // by NodeId: the scenario's clock lines
  // By NodeId: clock-drift faults applied so far. A drift fault's undo
  // restores the configured rate only while it is still the latest one.
  std::vector<std::uint64_t> drift_faults_;
  absl::Duration starvation_bound_;  // the kernel's, from the scheduler config
  ProcessFactory scheduler_factory_;
  ProcessFactory worker_factory_;
  std::uint64_t faults_applied_ = 0;
  Checker::Report report_;
};

}  // namespace kairos::sim
