#include "sim/world/kernel_nodes.h"

#include <algorithm>
#include <utility>

#include "core/base/check.h"
#include "core/kernel/job_store.h"
#include "core/kernel/node_support.h"
#include "sim/world/world.h"

namespace kairos::sim {

LeaseConfig lease_config(const Timing& t) {
  LeaseConfig c;
  c.lease_ttl = t.lease;
  c.heartbeat_period = t.lease / 4;
  c.rpc_timeout = std::min(t.lease / 10, absl::Seconds(1));
  c.margin = c.rpc_timeout;
  return c;
}

SchedulerNodeConfig scheduler_config(const Scenario& s, std::string node_id) {
  SchedulerNodeConfig c;
  c.node_id = std::move(node_id);
  c.shard_count = s.topology.shards;
  c.poll_interval = s.timing.poll;
  c.lease = lease_config(s.timing);
  c.policy = policy_options(s.kernel_policy, c.policy);
  c.dispatch_batch = s.kernel_policy.dispatch_batch;
  c.reap_batch = s.kernel_policy.reap_batch;
  return c;
}

WorkerConfig worker_config(const Scenario& s, std::string worker_id, std::vector<PeerId> nodes) {
  WorkerConfig c;
  c.worker_id = std::move(worker_id);
  c.nodes = std::move(nodes);
  c.max_concurrent = s.topology.slots;
  // A long-poll claim answered near the end of its wait leaves the worker
  // only lease_deadline(sent) - answer of its lease (the deadline counts from
  // the send), so the wait must stay well inside the lease.
  c.claim_wait = s.timing.lease / 4;
  c.lease = lease_config(s.timing);
  return c;
}

absl::Status validate_kernel_config(const Scenario& s) {
  KAIROS_RETURN_IF_ERROR(validate(scheduler_config(s, "scheduler-1")));
  if (s.topology.workers == 0 || s.topology.schedulers == 0) return absl::OkStatus();
  return validate(worker_config(s, "worker-1", {0}));
}

Bounds timeliness_bounds(const Scenario& s) {
  const LeaseConfig l = lease_config(s.timing);
  const SchedulerNodeConfig n = scheduler_config(s, "x");
  const WorkerConfig w = worker_config(s, "x", {0});
  const absl::Duration poll = s.timing.poll;
  // One store round trip: two network legs (with the slow tail when the
  // network has one), the service time and the group-commit wait.
  // Under time quantisation each drawn delay is rounded up to the grid.
  const absl::Duration q = s.timing.quantum;
  const absl::Duration leg =
      on_grid(s.network.max_delay +
                  (s.network.slow_permille != 0 ? s.network.slow_max : absl::ZeroDuration()),
              q);
  const absl::Duration rtt = 2 * leg + on_grid(s.store.service_max, q) + s.store.sync_interval;
  Bounds b;
  // Due -> first grant: the leader's next tick (its clock may run 10% slow),
  // a dispatch transaction, a claim served at once or at the serving node's
  // next tick, the worker's short claim backoff, each with a round trip.
  b.start = 2 * poll + poll / 5 + 4 * rtt + 2 * w.retry_backoff_base;
  b.round_trip = rtt;
  // After-effects of a fault: a new leader within the leader lease plus a
  // tick; a lost lease lapses within the lease plus a reaper tick; a lost
  // long-poll claim is retried after claim_wait + rpc_timeout.
  b.settle = l.leader_ttl + l.lease_ttl + w.claim_wait + l.rpc_timeout + 2 * poll;
  // One attempt: the job runs at most its timeout (or its longest duration
  // plus the sink's wait); the report needs a round trip after at most one
  // retry backoff.
  absl::Duration job =
      on_grid(s.runner.max_duration +
                  (s.runner.tail_permille != 0 ? s.runner.tail_max : absl::ZeroDuration()),
              q) +
      s.sink.timeout;
  if (s.runner.hang_permille != 0 || job > s.timing.job_timeout) job = s.timing.job_timeout;
  b.attempt_overhead = b.start + l.rpc_timeout + w.retry_backoff_max + rtt + n.retry_backoff_max;
  const absl::Duration attempt = b.attempt_overhead + job;
  // Failed attempts may be retried (the job's retry policy): each
  // retry waits its backoff and runs again.
  const JobPolicy policy;  // the workload's jobs use the default backoff
  absl::Duration retries = absl::ZeroDuration();
  absl::Duration backoff = policy.retry_initial;
  for (std::uint32_t k = 1; k < s.timing.max_attempts; ++k) {
    retries += std::min(backoff, policy.retry_max) + attempt;
    backoff = backoff * policy.retry_multiplier_percent / 100;
  }
  b.done = b.settle + attempt + retries;
  return b;
}

namespace {

class SchedulerProcess final : public NodeProcess {
 public:
  explicit SchedulerProcess(NodeContext& ctx)
      : node_(ctx.clock, ctx.timers, ctx.storage, ctx.transport, ctx.random, ctx.log, ctx.metrics,
              config(ctx)) {}
  void start() override { node_.start(); }
  SchedulerNode* scheduler() override { return &node_; }

 private:
  static SchedulerNodeConfig config(NodeContext& ctx) {
    SchedulerNodeConfig c = scheduler_config(ctx.scenario, ctx.name);
    c.bugs = ctx.bugs;
    c.crash_point = ctx.crash_here;
    return c;
  }
  SchedulerNode node_;
};

class WorkerProcess final : public NodeProcess {
 public:
  explicit WorkerProcess(NodeContext& ctx)
      : ctx_(ctx),
        store_(ctx.scenario.topology.shards, ctx.bugs,
               scheduler_config(ctx.scenario, ctx.name).policy),
        abandoned_(ctx.cluster.take_abandoned(ctx.id)),
        worker_(ctx.clock, ctx.timers, ctx.transport, *ctx.runner, ctx.random, ctx.log, ctx.metrics,
                config(ctx)) {}
  void start() override { hand_back(0, 0); }
  Worker* worker() override { return &worker_; }

 private:
  // With `topology ... handback=yes`, as `kairos server` does at startup
  // before its workers start (prod/cli/server_command.cc, hand_back_run):
  // each run the dead process was executing goes back to the scheduler,
  // fenced by its token (JobStore::release_abandoned), tried up to three
  // times while the outcome is unknown; then the worker starts.
  void hand_back(std::size_t i, int tries) {
    if (i == abandoned_.size()) {
      worker_.start();
      return;
    }
    const RunId run = abandoned_[i].first;
    const std::uint64_t token = abandoned_[i].second;
    auto out = std::make_shared<ReleaseResult>();
    ctx_.storage.transact(
        [this, run, token, out](Txn& t) {
          return store_.release_abandoned(t, run, token, "worker_restart", out.get());
        },
        [this, i, tries, out](TxnResult r) {
          if (r.committed()) {
            // Refused: the reaper had lapsed it already, or it was granted
            // anew (a stale token); nothing to give back.
            if (out->verdict != WriteVerdict::kAccepted) ctx_.world.mark("kernel.handback-refused");
            for (Event& e : out->events)
              record_event(std::move(e), ctx_.clock.now(), "node", ctx_.name, ctx_.log,
                           ctx_.metrics);
          } else if (r.outcome != CommitOutcome::kAborted && tries + 1 < 3) {
            hand_back(i, tries + 1);
            return;
          }
          hand_back(i + 1, 0);
        });
  }

  static WorkerConfig config(NodeContext& ctx) {
    // Each worker starts with a different scheduler, so load spreads.
    std::vector<PeerId> nodes;
    const auto& s = ctx.cluster.schedulers();
    for (std::size_t i = 0; i < s.size(); ++i) nodes.push_back(s[(ctx.index + i) % s.size()]);
    WorkerConfig c = worker_config(ctx.scenario, ctx.name, std::move(nodes));
    c.bugs = ctx.bugs;
    c.crash_point = ctx.crash_here;
    return c;
  }
  NodeContext& ctx_;
  JobStore store_;
  std::vector<std::pair<RunId, std::uint64_t>> abandoned_;
  Worker worker_;
};

}  // namespace

std::unique_ptr<NodeProcess> make_scheduler_process(NodeContext& ctx) {
  return std::make_unique<SchedulerProcess>(ctx);
}
std::unique_ptr<NodeProcess> make_worker_process(NodeContext& ctx) {
  KAIROS_CHECK(ctx.runner != nullptr && !ctx.cluster.schedulers().empty());
  return std::make_unique<WorkerProcess>(ctx);
}

}  // namespace kairos::sim
