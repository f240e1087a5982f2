// The policy invariants (docs/SIMULATION.md, "Invariants"),
// judged from the store facts and what the client was told, never from the
// kernel's events:
//   ledger-one-outcome   every occurrence has exactly one ledger outcome
//   attempts-bounded     no run is granted more than max_attempts times
//   retry-backoff        a failed attempt's retry waits within the jitter bounds
//   overlap-respected    unfinished runs per job stay within the overlap policy
//   catch-up-bounded     catch-up keeps at most catch_up_max of a backlog (the
//                        newest, exactly, where the rule can be judged) and
//                        starts at most one late run per spacing
//   misfire-threshold    each misfire decision matches the rule of
//                        core/kernel/misfire.h (MisfireModel), or where its
//                        inputs are not known, the threshold and the policy
//   priority-order       a claim serves due runs by the documented order
// The per-job ground truth (policy, creation time) is the client's
// (History::jobs); a job the client never saw acknowledged is not judged.
// Each is a rule over the policy facts the replay recorded
// (PolicyFacts, sim/oracle/replay.h); none tracks state but its own.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "core/base/check.h"
#include "core/base/stable_hash.h"
#include "core/kernel/policy.h"
#include "core/ports/random.h"
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

// Whether the record's occurrence got a run of its own in its decision.
bool has_own_run_outcome(const Interner& names, const LedgerFact& l) {
  return is(names, l, "fired") || is(names, l, "late") || is(names, l, "moved_dst");
}

// The misfire rule of core/kernel/misfire.h, modelled from the header's words
// for the checker alone. It never calls decide_misfire: a bug shared by the
// kernel and its judge must not hide. One decision is the group of deciding
// ledger writes one commit made for one job (for_each_decision); the rule
// predicts, from the client's view of the job, what each of its occurrences
// had to become, and the ledger's records are compared with that prediction
// in both directions (an occurrence the rule runs that was skipped or
// coalesced, and one the rule skips or coalesces that ran).
//
// The inputs of the rule and how the checker knows them:
//   now         the store time of the deciding commit (Txn::now(), exact);
//   created_at, policy   the client's (History::jobs);
//   due         the job's occurrences from the decision's first one with
//               fire time <= now, from the client's schedule
//               (PolicyFacts::expected). Judged only when that list is known
//               to be complete up to now: the job was never paused, resumed
//               or rescheduled (Replay::controlled), and the client's list
//               holds an occurrence due after now (or the job is a one-off);
//   capped      the chunk (PolicyOptions::misfire_chunk) is not in the
//               history: any chunk from kMinMisfireChunk up is accepted, the
//               one the ledger implies being tried when the due list is
//               longer than that;
//   DST notes   an on-time run may be recorded fired or moved_dst;
//   backlog     (run-once capped passes) changes only stands_for, which the
//               ledger does not hold: not judged.
// When dispatch looked is not an input: the rule is judged at the time it
// did. Decisions with records the rule does not write (cancelled, paused,
// manual) are not judged here.

// The smallest misfire chunk the job store accepts (its options validation).
constexpr std::size_t kMinMisfireChunk = 1001;

enum class Cls : std::uint8_t { kRun, kCoalesced, kSkipped };

const char* cls_name(Cls c) {
  switch (c) {
    case Cls::kRun:
      return "run";
    case Cls::kCoalesced:
      return "coalesced";
    case Cls::kSkipped:
      return "skipped_misfire";
  }
  return "?";
}

// Occurrences [b, e) of the client's list with one class; `rec` is the
// ledger record (actual segments only).
struct Segment {
  std::size_t b = 0, e = 0;
  Cls cls = Cls::kRun;
  const LedgerFact* rec = nullptr;
};

// What judging one decision found.
struct MisfireJudgement {
  bool judged = false;
  std::string problem;             // empty: the ledger follows the rule
  bool about_bound = false;        // the problem is the catch-up bound (catch-up-bounded)
  bool spaced = false;             // catch-up: the next occurrence was due and must wait
  absl::Time next_nominal;         // (spaced) that occurrence
  std::int64_t not_before_us = 0;  // (spaced) now + catch_up_spacing
  std::uint64_t commit = 0;
  std::int64_t now_us = 0;
};

class MisfireModel {
 public:
  MisfireModel(const History& h, const ClientJob& cj, const std::vector<const Occurrence*>& occ,
               std::int64_t now_us)
      : names_(h.facts->strings()), cj_(cj), occ_(occ), now_us_(now_us) {}

  std::int64_t due_us(std::size_t j) const { return absl::ToUnixMicros(occ_[j]->due); }
  std::int64_t lateness(std::size_t j) const {
    const std::int64_t d = now_us_ - std::max(due_us(j), absl::ToUnixMicros(cj_.created_at));
    return d < 0 ? 0 : d;
  }
  // Strictly past the threshold: lateness equal to it is on time.
  bool misfired(std::size_t j) const {
    return lateness(j) > absl::ToInt64Microseconds(cj_.policy.misfire_threshold);
  }

  // The decision the rule makes for due = occ[i0, i0 + n), `capped` or not.
  std::vector<Segment> rule(std::size_t i0, std::size_t n, bool capped) const {
    const JobPolicy& p = cj_.policy;
    std::vector<Segment> s;
    auto add = [&](std::size_t b, std::size_t e, Cls c) {
      if (b < e) s.push_back({b, e, c, nullptr});
    };
    if (!misfired(i0)) {  // on time: the entry stands for itself and runs
      add(i0, i0 + 1, Cls::kRun);
      return s;
    }
    switch (p.misfire) {
      case MisfirePolicy::kRunOnce:
        if (capped) {
          add(i0, i0 + n, Cls::kCoalesced);
        } else {
          add(i0, i0 + n - 1, Cls::kCoalesced);
          add(i0 + n - 1, i0 + n, Cls::kRun);
        }
        break;
      case MisfirePolicy::kSkip: {
        std::size_t m = 0;  // lateness decreases along due: a prefix misfired
        while (m < n && misfired(i0 + m)) ++m;
        add(i0, i0 + m, Cls::kSkipped);
        break;
      }
      case MisfirePolicy::kCatchUp: {
        const std::size_t excess = n > p.catch_up_max ? n - p.catch_up_max : 0;
        add(i0, i0 + excess, Cls::kSkipped);
        if (!capped) add(i0 + excess, i0 + excess + 1, Cls::kRun);
        break;
      }
    }
    return s;
  }

  // The first difference between the rule's segments and the ledger's
  // (merged) ones; empty text when they agree. `outcome_only`: the segments
  // agree and only a run's recorded outcome (on time or late) differs.
  struct Difference {
    std::string text;
    bool outcome_only = false;
  };
  Difference compare(std::vector<Segment> want, std::vector<Segment> got) const {
    std::size_t wi = 0, gi = 0;
    std::size_t at = !want.empty() ? want[0].b : !got.empty() ? got[0].b : 0;
    while (wi < want.size() || gi < got.size()) {
      if (gi < got.size() && got[gi].b < at)
        return {
            absl::StrCat("occurrence ", occ_text(got[gi].b), " has two outcomes in one decision")};
      if (wi == want.size())
        return {absl::StrCat("occurrence ", occ_text(got[gi].b), " was recorded ", outcome(got[gi]),
                             " although the rule leaves it to a later decision")};
      const Segment& w = want[wi];
      if (gi == got.size() || got[gi].b > at)
        return {absl::StrCat("occurrence ", occ_text(at), " got no outcome; the rule says ",
                             cls_name(w.cls))};
      Segment& g = got[gi];
      if (g.cls != w.cls)
        return {absl::StrCat("occurrence ", occ_text(at), " was recorded ", outcome(g),
                             "; the rule says ", cls_name(w.cls))};
      if (g.cls == Cls::kRun) {
        if (g.e != g.b + 1)
          return {absl::StrCat("a run record ", outcome(g), " covers ", g.e - g.b,
                               " occurrences from ", occ_text(g.b))};
        const std::string& o = outcome(g);
        const bool late = misfired(g.b);
        if (!(o == "skipped_overlap" || (late && o == "late") ||
              (!late && (o == "fired" || o == "moved_dst"))))
          return {absl::StrCat("occurrence ", occ_text(g.b), " was recorded ", o,
                               "; the rule runs it ", late ? "late (past" : "on time (within",
                               " the threshold; equal to it is on time)"),
                  true};
      }
      const std::size_t end = std::min(g.e, w.e);
      at = end;
      if (g.e == end)
        ++gi;
      else
        g.b = end;  // the ledger's range goes on past the rule's
      if (w.e == end) ++wi;
    }
    return {};
  }

  std::string summary(const std::vector<Segment>& s) const {
    if (s.empty()) return "nothing";
    std::string out;
    for (const Segment& x : s) {
      if (!out.empty()) out += ", ";
      out += absl::StrCat(x.rec != nullptr ? outcome(x) : cls_name(x.cls), " ",
                          time_text(occ_[x.b]->nominal));
      if (x.e > x.b + 1) out += absl::StrCat("..", time_text(occ_[x.e - 1]->nominal));
      out += absl::StrCat(" (", x.e - x.b, ")");
    }
    return out;
  }

 private:
  std::string outcome(const Segment& g) const { return names_.name(g.rec->outcome); }
  std::string occ_text(std::size_t j) const {
    if (j >= occ_.size()) return "?";
    return absl::StrCat(time_text(occ_[j]->nominal), " (fire ", time_text(occ_[j]->due),
                        ", lateness ", dur(lateness(j)), ")");
  }
  const Interner& names_;
  const ClientJob& cj_;
  const std::vector<const Occurrence*>& occ_;
  std::int64_t now_us_;
};

// Judges the decision firsts[i, e) against the rule (see MisfireModel).
MisfireJudgement judge_misfire(const History& h, const Replay& r, std::size_t i, std::size_t e) {
  MisfireJudgement out;
  const Interner& names = h.facts->strings();
  const PolicyFacts& pf = r.policy;
  const JobKey k{pf.firsts[i]->job, pf.firsts[i]->incarnation};
  const ClientJob* cj = pf.job(k);
  auto occ_it = pf.expected.find(k);
  if (cj == nullptr || r.controlled.count(k.first) != 0 || occ_it == pf.expected.end() ||
      occ_it->second.empty())
    return out;
  const std::vector<const Occurrence*>& occ = occ_it->second;
  std::vector<const LedgerFact*> recs(pf.firsts.begin() + static_cast<std::ptrdiff_t>(i),
                                      pf.firsts.begin() + static_cast<std::ptrdiff_t>(e));
  for (const LedgerFact* l : recs) {
    const std::string& o = names.name(l->outcome);
    if (o != "fired" && o != "late" && o != "moved_dst" && o != "skipped_overlap" &&
        o != "coalesced" && o != "skipped_misfire")
      return out;
  }
  std::sort(recs.begin(), recs.end(),
            [](const LedgerFact* a, const LedgerFact* b) { return a->from < b->from; });
  const std::int64_t now_us = recs[0]->store_us;
  // The client's list is complete up to now (see above).
  if (cj->recurring && absl::ToUnixMicros(occ.back()->due) <= now_us) return out;
  // The ledger's records as segments of the client's list.
  std::vector<Segment> got;
  for (const LedgerFact* l : recs) {
    auto by_nominal = [](const Occurrence* o, absl::Time t) { return o->nominal < t; };
    const auto b = std::lower_bound(occ.begin(), occ.end(), l->from, by_nominal);
    const auto last = std::lower_bound(occ.begin(), occ.end(), l->through, by_nominal);
    if (b == occ.end() || (*b)->nominal != l->from || last == occ.end() ||
        (*last)->nominal != l->through)
      return out;  // an occurrence the client's schedule does not know
    const std::string& o = names.name(l->outcome);
    const Cls c = o == "coalesced"         ? Cls::kCoalesced
                  : o == "skipped_misfire" ? Cls::kSkipped
                                           : Cls::kRun;
    Segment s{static_cast<std::size_t>(b - occ.begin()),
              static_cast<std::size_t>(last - occ.begin()) + 1, c, l};
    // Adjacent records of one recorded-only class are one range.
    if (!got.empty() && c != Cls::kRun && got.back().cls == c && got.back().e == s.b)
      got.back().e = s.e;
    else
      got.push_back(s);
  }
  out.judged = true;
  out.commit = recs[0]->commit;
  out.now_us = now_us;
  const MisfireModel m(h, *cj, occ, now_us);
  const std::size_t i0 = got[0].b;
  // due: occ[i0] (the entry's own occurrence, whenever it fired) and every
  // following occurrence with fire time <= now.
  const auto end_due = std::partition_point(
      occ.begin() + static_cast<std::ptrdiff_t>(i0) + 1, occ.end(),
      [&](const Occurrence* o) { return absl::ToUnixMicros(o->due) <= now_us; });
  const std::size_t n_due = static_cast<std::size_t>(end_due - occ.begin()) - i0;
  const std::vector<Segment> want = m.rule(i0, n_due, /*capped=*/false);
  MisfireModel::Difference diff = m.compare(want, got);
  if (!diff.text.empty() && n_due > kMinMisfireChunk && m.misfired(i0)) {
    // Capped by a chunk the history does not hold: the one the ledger
    // implies (run-once and skip: what it covered; catch-up: that plus the
    // bound it kept), if it is one the store accepts.
    const std::size_t covered = got.back().e - i0;
    const std::size_t chunk =
        cj->policy.misfire == MisfirePolicy::kCatchUp ? covered + cj->policy.catch_up_max : covered;
    if (chunk >= kMinMisfireChunk && chunk < n_due &&
        m.compare(m.rule(i0, chunk, /*capped=*/true), got).text.empty())
      diff = {};
  }
  if (diff.text.empty()) {
    // Run-once: coalesced records name the decision's run when it was
    // created, and no run when there is none (capped, or refused by the
    // overlap policy).
    std::optional<absl::Time> run;
    for (const LedgerFact* l : recs)
      if (has_own_run_outcome(names, *l)) run = l->from;
    for (const LedgerFact* l : recs) {
      if (!is(names, *l, "coalesced") || l->run_nominal == run) continue;
      diff.text = absl::StrCat("coalesced record ", time_text(l->from), " names run ",
                               l->run_nominal ? time_text(*l->run_nominal) : "none",
                               "; the decision's run is ", run ? time_text(*run) : "none");
      diff.outcome_only = true;
      break;
    }
  }
  const JobPolicy& p = cj->policy;
  if (!diff.text.empty()) {
    std::size_t misfired = 0;
    while (misfired < n_due && m.misfired(i0 + misfired)) ++misfired;
    out.problem = absl::StrCat(
        "the misfire decision at store time ", us_text(now_us), " (commit #", out.commit,
        ") breaks the rule of core/kernel/misfire.h: ", diff.text, ". Policy ",
        misfire_name(p.misfire), ", threshold ", absl::FormatDuration(p.misfire_threshold),
        p.misfire == MisfirePolicy::kCatchUp ? absl::StrCat(", catch_up_max ", p.catch_up_max)
                                             : std::string(),
        "; ", n_due, " occurrences due, ", misfired, " misfired",
        n_due > kMinMisfireChunk ? " (capping by any chunk considered)" : "",
        ". The rule: ", m.summary(want), "; the ledger: ", m.summary(got));
    // A catch-up decision that kept the wrong part of its backlog (skipped
    // some, then at most one run) is about the bound.
    bool shaped = p.misfire == MisfirePolicy::kCatchUp && m.misfired(i0) && !diff.outcome_only;
    for (std::size_t s = 0; s < got.size(); ++s)
      if (!(got[s].cls == Cls::kSkipped || (got[s].cls == Cls::kRun && s + 1 == got.size())))
        shaped = false;
    out.about_bound = shaped;
  }
  // Catch-up's rate limit: after a run, a next occurrence that is already
  // due waits until now + catch_up_spacing.
  if (p.misfire == MisfirePolicy::kCatchUp && m.misfired(i0) && got.back().cls == Cls::kRun &&
      got.back().e < i0 + n_due) {
    out.spaced = true;
    out.next_nominal = occ[got.back().e]->nominal;
    out.not_before_us = now_us + absl::ToInt64Microseconds(p.catch_up_spacing);
  }
  return out;
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

// The retry delay after failed attempt k as docs/POLICIES.md states it,
// written from the formula rather than with the kernel's policy functions
// (a bug shared by both would hide): base(k) = min(retry_max, retry_initial
// x (multiplier/100)^(k-1)), integer microseconds, and the jitter cut
// base(k) x jitter x u / (100 x 2^32) with u = stable_hash(key, k) >> 32.
std::int64_t documented_retry_base_us(const JobPolicy& p, std::uint32_t k) {
  const std::int64_t max = absl::ToInt64Microseconds(p.retry_max);
  std::int64_t d = absl::ToInt64Microseconds(p.retry_initial);
  for (std::uint32_t i = 1; i < k && d < max; ++i)
    d = static_cast<std::int64_t>(std::min<uint128_t>(
        static_cast<uint128_t>(d) * p.retry_multiplier_percent / 100, static_cast<uint128_t>(max)));
  return std::min(d, max);
}
std::int64_t documented_retry_delay_us(const JobPolicy& p, std::string_view key, std::uint32_t k) {
  const std::int64_t base = documented_retry_base_us(p, k);
  const std::uint64_t u = stable_hash(key, k) >> 32;
  const uint128_t cut = static_cast<uint128_t>(base) * p.retry_jitter_percent * u /
                        (static_cast<uint128_t>(100) << 32);
  return base - static_cast<std::int64_t>(cut);
}
std::int64_t documented_retry_floor_us(const JobPolicy& p, std::uint32_t k) {
  const std::int64_t hi = documented_retry_base_us(p, k);
  return hi - static_cast<std::int64_t>(static_cast<uint128_t>(hi) * p.retry_jitter_percent / 100);
}

// P3: a failed attempt's retry becomes ready exactly its documented delay
// after the failure's commit: inside [base - base x jitter/100, base] (both
// ends), at the point the run's deterministic jitter picks.
void retry_backoff(const History& h, const Replay& r, Findings& out) {
  const PolicyFacts& pf = r.policy;
  for (const PolicyFacts::Retry& x : pf.retries) {
    const RunFact& f = *x.fact;
    const ClientJob* cj = pf.job({f.job, f.incarnation});
    if (cj == nullptr) continue;
    const JobPolicy& p = cj->policy;
    const std::int64_t t = x.t;
    const std::uint32_t failed = f.attempt - 1;
    const std::int64_t delay = f.ready_us - t;
    const std::int64_t hi = documented_retry_base_us(p, failed);
    const std::int64_t lo = documented_retry_floor_us(p, failed);
    const std::int64_t want = documented_retry_delay_us(p, h.facts->strings().name(f.run), failed);
    if (delay != want)
      report(
          h, out, f.job, h.facts->strings().name(f.run),
          absl::StrCat("attempt ", failed, " failed at store time ", us_text(t),
                       "; the retry is ready after ", dur(delay), ", not the documented ",
                       dur(want), (delay < lo || delay > hi) ? " (outside [" : " (in [", dur(lo),
                       ", ", dur(hi), "]; initial ", absl::FormatDuration(p.retry_initial), ", x",
                       p.retry_multiplier_percent, "%, max ", absl::FormatDuration(p.retry_max),
                       ", jitter ", p.retry_jitter_percent, "%)"));
  }
}

// P4: a job's unfinished runs stay within its overlap policy (reported once
// per job).
void overlap_respected(const History& h, const Replay& r, Findings& out) {
  const PolicyFacts& pf = r.policy;
  std::set<JobKey> reported;
  for (const PolicyFacts::Unfinished& o : pf.unfinished) {
    const ClientJob* cj = pf.job(o.job);
    if (cj == nullptr || cj->forced) continue;  // a forced trigger overrides the policy
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
  auto uncovered = [&](JobKey k, const std::vector<const Occurrence*>& occurrences,
                       std::string_view what) {
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
                          ", incarnation ", k.second, ")", absl_sv(what), " has no ledger record"));
      break;  // one per job is enough to act on
    }
  };
  for (const auto& [k, occurrences] : pf.expected) uncovered(k, occurrences, "");
  // A cancel closes the books: what fell due by its commit has an outcome.
  for (const auto& [k, occurrences] : pf.cancelled_due)
    uncovered(k, occurrences, ", due by the commit that cancelled the job,");
}

// P6: each decision's outcomes match the misfire rule (judge_misfire), or,
// where its inputs are not all known, each record matches the threshold and
// the policy.
void misfire_threshold(const History& h, const Replay& r, Findings& out) {
  if (h.facts == nullptr) return;
  const Interner& names = h.facts->strings();
  const PolicyFacts& pf = r.policy;
  for_each_decision(pf.firsts, [&](std::size_t i, std::size_t e) {
    const ClientJob* cj = pf.job({pf.firsts[i]->job, pf.firsts[i]->incarnation});
    if (cj == nullptr) return;
    // Where the decision's inputs are known, the rule itself judges it
    // (problems with catch-up's bound are catch-up-bounded's).
    const MisfireJudgement verdict = judge_misfire(h, r, i, e);
    if (verdict.judged) {
      if (!verdict.problem.empty() && !verdict.about_bound)
        report(h, out, pf.firsts[i]->job, "", verdict.problem);
      return;
    }
    // Otherwise each record on its own: what the rule implies for a single
    // record whatever the rest of the decision.
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

namespace {

absl::Duration cj_spacing(const Replay& r, JobKey k) {
  const ClientJob* cj = r.policy.job(k);
  return cj == nullptr ? absl::ZeroDuration() : cj->policy.catch_up_spacing;
}

// Whether no fault window, nor its after-effects (the settle bound), touches
// the true-time span from `settle` before the store time `from_us` to the
// store time `to_us`, both read on the clock of commit `commit` (its true
// time less its store time).
bool quiet_wait(const History& h, std::uint64_t commit, std::int64_t from_us, std::int64_t to_us) {
  if (h.faults == nullptr) return true;
  const StoreCommit& c = (*h.commits)[commit];
  const absl::Duration offset = c.at - c.store_time;
  const absl::Time from = absl::FromUnixMicros(from_us) + offset;
  const absl::Time to = absl::FromUnixMicros(to_us) + offset;
  for (const FaultWindow& w : *h.faults)
    if (w.from <= to && w.to + h.bounds.settle >= from) return false;
  return true;
}

}  // namespace

// P5: catch-up starts at most one late run per spacing within a backlog, and
// after a catch-up decision about a misfired occurrence at most catch_up_max
// due occurrences remain undecided (the kept backlog). Where the rule can be
// judged (judge_misfire), each decision keeps exactly the newest
// catch_up_max of its due occurrences and runs the oldest of them, and the
// next decision of a backlog waits catch_up_spacing -- no less, and, where
// no fault touches the wait, no more than the spacing and the start bound:
// so a backlog yields exactly its bound of runs at the documented spacing.
void catch_up_bounded(const History& h, const Replay& r, Findings& out) {
  if (h.facts == nullptr) return;
  const Interner& names = h.facts->strings();
  const PolicyFacts& pf = r.policy;
  // Ranges decided so far per job (first nominal -> last), for the backlog
  // count, and the store time of each job's latest late run.
  std::map<JobKey, std::map<absl::Time, absl::Time>> covered;
  std::map<JobKey, std::int64_t> last_late_us;
  // The rule (judge_misfire): each catch-up decision keeps exactly the
  // bound's newest occurrences of its backlog, and after a run a next
  // occurrence already due waits catch_up_spacing: that decision comes no
  // earlier (a lower bound only: when dispatch looks again is not known).
  std::map<JobKey, MisfireJudgement> spaced;
  for_each_decision(pf.firsts, [&](std::size_t i, std::size_t e) {
    const JobKey k{pf.firsts[i]->job, pf.firsts[i]->incarnation};
    const MisfireJudgement verdict = judge_misfire(h, r, i, e);
    if (auto prev = spaced.find(k); prev != spaced.end()) {
      const LedgerFact* first = pf.firsts[i];
      bool dispatched = true;  // a dispatch decision, not a cancel, pause or trigger
      for (std::size_t j = i; j < e; ++j) {
        const LedgerFact& l = *pf.firsts[j];
        if (l.from < first->from) first = &l;
        if (is(names, l, "manual") || is(names, l, "cancelled") || is(names, l, "paused"))
          dispatched = false;
      }
      const MisfireJudgement& was = prev->second;
      if (dispatched && first->from == was.next_nominal && first->store_us < was.not_before_us)
        report(h, out, k.first, "",
               absl::StrCat("the catch-up run decided at store time ", us_text(was.now_us),
                            " (commit #", was.commit, ") left occurrence ",
                            time_text(was.next_nominal), " due: it waits the spacing, until ",
                            us_text(was.not_before_us), ", but was decided at ",
                            us_text(first->store_us), " (commit #", first->commit, ")"));
      // The other side: the spacing is a wait, not a pause of the backlog.
      // The occurrence's due entry stands at now + spacing, so where no
      // fault (or its after-effects) touches the wait, the next decision of
      // the job -- whatever it decides, by whichever body -- comes within
      // the start bound of it (the leader's next ticks and one dispatch),
      // as timeliness holds any due entry. A kernel that re-times the entry
      // later (two spacings, a threshold) keeps a smaller share of its
      // backlog than the bound says and is caught here.
      const std::int64_t latest_us = was.not_before_us + absl::ToInt64Microseconds(h.bounds.start);
      if (h.bounds.check_start && first->store_us > latest_us &&
          quiet_wait(h, was.commit, was.now_us, latest_us))
        report(h, out, k.first, "",
               absl::StrCat(
                   "the catch-up run decided at store time ", us_text(was.now_us), " (commit #",
                   was.commit, ") left occurrence ", time_text(was.next_nominal), " due until ",
                   us_text(was.not_before_us), " (spacing ", absl::FormatDuration(cj_spacing(r, k)),
                   "); with no fault since, the job's next decision is due by ", us_text(latest_us),
                   " (start bound ", absl::FormatDuration(h.bounds.start), ") but came at ",
                   us_text(first->store_us), " (commit #", first->commit, ")"));
      spaced.erase(prev);
    }
    if (!verdict.judged) return;
    if (!verdict.problem.empty() && verdict.about_bound)
      report(h, out, k.first, "", verdict.problem);
    if (verdict.spaced) spaced[k] = verdict;
  });
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
