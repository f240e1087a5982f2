// Worker: pulls runs from scheduler nodes and executes them through a Runner.
//
// Purpose. The loop shared by `kairos worker` and the simulator's workers:
// long-poll claims in batches, run each grant through the Runner, renew the
// leases of running runs with batched heartbeats, and report outcomes in
// batches. Everything runs on the worker's event loop (Timers); all I/O goes
// through Transport and Runner.
//
// Lease deadline (the worker's own clock). For a grant, the worker may act
// until  sent + lease_ttl x (1 - max_drift) - margin,  where `sent` is when it
// *sent* the claim (or the last accepted renewal): the store started the lease
// no earlier than that, and the worker's clock may run slow by max_drift. At
// that deadline it stops the run (Runner::stop) and reports nothing as
// success: after it the lease may have lapsed and another worker may hold a
// newer token. A renewal rejected with a stale token stops the run the same
// way.
//
// Run timeout. Separately, the job's own timeout bounds the run:
// the worker stops it at  start + timeout  (its own clock; the Runner is also
// given that deadline) and reports kTimedOut, which the retry policy treats as
// a failure. So a run ends by min(lease deadline, start + timeout).
//
// Reports. A finished run is reported with its token; the report is retried
// (same token; bounded, jittered backoff) until the node answers it
// definitely (accepted or rejected). A worker never treats "no answer" as
// "recorded" or as "failed".
//
// Duplicates. Responses are matched by request id; one the worker is not
// waiting for (a duplicate, a replay, a late answer) is ignored.
//
// stop() is a crash: running attempts are abandoned (their runner outcomes
// ignored), timers cancelled, state dropped.
//
// Drain (graceful shutdown). drain() stops claiming: no new claim is sent,
// and a claim in flight (a parked long-poll) is abandoned: the drain does not
// wait for it, and grants it still brings are not started but handed back
// at once (reported kStopped, so the store re-queues them as a release; like
// a lapse, that ends the attempt). Should the process exit first, their
// leases lapse on the store and the reaper re-queues them. Running attempts go on (heartbeats
// continue) and their completions are reported as usual; once nothing runs and every report was
// answered or given up after its bounded retries, `drained` is called, once.
// For a drain timeout, stop_running() stops every running attempt now
// (Runner::stop); each then reports kStopped, which hands its run back to
// be claimed again at once, and the drain completes when those reports are
// answered.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "core/kernel/lease_config.h"
#include "core/kernel/node_support.h"
#include "core/kernel/planted_bugs.h"
#include "core/kernel/run_ref.h"
#include "core/kernel/wire.h"
#include "core/ports/clock.h"
#include "core/ports/event_log.h"
#include "core/ports/metrics.h"
#include "core/ports/random.h"
#include "core/ports/runner.h"
#include "core/ports/timers.h"
#include "core/ports/transport.h"

namespace kairos {

struct WorkerConfig {
  std::string worker_id;
  std::vector<PeerId> nodes;  // scheduler nodes, tried in turn after a timeout
  std::uint32_t max_concurrent = 4;
  // Long-poll bound sent to the node.
  absl::Duration claim_wait = absl::Microseconds(lease_defaults::kClaimWaitUs);
  LeaseConfig lease;  // heartbeat_period, max_drift_ppm, margin, rpc_timeout
  std::uint32_t max_report_attempts = 8;
  absl::Duration retry_backoff_base = absl::Milliseconds(50);
  absl::Duration retry_backoff_max = absl::Seconds(2);
  PlantedBugs bugs;
  // Payload kinds this worker runs (kAcceptCommand | kAcceptHttp, job_store.h);
  // the node never grants it a run of another kind.
  std::uint8_t accepts = kAcceptAll;
  // Simulator only; empty in production: see SchedulerNodeConfig::crash_point.
  std::function<bool(std::string_view point)> crash_point;
};
// Errors name the field ("worker.max_concurrent: ...").
absl::Status validate(const WorkerConfig& config);

class Worker {
 public:
  Worker(const Clock& clock, Timers& timers, Transport& transport, Runner& runner, Random& random,
         EventLog& events, Metrics& metrics, WorkerConfig config);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  void start();
  void stop();  // crash; construct a new Worker to restart
  // Graceful drain (see the file comment): `drained` runs on the worker's
  // loop once nothing runs and no report is outstanding (at once, posted,
  // when that is already so). A second drain() replaces the callback. After
  // stop() the callback is never called.
  void drain(std::function<void()> drained);
  // Stops every running attempt now through Runner::stop (the drain
  // timeout path); their outcomes are reported as usual.
  void stop_running();
  bool draining() const { return draining_; }

  const std::string& id() const { return config_.worker_id; }
  std::size_t running() const { return active_.size(); }
  std::size_t pending_reports() const { return reports_.size(); }

 private:
  struct Active {
    wire::WireGrant grant;
    RunHandle handle = 0;
    bool started = false;
    absl::Time lease_deadline;
    // Where lease_deadline comes from: the send time of the claim or renewal
    // that took or last extended the lease, and the lease length granted.
    absl::Time lease_sent;
    absl::Duration lease_ttl;
    std::optional<TimerId> deadline_timer;
    bool lost = false;  // stopped by deadline or rejected renewal: report nothing
    // Per-run timeout, separate from the lease: at start + the
    // job's timeout the worker stops the run and reports kTimedOut.
    std::optional<TimerId> timeout_timer;
    bool timed_out = false;
  };
  struct Report {
    CompleteItem item;
    std::uint32_t attempts = 0;
  };
  // A report as it was sent: its run and token.
  struct SentReport {
    RunId run;
    std::uint64_t token = 0;
  };
  struct Outstanding {
    std::uint64_t request_id = 0;
    absl::Time sent;
    TimerId timer = 0;
  };
  using Alive = std::shared_ptr<bool>;

  bool crashed_at(std::string_view point) const {
    return config_.crash_point && config_.crash_point(point);
  }

  void on_message(PeerId from, std::string_view bytes);
  // Whether a claim may be sent now: not stopped or draining, none in
  // flight or backing off, a slot free.
  bool can_claim() const;
  void maybe_claim();
  void on_claim_response(wire::ClaimResponse response);
  void start_run(wire::WireGrant grant, absl::Time sent);
  // Planted bug path (PlantedBugs::ack_before_effect) of start_run.
  void planted_ack_at_start(const RunId& id, std::uint64_t token);
  void arm_deadline(const RunId& id);
  void on_deadline(const RunId& id);
  void on_timeout(const RunId& id, std::uint64_t token);
  void on_run_done(const RunId& id, std::uint64_t token, RunOutcome outcome);
  void heartbeat();
  void on_renew_response(const wire::RenewResponse& response);
  void flush_reports();
  // flush_reports() and maybe_claim() once the loop's current turn is over
  // (posted; at most one pending).
  void flush_soon();
  // Moves the next batch of reports (bounded by count and bytes) into
  // complete_items_, counting an attempt for each, and returns them.
  std::vector<CompleteItem> take_reports();
  // The reports in flight got no answer (a timeout) or a refusal: the
  // completion in flight is over, they are sent again after a backoff;
  // with `abandon_exhausted` those out of attempts are given up.
  void retry_reports_later(bool abandon_exhausted);
  // Queues `rep` as its run's report. A report of an older token of the run
  // still waiting is superseded (dropped, with an event saying so): its
  // attempt was fenced by the grant the new report closes.
  void queue_report(Report rep);
  // The waiting report `sent` carried, if it is still that token's.
  std::map<RunId, Report>::iterator waiting_report(const SentReport& sent);
  // The node's verdicts on complete_items_, one each, in order.
  void apply_verdicts(const std::vector<wire::WireVerdict>& results);
  // Draining: calls the drained callback once nothing runs or is reported.
  void check_drained();
  void on_complete_response(const wire::CompleteResponse& response);
  void send(const wire::Message& m);
  void record(Event e);
  void rotate_node();
  absl::Duration backoff(std::uint32_t attempt);
  std::uint64_t next_request_id() { return next_request_id_++; }

  const Clock& clock_;
  Timers& timers_;
  Transport& transport_;
  Runner& runner_;
  Random& random_;
  EventLog& events_;
  Metrics& metrics_;
  EventCounters event_counters_{metrics_};  // per-kind counters of record()
  WorkerConfig config_;

  Alive alive_;
  bool started_ = false;
  bool stopped_ = false;
  std::size_t node_index_ = 0;
  std::uint64_t next_request_id_ = 1;
  std::optional<Outstanding> claim_;
  std::uint32_t claim_failures_ = 0;
  std::optional<TimerId> claim_retry_timer_;
  std::optional<TimerId> heartbeat_timer_;
  // Renewals in flight: request id -> (send time, runs and tokens).
  std::map<std::uint64_t, std::pair<absl::Time, std::vector<RenewItem>>> renews_;
  // The completion in flight: a CompleteRequest, or a claim carrying
  // reports (then complete_ and claim_ share the request id, and the claim's
  // timer answers for both).
  std::optional<Outstanding> complete_;
  // What the in-flight completion carries: each report's run and token (a
  // newer attempt's report of the run may have replaced it meanwhile).
  std::vector<SentReport> complete_items_;
  std::optional<TimerId> flush_timer_;
  bool flush_posted_ = false;  // flush_soon() is pending
  std::map<RunId, Active> active_;
  std::map<RunId, Report> reports_;
  bool draining_ = false;
  std::function<void()> drained_;
};

}  // namespace kairos
