// Checker: the oracle. It judges a finished run purely from the recorded
// history (sim/oracle/history.h: sink attempts, store commits and the facts they
// wrote, the store's final contents, node event logs, what the client was
// told, fault windows), never from the code under test.
//
// Each invariant is a small class with a stable name (used by `ignore NAME`
// in scenario files and in violation reports); docs/SIMULATION.md,
// "Invariants", maps them to the numbering of issue 5 and states each bound.
// The store facts are replayed once per check, in commit order, skipping
// commits a store crash rolled back; the invariants that need the replay read
// its findings.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sim/oracle/history.h"

namespace kairos::sim {

struct Violation {
  std::string invariant;
  std::string job;  // may be empty
  std::string run;  // idempotency key; may be empty
  std::string detail;
  std::vector<std::string> evidence;  // the facts and events that led to it
};

struct Replay;  // the store-fact replay, shared by several invariants

class Invariant {
 public:
  virtual ~Invariant() = default;
  virtual std::string_view name() const = 0;
  // One line: what must hold, with its number in issue 5.
  virtual std::string_view description() const = 0;
  virtual void check(const History& history, const Replay& replay,
                     std::vector<Violation>& out) const = 0;
};

class Checker {
 public:
  // Every invariant of the simulator.
  static Checker with_defaults();
  void add(std::unique_ptr<Invariant> invariant);

  struct Report {
    std::vector<Violation> violations;
    std::vector<std::string> checked;
    std::vector<std::string> ignored;
    bool ok() const { return violations.empty(); }
  };
  Report run(const History& history, const std::vector<std::string>& ignored) const;
  const std::vector<std::unique_ptr<Invariant>>& invariants() const { return invariants_; }

 private:
  std::vector<std::unique_ptr<Invariant>> invariants_;
};

}  // namespace kairos::sim
