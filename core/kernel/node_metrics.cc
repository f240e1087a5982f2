#include "core/kernel/node_metrics.h"

#include <array>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "core/base/check.h"
#include "core/kernel/event_kinds.h"
#include "core/kernel/node_support.h"
#include "core/ports/runner.h"

namespace kairos::node_metrics {

namespace ek = event_kinds;

namespace {

struct KindHelp {
  std::string_view kind;
  std::string_view help;
};

// One line per registered event kind (checked against kAllEventKinds by the
// tests): what one count of its counter means.
constexpr KindHelp kEventHelp[] = {
    {ek::kJobCreated, "Jobs created through the job API"},
    {ek::kJobCancelled, "Jobs cancelled (deleted) through the job API"},
    {ek::kJobPaused, "Jobs paused"},
    {ek::kJobResumed, "Jobs resumed"},
    {ek::kJobUpdated, "Job specs changed in place (PUT, PATCH, apply)"},
    {ek::kJobTriggered, "Manual runs requested (:trigger)"},
    {ek::kRunDispatched, "Runs created by dispatch (one per fired occurrence)"},
    {ek::kRunClaimed, "Run leases granted to workers (first grants and re-grants)"},
    {ek::kRunRenewed, "Run lease renewals accepted"},
    {ek::kRunReleased, "Run leases given back by their worker without a verdict"},
    {ek::kRunCompleted, "Runs that reached a terminal state (see kairos_runs_total by outcome)"},
    {ek::kRunCancelled, "Runs withdrawn (their job was cancelled, paused or rescheduled)"},
    {ek::kRunPromoted,
     "Waiting runs made ready when an earlier run of the job ended (overlap=queue)"},
    {ek::kRunLeaseLapsed,
     "Run leases that expired without a renewal or verdict (the reaper re-queued or failed the "
     "run)"},
    {ek::kRunRetryScheduled, "Failed attempts retried after a backoff (retries)"},
    {ek::kWriteRejectedStaleToken,
     "Worker renewals or completions refused because a newer fencing token was granted"},
    {ek::kWriteRejectedStaleEpoch,
     "Leader writes refused because another node leads the shard under a newer epoch"},
    {ek::kMisfireDecided, "Misfire decisions (an entry found later than its misfire threshold)"},
    {ek::kLedgerRecorded, "Occurrence ledger records written"},
    {ek::kLedgerUpdated, "Occurrence ledger records changed (e.g. a run's end)"},
    {ek::kLedgerPruned, "Occurrence ledger records removed by retention"},
    {ek::kLeaderAcquired, "Shard leaderships acquired by this node (a new epoch)"},
    {ek::kLeaderLost, "Shard leaderships this node stopped exercising (any reason)"},
    {ek::kLeaderReleased,
     "Shard leader records this node gave up to rebalance (expiry set to the store's now)"},
    {ek::kNodePruned, "Node records removed after being expired for kNodeRecordRetention"},
    {ek::kNodeDeparted, "Graceful leaves: the node withdrew its own record"},
    {ek::kNodeStarted, "Scheduler node starts"},
    {ek::kNodeInitFailed,
     "Scheduler node store initialisations refused (e.g. a shard count mismatch)"},
    {ek::kNodeClockSkew,
     "Times this node's clock was found outside max_clock_skew of the store's (it stops leading)"},
    {ek::kNodeClockOk,
     "Times this node's clock was found back within max_clock_skew of the store's"},
    {ek::kWireMalformed, "Worker protocol messages that did not decode (dropped)"},
    {ek::kRecordUndecodable, "Distinct stored records that did not decode (the node is degraded)"},
    {ek::kTxnFailed,
     "Store transaction bodies that failed in an unhandled way (logged as txn.failed)"},
    {ek::kWorkerStarted, "Worker starts"},
    {ek::kWorkerRunStarted, "Runs started by workers of this process"},
    {ek::kWorkerGrantExpired,
     "Grants a worker received too late to start (past their lease deadline)"},
    {ek::kWorkerLeaseDeadline, "Runs a worker stopped at its lease deadline (renewals failed)"},
    {ek::kWorkerLeaseLost, "Runs whose lease renewal the store refused (the worker stops the run)"},
    {ek::kWorkerRunTimeout, "Runs a worker stopped at the job's timeout"},
    {ek::kWorkerReportAccepted, "Run verdicts the store accepted from workers of this process"},
    {ek::kWorkerReportRejected, "Run verdicts the store refused (stale token or not leased)"},
    {ek::kWorkerReportDropped,
     "Run verdicts a worker did not send (lease lost or past its deadline)"},
    {ek::kWorkerReportAbandoned,
     "Run verdicts a worker gave up sending after its report attempts got no answer"},
};
static_assert(std::size(kEventHelp) == ek::kAllEventKinds.size(),
              "every event kind has a HELP text");

struct FamilyHelp {
  std::string_view family;
  std::string_view help;
};
constexpr FamilyHelp kFamilyHelp[] = {
    {kRuns,
     "Runs that reached their end, by outcome: the run's final status (succeeded, failed - also a "
     "lease lapsed or released on the last attempt -, failed_permanent, timed_out, stopped) or "
     "cancelled (withdrawn)"},
    {kLiveNodes,
     "Scheduler nodes with a live node record (this one included) at this node's latest "
     "announcement; its fair share of shards is ceil(shards / this)"},
    {kDueBacklog,
     "Due entries the shard's last dispatch pass found due (store clock) and not yet dispatched, "
     "at most dispatch_batch plus the entries it passed over; 0 while this node does not lead the "
     "shard"},
    {kDispatchLateness,
     "Time from a run's due time to its dispatch (the run's creation), both on the store clock"},
    {kFireLateness,
     "Time from a run's due time to its first grant to a worker, both on the store clock (measured "
     "at the claim's commit; the worker starts the run on receiving the grant; retries are not "
     "counted)"},
    {kTxnDuration,
     "Store transaction latency from submit to result on the node's clock, by op (each attempt of "
     "a retried body counts)"},
    {kTxn,
     "Store transactions by op and outcome (committed, conflict, aborted, unavailable, "
     "unknown)"},
    {"kairos_worker_claim_timeouts_total",
     "Worker claim requests that got no answer within claim wait plus rpc timeout"},
    {"kairos_worker_stale_responses_total",
     "Claim responses a worker received for no pending claim (late or duplicate)"},
    {"kairos_worker_renewals_total",
     "Run lease renewals the store accepted for workers of this process"},
};

// Counters created at 0: the operator's alerting series.
constexpr std::string_view kZeroKinds[] = {
    ek::kLeaderAcquired,
    ek::kLeaderLost,
    ek::kRunLeaseLapsed,
    ek::kRunRetryScheduled,
    ek::kWriteRejectedStaleToken,
    ek::kWriteRejectedStaleEpoch,
    ek::kRunDispatched,
    ek::kRunClaimed,
    ek::kTxnFailed,
    ek::kRecordUndecodable,
};

}  // namespace

std::string_view event_help(std::string_view kind) {
  for (const KindHelp& h : kEventHelp)
    if (h.kind == kind) return h.help;
  return {};
}

void describe_node_metrics(Metrics& metrics, std::uint32_t shard_count) {
  for (const KindHelp& h : kEventHelp) metrics.describe(event_counter_name(h.kind), h.help);
  for (const FamilyHelp& h : kFamilyHelp) metrics.describe(h.family, h.help);
  for (std::string_view outcome : kRunOutcomes)
    metrics.counter(absl::StrCat(absl_sv(kRuns), "{outcome=\"", absl_sv(outcome), "\"}"));
  for (std::string_view kind : kZeroKinds) metrics.counter(event_counter_name(kind));
  for (std::uint32_t s = 0; s < shard_count; ++s) metrics.gauge(shard_series(kDueBacklog, s));
}

std::string shard_series(std::string_view family, std::uint32_t shard) {
  return absl::StrCat(absl_sv(family), "{shard=\"", shard, "\"}");
}

std::string op_series(std::string_view family, std::string_view op) {
  return absl::StrCat(absl_sv(family), "{op=\"", absl_sv(op), "\"}");
}

std::optional<std::string_view> run_outcome(const Event& event) {
  if (event.kind == ek::kRunCancelled) return std::string_view("cancelled");
  if (event.kind != ek::kRunCompleted) return std::nullopt;
  const EventValue* status = event.find("status");
  KAIROS_CHECK_MSG(status != nullptr && std::holds_alternative<std::uint64_t>(*status),
                   "run.completed carries its status");
  const std::uint64_t s = std::get<std::uint64_t>(*status);
  KAIROS_CHECK_MSG(s <= static_cast<std::uint64_t>(RunStatus::kStopped), "a known run status");
  return to_string(static_cast<RunStatus>(s));
}

void observe_duration(Histogram& histogram, absl::Duration d) {
  histogram.observe(d < absl::ZeroDuration() ? 0 : absl::ToInt64Microseconds(d));
}

}  // namespace kairos::node_metrics
