// The report rules: what the store does with a worker's completion report,
// judged against the report itself as the worker's process sent it (read off
// its traffic by the lease tap, sim/world/lease_tap.h: the wire format, no
// kernel decision) and the answers its process handled (History::reports),
// beside the store's run-record writes (the replay's run steps, with the
// ReportedEnd the recorder decoded from each record).
//
// (11) A completion the store applies records what the worker reported: the
// attempt the report's token names ends as the report's outcome says, with
// its exit code, and the run carries the report's outcome, exit code and
// detail (cut at the documented kMaxDetailSize) — whether the run is then
// final or waits for its retry. An attempt of a worker's never ends as
// succeeded, failed, timed out or released without a report of it: a
// release (the `stopped` report of a draining worker handing a grant back
// unrun) ends the attempt the report's token names, and nothing else does.
//
// (12) The answer to a report is truthful: once the store applied a report
// of (run, token), no answer to a copy of it (a worker re-sends a report
// whose answer it did not get) says refused while the run still stands as
// that report left it (no later write of the run record). The copy was
// applied already; telling the worker "stale token" reports a fencing that
// never happened. Releases too: a copy of an applied release is answered
// accepted ("already released") while the run stands as it left it, ready
// for its next claim or failed on its last attempt.
//
// (13) A worker's log states each verdict as the node gave it: a
// `worker.report_accepted` event of (run, token) stands for an answer its
// process handled at that instant that accepted the report, and carries no
// reason; a `worker.report_rejected` event for one that refused it, with the
// answer's reason. An operator reads off these lines which reports were
// fenced and why (docs/OPERATIONS.md); a line that names the wrong verdict
// or reason sends them after a failure that did not happen.
//
// (14) A worker gives a report up only when the node stopped answering:
// a `worker.report_abandoned` of (run, token) follows a last send of that
// report which no answer reached before the abandon -- neither a verdict
// nor an error message. An error means the node is there but could not
// decide (its store was unavailable, say); the report is retried, since
// giving it up makes the run lapse and run again (docs/ARCHITECTURE.md,
// "Wire protocol").
//
// (16) A worker never sits on a finished attempt: every attempt its process
// ran to the end is settled -- the worker recorded its report answered
// (accepted, rejected), dropped (its lease lost, its deadline passed, or
// superseded by a newer token's report of the run) or given up after its
// retries -- within the worker's report bound
// (max_report_attempts x (rpc_timeout + retry_backoff_max)) plus the settle
// bound, counted from the attempt's end or from the heal of the last fault
// touching that wait. Unless the process ended first (a crash, a stop, a
// drain's end): its unsent reports die with it, and the lease lapses. A
// report left in flight forever is not seen by the store's rules: the run's
// lease lapses, it runs again, the sink dedupes -- a worker that never
// reports makes every run it takes execute twice and end by a lapse.
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "sim/oracle/replay.h"

namespace kairos::sim {

namespace {

// How an attempt ends by a report of `s`, as docs/ARCHITECTURE.md states
// the worker protocol: the four outcomes end it as themselves; kStopped
// gives the run back unrun (a release: a draining worker hands back a grant
// it will not start) and ends it as released. Written from the docs rather
// than calling the kernel's attempt_end(), so that a bug there cannot hide
// behind the rule that judges it.
AttemptEnd reported_end_of(RunStatus s) {
  switch (s) {
    case RunStatus::kSucceeded:
      return AttemptEnd::kSucceeded;
    case RunStatus::kFailed:
      return AttemptEnd::kFailed;
    case RunStatus::kFailedPermanent:
      return AttemptEnd::kFailedPermanent;
    case RunStatus::kTimedOut:
      return AttemptEnd::kTimedOut;
    case RunStatus::kStopped:
      return AttemptEnd::kReleased;
  }
  return AttemptEnd::kRunning;  // not an outcome a report carries
}

using RunToken = std::pair<std::uint32_t, std::uint64_t>;  // (interned run key, token)

// The write that closed an attempt by a report: the replay's step, the
// record's ReportedEnd.
struct Closing {
  const RunStep* step = nullptr;
  const ReportedEnd* end = nullptr;
};

// Every applied write of a run record that ends its latest attempt as a
// worker reports it, from leased: a completion the store applied.
std::vector<Closing> closings(const History& h, const Replay& r) {
  std::vector<Closing> out;
  const std::vector<ReportedEnd>& ends = h.facts->reported_ends();
  for (const RunStep& s : r.run_steps) {
    const RunFact& f = *s.fact;
    if (s.created || s.before_state != RunState::kLeased || f.reported_end == RunFact::kNoEnd)
      continue;
    out.push_back({&s, &ends[f.reported_end]});
  }
  return out;
}

std::string report_text(const History& h, const ReportFact& f) {
  const Interner& names = h.facts->strings();
  return absl::StrCat(f.answered ? "answer handled by " : "report sent by ",
                      (*h.node_names)[f.worker], " at ", time_text(f.at), ": token ", f.token, " ",
                      absl_sv(to_string(f.outcome)), " exit ", f.exit_code, " detail '",
                      names.name(f.detail), "'",
                      !f.answered ? std::string()
                      : f.error   ? std::string(" -> an error message")
                                  : absl::StrCat(" -> ", absl_sv(to_string(f.verdict))));
}

}  // namespace

void runs_record_reports(const History& h, const Replay& r, Findings& out) {
  if (h.reports == nullptr || h.facts == nullptr || h.node_names == nullptr) return;
  const Interner& names = h.facts->strings();
  std::map<RunToken, std::vector<const ReportFact*>> sent;
  for (const ReportFact& f : *h.reports)
    if (!f.answered) sent[{f.run, f.token}].push_back(&f);
  for (const Closing& c : closings(h, r)) {
    if (!out.open()) return;
    const RunFact& f = *c.step->fact;
    const ReportedEnd& e = *c.end;
    auto it = sent.find({f.run, e.token});
    Violation v;
    v.job = names.name(f.job);
    v.run = names.name(f.run);
    v.evidence.push_back(fact_text(h, f));
    if (it == sent.end()) {
      v.detail =
          absl::StrCat("attempt with token ", e.token, " ended ", absl_sv(to_string(f.last_end)),
                       " at commit ", f.commit, " but no worker sent a report of it");
      out.add(std::move(v));
      continue;
    }
    const std::string& stored = names.name(e.detail);
    bool matched = false;
    for (const ReportFact* rep : it->second) {
      if (reported_end_of(rep->outcome) != f.last_end) continue;
      // A release records no outcome of its own: the run keeps its earlier
      // attempt's (or, on the last attempt, fails as the retry policy says,
      // which the policy rules judge); the stopped report is what it needs.
      if (f.last_end == AttemptEnd::kReleased) {
        matched = true;
        break;
      }
      const std::string& detail = names.name(rep->detail);
      const std::string_view cut = std::string_view(detail).substr(0, kMaxDetailSize);
      if (e.attempt_exit == rep->exit_code && e.outcome == rep->outcome &&
          e.exit_code == rep->exit_code && stored == cut) {
        matched = true;
        break;
      }
    }
    if (matched) continue;
    v.detail =
        absl::StrCat("the store closed attempt token ", e.token, " as ",
                     absl_sv(to_string(f.last_end)), " (attempt exit ", e.attempt_exit, "; run ",
                     absl_sv(to_string(e.outcome)), " exit ", e.exit_code, " detail '", stored,
                     "') at commit ", f.commit, ", which no report of it says");
    for (const ReportFact* rep : it->second) v.evidence.push_back(report_text(h, *rep));
    out.add(std::move(v));
  }
}

void report_verdicts_truthful(const History& h, const Replay& r, Findings& out) {
  if (h.reports == nullptr || h.facts == nullptr || h.node_names == nullptr || h.commits == nullptr)
    return;
  const Interner& names = h.facts->strings();
  // Each run's applied writes and erasures, by true time.
  std::map<std::uint32_t, std::vector<absl::Time>> writes;
  for (const RunStep& s : r.run_steps) writes[s.fact->run].push_back(s.commit->at);
  for (const auto& [commit, run] : h.facts->run_erases())
    if (!lost(h, commit)) writes[run].push_back((*h.commits)[commit].at);
  for (auto& [run, times] : writes) std::sort(times.begin(), times.end());
  std::map<RunToken, std::vector<const ReportFact*>> refused;
  for (const ReportFact& f : *h.reports)
    if (f.answered && !f.error && f.verdict != WriteVerdict::kAccepted)
      refused[{f.run, f.token}].push_back(&f);
  if (refused.empty()) return;
  for (const Closing& c : closings(h, r)) {
    if (!out.open()) return;
    const RunFact& f = *c.step->fact;
    auto it = refused.find({f.run, c.end->token});
    if (it == refused.end()) continue;
    const absl::Time applied = c.step->commit->at;
    const std::vector<absl::Time>& times = writes[f.run];
    auto next = std::upper_bound(times.begin(), times.end(), applied);
    const absl::Time until = next == times.end() ? absl::InfiniteFuture() : *next;
    for (const ReportFact* rep : it->second) {
      if (reported_end_of(rep->outcome) != f.last_end) continue;
      if (rep->at <= applied || rep->at >= until) continue;
      Violation v;
      v.job = names.name(f.job);
      v.run = names.name(f.run);
      v.detail =
          absl::StrCat("a copy of the report the store applied at commit ", f.commit, " (",
                       time_text(applied), ") was answered ", absl_sv(to_string(rep->verdict)),
                       " while the run still stood as that report left it");
      v.evidence.push_back(fact_text(h, f));
      v.evidence.push_back(report_text(h, *rep));
      out.add(std::move(v));
      break;
    }
  }
}

void report_events_truthful(const History& h, const Replay&, Findings& out) {
  if (h.reports == nullptr || h.facts == nullptr || h.node_names == nullptr) return;
  const Interner& names = h.facts->strings();
  using AnswerKey = std::tuple<std::uint32_t, std::uint64_t, absl::Time>;  // run, token, instant
  std::multimap<AnswerKey, const ReportFact*> answers;
  for (const ReportFact& f : *h.reports)
    if (f.answered && !f.error) answers.emplace(AnswerKey{f.run, f.token, f.at}, &f);
  for (const ReportSettledFact& s : h.facts->settled()) {
    if (!out.open()) return;
    const bool accepted = s.kind == ReportSettledFact::Kind::kAccepted;
    if (!accepted && s.kind != ReportSettledFact::Kind::kRejected) continue;
    auto [lo, hi] = answers.equal_range(AnswerKey{s.run, s.token, s.at});
    bool matched = false;
    for (auto it = lo; it != hi && !matched; ++it) {
      const ReportFact& a = *it->second;
      matched = accepted
                    ? a.verdict == WriteVerdict::kAccepted && !s.has_reason
                    : a.verdict != WriteVerdict::kAccepted && s.has_reason && s.reason == a.reason;
    }
    if (matched) continue;
    Violation v;
    v.run = names.name(s.run);
    v.detail = absl::StrCat("a worker logged ",
                            accepted ? "worker.report_accepted" : "worker.report_rejected",
                            " for token ", s.token, " at ", time_text(s.at),
                            s.has_reason ? absl::StrCat(" with reason '", names.name(s.reason), "'")
                                         : std::string(" with no reason"),
                            ", which no answer it handled then says");
    for (auto it = lo; it != hi; ++it) {
      const ReportFact& a = *it->second;
      v.evidence.push_back(absl::StrCat(report_text(h, a), " reason '", names.name(a.reason), "'"));
    }
    if (lo == hi)
      v.evidence.push_back("no answer to a report of that run and token was handled then");
    out.add(std::move(v));
  }
}

void reports_abandoned_unanswered(const History& h, const Replay&, Findings& out) {
  if (h.reports == nullptr || h.facts == nullptr || h.node_names == nullptr) return;
  const Interner& names = h.facts->strings();
  std::map<RunToken, std::vector<const ReportFact*>> by_report;  // in true-time order
  for (const ReportFact& f : *h.reports) by_report[{f.run, f.token}].push_back(&f);
  for (const ReportSettledFact& s : h.facts->settled()) {
    if (!out.open()) return;
    if (s.kind != ReportSettledFact::Kind::kAbandoned) continue;
    auto it = by_report.find({s.run, s.token});
    if (it == by_report.end()) continue;
    const ReportFact* last_send = nullptr;
    for (const ReportFact* f : it->second)
      if (!f->answered && f->at <= s.at) last_send = f;
    if (last_send == nullptr) continue;
    for (const ReportFact* f : it->second) {
      // An answer to the last send's own request: an answer to an earlier
      // send of the report (a copy the network kept) tells nothing now.
      if (!f->answered || f->worker != last_send->worker || f->request != last_send->request ||
          f->at < last_send->at || f->at >= s.at)
        continue;
      Violation v;
      v.run = names.name(s.run);
      v.detail =
          absl::StrCat("a worker gave up its report of token ", s.token, " at ", time_text(s.at),
                       " although its last send (", time_text(last_send->at), ") was answered at ",
                       time_text(f->at), ": an answered report is retried, not abandoned");
      v.evidence.push_back(report_text(h, *last_send));
      v.evidence.push_back(report_text(h, *f));
      out.add(std::move(v));
      break;
    }
  }
}

void reports_settle(const History& h, const Replay&, Findings& out) {
  if (h.executions == nullptr || h.process_ends == nullptr || h.facts == nullptr ||
      h.node_names == nullptr)
    return;
  std::map<RunToken, absl::Time> first_settled;
  for (const ReportSettledFact& s : h.facts->settled()) {
    auto [it, fresh] = first_settled.try_emplace({s.run, s.token}, s.at);
    if (!fresh) it->second = std::min(it->second, s.at);
  }
  const absl::Duration bound = h.report_bound + h.bounds.settle;
  const Interner& names = h.facts->strings();
  for (const Execution& e : *h.executions) {
    if (!out.open()) return;
    if (e.end == absl::InfiniteFuture()) continue;
    const absl::Time from = wait_start_after_faults(h, e.end, bound);
    if (h.end - from <= bound) continue;  // the run ended before the wait ran out
    const absl::Time deadline = from + bound;
    auto it = first_settled.find({e.run, e.token});
    if (it != first_settled.end() && it->second <= deadline) continue;
    bool ended = false;  // the process that ran it, before the deadline
    for (const ProcessEnd& p : *h.process_ends)
      if (p.node == e.node && p.at >= e.end && p.at <= deadline) ended = true;
    if (ended) continue;
    Violation v;
    v.job = names.name(e.job);
    v.run = names.name(e.run);
    v.detail = absl::StrCat(
        (*h.node_names)[e.node], "'s attempt of token ", e.token, " ended executing at ",
        time_text(e.end), " and its report was ",
        it == first_settled.end() ? std::string("never answered nor given up")
                                  : absl::StrCat("settled only at ", time_text(it->second)),
        " (bound ", absl::FormatDuration(bound), " from ", time_text(from), ")");
    if (h.reports != nullptr)
      for (const ReportFact& f : *h.reports)
        if (f.run == e.run && f.token == e.token && v.evidence.size() < 8)
          v.evidence.push_back(report_text(h, f));
    if (v.evidence.empty()) v.evidence.push_back("the worker never sent a report of it");
    out.add(std::move(v));
  }
}

}  // namespace kairos::sim
