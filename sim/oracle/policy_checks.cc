// The policy invariants of issue 6 (docs/SIMULATION.md, "Invariants"),
// judged from the store facts and what the client was told, never from the
// kernel's events:
//   ledger-one-outcome   every occurrence has exactly one ledger outcome
//   attempts-bounded     no run is granted more than max_attempts times
//   retry-backoff        a failed attempt's retry waits within the jitter bounds
//   overlap-respected    unfinished runs per job stay within the overlap policy
//   catch-up-bounded     catch-up keeps at most catch_up_max of a backlog and
//                        starts at most one late run per spacing
//   misfire-threshold    each misfire decision matches the threshold and policy
//   priority-order       a claim serves due runs by the documented order
// The per-job ground truth (policy, creation time) is the client's
// (History::jobs); a job the client never saw acknowledged is not judged.
// Each is a rule over the policy facts the replay recorded
// (PolicyFacts, sim/oracle/replay.h); none tracks state but its own.
#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "core/base/check.h"
#include "core/kernel/policy.h"
#include "sim/oracle/invariant_names.h"
#include "sim/oracle/replay.h"
#include "sim/scenario/client_events.h"

namespace kairos::sim {

namespace {

std::string dur(std::int64_t us) { return absl::FormatDuration(absl::Microseconds(us)); }

const char* overlap_name(OverlapPolicy o) {
  switch (o) {
    case OverlapPolicy::kSkip:
      return "skip";
    case OverlapPolicy::kQueue:
      return "queue";
    case OverlapPolicy::kAllow:
      return "allow";
  }
  return "?";
}

const char* misfire_name(MisfirePolicy m) {
  switch (m) {
    case MisfirePolicy::kRunOnce:
      return "run-once";
    case MisfirePolicy::kCatchUp:
      return "catch-up";
    case MisfirePolicy::kSkip:
      return "skip";
  }
  return "?";
}
// A finding about job `job` (interned), optionally one run of it.
void report(const History& h, Findings& out, std::uint32_t job, std::string run,
            std::string detail) {
  Violation v;
  v.job = h.facts->strings().name(job);
  v.run = std::move(run);
  v.detail = std::move(detail);
  out.add(std::move(v));
}

bool is(const Interner& names, const LedgerFact& l, std::string_view outcome) {
  return names.name(l.outcome) == outcome;
}

std::int64_t lateness_us(const LedgerFact& l, const ClientJob& cj) {
  const absl::Time from = std::max(l.fire_at, cj.created_at);
  const std::int64_t d = l.store_us - absl::ToUnixMicros(from);
  return d < 0 ? 0 : d;
}

// The deciding ledger writes one commit made for one job: one decision.
// Calls fn(first, end) for each such group of PolicyFacts::firsts.
template <typename Fn>
void for_each_decision(const std::vector<const LedgerFact*>& firsts, Fn fn) {
  for (std::size_t i = 0; i < firsts.size();) {
    std::size_t e = i;
    while (e < firsts.size() && firsts[e]->commit == firsts[i]->commit &&
           firsts[e]->job == firsts[i]->job && firsts[e]->incarnation == firsts[i]->incarnation)
      ++e;
    fn(i, e);
    i = e;
  }
}

}  // namespace

// P2: no run is granted more often than its job allows.
void attempts_bounded(const History& h, const Replay& r, Findings& out) {
  const PolicyFacts& pf = r.policy;
  for (const PolicyFacts::Grant& g : pf.grants) {
    const RunFact& f = *g.fact;
    const ClientJob* cj = pf.job({f.job, f.incarnation});
    if (cj != nullptr && f.attempt > cj->policy.max_attempts)
      report(h, out, f.job, h.facts->strings().name(f.run),
             absl::StrCat("attempt ", f.attempt, " granted (token ", f.token, ", store commit #",
                          f.commit, "); the job allows ", cj->policy.max_attempts));
  }
}

// P7: claim order (docs/POLICIES.md, "Priority and the no-starvation rule"),
// per shard: runs ready for at least the starvation bound first, oldest
// first; then higher priority first, FIFO within a priority. A granted run is
// in violation when a run still ready in its shard after the claim commit
// should have been served before it.
void priority_order(const History& h, const Replay& r, Findings& out) {
  if (h.facts == nullptr) return;
  const Interner& names = h.facts->strings();
  const std::int64_t bound = absl::ToInt64Microseconds(h.starvation_bound);
  for (const PolicyFacts::Grant& g : r.policy.grants) {
    if (!g.was_ready) continue;
    const RunFact& f = *g.fact;
    const std::int64_t t = g.t;
    const bool starving = g.ready_us <= t - bound;
    const std::string key = names.name(f.run);
    if (g.has_oldest && g.oldest_us <= t - bound && (!starving || g.oldest_us < g.ready_us)) {
      report(h, out, f.job, key,
             absl::StrCat("claim at store time ", us_text(t), " granted ", key, " (priority ",
                          g.priority, ", ready ", us_text(g.ready_us), ") while ",
                          names.name(g.oldest), " (priority ", g.oldest_priority,
                          ") had been ready since ", us_text(g.oldest_us),
                          ", past the starvation bound, in the same shard"));
      continue;
    }
    if (starving) continue;
    for (const PolicyFacts::Band& b : g.bands) {
      const bool precedes = b.priority > g.priority ? b.first_us <= t : b.first_us < g.ready_us;
      if (!precedes) continue;
      report(h, out, f.job, key,
             absl::StrCat("claim at store time ", us_text(t), " granted ", key, " (priority ",
                          g.priority, ", ready ", us_text(g.ready_us), ") before ",
                          names.name(b.first), " (priority ", b.priority, ", ready ",
                          us_text(b.first_us), ") of the same shard"));
      break;
    }
  }
}

// P3: a failed attempt's retry becomes ready within its backoff's bounds.
void retry_backoff(const History& h, const Replay& r, Findings& out) {
  const PolicyFacts& pf = r.policy;
  for (const PolicyFacts::Retry& x : pf.retries) {
    const RunFact& f = *x.fact;
    const ClientJob* cj = pf.job({f.job, f.incarnation});
    if (cj == nullptr) continue;
    const std::int64_t t = x.t;
    const std::uint32_t failed = f.attempt - 1;
    const std::int64_t delay = f.ready_us - t;
    const std::int64_t lo = absl::ToInt64Microseconds(retry_lower_bound(cj->policy, failed));
    const std::int64_t hi = absl::ToInt64Microseconds(retry_base_delay(cj->policy, failed));
    if (delay < lo || delay > hi)
      report(h, out, f.job, h.facts->strings().name(f.run),
             absl::StrCat("attempt ", failed, " failed at store time ", us_text(t),
                          "; the retry is ready after ", dur(delay), ", outside [", dur(lo), ", ",
                          dur(hi), "] (initial ", absl::FormatDuration(cj->policy.retry_initial),
                          ", x", cj->policy.retry_multiplier_percent, "%, max ",
                          absl::FormatDuration(cj->policy.retry_max), ", jitter ",
                          cj->policy.retry_jitter_percent, "%)"));
  }
}

// P4: a job's unfinished runs stay within its overlap policy (reported once
// per job).
void overlap_respected(const History& h, const Replay& r, Findings& out) {
  const PolicyFacts& pf = r.policy;
  std::set<JobKey> reported;
  for (const PolicyFacts::Unfinished& o : pf.unfinished) {
    const ClientJob* cj = pf.job(o.job);
    if (cj == nullptr) continue;
    const JobPolicy& p = cj->policy;
    bool ok = true;
    switch (p.overlap) {
      case OverlapPolicy::kSkip:
        ok = o.active + o.waiting <= 1;
        break;
      case OverlapPolicy::kQueue:
        ok = o.active <= 1 && o.waiting <= 1;
        break;
      case OverlapPolicy::kAllow:
        ok = o.active <= p.max_concurrent && o.waiting == 0;
        break;
    }
    if (ok || !reported.insert(o.job).second) continue;
    report(h, out, o.job.first, "",
           absl::StrCat("after store commit #", o.commit, " (store time ", us_text(o.t),
                        ") incarnation ", o.job.second, " has ", o.active, " active and ",
                        o.waiting, " waiting unfinished runs; overlap ", overlap_name(p.overlap),
                        p.overlap == OverlapPolicy::kAllow
                            ? absl::StrCat(" allows ", p.max_concurrent, " active, none waiting")
                        : p.overlap == OverlapPolicy::kQueue
                            ? std::string(" allows 1 active and 1 waiting")
                            : std::string(" allows 1 unfinished")));
  }
}

// P1: exactly one outcome: no two ledger records cover one occurrence, and
// every occurrence the client's schedule makes certain is covered.
void ledger_one_outcome(const History& h, const Replay& r, Findings& out) {
  if (h.facts == nullptr) return;
  const Interner& names = h.facts->strings();
  const PolicyFacts& pf = r.policy;
  for (const auto& [k, list] : pf.latest) {  // sorted by first nominal (map order)
    for (std::size_t i = 1; i < list.size(); ++i) {
      if (list[i]->from > list[i - 1]->through) continue;
      report(h, out, k.first, "",
             absl::StrCat("occurrence ", time_text(list[i]->from), " has two ledger records: ",
                          names.name(list[i - 1]->outcome), " ", time_text(list[i - 1]->from), "..",
                          time_text(list[i - 1]->through), " (commit #", list[i - 1]->commit,
                          ") and ", names.name(list[i]->outcome), " ", time_text(list[i]->from),
                          "..", time_text(list[i]->through), " (commit #", list[i]->commit, ")"));
      break;
    }
  }
  for (const auto& [k, occurrences] : pf.expected) {
    auto it = pf.latest.find(k);
    for (const Occurrence* o : occurrences) {
      bool covered = false;
      if (it != pf.latest.end()) {
        const auto& list = it->second;
        auto after =
            std::upper_bound(list.begin(), list.end(), o->nominal,
                             [](absl::Time t, const LedgerFact* l) { return t < l->from; });
        covered = after != list.begin() && o->nominal <= (*(after - 1))->through;
      }
      if (covered) continue;
      report(h, out, k.first, "",
             absl::StrCat("occurrence ", time_text(o->nominal), " (due ", time_text(o->due),
                          ", incarnation ", k.second, ") has no ledger record"));
      break;  // one per job is enough to act on
    }
  }
}

// P6: each decision's outcome matches the misfire threshold and the policy.
void misfire_threshold(const History& h, const Replay& r, Findings& out) {
  if (h.facts == nullptr) return;
  const Interner& names = h.facts->strings();
  const PolicyFacts& pf = r.policy;
  for_each_decision(pf.firsts, [&](std::size_t i, std::size_t e) {
    const ClientJob* cj = pf.job({pf.firsts[i]->job, pf.firsts[i]->incarnation});
    if (cj == nullptr) return;
    const JobPolicy& p = cj->policy;
    const std::int64_t threshold = absl::ToInt64Microseconds(p.misfire_threshold);
    for (std::size_t j = i; j < e; ++j) {
      const LedgerFact& l = *pf.firsts[j];
      auto is_ = [&](std::string_view outcome) { return is(names, l, outcome); };
      if (is_("manual") || is_("cancelled")) continue;
      const std::int64_t late = lateness_us(l, *cj);
      const std::string what =
          absl::StrCat("ledger record ", names.name(l.outcome), " ", time_text(l.from), " (fire ",
                       time_text(l.fire_at), ", store commit #", l.commit, ")");
      if ((is_("fired") || is_("moved_dst")) && late > threshold)
        report(
            h, out, l.job, "",
            absl::StrCat(what, " decided ", dur(late), " after its fire time: past the threshold ",
                         dur(threshold), ", so not on time"));
      if (is_("late") && late <= threshold)
        report(h, out, l.job, "",
               absl::StrCat(what, " decided ", dur(late),
                            " after its fire time: within the threshold ", dur(threshold),
                            ", so not late"));
      const bool wrong_policy =
          (p.misfire == MisfirePolicy::kSkip && (is_("late") || is_("coalesced"))) ||
          (p.misfire == MisfirePolicy::kCatchUp && is_("coalesced")) ||
          (p.misfire == MisfirePolicy::kRunOnce && is_("skipped_misfire"));
      if (wrong_policy)
        report(h, out, l.job, "",
               absl::StrCat(what, " under misfire policy ", misfire_name(p.misfire)));
      if (p.misfire == MisfirePolicy::kSkip && is_("skipped_misfire") && late <= threshold)
        report(h, out, l.job, "",
               absl::StrCat(what, " skipped although only ", dur(late), " late (threshold ",
                            dur(threshold), ")"));
    }
  });
}

// P5: catch-up starts at most one late run per spacing within a backlog, and
// after a catch-up decision about a misfired occurrence at most catch_up_max
// due occurrences remain undecided (the kept backlog).
void catch_up_bounded(const History& h, const Replay& r, Findings& out) {
  if (h.facts == nullptr) return;
  const Interner& names = h.facts->strings();
  const PolicyFacts& pf = r.policy;
  // Ranges decided so far per job (first nominal -> last), for the backlog
  // count, and the store time of each job's latest late run.
  std::map<JobKey, std::map<absl::Time, absl::Time>> covered;
  std::map<JobKey, std::int64_t> last_late_us;
  for_each_decision(pf.firsts, [&](std::size_t i, std::size_t e) {
    const JobKey k{pf.firsts[i]->job, pf.firsts[i]->incarnation};
    for (std::size_t j = i; j < e; ++j) covered[k][pf.firsts[j]->from] = pf.firsts[j]->through;
    const ClientJob* cj = pf.job(k);
    if (cj == nullptr) return;
    const JobPolicy& p = cj->policy;
    const std::int64_t threshold = absl::ToInt64Microseconds(p.misfire_threshold);
    const LedgerFact* earliest = nullptr;
    for (std::size_t j = i; j < e; ++j) {
      const LedgerFact& l = *pf.firsts[j];
      if (is(names, l, "manual") || is(names, l, "cancelled")) continue;
      if (earliest == nullptr || l.from < earliest->from) earliest = &l;
      if (p.misfire != MisfirePolicy::kCatchUp || !is(names, l, "late")) continue;
      // Rate: one late run per spacing (or per threshold, the least time
      // between two backlogs), within one backlog.
      const std::string what =
          absl::StrCat("ledger record ", names.name(l.outcome), " ", time_text(l.from), " (fire ",
                       time_text(l.fire_at), ", store commit #", l.commit, ")");
      const std::int64_t spacing =
          std::min(absl::ToInt64Microseconds(p.catch_up_spacing), threshold);
      auto prev = last_late_us.find(k);
      if (prev != last_late_us.end() && l.store_us - prev->second < spacing &&
          r.controlled.count(k.first) == 0)
        report(h, out, l.job, "",
               absl::StrCat(what, ": a late run only ", dur(l.store_us - prev->second),
                            " after the previous one (spacing ",
                            absl::FormatDuration(p.catch_up_spacing), ")"));
      last_late_us[k] = l.store_us;
    }
    if (p.misfire == MisfirePolicy::kCatchUp && earliest != nullptr &&
        lateness_us(*earliest, *cj) > threshold) {
      const std::int64_t t = earliest->store_us;
      std::uint64_t undecided = 0;
      auto occ = pf.expected.find(k);
      const auto& ranges = covered[k];
      if (occ != pf.expected.end())
        for (const Occurrence* o : occ->second) {
          if (absl::ToUnixMicros(o->due) > t) break;
          auto rg = ranges.upper_bound(o->nominal);
          const bool decided = rg != ranges.begin() && o->nominal <= std::prev(rg)->second;
          if (!decided) ++undecided;
        }
      if (undecided > p.catch_up_max && undecided <= 2000)
        report(h, out, k.first, "",
               absl::StrCat("after the catch-up decision at store time ", us_text(t), " (commit #",
                            earliest->commit, ") ", undecided,
                            " due occurrences remain to run; the bound is ", p.catch_up_max));
    }
  });
}

std::set<std::uint32_t> controlled_jobs(const History& h) {
  std::set<std::uint32_t> out;
  if (h.events == nullptr || h.facts == nullptr) return out;
  for (const NodeEvent& e : *h.events) {
    const std::string_view kind = e.event.kind;
    if (kind != client_events::kPaused && kind != client_events::kResumed &&
        kind != client_events::kRescheduled)
      continue;
    const auto* job = e.event.find("job");
    if (job == nullptr || std::get_if<std::string>(job) == nullptr) continue;
    const std::uint32_t id = h.facts->strings().find(std::get<std::string>(*job));
    if (id != Interner::kNone) out.insert(id);
  }
  return out;
}

absl::Duration done_bound(const Bounds& b, const ClientJob& j) {
  const JobPolicy& p = j.policy;
  const absl::Duration attempt = b.attempt_overhead + std::min(j.longest_run, p.timeout);
  absl::Duration retries = absl::ZeroDuration();
  for (std::uint32_t k = 1; k < p.max_attempts; ++k) retries += retry_base_delay(p, k) + attempt;
  absl::Duration own = attempt + retries;
  // A queued run waits for its predecessor's whole life first.
  if (p.overlap == OverlapPolicy::kQueue) own *= 2;
  return b.settle + own;
}

}  // namespace kairos::sim
