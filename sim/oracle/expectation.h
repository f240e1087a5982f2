// Expectation: what a scenario states its run must show, beyond the
// invariants. A scenario that exists to exercise something (a clock-skew
// guard, a catch-up backlog, a queued overlap) would pass without it if the
// workload never reached that path; `expect FACT OP N [job=K]` makes the run
// fail then. The checker judges every expectation of the scenario on each
// run (invariant `expectations-met`, sim/oracle/expectations.cc).
//
// A fact is a count from one run:
//   - a coverage mark (sim/world/marks.h, `fault.KIND`): how often the run
//     hit it;
//   - a run counter, judged from the store facts: `runs.created`,
//     `runs.granted` (leases granted), `runs.succeeded`, `runs.failed`,
//     `runs.cancelled` (runs in that state at the end), `runs.retried`
//     (attempts put back to ready after a failure or timeout),
//     `runs.manual` (manual runs created), `runs.max-active` (the most
//     unfinished ready or leased runs one job had at once),
//     `runs.lapsed-at-expiry` (lapses committed exactly at their lease's
//     expiry), `leader.taken-at-expiry` (leaderships taken exactly at the
//     previous record's expiry; not scoped by job), `runs.later-incarnation`
//     (runs of a re-created job's later incarnations),
//     `runs.finished-after-cancel` (runs that ended after their
//     incarnation's cancel was answered: in flight at the cancel),
//     `runs.released` (attempts a worker handed back unrun), and
//     `ledger.OUTCOME` for every ledger outcome (`ledger.late`,
//     `ledger.skipped_misfire`, ...: the occurrence decisions recorded with it).
// A run counter may be scoped to the jobs of one job line (`job=K`,
// 1-based, as the control directives count them); a mark may not.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace kairos::sim {

struct Expectation {
  enum class Op : std::uint8_t { kEq, kNe, kLt, kLe, kGt, kGe };
  std::string fact;
  Op op = Op::kGe;
  std::uint64_t value = 1;
  std::uint32_t job = 0;  // job line (1-based) a run counter is scoped to; 0: every job
  friend bool operator==(const Expectation&, const Expectation&) = default;
};

std::string_view to_string(Expectation::Op op);
// "==", "!=", "<", "<=", ">", ">=".
bool parse_expectation_op(std::string_view text, Expectation::Op* out);
// Whether `actual` satisfies the expectation's comparison.
bool holds(const Expectation& e, std::uint64_t actual);

enum class FactKind : std::uint8_t { kUnknown, kMark, kRunCounter };
FactKind fact_kind(std::string_view fact);
// The run counters' names, for error messages: "runs.created, ..., ledger.manual".
std::string run_counter_names();

// The canonical directive text: "expect runs.max-active >= 2 job=1".
std::string expectation_text(const Expectation& e);

}  // namespace kairos::sim
