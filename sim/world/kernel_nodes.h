// KernelNodes: the real core on simulated nodes. Builds the kernel's
// SchedulerNode and Worker (core/kernel/scheduler_node.h, core/kernel/worker.h) from a
// NodeContext, with configurations derived from the scenario, and the
// timeliness bounds those configurations imply.
//
// Configuration (docs/SIMULATION.md, "Bounds", has the same formulas):
//   lease_ttl = timing.lease      heartbeat = lease / 4
//   rpc_timeout = margin = min(lease / 10, 1s)      max drift 1%
//   leader lease 10s renewed every 2.5s (core defaults); poll = timing.poll
//   worker: max_concurrent = topology.slots, claim_wait 10s
// Every crash point the kernel offers is routed to NodeContext::crash_here,
// and the planted-bug switches of the run go into both configs.
#pragma once

#include <memory>

#include "absl/status/status.h"
#include "core/kernel/lease_config.h"
#include "core/kernel/scheduler_node.h"
#include "core/kernel/worker.h"
#include "sim/oracle/history.h"
#include "sim/scenario/scenario.h"
#include "sim/world/cluster.h"

namespace kairos::sim {

LeaseConfig lease_config(const Timing& timing);
SchedulerNodeConfig scheduler_config(const Scenario& s, std::string node_id);
WorkerConfig worker_config(const Scenario& s, std::string worker_id, std::vector<PeerId> nodes);
// The kernel's own validation of the derived configs (errors name the field).
absl::Status validate_kernel_config(const Scenario& s);
// The timeliness bounds of docs/SIMULATION.md for this configuration.
Bounds timeliness_bounds(const Scenario& s);

std::unique_ptr<NodeProcess> make_scheduler_process(NodeContext& ctx);
std::unique_ptr<NodeProcess> make_worker_process(NodeContext& ctx);

}  // namespace kairos::sim
