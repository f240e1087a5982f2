// Replay: the store facts of a history (sim/oracle/history.h) replayed once in
// commit order, skipping commits a store crash rolled back. The replay only
// tracks state and records what it saw; it judges nothing. What it computes:
//   - every applied leader-record write, with the record it replaced
//     (LeaderStep);
//   - every applied run-record write, with the run's state just before it,
//     whether it created or granted the run, the shard's leader record at
//     that commit, the job's highest token so far and the acknowledged cancel
//     of its incarnation (RunStep);
//   - the per-run summary after the last commit (Track), the workers granted
//     each (job, token), and the jobs the client controlled;
//   - for the policy invariants (PolicyFacts), the run writes replayed per
//     commit with each shard's ready runs by priority: every grant with the
//     ready runs it was chosen over, every retry, each job's unfinished runs
//     after each commit; and the ledger's deciding writes.
// The invariants (sim/oracle/checker.cc, sim/oracle/policy_checks.cc) are
// functions over these facts; they record findings through Findings, which
// holds the per-invariant cap and refuses a name sim/oracle/invariant_names.h
// does not register. Internal to the checker.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "sim/oracle/checker.h"
#include "sim/oracle/history.h"

namespace kairos::sim {

inline constexpr std::size_t kMaxPerInvariant = 20;  // enough to act on

inline std::string time_text(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", t, absl::UTCTimeZone());
}
inline std::string us_text(std::int64_t us) { return time_text(absl::FromUnixMicros(us)); }
// Whether a store crash rolled back commit `commit`.
inline bool lost(const History& h, std::uint64_t commit) {
  return (*h.commits)[commit].state == StoreCommit::State::kLost;
}

// The findings of one invariant: at most kMaxPerInvariant, each stamped with
// the invariant's name. Constructing one for a name that is not registered
// (is_registered_invariant) is a bug and aborts.
class Findings {
 public:
  Findings(std::string_view invariant, std::vector<Violation>& out);
  std::string_view invariant() const { return invariant_; }
  // False once the cap is reached (further add()s are dropped).
  bool open() const { return added_ < kMaxPerInvariant; }
  void add(Violation v);

 private:
  std::string_view invariant_;
  std::vector<Violation>& out_;
  std::size_t added_ = 0;
};

// A shard's leader record as the replay last saw it.
struct LeaderView {
  std::uint32_t holder = Interner::kNone;  // kNone: no record yet
  std::uint64_t epoch = 0;
  std::int64_t expiry_us = 0;
  bool known() const { return holder != Interner::kNone; }
};

// One applied leader-record write and the record it replaced.
struct LeaderStep {
  const LeaderFact* fact = nullptr;
  LeaderView before;
};

// One applied run-record write and what the replay knew just before it.
// (A day-long history has millions: the fields are laid out without padding.)
struct RunStep {
  const RunFact* fact = nullptr;
  const StoreCommit* commit = nullptr;
  std::uint64_t before_token = 0;  // highest token so far
  std::int64_t before_lease_expiry_us = 0;
  // The holder of the lease standing before this write (interned worker id;
  // meaningful when before_state is leased) and the true time of the commit
  // that granted it.
  std::uint32_t before_owner = 0;
  absl::Time before_granted_at = absl::InfinitePast();
  // The shard's leader record at this commit (!known(): none yet).
  LeaderView leader;
  // The job's highest granted token before this write (grants only).
  std::uint64_t job_max_token = 0;
  // When the client saw the cancel of this run's (job, incarnation)
  // acknowledged, if it did (null: it did not); points into
  // Replay::cancel_acks.
  const absl::Time* cancel_acked = nullptr;
  bool created = false;  // the first write of this run
  // A grant: the write leases the run under a token it did not hold leased.
  bool grant = false;
  // The run before this write (meaningless when created).
  RunState before_state = RunState::kReady;
};

using JobKey = std::pair<std::uint32_t, std::uint64_t>;  // (interned job id, incarnation)

// What the policy invariants read (sim/oracle/policy_checks.cc): the run
// facts replayed per commit with each shard's ready runs by priority, and the
// ledger's deciding writes. Judged against the client's view of each job.
struct PolicyFacts {
  // The client's jobs and the occurrences its schedule makes certain (by
  // nominal time), by (job, incarnation).
  std::map<JobKey, const ClientJob*> jobs;
  std::map<JobKey, std::vector<const Occurrence*>> expected;
  // A cancelled incarnation's certain occurrences whose fire time had come
  // by the store time of the commit that cancelled it (by nominal time).
  std::map<JobKey, std::vector<const Occurrence*>> cancelled_due;
  const ClientJob* job(JobKey k) const {
    auto it = jobs.find(k);
    return it == jobs.end() ? nullptr : it->second;
  }

  // The first ready run of one priority band of a shard.
  struct Band {
    std::int32_t priority = 0;
    std::int64_t first_us = 0;
    std::uint32_t first = 0;  // interned run key
  };
  // A write that leases a run under a token it did not hold leased, with
  // the run as it was before the commit.
  struct Grant {
    const RunFact* fact = nullptr;
    std::int64_t t = 0;      // store time of the commit
    bool was_ready = false;  // the run existed and was ready before the commit
    std::int64_t ready_us = 0;
    std::int32_t priority = 0;
    std::uint32_t shard = 0;
    // When was_ready: the shard's runs still ready after the commit took its
    // own out -- the oldest of them, and the first of each band from the
    // run's priority up (bands without ready runs left out).
    bool has_oldest = false;
    std::int64_t oldest_us = 0;
    std::uint32_t oldest = 0;
    std::int32_t oldest_priority = 0;
    std::vector<Band> bands;  // by ascending priority
  };
  std::vector<Grant> grants;  // in commit order
  // A leased run put back to ready after a failed or timed-out attempt.
  struct Retry {
    const RunFact* fact = nullptr;
    std::int64_t t = 0;  // store time of the commit
  };
  std::vector<Retry> retries;  // in commit order
  // A job's unfinished runs after a commit that wrote some of them.
  struct Unfinished {
    JobKey job;
    std::uint64_t commit = 0;
    std::int64_t t = 0;
    std::int64_t active = 0;   // ready or leased
    std::int64_t waiting = 0;  // queued behind a predecessor (overlap queue)
  };
  std::vector<Unfinished> unfinished;  // in commit order, then by job

  // The ledger: each key's first (deciding) write, in commit order, from
  // the key facts of commits that were not rolled back; and, per job, each
  // key's latest write (not a manual run's), by first nominal.
  std::vector<const LedgerFact*> firsts;
  std::map<JobKey, std::vector<const LedgerFact*>> latest;
};

// The store facts replayed in commit order; what the invariants read.
struct Replay {
  struct Track {
    bool exists = false;
    RunState state = RunState::kReady;
    std::uint64_t token = 0;
    std::int64_t lease_expiry_us = 0;
    std::uint32_t owner = 0;                       // the latest write's
    absl::Time granted_at = absl::InfinitePast();  // true time of the latest grant
    std::int64_t due_us = 0;
    std::uint32_t job = 0;
    std::uint64_t incarnation = 0;
    std::int64_t offset_us = 0;             // true - store time at its creation commit
    std::int64_t first_grant_us = -1;       // store time
    std::optional<absl::Time> terminal_at;  // true time of the terminal commit
    std::int64_t created_ready_us = 0;      // ready_at when created (catch-up spacing, queue)
    std::int64_t created_us = 0;            // store time of the creating commit
    bool created_waiting = false;           // created kWaiting (overlap queue)
  };
  // Acknowledged cancels by (interned job, incarnation): the earliest ack
  // (what RunStep::cancel_acked points to).
  std::map<std::pair<std::uint32_t, std::uint64_t>, absl::Time> cancel_acks;
  // Empty when the history has no store facts.
  std::vector<LeaderStep> leader_steps;  // in commit order
  std::vector<RunStep> run_steps;        // in commit order
  std::vector<Track> runs;  // after the last commit, by interned run key (dense, deterministic)
  // (job, token) -> workers granted that token.
  std::map<std::pair<std::uint32_t, std::uint64_t>, std::vector<std::uint32_t>> grants;
  // Interned ids of the jobs the client paused, resumed or rescheduled
  // (controlled_jobs()).
  std::set<std::uint32_t> controlled;
  PolicyFacts policy;
};

// Replays `h` once: the steps, the tracks, the grants, the controlled jobs
// and the policy facts.
Replay replay_history(const History& h);

// One line describing a run fact, for evidence.
std::string fact_text(const History& h, const RunFact& f);

// The report rules (sim/oracle/report_checks.cc).
void runs_record_reports(const History& h, const Replay& r, Findings& out);
void report_verdicts_truthful(const History& h, const Replay& r, Findings& out);
void report_events_truthful(const History& h, const Replay& r, Findings& out);
void reports_abandoned_unanswered(const History& h, const Replay& r, Findings& out);
void reports_settle(const History& h, const Replay& r, Findings& out);
void job_events_truthful(const History& h, const Replay& r, Findings& out);
// The policy invariants (sim/oracle/policy_checks.cc), rules over
// Replay::policy.
void ledger_one_outcome(const History& h, const Replay& r, Findings& out);
void attempts_bounded(const History& h, const Replay& r, Findings& out);
void retry_backoff(const History& h, const Replay& r, Findings& out);
void overlap_respected(const History& h, const Replay& r, Findings& out);
void catch_up_bounded(const History& h, const Replay& r, Findings& out);
void misfire_threshold(const History& h, const Replay& r, Findings& out);
void priority_order(const History& h, const Replay& r, Findings& out);
// The retry delay after failed attempt k as docs/POLICIES.md states it
// (sim/oracle/policy_checks.cc, written from the formula, not with the
// kernel's policy functions): the base min(retry_max, retry_initial x
// (multiplier/100)^(k-1)), the window's floor base - base x jitter/100, and
// the delay the run's deterministic jitter picks inside [floor, base].
std::int64_t documented_retry_base_us(const JobPolicy& p, std::uint32_t k);
std::int64_t documented_retry_floor_us(const JobPolicy& p, std::uint32_t k);
std::int64_t documented_retry_delay_us(const JobPolicy& p, std::string_view key, std::uint32_t k);
// The two-sided policy rules (sim/oracle/policy_model_checks.cc).
void overlap_reaches_limit(const History& h, const Replay& r, Findings& out);
void attempts_counted(const History& h, const Replay& r, Findings& out);
// Ledger retention (sim/oracle/retention_checks.cc).
void ledger_retention(const History& h, const Replay& r, Findings& out);
void ledger_count_matches(const History& h, const Replay& r, Findings& out);
// The job-control rules (sim/oracle/control_checks.cc).
void paused_fires_nothing(const History& h, const Replay& r, Findings& out);
void reschedule_withdraws_unclaimed(const History& h, const Replay& r, Findings& out);
void generation_moves_with_changes(const History& h, const Replay& r, Findings& out);
// The true-time execution rules (sim/oracle/execution_checks.cc).
void execution_within_lease(const History& h, const Replay& r, Findings& out);
void executions_never_overlap(const History& h, const Replay& r, Findings& out);
void deadline_inside_lease(const History& h, const Replay& r, Findings& out);
void grant_started_within_deadline(const History& h, const Replay& r, Findings& out);
void lease_loss_stops_execution(const History& h, const Replay& r, Findings& out);
void reaper_waits_for_expiry(const History& h, const Replay& r, Findings& out);
void renewal_within_lease(const History& h, const Replay& r, Findings& out);
void leader_writes_within_lease(const History& h, const Replay& r, Findings& out);
void leader_renews_on_cadence(const History& h, const Replay& r, Findings& out);
void leader_acts_within_own_deadline(const History& h, const Replay& r, Findings& out);
void fenced_leader_stops(const History& h, const Replay& r, Findings& out);
void handback_after_holder_died(const History& h, const Replay& r, Findings& out);
// A hand-back (JobStore::release_abandoned, a restarted worker's, as
// `kairos server` does at startup): a write that ends a leased attempt as
// lapsed, committed by the lease holder's own node rather than a reaper.
bool handed_back(const History& h, const RunStep& s);
// The graceful-stop rules (sim/oracle/shutdown_checks.cc).
void drain_starts_nothing(const History& h, const Replay& r, Findings& out);
void drain_completes(const History& h, const Replay& r, Findings& out);
void drain_loses_nothing(const History& h, const Replay& r, Findings& out);
void leave_releases_before_depart(const History& h, const Replay& r, Findings& out);
// When a wait of `bound` that began at `from` starts counting, faults
// considered: each fault window (but those named `except`) that began
// before the wait had run out moves its start to that window's heal.
absl::Time wait_start_after_faults(const History& h, absl::Time from, absl::Duration bound,
                                   std::string_view except = {});
// The client's boundary inputs and filtered/bounded queries
// (sim/oracle/query_checks.cc).
void inputs_within_documented_limits(const History& h, const Replay& r, Findings& out);
void queries_match_the_model(const History& h, const Replay& r, Findings& out);
void batches_all_or_nothing(const History& h, const Replay& r, Findings& out);
void updates_follow_if_match(const History& h, const Replay& r, Findings& out);
// The scenario's expectations (sim/oracle/expectations.cc), and one run
// counter of an expectation (`runs.*`, `ledger.*`) over the jobs of job line
// `job` (0: every job).
void expectations_met(const History& h, const Replay& r, Findings& out);
std::uint64_t run_counter(const History& h, const Replay& r, std::string_view fact,
                          std::uint32_t job);
// Interned ids of the jobs the client paused, resumed or rescheduled (from
// its client.paused / client.resumed / client.rescheduled events).
std::set<std::uint32_t> controlled_jobs(const History& h);
// The completion bound of one job's occurrences (its attempts, backoffs and
// overlap policy on top of the scenario's Bounds).
absl::Duration done_bound(const Bounds& b, const ClientJob& j);

}  // namespace kairos::sim
