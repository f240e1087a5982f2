// Workload: the simulated users of Kairos. It lives on the cluster's client
// node and drives the real job API -- SchedulerNode::create_job, cancel_job,
// pause_job, resume_job, reschedule_job and trigger_job -- on a live
// scheduler node chosen at random, as an API client would.
//
// The plan is drawn at construction from the scenario and a Random (one seed,
// one plan): recurring cron jobs in their zones (created in the first 30 s),
// interval jobs (first fire within one period), one-off jobs (due uniformly
// in [0, within), each created up to 10 minutes before it is due, so they
// arrive over time), each with its line's policy (a priority range draws one
// priority per job) and its run profile in the payload (sim/world/sim_runner.h);
// cancels of randomly chosen recurring jobs at their times; and the job
// control directives (`pause`, `reschedule`, `trigger`): each picks `count`
// distinct recurring jobs (of one job line, or of all) and acts on each at
// its time; a pause with `for` resumes each job that long later (the resume
// is sent once the pause was answered, and never when the pause was refused).
// A request that gets no answer within kRetryAfter (its scheduler crashed,
// paused or was cut off) is sent again to another scheduler: every body is
// idempotent, so a retry is safe (a trigger re-sent after a lost answer may
// legitimately make a second manual run). kUnavailable ("outcome unknown
// after retries") is no answer either; any other error is a definite answer
// that ends the request (FailedPrecondition from a trigger the overlap policy
// refuses, or for a cancelled job).
//
// What the client was told is the checker's ground truth: each acknowledged
// create (client_jobs(): its incarnation and creation time, the policy it
// sent, the longest one attempt may execute), each acknowledged cancel, and,
// through expected(), which occurrences must fire given the control requests
// and their answers. Everything is recorded as client events:
// "client.job_created", "client.cancel_acked", "client.paused",
// "client.resumed", "client.rescheduled", "client.triggered" (job,
// incarnation; a trigger also the manual run's nominal time) and
// "client.control_refused" (job, op, error). The state lives in this object
// (owned by the cluster), so a crash of the client node only delays
// requests: start() re-arms what is outstanding.
//
// Reads (`reads every=D page=N`, off by default): every D the client reads
// through the job API from a random scheduler — one job, a full listing in
// pages of N, a job's ledger or its runs, or the cluster view — and checks
// the answer against what it had been told before it sent the read: an
// acknowledged job exists, at no older generation or incarnation than the
// client learned, cancelled once its cancel was acknowledged (until it is
// re-created); a listing that pages through every job holds each job whose
// create was acknowledged exactly once; a ledger answer never records an
// occurrence twice and a runs answer never lists a run twice; neither
// exceeds its limit. A failed check is the client event
// "client.read_anomaly" (op, job, detail), which the checker reports
// (reads-see-acknowledged-writes). Reads that get no answer or an error are
// not judged.
//
// Inputs (`inputs every=D`, off by default): every D the client sends one
// request whose input lies exactly at a documented limit of the job API or
// one past it, alternately, cycling through a fixed list (input_probes() in
// sim/scenario/workload_queries.cc: label value length and characters,
// label key length and count, namespace and job id length, every bounded
// policy number, a policy update, list page sizes filtered and not, ledger
// and runs limits, a control request's id length). Each definite answer is
// the client event "client.input_answered" (probe, bound "at" or "past",
// code; a create also its job, namespace and labels), which the checker
// judges (inputs-within-documented-limits): past the limit refused with
// InvalidArgument and nothing written, at the limit accepted. Probe jobs
// live in their own namespace "probes", fire a day after the run ends and
// are never in the checker's ground truth of occurrences.
//
// Queries (`queries every=D page=N`, off by default): the workload's jobs
// carry the namespace "ns-a" or "ns-b" (alternately) and labels tier=t0..t2
// and line=K (their job line), recorded on "client.job_created"; every D the
// client sends one of: a listing with a namespace and/or label selector (or
// none) in pages of N, following the page token ("client.list_started",
// then "client.listed" with the ids of every page); a walk of one job's runs
// in pages of N, each page's lower bound just past the previous page's last
// run ("client.runs_walked"); or one job's ledger in a [from, to) window
// chosen from records seen before, inside a coalesced range when one was
// seen ("client.ledger_queried"). The checker judges them against its model
// of what the client was told (queries-match-the-model): pages sorted,
// within their limit and bounds, no duplicates, the filter exactly applied,
// and every acknowledged job or entry seen before within the bounds there.
//
// Batches (`batches every=D`, off by default): every D the client sends one
// request of a fixed cycle (sim/scenario/workload_batches.cc) on jobs of its
// own, in the namespace "batches", due a month after the start (they never
// fire): a valid batch of creates at documented limits; one bad item among
// good ones; several bad items; a duplicate id; creates and updates of its
// earlier jobs with one item left unchanged; updates with one bad item; the
// empty batch; kMaxBatchSize + 1 items; kMaxBatchSize items; an apply with a
// matching If-Match, a stale one, one for an absent job, and one over a
// cancelled job's tombstone. One request is in flight at a time. Each
// definite answer is "client.batch_answered", judged by
// batches-all-or-nothing.
//
// Updates (`updates every=D`, off by default): every D from D on, up to two
// minutes before the quiet tail, an in-place update (SchedulerNode::update_job)
// of a recurring workload job that has no cancel planned, planned as a
// control request (below: one at a time per job, If-Match): kinds cycle
// change, stale, change, noop, change (with a namespace), rename. A change
// sets an absolute priority (one above the known one, mod 10) and the label
// rev=N (N the update's number, so every requested spec is unique); stale
// is the same with If-Match one below the known generation; noop sets the
// known priority again with a wrong If-Match; rename changes the id. Each
// definite answer is "client.update_answered", judged by
// updates-follow-if-match. Updates never change the schedule or a policy
// number the checker's policy model reads (only the priority, which the
// store's run records carry), so the ground truth of occurrences is that of
// the schedule alone.
//
// Control requests carry If-Match. The client sends the requests on one job
// one at a time, in plan order (a request waits until every earlier one on
// that job was answered, acknowledged or refused), and each carries the
// generation the client last learned for the job (from the create's answer,
// the previous acknowledgement, or the current generation a refusal with
// is_generation_mismatch() names) — the same on every retry of that request.
// That is what makes a stale copy harmless: a request whose first send went
// to a scheduler that then stalls runs when that scheduler resumes, possibly
// after a later request on the same job was acknowledged (a pause landing
// after its resume, an older reschedule after a newer one); by then the
// job's generation has moved on, so the stale body writes nothing (a
// request already in effect succeeds without writing, which also keeps a
// retry after a lost reply idempotent). Such a late refusal of an answered
// request is marked "client.stale-control-refused". Requests on one job may
// therefore be planned seconds apart. Triggers take no precondition (they
// do not change the job); cancels neither (a cancel is meant to win).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/kernel/job_store.h"
#include "core/kernel/records.h"
#include "core/ports/random.h"
#include "sim/oracle/history.h"
#include "sim/scenario/scenario.h"

namespace kairos {
class SchedulerNode;
}  // namespace kairos

namespace kairos::sim {

class Cluster;
struct NodeContext;

// How far around a control request the client does not know what the
// schedule was (the request may apply at any point between its first send
// and its answer; clock differences and dispatch lag are absorbed too).
inline constexpr absl::Duration kControlMargin = absl::Minutes(2);

// What the client knows about one job's schedule over time: the schedule it
// was created with, and the control requests it sent (true times).
struct JobTimeline {
  struct Reschedule {
    absl::Time sent;                  // first send
    std::optional<absl::Time> acked;  // the answer; none: never acknowledged (or refused)
    ScheduleSpec schedule;            // the new schedule
  };
  struct Pause {
    absl::Time sent;       // first send of the pause
    bool resumed = false;  // a resume of it was acknowledged
  };
  std::string id;
  std::uint64_t incarnation = 0;
  ScheduleSpec schedule;
  absl::Time created_at;  // store clock, from the create answer
  std::vector<Reschedule> reschedules;
  std::vector<Pause> pauses;
};

// The occurrences of `job` that must get exactly one ledger outcome and reach
// a terminal state: fire time <= until, and, with m = kControlMargin,
// - of the creation schedule: from created_at (a one-off: its one fire) and
//   before the first reschedule's send - m;
// - of a reschedule's new schedule, when it was acknowledged at a: fire time
//   > a + m, and before the next reschedule's send - m;
// - a reschedule never acknowledged (or refused) at send s: nothing with
//   fire time >= s - m, of any schedule;
// - a pause sent at p whose resume was never acknowledged (or that has no
//   resume): nothing with fire time >= p - m. A pause whose resume was
//   acknowledged changes nothing (the kernel records the occurrences that
//   fell in the pause at resume).
// Reschedules compose in the order of their first send. Fire times are
// compared with true times (the margin absorbs the store clock's offset).
// Jobs with a requested cancel are not passed here (the checker's
// final-state rule covers them) -- except with `pauses_cut` false, for the
// occurrences due by an acknowledged cancel: those need an outcome, not a
// run, and one that fell in a pause gets one all the same (`paused`, when
// the cancel closes the books), so a pause cuts nothing there.
std::vector<Occurrence> expected_occurrences(const JobTimeline& job, absl::Time until,
                                             bool pauses_cut = true);

// A window in which a pause held one job's occurrences back: from the
// pause's first send to its resume's answer (true times; `to` is
// InfiniteFuture when the job was never resumed). The run the misfire policy
// makes at resume is late by design, not by a fault.
struct PauseWindow {
  std::string job;
  std::uint64_t incarnation = 0;
  absl::Time from, to;
};

class Workload {
 public:
  static constexpr absl::Duration kRetryAfter = absl::Seconds(10);

  Workload(const Scenario& scenario, absl::Time start, Random random);

  // (Re)starts the client process on `ctx`'s node: arms every pending
  // create, cancel and control request.
  void start(NodeContext& ctx);

  // Occurrences due by `until` of every acknowledged job that was never
  // cancelled, under its control requests (expected_occurrences()).
  std::vector<Occurrence> expected(absl::Time until) const;
  // For each acknowledged cancel, the occurrences of the cancelled
  // incarnation the schedule and the control answers make certain, up to
  // the cancel's answer (History::cancelled_due).
  std::vector<Occurrence> cancelled_due() const;
  const std::vector<CancelAck>& cancels() const { return acked_cancels_; }
  // One entry per acknowledged create, in the order the answers came.
  const std::vector<ClientJob>& client_jobs() const { return client_jobs_; }
  // Every pause that was sent, in plan order (jobs whose create was acknowledged).
  std::vector<PauseWindow> pause_windows() const;
  std::size_t jobs() const { return jobs_.size(); }
  std::size_t created() const;
  // Control requests (resumes included) that got a definite answer:
  // acknowledged, or refused.
  std::size_t controls_acked() const;
  std::size_t controls_refused() const;

 private:
  struct PlannedJob {
    kairos::JobSpec spec;
    absl::Duration create_at;
    bool recurring = false;
    std::size_t line = 0;  // index of its `job` line
    bool cancel_requested = false;
    absl::Duration longest_run;
    std::optional<JobRecord> acked;  // what create_job answered
    std::uint64_t attempts = 0;
    std::uint64_t generation = 0;         // the job's generation as the client last learned it
    std::uint64_t cancel_generation = 0;  // the generation its acknowledged cancel wrote
    // The spec as the client last learned it stored: the one created, with
    // acknowledged reschedules and updates applied (`updates` only).
    kairos::JobSpec current;
  };
  struct PlannedCancel {
    absl::Duration at;
    std::size_t job;  // index into jobs_
    bool acked = false;
    // Re-creation under the same id (`cancel ... recreate=D`): sent D after
    // the cancel's answer, retried like a create until answered.
    std::optional<absl::Duration> recreate_after;
    absl::Time acked_at;             // true time of the cancel's answer
    std::optional<JobRecord> again;  // what the re-creating create_job answered
  };
  enum class Op : std::uint8_t { kPause, kResume, kReschedule, kTrigger, kUpdate };
  enum class State : std::uint8_t { kPending, kAcked, kRefused, kDropped };
  struct PlannedControl {
    Op op = Op::kPause;
    absl::Duration at;
    std::size_t job = 0;                       // index into jobs_
    std::size_t pause = 0;                     // kResume: its pause (index into controls_)
    ScheduleSpec schedule;                     // kReschedule
    bool force = false;                        // kTrigger: past the overlap policy
    std::optional<absl::Time> sent, answered;  // true times
    // The If-Match generation, fixed at the first send (retries repeat it).
    std::optional<std::uint64_t> expected;
    State state = State::kPending;
    // kUpdate: its number, and what it asks for, fixed at the first send
    // (absolute values, so a retry after a lost answer finds it in effect).
    std::uint64_t update = 0;
    std::optional<kairos::JobSpec> target;
    std::optional<std::uint64_t> known;  // the generation the client knew at the first send
  };
  static std::string_view name(Op op);
  void create(std::size_t job);
  void cancel(std::size_t index);
  void recreate(std::size_t index);
  // Arms the re-creation of cancel `index` (its cancel acknowledged).
  void arm_recreate(std::size_t index);
  // A DataLoss answer (a record of the job does not decode): the client
  // event client.request_undecodable, for the checker.
  void note_undecodable(const std::string& job, std::string_view op, const absl::Status& status);
  void control(std::size_t index);
  // True while a control request on the same job planned before `index`
  // (earlier `at`, or the same `at` and an earlier line) has no answer.
  bool waits_for_earlier(std::size_t index) const;
  // A control request's answer: ok (with the job's incarnation, its
  // generation after the request — none for a trigger — and, for a trigger,
  // the run's nominal time) or an error.
  void answered(std::size_t index, const absl::Status& status, std::uint64_t incarnation,
                std::optional<std::uint64_t> generation, std::optional<absl::Time> run_nominal);
  JobTimeline timeline(std::size_t job) const;
  // The reads (see the file comment): the next one after `reads_.every`.
  void arm_reads();
  void read_once();
  void read_job(std::size_t job);
  void read_list();
  void read_ledger(std::size_t job);
  void read_runs(std::size_t job);
  void read_anomaly(std::string_view op, std::string_view job, std::string detail);
  // Inputs and queries (sim/scenario/workload_queries.cc; see the file comment).
  void label_jobs_for_queries();
  void arm_inputs();
  void send_input();
  void input_answered(std::string_view probe, bool past, const absl::Status& status,
                      const kairos::JobSpec* created);
  void arm_queries();
  void query_once();
  void query_list();
  void query_runs(std::size_t job);
  void query_ledger(std::size_t job);
  std::uint64_t known_incarnation(std::size_t job) const;
  // Updates (`updates`; sim/scenario/workload.cc) and batches
  // (sim/scenario/workload_batches.cc).
  void plan_updates(const Scenario& s, const std::vector<std::size_t>& recurring);
  void send_update(std::size_t index, SchedulerNode& node);
  void update_answered(std::size_t index, const absl::StatusOr<ControlResult>& r);
  void arm_batches();
  void send_batch();
  void forget_in_flight();  // the request in flight got no answer: its jobs are not known
  struct BatchJob {
    kairos::JobSpec spec;  // as stored, to the client's knowledge
    std::uint64_t generation = 0;
    std::uint64_t incarnation = 0;
  };

  ReadSpec reads_;
  InputSpec inputs_;
  // With `inputs`: the scenario, for the node configurations it derives.
  std::shared_ptr<const Scenario> config_scenario_;
  QuerySpec queries_;
  BatchSpec batches_;
  UpdateSpec updates_;
  std::uint64_t batches_sent_ = 0;
  bool batch_in_flight_ = false;
  absl::Time batch_sent_at_;
  std::vector<std::string> batch_ids_in_flight_;
  std::uint64_t batch_request_ =
      0;  // numbers the requests: a late answer of an abandoned one is void
  std::map<std::string, BatchJob> batch_jobs_;  // the batch jobs whose create was acknowledged
  absl::Time start_;
  std::uint64_t inputs_sent_ = 0;
  std::uint64_t listings_ = 0;
  std::optional<std::string> policy_target_;  // a probe job accepted at the limits
  std::optional<std::string> long_id_;        // the probe job whose id is at its limit
  // Per job (index into jobs_): the ledger ranges [nominal, through] seen.
  std::map<std::size_t, std::vector<std::pair<absl::Time, absl::Time>>> ledger_seen_;
  NodeContext* ctx_ = nullptr;
  std::uint64_t generation_ = 0;  // bumped at every start(): old timers are void
  Random random_;
  std::vector<PlannedJob> jobs_;
  std::vector<PlannedCancel> cancels_;
  std::vector<PlannedControl> controls_;
  std::vector<CancelAck> acked_cancels_;
  std::vector<ClientJob> client_jobs_;
};

}  // namespace kairos::sim
