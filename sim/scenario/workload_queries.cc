// The workload's boundary inputs and its filtered and bounded queries
// (`inputs every=D`, `queries every=D page=N`; sim/scenario/workload.h,
// "Inputs" and "Queries"). The client records what it sent and what it was
// answered as client events; the checker judges them
// (sim/oracle/query_checks.cc). Nothing here runs unless its directive is
// given, so scenarios without them draw and send exactly as before.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/kernel/job_store.h"
#include "core/kernel/keyspace.h"
#include "core/kernel/policy.h"
#include "core/kernel/scheduler_node.h"
#include "core/kernel/wire.h"
#include "sim/scenario/client_events.h"
#include "sim/scenario/workload.h"
#include "sim/world/cluster.h"
#include "sim/world/kernel_nodes.h"
#include "sim/world/world.h"

namespace kairos::sim {

namespace {

// The documented limits the probes sit at (core/kernel/records.h and
// job_store.h, docs/POLICIES.md "Defaults", docs/ARCHITECTURE.md): the list
// page size and the ledger and runs limits are 1..10000.
constexpr std::size_t kMaxPageSize = 10'000;

// One probe: a name and what it sends at the limit (past = false) or one
// past it (past = true).
enum class Probe : std::uint8_t {
  kLabelValueSize,
  kLabelValueControl,
  kLabelValueDelete,
  kLabelKeySize,
  kLabelCount,
  kNamespaceSize,
  kJobIdSize,
  kPriorityHigh,
  kPriorityLow,
  kMaxAttempts,
  kRetryMultiplier,
  kRetryJitter,
  kTimeout,
  kCatchUpMax,
  kMaxConcurrent,
  kCatchUpSpacing,
  // The lower bounds and the character sets of the same job fields.
  kMaxAttemptsLow,
  kRetryMultiplierLow,
  kRetryInitialLow,
  kRetryOrder,
  kTimeoutLow,
  kMisfireThresholdLow,
  kCatchUpMaxLow,
  kMaxConcurrentLow,
  kCatchUpSpacingLow,
  kNamespaceEmpty,
  kNamespaceChars,
  kLabelKeyEmpty,
  kLabelKeyChars,
  kJobIdEmpty,
  kJobIdChars,
  kPolicyUpdate,
  kListPageHigh,
  kListPageLow,
  kFilteredListPage,
  kLedgerLimit,
  kRunsLimit,
  // Not a limit: the runs of a job (its current incarnation) at a job the
  // client created, and past it at an id nobody created (not found).
  kRunsUnknownJob,
  kControlIdSize,
  // The configurations the scenario's nodes run with, one field at or past
  // its documented limit, put through the kernel's validate() as a node's
  // start does (an operator's input).
  kSchedulerClaimWait,
  kSchedulerClockSkew,
  kSchedulerNodeIdSize,
  kSchedulerTxnAttempts,
  kWorkerIdSize,
  kWorkerReportAttempts,
  kLedgerKeep,
  kPruneBudget,
  kStarvationBound,
  // Every other bound of validate(SchedulerNodeConfig), validate(WorkerConfig)
  // and validate(PolicyOptions), each side on its own.
  kSchedulerNodeIdEmpty,
  kSchedulerShardsLow,
  kSchedulerShardsHigh,
  kSchedulerPollLow,
  kSchedulerPollRenew,
  kSchedulerDispatchBatchLow,
  kSchedulerDispatchBatchHigh,
  kSchedulerReapBatchLow,
  kSchedulerReapBatchHigh,
  kSchedulerClaimBatchLow,
  kSchedulerClaimBatchHigh,
  kSchedulerClaimWaitLow,
  kSchedulerTxnAttemptsLow,
  kSchedulerBackoffLow,
  kSchedulerBackoffOrder,
  kSchedulerClockSkewLow,
  kWorkerIdEmpty,
  kWorkerNodesEmpty,
  kWorkerConcurrentLow,
  kWorkerConcurrentHigh,
  kWorkerClaimWaitLow,
  kWorkerClaimWaitHalfLease,
  kWorkerAcceptsLow,
  kWorkerAcceptsHigh,
  kWorkerReportAttemptsLow,
  kWorkerBackoffLow,
  kWorkerBackoffOrder,
  kLedgerKeepLow,
  kLedgerMaxAgeLow,
  kLedgerMaxAgeFinite,
  kPruneBudgetLow,
  kStarvationBoundLow,
  kMisfireChunkLow,
  kMisfireChunkHigh,
  kCount,
};

std::string_view probe_name(Probe p) {
  switch (p) {
    case Probe::kLabelValueSize:
      return "label-value-size";
    case Probe::kLabelValueControl:
      return "label-value-control-char";
    case Probe::kLabelValueDelete:
      return "label-value-delete-char";
    case Probe::kLabelKeySize:
      return "label-key-size";
    case Probe::kLabelCount:
      return "label-count";
    case Probe::kNamespaceSize:
      return "namespace-size";
    case Probe::kJobIdSize:
      return "job-id-size";
    case Probe::kPriorityHigh:
      return "priority-high";
    case Probe::kPriorityLow:
      return "priority-low";
    case Probe::kMaxAttempts:
      return "max-attempts";
    case Probe::kRetryMultiplier:
      return "retry-multiplier";
    case Probe::kRetryJitter:
      return "retry-jitter";
    case Probe::kTimeout:
      return "timeout";
    case Probe::kCatchUpMax:
      return "catch-up-max";
    case Probe::kMaxConcurrent:
      return "max-concurrent";
    case Probe::kCatchUpSpacing:
      return "catch-up-spacing";
    case Probe::kPolicyUpdate:
      return "policy-update-priority";
    case Probe::kListPageHigh:
      return "list-page-size-high";
    case Probe::kListPageLow:
      return "list-page-size-low";
    case Probe::kFilteredListPage:
      return "filtered-list-page-size";
    case Probe::kLedgerLimit:
      return "ledger-limit";
    case Probe::kRunsLimit:
      return "runs-limit";
    case Probe::kRunsUnknownJob:
      return "runs-of-unknown-job";
    case Probe::kControlIdSize:
      return "control-id-size";
    case Probe::kSchedulerClaimWait:
      return "scheduler-config-max-claim-wait";
    case Probe::kSchedulerClockSkew:
      return "scheduler-config-max-clock-skew";
    case Probe::kSchedulerNodeIdSize:
      return "scheduler-config-node-id-size";
    case Probe::kSchedulerTxnAttempts:
      return "scheduler-config-max-txn-attempts";
    case Probe::kWorkerIdSize:
      return "worker-config-worker-id-size";
    case Probe::kWorkerReportAttempts:
      return "worker-config-max-report-attempts";
    case Probe::kLedgerKeep:
      return "policy-options-ledger-keep";
    case Probe::kPruneBudget:
      return "policy-options-prune-budget";
    case Probe::kStarvationBound:
      return "policy-options-starvation-bound";
    case Probe::kMaxAttemptsLow:
      return "max-attempts-low";
    case Probe::kRetryMultiplierLow:
      return "retry-multiplier-low";
    case Probe::kRetryInitialLow:
      return "retry-initial-low";
    case Probe::kRetryOrder:
      return "retry-max-below-initial";
    case Probe::kTimeoutLow:
      return "timeout-low";
    case Probe::kMisfireThresholdLow:
      return "misfire-threshold-low";
    case Probe::kCatchUpMaxLow:
      return "catch-up-max-low";
    case Probe::kMaxConcurrentLow:
      return "max-concurrent-low";
    case Probe::kCatchUpSpacingLow:
      return "catch-up-spacing-low";
    case Probe::kNamespaceEmpty:
      return "namespace-empty";
    case Probe::kNamespaceChars:
      return "namespace-chars";
    case Probe::kLabelKeyEmpty:
      return "label-key-empty";
    case Probe::kLabelKeyChars:
      return "label-key-chars";
    case Probe::kJobIdEmpty:
      return "job-id-empty";
    case Probe::kJobIdChars:
      return "job-id-chars";
    case Probe::kSchedulerNodeIdEmpty:
      return "scheduler-config-node-id-empty";
    case Probe::kSchedulerShardsLow:
      return "scheduler-config-shard-count-low";
    case Probe::kSchedulerShardsHigh:
      return "scheduler-config-shard-count-high";
    case Probe::kSchedulerPollLow:
      return "scheduler-config-poll-interval-low";
    case Probe::kSchedulerPollRenew:
      return "scheduler-config-poll-interval-renew-period";
    case Probe::kSchedulerDispatchBatchLow:
      return "scheduler-config-dispatch-batch-low";
    case Probe::kSchedulerDispatchBatchHigh:
      return "scheduler-config-dispatch-batch-high";
    case Probe::kSchedulerReapBatchLow:
      return "scheduler-config-reap-batch-low";
    case Probe::kSchedulerReapBatchHigh:
      return "scheduler-config-reap-batch-high";
    case Probe::kSchedulerClaimBatchLow:
      return "scheduler-config-max-claim-batch-low";
    case Probe::kSchedulerClaimBatchHigh:
      return "scheduler-config-max-claim-batch-high";
    case Probe::kSchedulerClaimWaitLow:
      return "scheduler-config-max-claim-wait-low";
    case Probe::kSchedulerTxnAttemptsLow:
      return "scheduler-config-max-txn-attempts-low";
    case Probe::kSchedulerBackoffLow:
      return "scheduler-config-retry-backoff-base-low";
    case Probe::kSchedulerBackoffOrder:
      return "scheduler-config-retry-backoff-order";
    case Probe::kSchedulerClockSkewLow:
      return "scheduler-config-max-clock-skew-low";
    case Probe::kWorkerIdEmpty:
      return "worker-config-worker-id-empty";
    case Probe::kWorkerNodesEmpty:
      return "worker-config-nodes-empty";
    case Probe::kWorkerConcurrentLow:
      return "worker-config-max-concurrent-low";
    case Probe::kWorkerConcurrentHigh:
      return "worker-config-max-concurrent-high";
    case Probe::kWorkerClaimWaitLow:
      return "worker-config-claim-wait-low";
    case Probe::kWorkerClaimWaitHalfLease:
      return "worker-config-claim-wait-half-lease";
    case Probe::kWorkerAcceptsLow:
      return "worker-config-accepts-low";
    case Probe::kWorkerAcceptsHigh:
      return "worker-config-accepts-high";
    case Probe::kWorkerReportAttemptsLow:
      return "worker-config-max-report-attempts-low";
    case Probe::kWorkerBackoffLow:
      return "worker-config-retry-backoff-base-low";
    case Probe::kWorkerBackoffOrder:
      return "worker-config-retry-backoff-order";
    case Probe::kLedgerKeepLow:
      return "policy-options-ledger-keep-low";
    case Probe::kLedgerMaxAgeLow:
      return "policy-options-ledger-max-age-low";
    case Probe::kLedgerMaxAgeFinite:
      return "policy-options-ledger-max-age-finite";
    case Probe::kPruneBudgetLow:
      return "policy-options-prune-budget-low";
    case Probe::kStarvationBoundLow:
      return "policy-options-starvation-bound-low";
    case Probe::kMisfireChunkLow:
      return "policy-options-misfire-chunk-low";
    case Probe::kMisfireChunkHigh:
      return "policy-options-misfire-chunk-high";
    case Probe::kCount:
      break;
  }
  return "?";
}

std::string pad_id(std::string prefix, std::size_t size) {
  prefix.resize(size, 'x');
  return prefix;
}

std::int64_t micros(absl::Time t) { return absl::ToUnixMicros(t); }

}  // namespace

void Workload::label_jobs_for_queries() {
  for (std::size_t i = 0; i < jobs_.size(); ++i) {
    kairos::JobSpec& spec = jobs_[i].spec;
    spec.ns = i % 2 == 0 ? "ns-a" : "ns-b";
    spec.labels["tier"] = absl::StrCat("t", i % 3);
    spec.labels["line"] = absl::StrCat(jobs_[i].line);
  }
}

std::uint64_t Workload::known_incarnation(std::size_t i) const {
  std::uint64_t inc = jobs_[i].acked ? jobs_[i].acked->incarnation : 0;
  for (const PlannedCancel& c : cancels_)
    if (c.job == i && c.again) inc = std::max(inc, c.again->incarnation);
  return inc;
}

// --- Inputs ------------------------------------------------------------------

void Workload::arm_inputs() {
  const std::uint64_t gen = generation_;
  ctx_->timers.after(inputs_.every, [this, gen] {
    if (gen != generation_) return;
    send_input();
    arm_inputs();
  });
}

void Workload::input_answered(std::string_view probe, bool past, const absl::Status& status,
                              const kairos::JobSpec* created) {
  // No answer is not an answer: the outcome is unknown.
  if (status.code() == absl::StatusCode::kUnavailable ||
      status.code() == absl::StatusCode::kDeadlineExceeded)
    return;
  if (past && status.code() == absl::StatusCode::kInvalidArgument)
    ctx_->world.mark("client.input-refused");
  if (!past && status.ok()) ctx_->world.mark("client.input-accepted-at-limit");
  Event e;
  e.at = ctx_->clock.now();
  e.kind = client_events::kInputAnswered;
  e.with("probe", std::string(probe))
      .with("bound", std::string(past ? "past" : "at"))
      .with("code", absl::StatusCodeToString(status.code()));
  if (created != nullptr)
    e.with("job", created->id)
        .with("namespace", created->ns)
        .with("labels", client_events::label_text(created->labels));
  ctx_->log.record(std::move(e));
}

void Workload::send_input() {
  const std::uint64_t k = inputs_sent_++;
  const bool past = k % 2 == 1;
  const auto probe = static_cast<Probe>((k / 2) % static_cast<std::uint64_t>(Probe::kCount));
  const std::uint64_t round = k / 2 / static_cast<std::uint64_t>(Probe::kCount);
  const std::string_view name = probe_name(probe);
  SchedulerNode* node = ctx_->cluster.pick_scheduler(random_);
  if (node == nullptr) return;
  // A job of its own, in its own namespace, due a day after the run (never
  // fires within it).
  kairos::JobSpec spec;
  spec.id = absl::StrCat("probe-", k);
  spec.ns = "probes";
  spec.schedule.kind = ScheduleSpec::Kind::kInterval;
  spec.schedule.every = absl::Hours(24);
  spec.schedule.start = start_ + absl::Hours(24 * 30);
  if (!jobs_.empty()) spec.payload = jobs_.front().spec.payload;
  JobPolicy& p = spec.policy;
  const int one = past ? 1 : 0;
  bool create = true;
  switch (probe) {
    case Probe::kLabelValueSize:
      spec.labels["probe"] = std::string(kMaxLabelValueSize + one, 'v');
      break;
    case Probe::kLabelValueControl:  // 0x20 is the first character allowed
      spec.labels["probe"] = past ? std::string(
                                        "a\x1f"
                                        "b")
                                  : std::string("a b");
      break;
    case Probe::kLabelValueDelete:  // 0x7f is refused, 0x7e allowed
      spec.labels["probe"] = past ? std::string(
                                        "a\x7f"
                                        "b")
                                  : std::string("a~b");
      break;
    case Probe::kLabelKeySize:
      spec.labels[std::string(kMaxLabelKeySize + one, 'k')] = "v";
      break;
    case Probe::kLabelCount:
      for (std::size_t i = 0; i < kMaxLabels + one; ++i)
        spec.labels[absl::StrCat("probe-", i)] = "v";
      break;
    case Probe::kNamespaceSize:
      spec.ns = std::string(kMaxNamespaceSize + one, 'n');
      break;
    case Probe::kJobIdSize:
      spec.id = pad_id(absl::StrCat("probe-", k, "-"), kMaxJobIdSize + one);
      break;
    case Probe::kPriorityHigh:
      p.priority = kMaxPriority + one;
      break;
    case Probe::kPriorityLow:
      p.priority = kMinPriority - one;
      break;
    case Probe::kMaxAttempts:
      p.max_attempts = 100 + one;
      break;
    case Probe::kRetryMultiplier:
      p.retry_multiplier_percent = 1000 + one;
      break;
    case Probe::kRetryJitter:
      p.retry_jitter_percent = 100 + one;
      break;
    case Probe::kTimeout:
      p.timeout = absl::Hours(24 * 7) + absl::Microseconds(one);
      break;
    case Probe::kCatchUpMax:
      p.catch_up_max = 1000 + one;
      break;
    case Probe::kMaxConcurrent:
      p.max_concurrent = 100 + one;
      break;
    case Probe::kCatchUpSpacing:
      p.catch_up_spacing = absl::Hours(24) + absl::Microseconds(one);
      break;
    case Probe::kMaxAttemptsLow:
      p.max_attempts = 1 - one;
      break;
    case Probe::kRetryMultiplierLow:
      p.retry_multiplier_percent = 100 - one;
      break;
    case Probe::kRetryInitialLow:
      p.retry_initial = -absl::Microseconds(one);
      break;
    case Probe::kRetryOrder:  // retry_max may equal retry_initial, not be below it
      p.retry_initial = p.retry_max + absl::Microseconds(one);
      break;
    case Probe::kTimeoutLow:
      p.timeout = absl::Microseconds(1 - one);
      break;
    case Probe::kMisfireThresholdLow:
      p.misfire_threshold = -absl::Microseconds(one);
      break;
    case Probe::kCatchUpMaxLow:
      p.catch_up_max = 1 - one;
      break;
    case Probe::kMaxConcurrentLow:
      p.max_concurrent = 1 - one;
      break;
    case Probe::kCatchUpSpacingLow:
      p.catch_up_spacing = -absl::Microseconds(one);
      break;
    case Probe::kNamespaceEmpty:
      spec.ns = past ? "" : "n";
      break;
    case Probe::kNamespaceChars:  // every edge of a-z 0-9 - _ . ; '{' is past 'z'
      spec.ns = past ? "a{z" : "az09-_.";
      break;
    case Probe::kLabelKeyEmpty:
      spec.labels[past ? "" : "k"] = "v";
      break;
    case Probe::kLabelKeyChars:  // every edge of letters, digits and - _ . / ; '@' is before 'A'
      spec.labels[past ? "a@z" : "azAZ09-_./"] = "v";
      break;
    case Probe::kJobIdEmpty:  // a create with a one-byte id of its own per round; a
                              // pause of the empty id (a create generates an id)
      if (past)
        create = false;
      else
        spec.id = std::string(1, static_cast<char>('a' + round % 26));
      break;
    case Probe::kJobIdChars:  // every edge of letters, digits and - _ . : / ; '[' is past 'Z'
      spec.id = absl::StrCat("probe-", k, past ? "-a[z" : "-azAZ09-_.:/");
      break;
    default:
      create = false;
      break;
  }
  if (create) {
    node->create_job(spec, [this, name, past, spec, probe](absl::StatusOr<CreateResult> r) {
      input_answered(name, past, r.status(), &spec);
      if (!r.ok() || past) return;
      if (!policy_target_) policy_target_ = spec.id;
      if (probe == Probe::kJobIdSize) long_id_ = spec.id;
    });
    return;
  }
  auto done = [this, name, past](const absl::Status& s) { input_answered(name, past, s, nullptr); };
  if (probe >= Probe::kSchedulerClaimWait) {
    SchedulerNodeConfig sc = scheduler_config(*config_scenario_, "scheduler-1");
    WorkerConfig wc = worker_config(*config_scenario_, "worker-1", {PeerId{1}});
    const absl::Duration us = absl::Microseconds(one);
    bool worker = false;
    switch (probe) {
      case Probe::kSchedulerClaimWait:
        sc.max_claim_wait = absl::Hours(1) + us;
        break;
      case Probe::kSchedulerClockSkew:
        sc.max_clock_skew = absl::Hours(24) + us;
        break;
      case Probe::kSchedulerNodeIdSize:
        sc.node_id = std::string(kMaxWorkerIdSize + one, 's');
        break;
      case Probe::kSchedulerTxnAttempts:
        sc.max_txn_attempts = 100 + one;
        break;
      case Probe::kWorkerIdSize:
        wc.worker_id = std::string(kMaxWorkerIdSize + one, 'w');
        worker = true;
        break;
      case Probe::kWorkerReportAttempts:
        wc.max_report_attempts = 1000 + one;
        worker = true;
        break;
      case Probe::kLedgerKeep:
        sc.policy.ledger_keep = 10'000'000 + one;
        break;
      case Probe::kPruneBudget:
        sc.policy.prune_budget = 10'000 + one;
        break;
      case Probe::kStarvationBound:
        sc.policy.starvation_bound = absl::Hours(24) + us;
        break;
      case Probe::kSchedulerNodeIdEmpty:
        sc.node_id = past ? "" : "s";
        break;
      case Probe::kSchedulerShardsLow:
        sc.shard_count = 1 - one;
        break;
      case Probe::kSchedulerShardsHigh:
        sc.shard_count = keys::kMaxShards + one;
        break;
      case Probe::kSchedulerPollLow:
        sc.poll_interval = absl::Microseconds(1 - one);
        break;
      case Probe::kSchedulerPollRenew:  // renewals ride on ticks
        sc.poll_interval = sc.lease.leader_renew_period + us;
        break;
      case Probe::kSchedulerDispatchBatchLow:
        sc.dispatch_batch = 1 - one;
        break;
      case Probe::kSchedulerDispatchBatchHigh:
        sc.dispatch_batch = 100'000 + one;
        break;
      case Probe::kSchedulerReapBatchLow:
        sc.reap_batch = 1 - one;
        break;
      case Probe::kSchedulerReapBatchHigh:
        sc.reap_batch = 100'000 + one;
        break;
      case Probe::kSchedulerClaimBatchLow:
        sc.max_claim_batch = 1 - one;
        break;
      case Probe::kSchedulerClaimBatchHigh:
        sc.max_claim_batch = wire::kMaxBatch + one;
        break;
      case Probe::kSchedulerClaimWaitLow:
        sc.max_claim_wait = -us;
        break;
      case Probe::kSchedulerTxnAttemptsLow:
        sc.max_txn_attempts = 1 - one;
        break;
      case Probe::kSchedulerBackoffLow:
        sc.retry_backoff_base = absl::Microseconds(1 - one);
        break;
      case Probe::kSchedulerBackoffOrder:  // the base may equal the maximum
        sc.retry_backoff_base = sc.retry_backoff_max + us;
        break;
      case Probe::kSchedulerClockSkewLow:
        sc.max_clock_skew = absl::Microseconds(1 - one);
        break;
      case Probe::kWorkerIdEmpty:
        wc.worker_id = past ? "" : "w";
        worker = true;
        break;
      case Probe::kWorkerNodesEmpty:
        if (past) wc.nodes.clear();
        worker = true;
        break;
      case Probe::kWorkerConcurrentLow:
        wc.max_concurrent = 1 - one;
        worker = true;
        break;
      case Probe::kWorkerConcurrentHigh:
        wc.max_concurrent = wire::kMaxBatch + one;
        worker = true;
        break;
      case Probe::kWorkerClaimWaitLow:
        wc.claim_wait = -us;
        worker = true;
        break;
      case Probe::kWorkerClaimWaitHalfLease:
        wc.claim_wait = wc.lease.lease_ttl / 2 + us;
        worker = true;
        break;
      case Probe::kWorkerAcceptsLow:  // at least one payload kind
        wc.accepts = static_cast<std::uint8_t>(1 - one);
        worker = true;
        break;
      case Probe::kWorkerAcceptsHigh:
        wc.accepts = static_cast<std::uint8_t>(kAcceptAll + one);
        worker = true;
        break;
      case Probe::kWorkerReportAttemptsLow:
        wc.max_report_attempts = 1 - one;
        worker = true;
        break;
      case Probe::kWorkerBackoffLow:
        wc.retry_backoff_base = absl::Microseconds(1 - one);
        worker = true;
        break;
      case Probe::kWorkerBackoffOrder:
        wc.retry_backoff_base = wc.retry_backoff_max + us;
        worker = true;
        break;
      case Probe::kLedgerKeepLow:
        sc.policy.ledger_keep = 1 - one;
        break;
      case Probe::kLedgerMaxAgeLow:
        sc.policy.ledger_max_age = absl::Microseconds(1 - one);
        break;
      case Probe::kLedgerMaxAgeFinite:  // positive and finite: a century is allowed
        sc.policy.ledger_max_age = past ? absl::InfiniteDuration() : absl::Hours(24 * 36525);
        break;
      case Probe::kPruneBudgetLow:
        sc.policy.prune_budget = 1 - one;
        break;
      case Probe::kStarvationBoundLow:
        sc.policy.starvation_bound = -us;
        break;
      case Probe::kMisfireChunkLow:  // above the largest catch_up_max
        sc.policy.misfire_chunk = 1001 - one;
        break;
      default:  // kMisfireChunkHigh
        sc.policy.misfire_chunk = 1'000'000 + one;
        break;
    }
    done(worker ? validate(wc) : validate(sc));
    return;
  }
  // A workload job the client knows (for the ledger and runs limits).
  std::optional<std::string> known;
  for (const PlannedJob& j : jobs_)
    if (j.acked) {
      known = j.spec.id;
      break;
    }
  switch (probe) {
    case Probe::kPolicyUpdate: {
      if (!policy_target_) return;
      JobPolicy policy;
      policy.priority = kMaxPriority + one;
      node->update_policy(*policy_target_, policy,
                          [done](absl::StatusOr<ControlResult> r) { done(r.status()); });
      return;
    }
    case Probe::kListPageHigh:
      node->list_jobs("", kMaxPageSize + one,
                      [done](absl::StatusOr<ListResult> r) { done(r.status()); });
      return;
    case Probe::kListPageLow:
      node->list_jobs("", past ? 0 : 1, [done](absl::StatusOr<ListResult> r) { done(r.status()); });
      return;
    case Probe::kFilteredListPage: {
      JobFilter f;
      f.ns = "ns-a";
      node->list_jobs("", kMaxPageSize + one, std::move(f),
                      [done](absl::StatusOr<ListResult> r) { done(r.status()); });
      return;
    }
    case Probe::kLedgerLimit: {
      if (!known) return;
      LedgerQuery q;
      q.job_id = *known;
      q.limit = kMaxPageSize + one;
      node->get_ledger(q, [done](absl::StatusOr<LedgerResult> r) { done(r.status()); });
      return;
    }
    case Probe::kRunsLimit: {
      if (!known) return;
      RunsQuery q;
      q.job_id = *known;
      q.limit = kMaxPageSize + one;
      node->list_runs(q, [done](absl::StatusOr<RunsResult> r) { done(r.status()); });
      return;
    }
    case Probe::kRunsUnknownJob: {
      if (!known) return;
      RunsQuery q;
      q.job_id = past ? spec.id : *known;  // the probe's own id: never created
      q.limit = 1;
      node->list_runs(q, [done](absl::StatusOr<RunsResult> r) { done(r.status()); });
      return;
    }
    case Probe::kJobIdEmpty:
      node->pause_job(std::string(), [done](absl::StatusOr<ControlResult> r) { done(r.status()); });
      return;
    case Probe::kControlIdSize: {
      if (!long_id_) return;
      std::string id = past ? *long_id_ + "x" : *long_id_;
      node->pause_job(std::move(id), [done](absl::StatusOr<ControlResult> r) { done(r.status()); });
      return;
    }
    default:
      return;
  }
}

// --- Queries -----------------------------------------------------------------

void Workload::arm_queries() {
  const std::uint64_t gen = generation_;
  ctx_->timers.after(queries_.every, [this, gen] {
    if (gen != generation_) return;
    query_once();
    arm_queries();
  });
}

void Workload::query_once() {
  std::vector<std::size_t> known;
  for (std::size_t i = 0; i < jobs_.size(); ++i)
    if (jobs_[i].acked) known.push_back(i);
  if (known.empty()) return;
  const std::size_t job = known[random_.below(known.size())];
  switch (random_.below(3)) {
    case 0:
      query_list();
      return;
    case 1:
      query_runs(job);
      return;
    default:
      query_ledger(job);
      return;
  }
}

void Workload::query_list() {
  JobFilter filter;
  switch (random_.below(5)) {
    case 0:
      filter.ns = "ns-a";
      break;
    case 1:
      filter.ns = "ns-b";
      filter.labels["tier"] = "t1";
      break;
    case 2:
      filter.labels["tier"] = "t2";
      break;
    case 3:
      filter.labels["tier"] = "t0";
      filter.labels["line"] = "0";
      break;
    default:
      break;  // no filter: the plain listing
  }
  struct Listing {
    std::uint64_t n = 0;
    JobFilter filter;
    std::vector<std::string> pages;
    std::size_t count = 0;
  };
  auto l = std::make_shared<Listing>();
  l->n = listings_++;
  l->filter = filter;
  Event e;
  e.at = ctx_->clock.now();
  e.kind = client_events::kListStarted;
  e.with("listing", l->n)
      .with("namespace", filter.ns)
      .with("selector", client_events::label_text(filter.labels));
  ctx_->log.record(std::move(e));
  auto page = std::make_shared<std::function<void(std::string)>>();
  *page = [this, l, page](std::string token) {
    SchedulerNode* node = ctx_->cluster.pick_scheduler(random_);
    if (node == nullptr || l->pages.size() > 1000) {
      *page = nullptr;  // abandoned: not judged
      return;
    }
    node->list_jobs(std::move(token), queries_.page, l->filter,
                    [this, l, page](absl::StatusOr<ListResult> r) {
                      if (!r.ok()) {
                        *page = nullptr;  // abandoned: not judged
                        return;
                      }
                      std::string ids;
                      for (const JobRecord& rec : r->jobs)
                        absl::StrAppend(&ids, ids.empty() ? "" : ",", rec.spec.id);
                      l->pages.push_back(std::move(ids));
                      l->count += r->jobs.size();
                      if (!r->next_page_token.empty()) {
                        (*page)(r->next_page_token);
                        return;
                      }
                      if (l->pages.size() > 1 && !l->filter.empty())
                        ctx_->world.mark("client.list-filtered");
                      std::string all;
                      for (std::size_t i = 0; i < l->pages.size(); ++i)
                        absl::StrAppend(&all, i == 0 ? "" : "|", l->pages[i]);
                      Event done;
                      done.at = ctx_->clock.now();
                      done.kind = client_events::kListed;
                      done.with("listing", l->n)
                          .with("limit", static_cast<std::uint64_t>(queries_.page))
                          .with("ids", std::move(all));
                      ctx_->log.record(std::move(done));
                      *page = nullptr;  // breaks the cycle through the capture
                    });
  };
  (*page)(std::string());
}

void Workload::query_runs(std::size_t i) {
  struct Walk {
    std::string job;
    std::uint64_t incarnation = 0;
    std::string text;
    std::size_t pages = 0;
    absl::Time sent;  // the client's clock at the first page's send
  };
  auto w = std::make_shared<Walk>();
  w->sent = ctx_->clock.now();
  w->job = jobs_[i].spec.id;
  w->incarnation = known_incarnation(i);
  auto page = std::make_shared<std::function<void(absl::Time)>>();
  *page = [this, w, page](absl::Time from) {
    SchedulerNode* node = ctx_->cluster.pick_scheduler(random_);
    if (node == nullptr) {
      *page = nullptr;  // abandoned: not judged
      return;
    }
    RunsQuery q;
    q.job_id = w->job;
    q.incarnation = w->incarnation;
    q.from = from;
    q.limit = queries_.page;
    node->list_runs(q, [this, w, page, from](absl::StatusOr<RunsResult> r) {
      if (!r.ok()) {
        *page = nullptr;
        return;
      }
      ++w->pages;
      absl::StrAppend(&w->text, w->text.empty() ? "" : ";",
                      from == absl::InfinitePast() ? std::string("-") : absl::StrCat(micros(from)),
                      ":");
      for (std::size_t k = 0; k < r->runs.size(); ++k)
        absl::StrAppend(&w->text, k == 0 ? "" : ",", micros(r->runs[k].id.nominal));
      // Follow while the pages advance; a page that does not (its last run
      // below its own bound) or a walk of 200 pages ends it, judged with
      // `more` set (its bounds are judged, its completeness is not).
      if (r->more && !r->runs.empty() && r->runs.back().id.nominal >= from && w->pages < 200) {
        (*page)(r->runs.back().id.nominal + absl::Microseconds(1));
        return;
      }
      if (w->pages > 1) ctx_->world.mark("client.query-bounded");
      Event e;
      e.at = ctx_->clock.now();
      e.kind = client_events::kRunsWalked;
      e.with("job", w->job)
          .with("incarnation", w->incarnation)
          .with("limit", static_cast<std::uint64_t>(queries_.page))
          .with("more", static_cast<std::uint64_t>(r->more))
          .with("sent", micros(w->sent))
          .with("walk", std::move(w->text));
      ctx_->log.record(std::move(e));
      *page = nullptr;
    });
  };
  (*page)(absl::InfinitePast());
}

void Workload::query_ledger(std::size_t i) {
  SchedulerNode* node = ctx_->cluster.pick_scheduler(random_);
  if (node == nullptr) return;
  LedgerQuery q;
  q.job_id = jobs_[i].spec.id;
  q.limit = queries_.page;
  // A window from what was seen: inside a range record when there is one
  // (the record that starts before `from` and reaches into it must be in
  // the answer), else from one record's start; none seen: the whole ledger
  // from its start, with a small limit.
  const auto& seen = ledger_seen_[i];
  if (!seen.empty()) {
    std::vector<std::pair<absl::Time, absl::Time>> ranges;
    for (const auto& s : seen)
      if (s.second > s.first) ranges.push_back(s);
    if (!ranges.empty() && random_.below(2) == 0) {
      const auto& r = ranges[random_.below(ranges.size())];
      // Inside the range, or exactly at its last occurrence (the record
      // still meets the window: through >= from).
      q.from = random_.below(2) == 0 ? r.first + (r.second - r.first) / 2 : r.second;
      q.limit = 10'000;  // the whole window: the reaching record must be there
    } else {
      q.from = seen[random_.below(seen.size())].first;
    }
    q.to = q.from + absl::Minutes(static_cast<std::int64_t>(1 + random_.below(20)));
  }
  node->get_ledger(q, [this, i, q](absl::StatusOr<LedgerResult> r) {
    if (!r.ok()) return;
    std::string text;
    bool reaching = false;
    auto& seen = ledger_seen_[i];
    for (const LedgerRecord& rec : r->records) {
      absl::StrAppend(&text, text.empty() ? "" : ",", rec.incarnation, ":", micros(rec.nominal),
                      ":", micros(rec.through));
      if (rec.nominal < q.from) reaching = true;
      const std::pair<absl::Time, absl::Time> range{rec.nominal, rec.through};
      if (std::find(seen.begin(), seen.end(), range) == seen.end()) seen.push_back(range);
    }
    if (q.from != absl::InfinitePast()) ctx_->world.mark("client.query-bounded");
    if (reaching) ctx_->world.mark("client.ledger-reaching");
    Event e;
    e.at = ctx_->clock.now();
    e.kind = client_events::kLedgerQueried;
    e.with("job", q.job_id)
        .with("from", micros(q.from))
        .with("to", micros(q.to))
        .with("limit", static_cast<std::uint64_t>(q.limit))
        .with("more", static_cast<std::uint64_t>(r->more))
        .with("records", std::move(text));
    ctx_->log.record(std::move(e));
  });
}

}  // namespace kairos::sim
