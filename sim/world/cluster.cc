#include "sim/world/cluster.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/base/absl_compat.h"
#include "core/base/check.h"
#include "core/kernel/event_kinds.h"
#include "core/kernel/keyspace.h"
#include "sim/scenario/client_events.h"
#include "sim/world/kernel_nodes.h"
#include "sim/world/lease_tap.h"

namespace kairos::sim {

namespace {
enum class Role : std::uint8_t { kStore, kSink, kClient, kScheduler, kWorker };
}

namespace {
// A component's configuration with the scenario's time quantum (on_grid).
template <typename Config>
Config with_quantum(Config c, absl::Duration quantum) {
  c.quantum = quantum;
  return c;
}

// A digest of an event from its fields, without formatting it.
std::uint64_t event_digest(const Event& e) {
  std::uint64_t h = hash_bytes(e.kind);
  for (const auto& f : e.fields) {
    h = hash_mix(h, hash_bytes(f.name));
    if (const auto* s = std::get_if<std::string>(&f.value))
      h = hash_mix(h, hash_bytes(*s));
    else if (const auto* i = std::get_if<std::int64_t>(&f.value))
      h = hash_mix(h, static_cast<std::uint64_t>(*i));
    else if (const auto* u = std::get_if<std::uint64_t>(&f.value))
      h = hash_mix(h, *u);
    else if (const auto* t = std::get_if<absl::Time>(&f.value))
      h = hash_mix(h, static_cast<std::uint64_t>(absl::ToUnixNanos(*t)));
    else if (const auto* d = std::get_if<absl::Duration>(&f.value))
      h = hash_mix(h, static_cast<std::uint64_t>(absl::ToInt64Nanoseconds(*d)));
  }
  return h;
}
}  // namespace

// Records node events into the trace, the store facts and the history.
class Cluster::NodeLog final : public EventLog {
 public:
  NodeLog(Cluster& c, NodeId node) : c_(c), node_(node) {}
  void record(Event event) override {
    World& w = c_.world_;
    w.note_digest(node_, event_digest(event), w.tracing() ? format_event(event) : std::string());
    c_.on_event(event);
    if (c_.keep_events_ ||
        event.kind.substr(0, client_events::kPrefix.size()) == client_events::kPrefix)
      c_.events_.push_back({w.now(), node_, std::move(event)});
  }

 private:
  Cluster& c_;
  NodeId node_;
};

struct Cluster::Node {
  NodeId id = kWorldNode;
  Role role = Role::kStore;
  std::uint32_t index = 0;
  std::unique_ptr<SimClock> clock;
  std::unique_ptr<SimTimers> timers;
  std::unique_ptr<NodeLog> log;
  Metrics metrics;
  std::unique_ptr<Random> random;
  std::unique_ptr<SimRunner> runner;
  std::unique_ptr<LeaseTap> tap;  // workers: the lease facts of their traffic
  std::unique_ptr<NodeContext> ctx;
  std::unique_ptr<NodeProcess> process;
};

std::string RunSummary::line() const {
  return absl::StrFormat(
      "seed=%d scenario=%s simulated=%s events=%d runs=%d faults=%d trace=%016x verdict=%s", seed,
      scenario, absl::FormatDuration(simulated), events, runs_fired, faults, trace_hash,
      ok ? "PASS" : "FAIL");
}

Cluster::Cluster(const Scenario& scenario, std::uint64_t seed, PlantedBugs bugs)
    : scenario_(scenario),
      bugs_(bugs),
      world_(seed, scenario.start),
      fault_random_(world_.random().fork()),
      network_(world_, world_.random().fork(),
               with_quantum(scenario.network, scenario.timing.quantum)),
      base_network_(with_quantum(scenario.network, scenario.timing.quantum)),
      base_sink_(scenario.sink),
      starvation_bound_(scheduler_config(scenario, "x").policy.starvation_bound) {
  auto add = [&](std::string name, Role role, std::uint32_t index) {
    const NodeId id = world_.add_node(std::move(name));
    auto n = std::make_unique<Node>();
    n->id = id;
    n->role = role;
    n->index = index;
    n->clock = std::make_unique<SimClock>(world_);
    n->timers = std::make_unique<SimTimers>(world_, id, *n->clock);
    n->log = std::make_unique<NodeLog>(*this, id);
    n->random = std::make_unique<Random>(world_.random().fork());
    nodes_.push_back(std::move(n));
    network_.transport(id);
    return id;
  };
  const NodeId store_node = add("store", Role::kStore, 0);
  const NodeId sink_node = add("sink", Role::kSink, 0);
  client_ = add("client", Role::kClient, 0);
  for (std::uint32_t i = 0; i < scenario.topology.schedulers; ++i)
    schedulers_.push_back(add(absl::StrCat("scheduler-", i + 1), Role::kScheduler, i));
  for (std::uint32_t i = 0; i < scenario.topology.workers; ++i)
    workers_.push_back(add(absl::StrCat("worker-", i + 1), Role::kWorker, i));

  store_ = std::make_unique<StoreService>(world_, network_, store_node, *nodes_[store_node]->clock,
                                          world_.random().fork(),
                                          with_quantum(scenario.store, scenario.timing.quantum));
  // Each request stamped with its node's clock at the send, for the rules
  // that judge a node by its own deadlines (leader-acts-within-own-deadline).
  store_->set_client_clock([this](NodeId id) { return nodes_[id]->clock->now(); });
  store_->set_commit_observer([this](const StoreCommit& c, const std::vector<WriteOp>& ops) {
    std::vector<RunFact>& runs = facts_.mutable_runs();
    const std::size_t before = runs.size();
    const std::size_t departs_before = facts_.departs().size();
    facts_.observe(c, ops);
    // A departure: the departing node's clock now, for the leave rule.
    std::vector<DepartFact>& departs = facts_.mutable_departs();
    for (std::size_t i = departs_before; i < departs.size(); ++i) {
      const NodeId node = world_.find_node(facts_.strings().name(departs[i].node));
      if (node != kWorldNode)
        departs[i].node_clock_us = absl::ToUnixMicros(nodes_[node]->clock->now());
    }
    // A leased write: the owner's clock now, for the lease-deadline rule.
    for (std::size_t i = before; i < runs.size(); ++i) {
      if (runs[i].state != RunState::kLeased) continue;
      const NodeId owner = world_.find_node(facts_.strings().name(runs[i].owner));
      if (owner != kWorldNode)
        runs[i].owner_clock_us = absl::ToUnixMicros(nodes_[owner]->clock->now());
    }
  });
  sink_ =
      std::make_unique<Sink>(world_, network_, sink_node, world_.random().fork(), scenario.sink);
  workload_ = std::make_unique<Workload>(scenario_, world_.start(), world_.random().fork());
  keep_events_ = scenario.store.record_writes;
  for (NodeId id = 0; id < world_.node_count(); ++id) node_names_.push_back(world_.node(id).name);
  paused_until_.assign(world_.node_count(), absl::InfinitePast());
  process_started_.assign(world_.node_count(), absl::InfinitePast());
  scheduler_factory_ = make_scheduler_process;
  worker_factory_ = make_worker_process;
  for (NodeId w : workers_) {
    Node& n = *nodes_[w];
    n.runner =
        std::make_unique<SimRunner>(world_, w, *n.timers, *n.clock, *sink_, world_.random().fork(),
                                    with_quantum(scenario.runner, scenario.timing.quantum));
    n.runner->set_execution_observer([this, w](RunHandle h, const RunRequest& r, bool started) {
      on_execution(w, h, r, started);
    });
    n.tap = std::make_unique<LeaseTap>(
        world_, network_.transport(w), *n.clock,
        [this, w](const RunId& run, std::uint64_t token, absl::Time sent_at, absl::Time sent,
                  absl::Time local) {
          refusals_.push_back({facts_.strings().id(idempotency_key(run)), token, w, world_.now(),
                               sent_at, sent, local});
        },
        [this, w](const CompleteItem& item, const wire::WireVerdict* answer, bool error,
                  std::uint64_t request, bool by_claim) {
          if (error && by_claim) world_.mark("worker.carried-reports-refused");
          ReportFact f;
          f.run = facts_.strings().id(idempotency_key(item.run));
          f.token = item.token;
          f.outcome = item.outcome;
          f.exit_code = item.exit_code;
          f.detail = facts_.strings().id(item.detail);
          f.answered = answer != nullptr || error;
          f.error = error;
          f.request = request;
          if (answer != nullptr) {
            f.verdict = answer->verdict;
            f.reason = facts_.strings().id(answer->reason);
          }
          f.worker = w;
          f.at = world_.now();
          reports_.push_back(f);
        });
  }
  for (auto& np : nodes_) {
    Node& n = *np;
    const NodeId id = n.id;
    n.ctx = std::unique_ptr<NodeContext>(new NodeContext{
        *this, world_, id, world_.node(id).name, n.index, *n.clock, *n.timers,
        n.tap ? static_cast<Transport&>(*n.tap) : network_.transport(id), store_->client(id),
        *n.random, *n.log, n.metrics, n.runner.get(), crash_points_,
        [this, id](std::string_view point) {
          if (!crash_points_.should_crash(id, point)) return false;
          world_.mark(absl::StrCat("crash-point.", absl_sv(point)));
          window(absl::Seconds(1), absl::StrCat("crash at ", absl_sv(point)));
          crash_node(id);
          restart_later(id, absl::Seconds(1));
          return true;
        },
        scenario_, bugs_});
  }
  configured_clocks_.assign(world_.node_count(), ClockSpec{});
  drift_faults_.assign(world_.node_count(), 0);
  for (const auto& c : scenario.clocks) {
    const NodeId id = resolve(c.node);
    if (id == kWorldNode) continue;
    nodes_[id]->clock->set_offset(c.offset);
    nodes_[id]->clock->set_drift_ppm(c.drift_ppm);
    configured_clocks_[id] = c;
    // A configured rate beyond the kernel's drift bound lasts the whole run.
    if (std::abs(c.drift_ppm) > lease_config(scenario.timing).max_drift_ppm)
      time_faults_.push_back({id, world_.start(), absl::InfiniteFuture(), "configured drift"});
  }
}

void Cluster::time_fault(NodeId node, absl::Duration length, std::string what) {
  time_faults_.push_back({node, world_.now(), world_.now() + length, std::move(what)});
}

void Cluster::on_execution(NodeId worker, RunHandle h, const RunRequest& r, bool started) {
  const std::int64_t store_us = absl::ToUnixMicros(nodes_[store_->node()]->clock->now());
  const Node& n = *nodes_[worker];
  if (started) {
    Execution e;
    e.run = facts_.strings().id(r.idempotency_key);
    e.job = facts_.strings().id(r.job_id);
    e.token = r.fencing_token;
    e.node = worker;
    e.start = world_.now();
    e.start_store_us = store_us;
    e.start_local = n.clock->now();
    if (const LeaseTap::Grant* g = n.tap ? n.tap->grant_for(r) : nullptr) {
      e.grant_sent = g->sent;
      e.grant_ttl = g->ttl;
    }
    open_executions_[{worker, h}] = executions_.size();
    executions_.push_back(e);
    if (scenario_.topology.handback)
      held_[{worker, h}] = {RunId{r.job_id, r.incarnation, r.nominal_time}, r.fencing_token};
    return;
  }
  held_.erase({worker, h});
  auto it = open_executions_.find({worker, h});
  if (it == open_executions_.end()) return;
  executions_[it->second].end = world_.now();
  executions_[it->second].end_store_us = store_us;
  executions_[it->second].end_local = n.clock->now();
  open_executions_.erase(it);
}

Cluster::~Cluster() {
  // Processes first: their destructors still use the node adapters.
  for (auto& n : nodes_) n->process.reset();
  graveyard_.clear();
}

SimClock& Cluster::clock(NodeId node) { return *nodes_.at(node)->clock; }
EventLog& Cluster::log(NodeId node) { return *nodes_.at(node)->log; }

std::uint64_t Cluster::runs_fired() const {
  std::uint64_t n = 0;
  for (const auto& node : nodes_)
    if (node->runner) n += node->runner->stats().started;
  return n;
}

std::vector<std::pair<RunId, std::uint64_t>> Cluster::take_abandoned(NodeId worker) {
  auto it = abandoned_.find(worker);
  if (it == abandoned_.end()) return {};
  std::vector<std::pair<RunId, std::uint64_t>> out = std::move(it->second);
  abandoned_.erase(it);
  return out;
}

NodeId Cluster::resolve(const std::string& sel) {
  auto pick = [&](const std::vector<NodeId>& from) {
    return from.empty() ? kWorldNode : from[fault_random_.below(from.size())];
  };
  if (sel == "any") {
    std::vector<NodeId> all = schedulers_;
    all.insert(all.end(), workers_.begin(), workers_.end());
    return pick(all);
  }
  if (sel == "any-worker") return pick(workers_);
  if (sel == "any-scheduler") return pick(schedulers_);
  if (sel == "leader") return leader_hint();
  return world_.find_node(sel);
}

absl::Status Cluster::validate(const Scenario& scenario) {
  return validate_kernel_config(scenario);
}

NodeId Cluster::leader_hint() const {
  NodeId first = kWorldNode;
  for (NodeId id : schedulers_) {
    const Node& n = *nodes_[id];
    if (!world_.is_up(id) || !n.process) continue;
    if (first == kWorldNode) first = id;
    SchedulerNode* s = n.process->scheduler();
    if (s != nullptr && s->running() && s->leads(0)) return id;
  }
  return first;
}

SchedulerNode* Cluster::pick_scheduler(Random& random) {
  std::vector<SchedulerNode*> live;
  for (NodeId id : schedulers_) {
    Node& n = *nodes_[id];
    if (!world_.is_up(id) || !n.process) continue;
    SchedulerNode* s = n.process->scheduler();
    if (s != nullptr && s->running()) live.push_back(s);
  }
  return live.empty() ? nullptr : live[random.below(live.size())];
}

void Cluster::start_process(NodeId id) {
  Node& n = *nodes_[id];
  if (n.role == Role::kClient) {
    n.timers->post([this, id] { workload_->start(*nodes_[id]->ctx); });
    return;
  }
  ProcessFactory* f = nullptr;
  switch (n.role) {
    case Role::kScheduler:
      f = &scheduler_factory_;
      break;
    case Role::kWorker:
      f = &worker_factory_;
      break;
    default:
      return;
  }
  n.process = (*f)(*n.ctx);
  process_started_[id] = world_.now();
  process_starts_.push_back({id, world_.now()});
  NodeProcess* p = n.process.get();
  n.timers->post([p] { p->start(); });
}

void Cluster::window(absl::Duration length, std::string what) {
  windows_.push_back({world_.now(), world_.now() + length, std::move(what)});
}

void Cluster::on_event(const Event& e) {
  facts_.observe_event(e, world_.now());
  const std::string_view k = e.kind;
  auto field = [&](std::string_view name) -> std::string {
    const auto* v = e.find(name);
    return v && std::get_if<std::string>(v) ? std::get<std::string>(*v) : std::string();
  };
  if (k == event_kinds::kRunLeaseLapsed && field("reason") == "worker_restart") {
    world_.mark("kernel.run-handed-back");
  } else if (k == event_kinds::kRunLeaseLapsed) {
    world_.mark("kernel.lease-lapsed");
    // Stolen after a pause: the lapsed holder was paused during its lease.
    const NodeId holder = world_.find_node(field("worker"));
    if (holder != kWorldNode &&
        paused_until_[holder] + scenario_.timing.lease + scenario_.timing.poll >= world_.now())
      world_.mark("kernel.lease-stolen-after-pause");
  } else if (k == event_kinds::kWriteRejectedStaleToken) {
    world_.mark(field("op") == "renew" ? "kernel.stale-renewal-rejected"
                                       : "kernel.stale-completion-rejected");
  } else if (k == event_kinds::kWriteRejectedStaleEpoch) {
    world_.mark("kernel.stale-epoch-rejected");
  } else if (k == event_kinds::kLeaderAcquired) {
    const std::string previous = field("previous");
    if (!previous.empty() && previous != field("node")) world_.mark("kernel.leader-failover");
  } else if (k == event_kinds::kLeaderReleased) {
    world_.mark("kernel.leader-released");
  } else if (k == event_kinds::kRecordUndecodable) {
    const std::string op = field("op");
    if (op == "reap") world_.mark("kernel.reap-passed-over");
    if (op == "claim") world_.mark("kernel.claim-passed-over");
    if (op == "dispatch") world_.mark("kernel.dispatch-passed-over");
    if (op == "renew" || op == "complete") world_.mark("kernel.report-refused-undecodable");
  } else if (k == event_kinds::kNodeDeparted) {
    world_.mark("kernel.node-departed");
  } else if (k == event_kinds::kLeaderLost && field("reason").rfind("rebalance", 0) == 0) {
    world_.mark("kernel.leader-rebalanced");
  } else if (k == event_kinds::kRunReleased) {
    world_.mark("kernel.run-released");
  } else if (k == event_kinds::kRunCancelled) {
    world_.mark("kernel.ready-run-withdrawn");
    if (field("reason") == "job no longer active") world_.mark("kernel.claim-withdrew-inactive");
  } else if (k == event_kinds::kWorkerLeaseDeadline) {
    world_.mark("worker.stopped-at-lease-deadline");
  } else if (k == event_kinds::kWorkerLeaseLost) {
    world_.mark("worker.lease-lost");
  } else if (k == event_kinds::kMisfireDecided) {  // each policy decision was exercised
    world_.mark(absl::StrCat("policy.misfire-", field("policy")));
    const auto* capped = e.find("capped");
    if (capped && std::get_if<std::uint64_t>(capped) && std::get<std::uint64_t>(*capped) != 0)
      world_.mark("policy.misfire-capped");
  } else if (k == event_kinds::kLedgerPruned) {
    world_.mark("kernel.ledger-pruned");
  } else if (k == event_kinds::kLedgerRecorded) {
    const std::string outcome = field("outcome");
    if (outcome == "skipped_overlap" || outcome == "paused" || outcome == "coalesced" ||
        outcome == "late" || outcome == "skipped_misfire")
      world_.mark(absl::StrCat("policy.ledger-", outcome));
    else if (outcome == "cancelled")
      world_.mark("policy.ledger-cancelled-before-dispatch");
    // A cancel or reschedule over a backlog too long to list: one range
    // record through the last due occurrence, uncounted (count 0).
    const auto* count = e.find("count");
    if (outcome == "cancelled" && count && std::get_if<std::uint64_t>(count) &&
        std::get<std::uint64_t>(*count) == 0)
      world_.mark("kernel.backlog-uncounted");
  } else if (k == event_kinds::kRunDispatched) {
    if (field("state") == "waiting") world_.mark("policy.overlap-queued");
  } else if (k == event_kinds::kRunPromoted) {
    world_.mark("policy.queued-run-promoted");
  } else if (k == event_kinds::kRunRetryScheduled) {
    world_.mark("policy.retry-scheduled");
  } else if (k == event_kinds::kRunCompleted) {
    const auto* attempt = e.find("attempt");
    if (field("outcome") == "failed" && attempt && std::get_if<std::uint64_t>(attempt) &&
        std::get<std::uint64_t>(*attempt) > 1)
      world_.mark("policy.failed-after-retries");
  } else if (k == event_kinds::kRunClaimed) {
    const auto* waited = e.find("waited");
    if (waited && std::get_if<absl::Duration>(waited) &&
        std::get<absl::Duration>(*waited) >= starvation_bound_)
      world_.mark("policy.starved-run-served");
  } else if (k == event_kinds::kJobTriggered) {
    world_.mark("policy.manual-run");
  } else if (k == event_kinds::kJobResumed) {
    world_.mark("policy.resumed");
  } else if (k == event_kinds::kJobUpdated) {
    const auto* changed = e.find("schedule_changed");
    if (changed && std::get_if<std::uint64_t>(changed) && std::get<std::uint64_t>(*changed) != 0)
      world_.mark("policy.rescheduled");
  } else if (k == event_kinds::kNodeClockSkew) {
    world_.mark("kernel.clock-skew-fenced");
  }
}

void Cluster::crash_node(NodeId id) {
  if (id == kWorldNode || !world_.is_up(id)) return;
  Node& n = *nodes_[id];
  if (n.role == Role::kStore) {
    store_->crash();
    return;
  }
  for (DrainFact& d : drains_)
    if (d.node == id && d.ended == absl::InfiniteFuture()) d.ended = world_.now();
  world_.crash(id);
  process_ends_.push_back({id, world_.now()});
  network_.transport(id).set_handler(nullptr);
  store_->reset_client(id);
  sink_->reset_node(id);
  // What the process was executing dies with it (the job shim's group is
  // killed with its server); its next process hands those runs back.
  for (auto it = held_.lower_bound({id, RunHandle{}}); it != held_.end() && it->first.first == id;
       ++it)
    abandoned_[id].push_back(it->second);
  if (n.runner) n.runner->reset();
  if (n.tap) n.tap->reset();
  // Destroyed with the cluster: the crash may come from inside its callback.
  if (n.process) graveyard_.push_back(std::move(n.process));
  if (n.role == Role::kWorker) close_worker_connections(id);
}

// A worker process gone: each scheduler's server notices its connection
// close, as prod's TCP transport tells the node (server_command.cc,
// SchedulerNode::forget_peer), once what the worker sent before it died has
// arrived (the network's longest delay, slow tail included: a stream's close
// follows its data). Not when the worker is back by then: a PeerId here is
// the node, so the notice would reach the new process's claims, where in
// prod each connection has its own peer id.
void Cluster::close_worker_connections(NodeId worker) {
  const NetworkConfig& net = scenario_.network;
  const absl::Duration after =
      on_grid(net.max_delay + (net.slow_permille != 0 ? net.slow_max : absl::ZeroDuration()),
              scenario_.timing.quantum) +
      network_.extra_delay(worker);
  const absl::Time started = process_started_[worker];
  later(after, [this, worker, started] {
    if (world_.is_up(worker) || process_started_[worker] != started) return;
    for (NodeId s : schedulers_) {
      if (!world_.is_up(s) || nodes_[s]->process == nullptr) continue;
      SchedulerNode* node = nodes_[s]->process->scheduler();
      if (node == nullptr) continue;
      const std::size_t parked = node->parked_claims();
      node->forget_peer(worker);
      world_.mark("net.worker-connection-closed");
      if (node->parked_claims() < parked) world_.mark("kernel.parked-claim-forgotten");
    }
  });
}

void Cluster::restart_node(NodeId id) {
  if (id == kWorldNode || world_.is_up(id)) return;
  if (nodes_[id]->role == Role::kStore) {
    store_->restart();
    return;
  }
  world_.restart(id);
  start_process(id);
}

void Cluster::restart_later(NodeId id, absl::Duration after) {
  world_.schedule_after(after, EventKind::kFault, kWorldNode, id, [this, id] { restart_node(id); });
}

void Cluster::later(absl::Duration after, std::function<void()> fn) {
  world_.schedule_after(after, EventKind::kFault, kWorldNode, 0, std::move(fn));
}

void Cluster::apply(const FaultSpec& f) {
  const NodeId n = (f.kind == FaultKind::kStoreOutage || f.kind == FaultKind::kStoreSlow ||
                    f.kind == FaultKind::kStoreCrash || f.kind == FaultKind::kCorruptRecord)
                       ? store_->node()
                       : resolve(f.node);
  const bool needs_node = f.kind != FaultKind::kSwizzle && f.kind != FaultKind::kNet &&
                          f.kind != FaultKind::kSinkFaults && f.kind != FaultKind::kFleetRestart;
  if (needs_node && n == kWorldNode) return;  // nothing to hit in this topology
  ++faults_applied_;
  world_.mark(absl::StrCat("fault.", absl_sv(to_string(f.kind))));
  world_.note(kWorldNode, absl::StrCat("fault ", absl_sv(to_string(f.kind)),
                                       " node=", n == kWorldNode ? "-" : world_.node(n).name,
                                       " for=", absl::FormatDuration(f.length)));
  const absl::Duration len = f.length;
  // A jumped clock stays wrong for the fault's length, then steps back by
  // the same amount, unless the quiet-tail heal comes first; without a
  // length, until the heal. The step back is a jump too: its effects last up
  // to its size.
  const absl::Time heal = world_.start() + scenario_.duration - scenario_.quiet_tail;
  const bool corrected =
      f.kind == FaultKind::kClockJump && len > absl::ZeroDuration() && world_.now() + len < heal;
  const absl::Duration wrong = corrected ? len + absl::AbsDuration(f.amount)
                                         : world_.start() + scenario_.duration - world_.now();
  if (f.kind == FaultKind::kClockJump) {
    window(corrected ? wrong : std::max(heal - world_.now(), absl::AbsDuration(f.amount)),
           "clock-jump");
  } else if (f.kind != FaultKind::kCrashAt) {
    window(std::max(len, absl::AbsDuration(f.amount)), std::string(to_string(f.kind)));
  }
  switch (f.kind) {
    case FaultKind::kPause:
      time_fault(n, len, "pause");
      world_.pause(n, len);
      paused_until_[n] = world_.now() + len;
      break;
    case FaultKind::kCrash:
    case FaultKind::kStoreCrash:
      crash_node(n);
      if (len > absl::ZeroDuration()) restart_later(n, len);
      break;
    case FaultKind::kCrashAt:
      crash_points_.arm(n, f.point);
      break;
    case FaultKind::kPartition:
    case FaultKind::kOneWay: {
      const NodeId peer = f.peer == "store" ? store_->node() : resolve(f.peer);
      if (peer == kWorldNode || peer == n) break;
      const bool both = f.kind == FaultKind::kPartition;
      if (both)
        network_.cut_both(n, peer);
      else
        network_.cut(n, peer);
      later(len, [this, n, peer, both] {
        if (both)
          network_.heal_both(n, peer);
        else
          network_.heal(n, peer);
      });
      break;
    }
    case FaultKind::kIsolate:
      network_.isolate(n);
      later(len, [this, n] { network_.heal_node(n); });
      break;
    case FaultKind::kSwizzle: {
      std::vector<NodeId> order = schedulers_;
      order.insert(order.end(), workers_.begin(), workers_.end());
      if (order.empty()) break;
      auto shuffle = [&](std::vector<NodeId>& v) {
        for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[fault_random_.below(i)]);
      };
      shuffle(order);
      std::vector<NodeId> heal = order;
      shuffle(heal);
      const absl::Duration step = len / static_cast<std::int64_t>(2 * order.size());
      for (std::size_t i = 0; i < order.size(); ++i) {
        const absl::Duration slow =
            fault_random_.duration_between(absl::Milliseconds(100), absl::Seconds(3));
        const NodeId a = order[i], b = heal[i];
        later(step * static_cast<std::int64_t>(i),
              [this, a, slow] { network_.set_extra_delay(a, slow); });
        later(len / 2 + step * static_cast<std::int64_t>(i),
              [this, b] { network_.set_extra_delay(b, absl::ZeroDuration()); });
      }
      break;
    }
    case FaultKind::kNet: {
      NetworkConfig c = network_.config();
      c.loss_permille = f.loss;
      c.dup_permille = f.duplicate;
      c.replay_permille = f.replay;
      network_.set_config(c);
      later(len, [this] { network_.set_config(base_network_); });
      break;
    }
    case FaultKind::kStoreOutage:
      store_->set_unavailable(true);
      later(len, [this] { store_->set_unavailable(false); });
      break;
    case FaultKind::kStoreSlow:
      store_->set_slowdown(f.amount);
      later(len, [this] { store_->set_slowdown(absl::ZeroDuration()); });
      break;
    case FaultKind::kClockJump:
      time_fault(n, wrong, "clock-jump");
      nodes_[n]->clock->jump(f.amount);
      if (corrected) later(len, [this, n, back = -f.amount] { nodes_[n]->clock->jump(back); });
      break;
    case FaultKind::kClockDrift: {
      // Until the heal at the latest (it restores the configured drift).
      time_fault(
          n, len > absl::ZeroDuration() ? len : world_.start() + scenario_.duration - world_.now(),
          "clock-drift");
      nodes_[n]->clock->set_drift_ppm(f.drift_ppm);
      // The latest drift fault sets the rate; its end restores the configured
      // one. (Restoring the rate found at its start would, when two drift
      // faults overlap, bring the first one's rate back after both windows
      // ended: a drift outside every fault window the checker excuses.)
      const std::uint64_t mine = ++drift_faults_[n];
      if (len > absl::ZeroDuration())
        later(len, [this, n, mine] {
          if (drift_faults_[n] == mine)
            nodes_[n]->clock->set_drift_ppm(configured_clocks_[n].drift_ppm);
        });
      break;
    }
    case FaultKind::kSinkFaults: {
      SinkConfig c = sink_->config();
      c.error_permille = f.error;
      c.timeout_permille = f.timeout;
      sink_->set_config(c);
      later(len, [this] { sink_->set_config(base_sink_); });
      break;
    }
    case FaultKind::kCorruptRecord:
      corrupt_records(f);
      break;
    case FaultKind::kLeave: {
      NodeProcess* p = nodes_[n]->process.get();
      SchedulerNode* node = p != nullptr ? p->scheduler() : nullptr;
      if (node == nullptr || !world_.is_up(n) || node->leaving()) break;
      // The process stops once its leave is written (or gave up), as a
      // server's shutdown does after its drain.
      node->leave([this, n, len] {
        world_.note(kWorldNode, absl::StrCat(world_.node(n).name, " left; stopping"));
        crash_node(n);
        if (len > absl::ZeroDuration()) restart_later(n, len);
      });
      break;
    }
    case FaultKind::kDrain: {
      NodeProcess* p = nodes_[n]->process.get();
      Worker* w = p != nullptr ? p->worker() : nullptr;
      if (w == nullptr || !world_.is_up(n) || w->draining()) break;
      const std::size_t i = drains_.size();
      drains_.push_back({n, process_started_[n], world_.now()});
      // The process stops once drained, as `kairos worker` exits after its
      // drain (prod/cli/drain.h).
      // The drain timeout: what still runs then is stopped (Worker::stop_running,
      // as `kairos worker` does when --drain-timeout passes); each stopped
      // attempt reports kStopped, which hands its run back.
      if (f.drain_timeout) {
        const absl::Time started = process_started_[n];
        later(*f.drain_timeout, [this, n, started] {
          if (!world_.is_up(n) || process_started_[n] != started) return;
          NodeProcess* q = nodes_[n]->process.get();
          Worker* dw = q != nullptr ? q->worker() : nullptr;
          if (dw == nullptr || !dw->draining()) return;
          world_.mark("worker.drain-timed-out");
          dw->stop_running();
        });
      }
      w->drain([this, n, i, len] {
        DrainFact& d = drains_[i];
        d.completed = world_.now();
        d.completed_after_stop = d.ended != absl::InfiniteFuture();
        world_.mark("worker.drained");
        if (!world_.is_up(n) || d.completed_after_stop) return;
        world_.note(kWorldNode, absl::StrCat(world_.node(n).name, " drained; stopping"));
        crash_node(n);
        if (len > absl::ZeroDuration()) restart_later(n, len);
      });
      break;
    }
    case FaultKind::kStop: {
      NodeProcess* p = nodes_[n]->process.get();
      Worker* w = p != nullptr ? p->worker() : nullptr;
      if (w == nullptr || !world_.is_up(n)) break;
      for (DrainFact& d : drains_)
        if (d.node == n && d.ended == absl::InfiniteFuture()) d.ended = world_.now();
      w->stop();
      // What the loop had queued still runs (the shutdown runs the loop to
      // reap the runners), then the process exits.
      nodes_[n]->timers->post([this, n, len] {
        crash_node(n);
        if (len > absl::ZeroDuration()) restart_later(n, len);
      });
      break;
    }
    case FaultKind::kFleetRestart: {
      std::vector<NodeId> all = schedulers_;
      all.insert(all.end(), workers_.begin(), workers_.end());
      for (NodeId id : all) crash_node(id);
      for (NodeId id : all) restart_later(id, std::max(len, absl::Milliseconds(1)));
      break;
    }
  }
}

void Cluster::corrupt_records(const FaultSpec& f) {
  const std::string what = f.record.empty() ? "job" : f.record;
  const auto all = [](std::string_view) { return true; };
  std::size_t n = 0;
  if (what == "job") {
    n = store_->corrupt_record(keys::job(f.job)) ? 1 : 0;
  } else if (what == "counters") {
    n = store_->corrupt_record(keys::counters(f.job)) ? 1 : 0;
  } else if (what == "due") {
    // The due table of every shard: the entry's key names the job.
    const std::string begin(1, static_cast<char>(keys::kDue));
    const std::string end(1, static_cast<char>(keys::kDue + 1));
    n = store_->corrupt_records(begin, end, [&](std::string_view key) {
      auto dk = keys::parse_due(key);
      return dk.ok() && dk->job_id == f.job;
    });
  } else if (what == "run") {
    const keys::Range r = keys::runs_of(f.job);
    n = store_->corrupt_records(r.begin, r.end, all);
  } else if (what == "node") {
    // The membership table: no job's record, so nothing for the
    // job-corruption rules to exempt; each scheduler rewrites its own record
    // at its next announcement.
    const keys::Range r = keys::all_nodes();
    n = store_->corrupt_records(r.begin, r.end, all);
    world_.note(kWorldNode, n == 0 ? std::string("no membership record to corrupt")
                                   : absl::StrCat("corrupted ", n, " membership record(s)"));
    return;
  } else {
    KAIROS_CHECK(what == "ledger");
    const keys::Range r = keys::ledger_of(f.job);
    n = store_->corrupt_records(r.begin, r.end, all);
  }
  if (n == 0) {
    world_.note(kWorldNode,
                what == "job" ? absl::StrCat("no record of job ", f.job, " to corrupt")
                              : absl::StrCat("no ", what, " record of job ", f.job, " to corrupt"));
    return;
  }
  corrupted_.push_back({f.job, world_.now(), store_->commits().back().index});
  world_.note(kWorldNode, what == "job" ? absl::StrCat("corrupted the record of job ", f.job)
                                        : absl::StrCat("corrupted ", n, " ", what,
                                                       " record(s) of job ", f.job));
}

void Cluster::schedule_faults() {
  const std::vector<FaultAction> plan = plan_faults(scenario_, fault_random_);
  for (std::size_t i = 0; i < plan.size(); ++i) {
    world_.schedule_at(world_.start() + plan[i].spec.at, EventKind::kFault, kWorldNode, i,
                       [this, spec = plan[i].spec] { apply(spec); });
  }
}

void Cluster::heal_everything() {
  world_.note(kWorldNode, "quiet tail: heal everything");
  // A fault window's undo that fires later restores these clean bases.
  base_network_.loss_permille = base_network_.dup_permille = base_network_.replay_permille = 0;
  network_.set_config(base_network_);
  base_sink_.error_permille = base_sink_.timeout_permille = 0;
  sink_->set_config(base_sink_);
  network_.heal_all();
  for (NodeId id = 0; id < world_.node_count(); ++id)
    network_.set_extra_delay(id, absl::ZeroDuration());
  store_->set_unavailable(false);
  store_->set_slowdown(absl::ZeroDuration());
  // Clocks are corrected (as NTP or an operator would) to their configured
  // offset and drift: a jumped clock stays wrong until then, and a node
  // whose clock is off by more than the kernel's tolerated skew stops leading.
  // The correction is a step like any jump: a clock that drifted or jumped
  // away from its configured offset is wrong by the step's size around it, a
  // time fault for the checker's clock-safety rules.
  for (NodeId id = 0; id < world_.node_count(); ++id) {
    const absl::Duration step = configured_clocks_[id].offset - nodes_[id]->clock->offset();
    if (step != absl::ZeroDuration()) time_fault(id, absl::AbsDuration(step), "clock-correction");
    nodes_[id]->clock->set_offset(configured_clocks_[id].offset);
    nodes_[id]->clock->set_drift_ppm(configured_clocks_[id].drift_ppm);
  }
  for (NodeId id = 0; id < world_.node_count(); ++id)
    if (!world_.is_up(id)) restart_node(id);
}

// The kernel's ledger retention, as the scheduler nodes are configured, for
// the ledger-retention rule.
static void set_retention(const Scenario& s, History& h) {
  const PolicyOptions p = scheduler_config(s, "x").policy;
  h.ledger_keep = p.ledger_keep;
  h.ledger_max_age = p.ledger_max_age;
  h.prune_budget = p.prune_budget;
}

History Cluster::history() const {
  History h;
  h.start = world_.start();
  h.end = world_.start() + scenario_.duration;
  h.quiet_tail = scenario_.quiet_tail;
  h.sink = &sink_->attempts();
  h.commits = &store_->commits();
  h.final_store = &store_->storage().contents();
  h.commits_have_ops = scenario_.store.record_writes;
  h.events = &events_;
  h.facts = &facts_;
  h.node_names = &node_names_;
  h.expected = &expected_;
  h.cancelled_due = &cancelled_due_;
  h.cancels = &workload_->cancels();
  h.jobs = &workload_->client_jobs();
  h.starvation_bound = starvation_bound_;
  set_retention(scenario_, h);
  h.faults = &windows_;
  h.corrupted = &corrupted_;
  h.bounds = timeliness_bounds(scenario_);
  h.executions = &executions_;
  h.time_faults = &time_faults_;
  h.refusals = &refusals_;
  h.reports = &reports_;
  h.store_node = store_->node();
  const LeaseConfig lease = lease_config(scenario_.timing);
  h.max_drift_ppm = lease.max_drift_ppm;
  h.lease_margin = lease.margin;
  h.rpc_timeout = lease.rpc_timeout;
  h.leader_renew_period = lease.leader_renew_period;
  h.store_client_timeout = scenario_.store.client_timeout;
  h.expectations = &scenario_.expectations;
  h.marks = &world_.marks();
  h.balance = &balance_;
  h.live_sets = &live_sets_;
  h.shard_count = scenario_.topology.shards;
  h.leader_ttl = lease_config(scenario_.timing).leader_ttl;
  h.drains = &drains_;
  h.process_starts = &process_starts_;
  h.process_ends = &process_ends_;
  {
    const WorkerConfig w = worker_config(scenario_, "x", {0});
    h.report_bound = static_cast<std::int64_t>(w.max_report_attempts) *
                     (w.lease.rpc_timeout + w.retry_backoff_max);
  }
  return h;
}

void Cluster::probe_balance() {
  std::vector<NodeId> live;
  BalanceSample s;
  s.at = world_.now();
  for (NodeId id : schedulers_) {
    const Node& n = *nodes_[id];
    if (!world_.is_up(id) || world_.is_paused(id) || !n.process) continue;
    const SchedulerNode* node = n.process->scheduler();
    if (node == nullptr || !node->running() || !node->clock_sane()) continue;
    live.push_back(id);
    std::uint32_t leads = 0;
    for (std::uint32_t shard = 0; shard < scenario_.topology.shards; ++shard)
      leads += node->leads(shard) ? 1 : 0;
    if (leads > s.leads) {
      s.leads = leads;
      s.node = world_.node(id).name;
    }
  }
  if (live != balance_live_ || live_sets_.empty()) {
    balance_live_ = live;
    balance_since_ = world_.now();
    LiveSet set{world_.now(), {}};
    for (NodeId id : live) set.nodes.push_back(world_.node(id).name);
    live_sets_.push_back(std::move(set));
  }
  s.since = balance_since_;
  s.live = static_cast<std::uint32_t>(live.size());
  if (s.live > 0 && s.leads > (scenario_.topology.shards + s.live - 1) / s.live)
    balance_.push_back(std::move(s));
  world_.schedule_after(absl::Seconds(1), EventKind::kWorld, kWorldNode, 0,
                        [this] { probe_balance(); });
}

RunSummary Cluster::run() {
  const absl::Duration active = scenario_.duration - scenario_.quiet_tail;
  // The base configuration's message and sink faults last until the heal.
  const NetworkConfig& net = scenario_.network;
  if (net.loss_permille != 0 || net.dup_permille != 0 || net.replay_permille != 0 ||
      scenario_.sink.error_permille != 0 || scenario_.sink.timeout_permille != 0)
    windows_.push_back({world_.start(), world_.start() + active, "base configuration faults"});
  // Configured clock offsets and drifts: a node too far from the store's
  // clock drops out of leading at its first probe, after the start.
  if (!scenario_.clocks.empty())
    windows_.push_back({world_.start(), world_.start(), "configured clock skew"});
  start_process(client_);
  for (NodeId s : schedulers_) start_process(s);
  for (NodeId w : workers_) start_process(w);
  schedule_faults();
  balance_since_ = world_.start();
  world_.schedule_after(absl::Seconds(1), EventKind::kWorld, kWorldNode, 0,
                        [this] { probe_balance(); });
  world_.schedule_at(world_.start() + active, EventKind::kFault, kWorldNode, 0,
                     [this] { heal_everything(); });
  world_.run_until(world_.start() + scenario_.duration);
  // The final store contents include unsynced commits; settle them first so
  // that the replay check compares like with like.
  if (store_->up()) world_.run_for(scenario_.store.sync_interval * 2);
  expected_ = workload_->expected(world_.start() + active);
  cancelled_due_ = workload_->cancelled_due();
  // A job whose record was corrupted cannot fire from then on: its later
  // occurrences are not expected (the other jobs' still are).
  for (const CorruptedRecord& c : corrupted_)
    std::erase_if(expected_, [&](const Occurrence& o) { return o.job == c.job && o.due >= c.at; });
  for (const CorruptedRecord& c : corrupted_)
    std::erase_if(cancelled_due_, [&](const Occurrence& o) { return o.job == c.job; });
  // Without record-writes the checker never reads the final store (it judges
  // the facts the commits wrote): free it before checking. On a day-long run
  // it is the largest thing held besides the history.
  if (!scenario_.store.record_writes) store_->release_contents();
  report_ = Checker::with_defaults().run(history(), scenario_.ignored);
  RunSummary s;
  s.seed = world_.seed();
  s.scenario = scenario_.name;
  s.simulated = world_.elapsed();
  s.events = world_.events_run();
  s.runs_fired = runs_fired();
  s.faults = faults_applied_;
  s.trace_hash = world_.trace_hash();
  s.ok = report_.ok();
  return s;
}

}  // namespace kairos::sim
