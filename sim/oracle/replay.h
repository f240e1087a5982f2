// Replay: the store facts of a history (sim/oracle/history.h) replayed once in
// commit order, skipping commits a store crash rolled back; several
// invariants read what it found. Internal to the checker (sim/oracle/checker.cc,
// sim/oracle/policy_checks.cc).
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

// The store facts replayed in commit order; what several invariants read.
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
  std::vector<Track> runs;  // by interned run key (ids are dense and deterministic)
  // (job, token) -> workers granted that token.
  std::map<std::pair<std::uint32_t, std::uint64_t>, std::vector<std::uint32_t>> grants;
  // Interned ids of the jobs the client paused, resumed or rescheduled
  // (controlled_jobs()); set once by Checker::run.
  std::set<std::uint32_t> controlled;
  // Findings by invariant name.
  std::map<std::string, std::vector<Violation>, std::less<>> found;

  void add(std::string_view invariant, Violation v) {
    auto& list = found[std::string(invariant)];
    if (list.size() < kMaxPerInvariant) {
      v.invariant = std::string(invariant);
      list.push_back(std::move(v));
    }
  }
};

// The policy invariants of issue 6 (sim/oracle/policy_checks.cc): adds their
// findings to `r.found`.
void check_policies(const History& h, Replay& r);
// Interned ids of the jobs the client paused, resumed or rescheduled (from
// its "client.paused" / "client.resumed" / "client.rescheduled" events).
std::set<std::uint32_t> controlled_jobs(const History& h);
// The completion bound of one job's occurrences (its attempts, backoffs and
// overlap policy on top of the scenario's Bounds).
absl::Duration done_bound(const Bounds& b, const ClientJob& j);

}  // namespace kairos::sim
