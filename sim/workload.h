// Workload: the simulated users of Kairos. It lives on the cluster's client
// node and drives the real job API, SchedulerNode::create_job / cancel_job,
// on a live scheduler node chosen at random, as an API client would.
//
// The plan is drawn at construction from the scenario and a Random (one seed,
// one plan): recurring cron jobs in their zones (created in the first 30 s),
// interval jobs (first fire within one period), one-off jobs (due uniformly
// in [0, within), each created up to 10 minutes before it is due, so they
// arrive over time), and cancels of randomly chosen recurring jobs at their
// times. A request that gets no answer within kRetryAfter (its scheduler
// crashed, paused or was cut off) is sent again to another scheduler: create
// and cancel are idempotent, so a retry is safe.
//
// What the client was told is the checker's ground truth: each acknowledged
// create (its incarnation and creation time, from which the cron engine gives
// the occurrences that must fire) and each acknowledged cancel. Both are
// recorded as client events ("client.job_created", "client.cancel_acked").
// The state lives in this object (owned by the cluster), so a crash of the
// client node only delays requests: restart() re-sends what is outstanding.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "core/random.h"
#include "core/records.h"
#include "sim/history.h"
#include "sim/scenario.h"

namespace kairos::sim {

class Cluster;
struct NodeContext;

class Workload {
 public:
  static constexpr absl::Duration kRetryAfter = absl::Seconds(10);

  Workload(const Scenario& scenario, absl::Time start, Random random);

  // (Re)starts the client process on `ctx`'s node: arms every pending create
  // and cancel.
  void start(NodeContext& ctx);

  // Occurrences due in [created, until] of every acknowledged job that was
  // never cancelled (cancelled jobs: see the checker's final-state rule).
  std::vector<Occurrence> expected(absl::Time until) const;
  const std::vector<CancelAck>& cancels() const { return acked_cancels_; }
  std::size_t jobs() const { return jobs_.size(); }
  std::size_t created() const;

 private:
  struct PlannedJob {
    kairos::JobSpec spec;
    absl::Duration create_at;
    bool recurring = false;
    bool cancel_requested = false;
    std::optional<JobRecord> acked;  // what create_job answered
    std::uint64_t attempts = 0;
  };
  struct PlannedCancel {
    absl::Duration at;
    std::size_t job;  // index into jobs_
    bool acked = false;
  };
  void create(std::size_t job);
  void cancel(std::size_t index);

  NodeContext* ctx_ = nullptr;
  std::uint64_t generation_ = 0;  // bumped at every start(): old timers are void
  Random random_;
  std::vector<PlannedJob> jobs_;
  std::vector<PlannedCancel> cancels_;
  std::vector<CancelAck> acked_cancels_;
};

}  // namespace kairos::sim
