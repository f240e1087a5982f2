// Node metrics: the names and HELP texts of every metric the kernel's
// scheduler node and worker export, and the few helpers that update them.
//
// Purpose. An operator reads these at GET /metrics (prod/api exports the
// registry; histograms named *_us are exported as *_seconds) and a dashboard
// keys on their names, so the names live here, once, with their meaning:
// - one counter per event kind (kairos_<kind, '.' -> '_'>_total, counted by
//   record_event in node_support.h), each described by event_help();
// - the operator series named below: runs by outcome, the due backlog per
//   shard, dispatch and fire lateness, store transaction outcomes and
//   latency.
// docs/API.md (the /metrics section) lists them all for operators.
//
// Guarantees. describe_node_metrics() only names and describes: it gives
// every family above its HELP text and creates the series an operator
// expects to see from the start (at 0), so a rate or an alert has a series
// to work on before the first event. Nothing here reads a clock, draws a
// random number or changes what a node does: metrics are observations only
// (the simulator's traces do not depend on them).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/time/time.h"
#include "core/ports/event_log.h"
#include "core/ports/metrics.h"

namespace kairos::node_metrics {

// Runs that reached their end, by outcome (label outcome = run_outcomes).
inline constexpr std::string_view kRuns = "kairos_runs_total";
// Gauge per shard (label shard): due entries the shard's last dispatch pass
// found due, as it saw them.
inline constexpr std::string_view kDueBacklog = "kairos_due_backlog";
// Gauge: live scheduler nodes at this node's latest announcement.
inline constexpr std::string_view kLiveNodes = "kairos_cluster_live_nodes";
// Histograms in microseconds (exported in seconds).
inline constexpr std::string_view kDispatchLateness = "kairos_dispatch_lateness_us";
inline constexpr std::string_view kFireLateness = "kairos_fire_lateness_us";
inline constexpr std::string_view kTxnDuration = "kairos_txn_duration_us";
// Store transactions by op and outcome (committed/conflict/aborted/...).
inline constexpr std::string_view kTxn = "kairos_txn_total";

// The outcome labels of kRuns: the run statuses a finished run carries
// (succeeded, failed, failed_permanent, timed_out, stopped) and cancelled.
inline constexpr std::string_view kRunOutcomes[] = {"succeeded", "failed",  "failed_permanent",
                                                    "timed_out", "stopped", "cancelled"};

// HELP text of the counter of an event kind; empty for a kind that is not
// registered (event_kinds.h).
std::string_view event_help(std::string_view kind);

// HELP for every family above and every event counter; creates the
// run-outcome counters, the leadership, retry, lease and fencing event
// counters and (for a node, shard_count > 0) the backlog gauge of each
// shard, all at 0. Idempotent: a node and its embedded workers share one
// registry.
void describe_node_metrics(Metrics& metrics, std::uint32_t shard_count = 0);

// `family{shard="N"}`.
std::string shard_series(std::string_view family, std::uint32_t shard);
// `family{op="OP"}`.
std::string op_series(std::string_view family, std::string_view op);

// The kRuns outcome a recorded event ends a run with: run.completed by its
// status field, run.cancelled as "cancelled"; nullopt for any other event.
std::optional<std::string_view> run_outcome(const Event& event);

// Observes a duration (whole microseconds, negative as 0) in `histogram`.
void observe_duration(Histogram& histogram, absl::Duration d);

}  // namespace kairos::node_metrics
