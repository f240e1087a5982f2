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

using JobKey = std::pair<std::uint32_t, std::uint64_t>;  // (interned job id, incarnation)

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

class PolicyChecks {
 public:
  PolicyChecks(const History& h, Replay& r) : h_(h), r_(r), names_(h.facts->strings()) {
    if (h.jobs != nullptr)
      for (const ClientJob& j : *h.jobs) {
        const std::uint32_t id = names_.find(j.id);
        if (id != Interner::kNone) jobs_[{id, j.incarnation}] = &j;
      }
    if (h.expected != nullptr)
      for (const Occurrence& o : *h.expected) {
        const std::uint32_t id = names_.find(o.job);
        if (id != Interner::kNone) expected_[{id, o.incarnation}].push_back(&o);
      }
    for (auto& [k, list] : expected_)
      std::sort(list.begin(), list.end(),
                [](const Occurrence* a, const Occurrence* b) { return a->nominal < b->nominal; });
  }

  void run() {
    check_runs();
    check_ledger();
  }

 private:
  const ClientJob* job(JobKey k) const {
    auto it = jobs_.find(k);
    return it == jobs_.end() ? nullptr : it->second;
  }
  void report(std::string_view invariant, std::uint32_t job, std::string run, std::string detail,
              std::vector<std::string> evidence = {}) {
    Violation v;
    v.job = names_.name(job);
    v.run = std::move(run);
    v.detail = std::move(detail);
    v.evidence = std::move(evidence);
    KAIROS_CHECK_MSG(is_registered_invariant(invariant),
                     "a finding under an invariant name sim/oracle/invariant_names.h lacks");
    auto& list = r_.policy_found[std::string(invariant)];
    if (list.size() < kMaxPerInvariant) {
      v.invariant = std::string(invariant);
      list.push_back(std::move(v));
    }
  }

  // --- Runs: attempts, retry delays, overlap, claim order ------------------
  struct Run {
    bool exists = false;
    RunState state = RunState::kReady;
    std::uint64_t token = 0;
    std::int64_t ready_us = 0;
    std::int8_t priority = 0;
    std::uint32_t shard = 0;
  };
  using Queue = std::set<std::pair<std::int64_t, std::uint32_t>>;  // (ready_us, run)

  void unready(std::uint32_t id) {
    Run& run = runs_[id];
    if (!run.exists || run.state != RunState::kReady) return;
    ready_all_[run.shard].erase({run.ready_us, id});
    ready_band_[{run.shard, run.priority}].erase({run.ready_us, id});
  }
  void enready(std::uint32_t id) {
    Run& run = runs_[id];
    ready_all_[run.shard].insert({run.ready_us, id});
    ready_band_[{run.shard, run.priority}].insert({run.ready_us, id});
  }

  // Claim order (docs/POLICIES.md, "Priority and the no-starvation rule"),
  // per shard: runs ready for at least the starvation bound first, oldest
  // first; then higher priority first, FIFO within a priority. A granted run
  // `g` is in violation when a run still ready in its shard after the claim
  // commit should have been served before it.
  void check_claim_order(const RunFact& f, const Run& before, std::int64_t t) {
    const std::int64_t bound = absl::ToInt64Microseconds(h_.starvation_bound);
    const bool starving = before.ready_us <= t - bound;
    const std::string key = names_.name(f.run);
    auto it = ready_all_.find(before.shard);
    if (it != ready_all_.end() && !it->second.empty()) {
      const auto& [oldest_us, oldest] = *it->second.begin();
      if (oldest_us <= t - bound && (!starving || oldest_us < before.ready_us)) {
        report(inv::kPriorityOrder, f.job, key,
               absl::StrCat("claim at store time ", us_text(t), " granted ", key, " (priority ",
                            before.priority, ", ready ", us_text(before.ready_us), ") while ",
                            names_.name(oldest), " (priority ", runs_[oldest].priority,
                            ") had been ready since ", us_text(oldest_us),
                            ", past the starvation bound, in the same shard"));
        return;
      }
    }
    if (starving) return;
    for (std::int32_t p = before.priority; p <= kMaxPriority; ++p) {
      auto band = ready_band_.find({before.shard, static_cast<std::int8_t>(p)});
      if (band == ready_band_.end() || band->second.empty()) continue;
      const auto& [first_us, first] = *band->second.begin();
      const bool precedes = p > before.priority ? first_us <= t : first_us < before.ready_us;
      if (!precedes) continue;
      report(inv::kPriorityOrder, f.job, key,
             absl::StrCat("claim at store time ", us_text(t), " granted ", key, " (priority ",
                          before.priority, ", ready ", us_text(before.ready_us), ") before ",
                          names_.name(first), " (priority ", p, ", ready ", us_text(first_us),
                          ") of the same shard"));
      return;
    }
  }

  void check_overlap(JobKey k, std::uint64_t commit, std::int64_t t) {
    const ClientJob* cj = job(k);
    if (cj == nullptr) return;
    const Open& o = open_[k];
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
    if (ok || !reported_overlap_.insert(k).second) return;
    report(inv::kOverlapRespected, k.first, "",
           absl::StrCat("after store commit #", commit, " (store time ", us_text(t),
                        ") incarnation ", k.second, " has ", o.active, " active and ", o.waiting,
                        " waiting unfinished runs; overlap ", overlap_name(p.overlap),
                        p.overlap == OverlapPolicy::kAllow
                            ? absl::StrCat(" allows ", p.max_concurrent, " active, none waiting")
                        : p.overlap == OverlapPolicy::kQueue
                            ? std::string(" allows 1 active and 1 waiting")
                            : std::string(" allows 1 unfinished")));
  }

  void check_runs() {
    runs_.assign(names_.size(), Run{});
    const auto& facts = h_.facts->runs();
    for (std::size_t i = 0; i < facts.size();) {
      std::size_t e = i;
      while (e < facts.size() && facts[e].commit == facts[i].commit) ++e;
      if (lost(h_, facts[i].commit)) {
        i = e;
        continue;
      }
      const std::int64_t t = facts[i].store_us;
      // The claim order is judged against the runs the commit left ready.
      for (std::size_t k = i; k < e; ++k) unready(facts[k].run);
      for (std::size_t k = i; k < e; ++k) {
        const RunFact& f = facts[k];
        const Run& before = runs_[f.run];
        const bool grant =
            f.state == RunState::kLeased &&
            (!before.exists || before.state != RunState::kLeased || before.token != f.token);
        if (!grant) continue;
        const ClientJob* cj = job({f.job, f.incarnation});
        if (cj != nullptr && f.attempt > cj->policy.max_attempts)
          report(
              inv::kAttemptsBounded, f.job, names_.name(f.run),
              absl::StrCat("attempt ", f.attempt, " granted (token ", f.token, ", store commit #",
                           f.commit, "); the job allows ", cj->policy.max_attempts));
        if (before.exists && before.state == RunState::kReady) check_claim_order(f, before, t);
      }
      std::set<JobKey> touched;
      for (std::size_t k = i; k < e; ++k) {
        const RunFact& f = facts[k];
        Run& run = runs_[f.run];
        const JobKey jk{f.job, f.incarnation};
        const ClientJob* cj = job(jk);
        // A retryable failure or timeout re-queues the run after its backoff.
        if (cj != nullptr && run.exists && run.state == RunState::kLeased &&
            f.state == RunState::kReady &&
            (f.last_end == AttemptEnd::kFailed || f.last_end == AttemptEnd::kTimedOut) &&
            f.attempt >= 2) {
          const std::uint32_t failed = f.attempt - 1;
          const std::int64_t delay = f.ready_us - t;
          const std::int64_t lo = absl::ToInt64Microseconds(retry_lower_bound(cj->policy, failed));
          const std::int64_t hi = absl::ToInt64Microseconds(retry_base_delay(cj->policy, failed));
          if (delay < lo || delay > hi)
            report(inv::kRetryBackoff, f.job, names_.name(f.run),
                   absl::StrCat("attempt ", failed, " failed at store time ", us_text(t),
                                "; the retry is ready after ", dur(delay), ", outside [", dur(lo),
                                ", ", dur(hi), "] (initial ",
                                absl::FormatDuration(cj->policy.retry_initial), ", x",
                                cj->policy.retry_multiplier_percent, "%, max ",
                                absl::FormatDuration(cj->policy.retry_max), ", jitter ",
                                cj->policy.retry_jitter_percent, "%)"));
        }
        auto count = [&](RunState s, int delta) {
          Open& o = open_[jk];
          if (s == RunState::kReady || s == RunState::kLeased)
            o.active += delta;
          else if (s == RunState::kWaiting)
            o.waiting += delta;
        };
        if (run.exists) count(run.state, -1);
        count(f.state, +1);
        touched.insert(jk);
        unready(f.run);
        run.exists = true;
        run.state = f.state;
        run.token = std::max(run.token, f.token);
        run.ready_us = f.ready_us;
        run.priority = f.priority;
        run.shard = f.shard;
        if (f.state == RunState::kReady) enready(f.run);
      }
      for (const JobKey& jk : touched) check_overlap(jk, facts[i].commit, t);
      i = e;
    }
  }

  // --- Ledger: one outcome, misfire decisions, catch-up ---------------------
  struct Record {
    const LedgerFact* first = nullptr;  // the deciding write
    const LedgerFact* last = nullptr;   // the latest (e.g. fired -> cancelled)
  };

  bool is(const LedgerFact& l, std::string_view outcome) const {
    return names_.name(l.outcome) == outcome;
  }

  std::int64_t lateness_us(const LedgerFact& l, const ClientJob& cj) const {
    const absl::Time from = std::max(l.fire_at, cj.created_at);
    const std::int64_t d = l.store_us - absl::ToUnixMicros(from);
    return d < 0 ? 0 : d;
  }

  void check_ledger() {
    // Key facts only, in commit order; a key's first write decides.
    std::map<std::tuple<std::uint32_t, std::uint64_t, absl::Time>, Record> records;
    std::vector<const LedgerFact*> firsts;
    for (const LedgerFact& l : h_.facts->ledger()) {
      if (l.commit == LedgerFact::kFromEvent || lost(h_, l.commit)) continue;
      Record& rec = records[{l.job, l.incarnation, l.from}];
      if (rec.first == nullptr) {
        rec.first = &l;
        firsts.push_back(&l);
      }
      rec.last = &l;
    }
    // Exactly one outcome: no two records cover one occurrence, and every
    // occurrence the client's schedule makes certain is covered.
    std::map<JobKey, std::vector<const LedgerFact*>> by_job;
    for (const auto& [key, rec] : records)
      if (!is(*rec.last, "manual"))
        by_job[{rec.last->job, rec.last->incarnation}].push_back(rec.last);
    for (const auto& [k, list] : by_job) {  // sorted by first nominal (map order)
      for (std::size_t i = 1; i < list.size(); ++i) {
        if (list[i]->from > list[i - 1]->through) continue;
        report(inv::kLedgerOneOutcome, k.first, "",
               absl::StrCat("occurrence ", time_text(list[i]->from),
                            " has two ledger records: ", names_.name(list[i - 1]->outcome), " ",
                            time_text(list[i - 1]->from), "..", time_text(list[i - 1]->through),
                            " (commit #", list[i - 1]->commit, ") and ",
                            names_.name(list[i]->outcome), " ", time_text(list[i]->from), "..",
                            time_text(list[i]->through), " (commit #", list[i]->commit, ")"));
        break;
      }
    }
    for (const auto& [k, occurrences] : expected_) {
      auto it = by_job.find(k);
      for (const Occurrence* o : occurrences) {
        bool covered = false;
        if (it != by_job.end()) {
          const auto& list = it->second;
          auto after =
              std::upper_bound(list.begin(), list.end(), o->nominal,
                               [](absl::Time t, const LedgerFact* l) { return t < l->from; });
          covered = after != list.begin() && o->nominal <= (*(after - 1))->through;
        }
        if (covered) continue;
        report(inv::kLedgerOneOutcome, k.first, "",
               absl::StrCat("occurrence ", time_text(o->nominal), " (due ", time_text(o->due),
                            ", incarnation ", k.second, ") has no ledger record"));
        break;  // one per job is enough to act on
      }
    }
    check_decisions(firsts);
  }

  void check_decisions(const std::vector<const LedgerFact*>& firsts) {
    // Ranges decided so far per job (first nominal -> last), for the
    // catch-up backlog count.
    std::map<JobKey, std::map<absl::Time, absl::Time>> covered;
    std::map<JobKey, std::int64_t> last_late_us;
    for (std::size_t i = 0; i < firsts.size();) {
      // The records one commit wrote for one job form one decision.
      std::size_t e = i;
      while (e < firsts.size() && firsts[e]->commit == firsts[i]->commit &&
             firsts[e]->job == firsts[i]->job && firsts[e]->incarnation == firsts[i]->incarnation)
        ++e;
      const JobKey k{firsts[i]->job, firsts[i]->incarnation};
      for (std::size_t j = i; j < e; ++j) covered[k][firsts[j]->from] = firsts[j]->through;
      const ClientJob* cj = job(k);
      if (cj == nullptr) {
        i = e;
        continue;
      }
      const JobPolicy& p = cj->policy;
      const std::int64_t threshold = absl::ToInt64Microseconds(p.misfire_threshold);
      const LedgerFact* earliest = nullptr;
      for (std::size_t j = i; j < e; ++j) {
        const LedgerFact& l = *firsts[j];
        if (is(l, "manual") || is(l, "cancelled")) continue;
        if (earliest == nullptr || l.from < earliest->from) earliest = &l;
        const std::int64_t late = lateness_us(l, *cj);
        const std::string what =
            absl::StrCat("ledger record ", names_.name(l.outcome), " ", time_text(l.from),
                         " (fire ", time_text(l.fire_at), ", store commit #", l.commit, ")");
        if ((is(l, "fired") || is(l, "moved_dst")) && late > threshold)
          report(inv::kMisfireThreshold, l.job, "",
                 absl::StrCat(what, " decided ", dur(late),
                              " after its fire time: past the threshold ", dur(threshold),
                              ", so not on time"));
        if (is(l, "late") && late <= threshold)
          report(inv::kMisfireThreshold, l.job, "",
                 absl::StrCat(what, " decided ", dur(late),
                              " after its fire time: within the threshold ", dur(threshold),
                              ", so not late"));
        const bool wrong_policy =
            (p.misfire == MisfirePolicy::kSkip && (is(l, "late") || is(l, "coalesced"))) ||
            (p.misfire == MisfirePolicy::kCatchUp && is(l, "coalesced")) ||
            (p.misfire == MisfirePolicy::kRunOnce && is(l, "skipped_misfire"));
        if (wrong_policy)
          report(inv::kMisfireThreshold, l.job, "",
                 absl::StrCat(what, " under misfire policy ", misfire_name(p.misfire)));
        if (p.misfire == MisfirePolicy::kSkip && is(l, "skipped_misfire") && late <= threshold)
          report(inv::kMisfireThreshold, l.job, "",
                 absl::StrCat(what, " skipped although only ", dur(late), " late (threshold ",
                              dur(threshold), ")"));
        if (p.misfire == MisfirePolicy::kCatchUp && is(l, "late")) {
          // Rate: one late run per spacing (or per threshold, the least time
          // between two backlogs), within one backlog.
          const std::int64_t spacing =
              std::min(absl::ToInt64Microseconds(p.catch_up_spacing), threshold);
          auto prev = last_late_us.find(k);
          if (prev != last_late_us.end() && l.store_us - prev->second < spacing &&
              r_.controlled.count(k.first) == 0)
            report(inv::kCatchUpBounded, l.job, "",
                   absl::StrCat(what, ": a late run only ", dur(l.store_us - prev->second),
                                " after the previous one (spacing ",
                                absl::FormatDuration(p.catch_up_spacing), ")"));
          last_late_us[k] = l.store_us;
        }
      }
      // Bound: after a catch-up decision about a misfired occurrence, at most
      // catch_up_max due occurrences remain undecided (the kept backlog).
      if (p.misfire == MisfirePolicy::kCatchUp && earliest != nullptr &&
          lateness_us(*earliest, *cj) > threshold) {
        const std::int64_t t = earliest->store_us;
        std::uint64_t undecided = 0;
        auto occ = expected_.find(k);
        const auto& ranges = covered[k];
        if (occ != expected_.end())
          for (const Occurrence* o : occ->second) {
            if (absl::ToUnixMicros(o->due) > t) break;
            auto r = ranges.upper_bound(o->nominal);
            const bool decided = r != ranges.begin() && o->nominal <= std::prev(r)->second;
            if (!decided) ++undecided;
          }
        if (undecided > p.catch_up_max && undecided <= 2000)
          report(inv::kCatchUpBounded, k.first, "",
                 absl::StrCat("after the catch-up decision at store time ", us_text(t),
                              " (commit #", earliest->commit, ") ", undecided,
                              " due occurrences remain to run; the bound is ", p.catch_up_max));
      }
      i = e;
    }
  }

  const History& h_;
  Replay& r_;
  const Interner& names_;
  std::map<JobKey, const ClientJob*> jobs_;
  std::map<JobKey, std::vector<const Occurrence*>> expected_;
  std::vector<Run> runs_;
  struct Open {
    std::int64_t active = 0;
    std::int64_t waiting = 0;
  };
  std::map<JobKey, Open> open_;
  std::set<JobKey> reported_overlap_;
  std::map<std::uint32_t, Queue> ready_all_;                           // by shard
  std::map<std::pair<std::uint32_t, std::int8_t>, Queue> ready_band_;  // by (shard, priority)
};

}  // namespace

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

void check_policies(const History& h, Replay& r) {
  if (h.facts == nullptr || h.commits == nullptr) return;
  PolicyChecks(h, r).run();
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
