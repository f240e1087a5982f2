// Checker: the oracle. It judges a finished run purely from the recorded
// history (sim/oracle/history.h: sink attempts, store commits and the facts they
// wrote, the store's final contents, node event logs, what the client was
// told, fault windows), never from the code under test.
//
// Each invariant is a rule (a function) over the facts of one replay, under a
// stable name from the one table sim/oracle/invariant_names.h (used by
// `ignore NAME` in scenario files and in violation reports);
// docs/SIMULATION.md, "Invariants", gives their numbers and
// states each bound. The store facts are replayed once per check, in commit
// order, skipping commits a store crash rolled back (sim/oracle/replay.h); the
// replay tracks state and judges nothing, the rules judge and track nothing
// beyond what their own rule needs.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sim/oracle/history.h"
#include "sim/oracle/invariant_names.h"

namespace kairos::sim {

struct Violation {
  std::string invariant;
  std::string job;  // may be empty
  std::string run;  // idempotency key; may be empty
  std::string detail;
  std::vector<std::string> evidence;  // the facts and events that led to it
};

struct Replay;   // the store-fact replay (sim/oracle/replay.h), computed once per run
class Findings;  // where an invariant records its violations (sim/oracle/replay.h)

// One invariant: its entry in kInvariants (sim/oracle/invariant_names.h) and
// the rule that judges the replay's facts.
class Invariant {
 public:
  using Rule = void (*)(const History& history, const Replay& replay, Findings& out);
  Invariant(InvariantInfo info, Rule rule) : info_(info), rule_(rule) {}
  std::string_view name() const { return info_.name; }
  // One line: what must hold, with its number in docs/SIMULATION.md.
  std::string_view description() const { return info_.description; }
  void check(const History& history, const Replay& replay, Findings& out) const {
    rule_(history, replay, out);
  }

 private:
  InvariantInfo info_;
  Rule rule_;
};

class Checker {
 public:
  // Every invariant of the simulator, in kInvariants order.
  static Checker with_defaults();

  struct Report {
    std::vector<Violation> violations;
    std::vector<std::string> checked;
    std::vector<std::string> ignored;
    bool ok() const { return violations.empty(); }
  };
  Report run(const History& history, const std::vector<std::string>& ignored) const;
  const std::vector<Invariant>& invariants() const { return invariants_; }

 private:
  std::vector<Invariant> invariants_;
};

}  // namespace kairos::sim
