// Scenario expectations (sim/oracle/expectation.h): the facts a run counts
// and the rule that judges every `expect` line of the scenario against them.
#include <algorithm>
#include <array>
#include <map>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/base/absl_compat.h"
#include "core/kernel/records.h"
#include "sim/oracle/expectation.h"
#include "sim/oracle/replay.h"
#include "sim/scenario/scenario.h"
#include "sim/world/marks.h"

namespace kairos::sim {

namespace {

struct OpName {
  Expectation::Op op;
  std::string_view text;
};
constexpr OpName kOps[] = {
    {Expectation::Op::kEq, "=="}, {Expectation::Op::kNe, "!="}, {Expectation::Op::kLt, "<"},
    {Expectation::Op::kLe, "<="}, {Expectation::Op::kGt, ">"},  {Expectation::Op::kGe, ">="},
};

// runs.lapsed-at-expiry, leader.taken-at-expiry, runs.later-incarnation and
// runs.finished-after-cancel count what the workload's reach options exist
// for: a lapse committed at the very microsecond its lease expired (store
// clock), a shard's leadership taken anew (new holder or epoch) the instant
// the previous record expired, runs of a job's later incarnation
// (re-created under the same id), and runs that were still in flight when
// their incarnation's cancel was answered (they finished after it).
// runs.released counts the attempts a worker handed back unrun (a leased
// attempt ended `released`: re-queued, or failed on its last attempt);
// runs.timed-out those its worker stopped at the job's timeout.
constexpr std::string_view kRunCounters[] = {
    "runs.created",
    "runs.granted",
    "runs.succeeded",
    "runs.failed",
    "runs.cancelled",
    "runs.retried",
    "runs.manual",
    "runs.lapsed-at-expiry",
    "leader.taken-at-expiry",
    "runs.later-incarnation",
    "runs.finished-after-cancel",
    "runs.released",
    "runs.timed-out",
    "runs.max-active",
};
constexpr std::array kLedgerOutcomes = {
    LedgerOutcome::kFired,          LedgerOutcome::kLate,      LedgerOutcome::kMovedDst,
    LedgerOutcome::kSkippedOverlap, LedgerOutcome::kCoalesced, LedgerOutcome::kSkippedMisfire,
    LedgerOutcome::kCancelled,      LedgerOutcome::kPaused,    LedgerOutcome::kManual,
};
constexpr std::string_view kLedgerPrefix = "ledger.";
constexpr std::string_view kFaultPrefix = "fault.";

// The job line (1-based) of a workload job id "cron-K-I" / "every-K-I" /
// "once-K-I" (K 0-based); 0 when the id is not one.
std::uint32_t job_line_of(std::string_view id) {
  const auto last = id.rfind('-');
  if (last == std::string_view::npos || last == 0) return 0;
  const auto prev = id.rfind('-', last - 1);
  if (prev == std::string_view::npos) return 0;
  std::uint32_t k = 0;
  if (!absl::SimpleAtoi(absl_sv(id.substr(prev + 1, last - prev - 1)), &k)) return 0;
  return k + 1;
}

}  // namespace

std::string_view to_string(Expectation::Op op) {
  for (const OpName& o : kOps)
    if (o.op == op) return o.text;
  return "?";
}

bool parse_expectation_op(std::string_view text, Expectation::Op* out) {
  for (const OpName& o : kOps)
    if (o.text == text) {
      *out = o.op;
      return true;
    }
  return false;
}

bool holds(const Expectation& e, std::uint64_t actual) {
  switch (e.op) {
    case Expectation::Op::kEq:
      return actual == e.value;
    case Expectation::Op::kNe:
      return actual != e.value;
    case Expectation::Op::kLt:
      return actual < e.value;
    case Expectation::Op::kLe:
      return actual <= e.value;
    case Expectation::Op::kGt:
      return actual > e.value;
    case Expectation::Op::kGe:
      return actual >= e.value;
  }
  return false;
}

FactKind fact_kind(std::string_view fact) {
  for (std::string_view m : kRequiredMarks)
    if (m == fact) return FactKind::kMark;
  for (std::string_view m : kOtherMarks)
    if (m == fact) return FactKind::kMark;
  FaultKind kind;
  if (fact.substr(0, kFaultPrefix.size()) == kFaultPrefix &&
      parse_fault_kind(fact.substr(kFaultPrefix.size()), &kind))
    return FactKind::kMark;
  for (std::string_view c : kRunCounters)
    if (c == fact) return FactKind::kRunCounter;
  if (fact.substr(0, kLedgerPrefix.size()) == kLedgerPrefix)
    for (LedgerOutcome o : kLedgerOutcomes)
      if (to_string(o) == fact.substr(kLedgerPrefix.size())) return FactKind::kRunCounter;
  return FactKind::kUnknown;
}

std::string run_counter_names() {
  std::vector<std::string> names(std::begin(kRunCounters), std::end(kRunCounters));
  for (LedgerOutcome o : kLedgerOutcomes)
    names.push_back(absl::StrCat(absl_sv(kLedgerPrefix), absl_sv(to_string(o))));
  return absl::StrJoin(names, ", ");
}

std::string expectation_text(const Expectation& e) {
  return absl::StrCat("expect ", e.fact, " ", absl_sv(to_string(e.op)), " ", e.value,
                      e.job != 0 ? absl::StrCat(" job=", e.job) : std::string());
}

// The run counters of one replay, over the jobs of job line `job` (0: all).
std::uint64_t run_counter(const History& h, const Replay& r, std::string_view fact,
                          std::uint32_t job) {
  const Interner& names = h.facts->strings();
  auto in_scope = [&](std::uint32_t interned_job) {
    return job == 0 || job_line_of(names.name(interned_job)) == job;
  };
  std::uint64_t n = 0;
  if (fact.substr(0, kLedgerPrefix.size()) == kLedgerPrefix) {
    const std::string_view outcome = fact.substr(kLedgerPrefix.size());
    for (const LedgerFact* l : r.policy.firsts)
      if (in_scope(l->job) && names.name(l->outcome) == outcome) ++n;
    return n;
  }
  if (fact == "runs.granted" || fact == "runs.manual") {
    for (const RunStep& s : r.run_steps)
      if (in_scope(s.fact->job) && (fact == "runs.granted" ? s.grant : s.created && s.fact->manual))
        ++n;
    return n;
  }
  if (fact == "runs.retried") {
    for (const PolicyFacts::Retry& x : r.policy.retries)
      if (in_scope(x.fact->job)) ++n;
    return n;
  }
  if (fact == "runs.lapsed-at-expiry") {
    for (const RunStep& s : r.run_steps)
      if (in_scope(s.fact->job) && !s.created && s.before_state == RunState::kLeased &&
          s.fact->state != RunState::kLeased && s.fact->last_end == AttemptEnd::kLapsed &&
          s.fact->store_us == s.before_lease_expiry_us)
        ++n;
    return n;
  }
  if (fact == "leader.taken-at-expiry") {
    for (const LeaderStep& s : r.leader_steps)
      if (s.before.known() &&
          (s.before.holder != s.fact->holder || s.before.epoch != s.fact->epoch) &&
          s.fact->store_us == s.before.expiry_us)
        ++n;
    return n;
  }
  if (fact == "runs.finished-after-cancel") {
    for (const RunStep& s : r.run_steps)
      if (in_scope(s.fact->job) && !s.created && !is_terminal(s.before_state) &&
          is_terminal(s.fact->state) && s.cancel_acked && s.commit->at > *s.cancel_acked)
        ++n;
    return n;
  }
  if (fact == "runs.released" || fact == "runs.timed-out") {
    const AttemptEnd end = fact == "runs.released" ? AttemptEnd::kReleased : AttemptEnd::kTimedOut;
    for (const RunStep& s : r.run_steps)
      if (in_scope(s.fact->job) && !s.created && s.before_state == RunState::kLeased &&
          s.fact->state != RunState::kLeased && s.fact->last_end == end)
        ++n;
    return n;
  }
  if (fact == "runs.later-incarnation") {
    for (const RunStep& s : r.run_steps)
      if (in_scope(s.fact->job) && s.created && s.fact->incarnation > 1) ++n;
    return n;
  }
  if (fact == "runs.max-active") {
    for (const PolicyFacts::Unfinished& u : r.policy.unfinished)
      if (in_scope(u.job.first)) n = std::max<std::uint64_t>(n, u.active);
    return n;
  }
  for (const Replay::Track& t : r.runs) {
    if (!t.exists || !in_scope(t.job)) continue;
    if (fact == "runs.created" || (fact == "runs.succeeded" && t.state == RunState::kSucceeded) ||
        (fact == "runs.failed" && t.state == RunState::kFailed) ||
        (fact == "runs.cancelled" && t.state == RunState::kCancelled))
      ++n;
  }
  return n;
}

// S: every `expect` line of the scenario holds on this run.
void expectations_met(const History& h, const Replay& r, Findings& out) {
  if (h.expectations == nullptr) return;
  for (const Expectation& e : *h.expectations) {
    std::uint64_t actual = 0;
    if (fact_kind(e.fact) == FactKind::kRunCounter) {
      if (h.facts == nullptr) continue;
      actual = run_counter(h, r, e.fact, e.job);
    } else if (h.marks != nullptr) {
      auto it = h.marks->find(e.fact);
      actual = it == h.marks->end() ? 0 : it->second;
    }
    if (holds(e, actual)) continue;
    Violation v;
    v.detail = absl::StrCat(expectation_text(e), " does not hold: the run counted ", actual);
    out.add(std::move(v));
  }
}

}  // namespace kairos::sim
