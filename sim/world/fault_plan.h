// FaultPlan: the seeded schedule of faults for one run, crash points, and
// swarm-mode scenario generation.
//
// plan_faults() turns a scenario's explicit `fault` lines plus its `swarm`
// rates into a list of FaultActions in time order, drawing the random ones
// from the given Random (so one seed gives one schedule). Random faults fall
// in [0, duration - quiet_tail) and always heal before the quiet tail; a
// crash always restarts. The Cluster applies each action at its time and
// schedules its undo; selectors like "any-worker" are resolved when the
// fault fires, from the cluster's fault Random.
//
// CrashPoints lets the world crash a node at a *named point in the code*:
// the kernel calls should_crash(node, "effect-before-complete") at each
// point; when the world has armed that point for that node the call returns
// true once, the kernel returns from its handler at once, and the cluster
// crashes the node before its next event (so nothing after the point runs).
//
// swarm_scenario() draws a random fault mix, topology and rates per seed
// (TigerBeetle's VOPR and FoundationDB's swarm testing do the same): most
// seeds get a few fault kinds at high rates rather than all kinds at low
// rates, which finds more interaction bugs.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/ports/random.h"
#include "sim/scenario/scenario.h"
#include "sim/world/world.h"

namespace kairos::sim {

struct FaultAction {
  FaultSpec spec;       // spec.at is the time since the start
  bool random = false;  // drawn by the swarm rates, not written in the file
};

std::vector<FaultAction> plan_faults(const Scenario& scenario, Random& random);

// Crash points the kernel offers (core/kernel/scheduler_node.cc, core/kernel/worker.cc;
// documented in docs/SIMULATION.md); scenarios may name others, which then
// never fire.
inline constexpr std::string_view kKnownCrashPoints[] = {
    "dispatch-before-commit", "dispatch-after-commit-before-reply", "claim-after-commit",
    "effect-before-complete", "complete-after-commit-before-ack",   "leader-after-elect",
};

class CrashPoints {
 public:
  // Crash `node` the next time it reaches `point`.
  void arm(NodeId node, std::string point) { armed_[{node, std::move(point)}] += 1; }
  // True (once per arming) when `node` should crash at `point` now.
  bool should_crash(NodeId node, std::string_view point) {
    auto it = armed_.find(std::make_pair(node, std::string(point)));
    if (it == armed_.end()) return false;
    if (--it->second == 0) armed_.erase(it);
    ++fired_;
    return true;
  }
  std::size_t armed() const { return armed_.size(); }
  std::uint64_t fired() const { return fired_; }

 private:
  std::map<std::pair<NodeId, std::string>, std::uint32_t> armed_;
  std::uint64_t fired_ = 0;
};

// The planted bugs the checker must catch within 50 swarm seeds
// (tests/sim/oracle/planted_bugs_test.cc, scripts/sim-ci.sh): the seven safety
// bugs, the three policy bugs and the rebalancing bug -- every bug of
// core/kernel/planted_bugs.h. `invariant` names the invariant written for it; for
// the first seven several invariants may fire first, so it is empty.
struct PlantedBugCheck {
  std::string_view bug;
  std::string_view invariant;
};
inline constexpr PlantedBugCheck kCaughtBugs[] = {{"ignore-fencing", ""},
                                                  {"no-lease-expiry", ""},
                                                  {"skip-epoch-check", ""},
                                                  {"ack-before-effect", ""},
                                                  {"non-atomic-dispatch", ""},
                                                  {"reuse-token", ""},
                                                  {"unknown-as-failure", ""},
                                                  {"unbounded-catch-up", "catch-up-bounded"},
                                                  {"overlap-ignored", "overlap-respected"},
                                                  {"retry-without-backoff", "retry-backoff"},
                                                  {"handover-keeps-epoch", "epochs-increase"}};

// The base of `kairos-sim --swarm` without --scenario: 30 minutes of
// interval, cron (in a DST zone) and one-off jobs under every job policy
// (slow jobs under each overlap policy, failing jobs with retries,
// catch-up with a small bound, a priority spread), two cancels, a
// pause/resume, a reschedule and triggers.
Scenario default_swarm_base();

// A random scenario for swarm mode, derived from `base` (its workload and
// duration are kept; topology, rates and the fault mix are drawn; in half
// the seeds every scheduler is also crashed at once for 2..5 minutes, so
// the misfire policies see a backlog).
Scenario swarm_scenario(const Scenario& base, Random& random);

}  // namespace kairos::sim
