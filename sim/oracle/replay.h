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
//     each (job, token), and the jobs the client controlled.
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
struct RunStep {
  const RunFact* fact = nullptr;
  const StoreCommit* commit = nullptr;
  bool created = false;  // the first write of this run
  // A grant: the write leases the run under a token it did not hold leased.
  bool grant = false;
  // The run before this write (meaningless when created).
  RunState before_state = RunState::kReady;
  std::uint64_t before_token = 0;  // highest token so far
  std::int64_t before_lease_expiry_us = 0;
  // The shard's leader record at this commit (!known(): none yet).
  LeaderView leader;
  // The job's highest granted token before this write (grants only).
  std::uint64_t job_max_token = 0;
  // When the client saw the cancel of this run's (job, incarnation)
  // acknowledged, if it did.
  std::optional<absl::Time> cancel_acked;
};

// The store facts replayed in commit order; what the invariants read.
struct Replay {
  struct Track {
    bool exists = false;
    RunState state = RunState::kReady;
    std::uint64_t token = 0;
    std::int64_t lease_expiry_us = 0;
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
  // Empty when the history has no store facts.
  std::vector<LeaderStep> leader_steps;  // in commit order
  std::vector<RunStep> run_steps;        // in commit order
  std::vector<Track> runs;  // after the last commit, by interned run key (dense, deterministic)
  // (job, token) -> workers granted that token.
  std::map<std::pair<std::uint32_t, std::uint64_t>, std::vector<std::uint32_t>> grants;
  // Interned ids of the jobs the client paused, resumed or rescheduled
  // (controlled_jobs()).
  std::set<std::uint32_t> controlled;
  // The policy invariants' findings by name (check_policies()).
  std::map<std::string, std::vector<Violation>, std::less<>> policy_found;
};

// Replays `h` once: the steps, the tracks, the grants, the controlled jobs
// and the policy findings.
Replay replay_history(const History& h);

// One line describing a run fact, for evidence.
std::string fact_text(const History& h, const RunFact& f);

// The policy invariants of issue 6 (sim/oracle/policy_checks.cc): adds their
// findings to `r.policy_found`.
void check_policies(const History& h, Replay& r);
// Interned ids of the jobs the client paused, resumed or rescheduled (from
// its client.paused / client.resumed / client.rescheduled events).
std::set<std::uint32_t> controlled_jobs(const History& h);
// The completion bound of one job's occurrences (its attempts, backoffs and
// overlap policy on top of the scenario's Bounds).
absl::Duration done_bound(const Bounds& b, const ClientJob& j);

}  // namespace kairos::sim
