// Ledger retention, judged from the store alone (docs/POLICIES.md,
// "Retention"): each dispatch of a job prunes, oldest record first, at most
// `prune_budget` records while the job's ledger (per id, across
// incarnations) holds more than `ledger_keep` or its oldest record is older
// than `ledger_max_age`, taking a record's own run with it, and never prunes
// past a run that is still open; the reaper's sweep of a cancelled job prunes
// the same way. Both directions are judged, over every ledger write (put or
// erase of H|id|nominal|incarnation) of the applied commits in commit order,
// with the run records' states as the commits before left them:
//   nothing pruned early  every erased record was then the id's oldest, the
//                         id held more than ledger_keep records or the record
//                         was older than ledger_max_age by the commit's store
//                         clock, and its own run (if it has one) was not open
//                         -- and that run, when the store holds it, is erased
//                         in the same commit (no run outlives its record);
//   bounds kept           after a commit that pruned an id fewer than
//                         prune_budget records, or that recorded a dispatch
//                         decision of it (a new record with a dispatch
//                         outcome: fired, late, moved, skipped, coalesced)
//                         without pruning, the id's ledger is within both
//                         bounds, or its oldest record's run is open.
// A record's own run: the run at its run_nominal, or at its nominal for a
// cancelled record without one (what the body deletes with it).
#include <map>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "sim/oracle/replay.h"

namespace kairos::sim {
namespace {

struct Rec {
  LedgerOutcome outcome = LedgerOutcome::kFired;
  absl::Time run_nominal = absl::InfinitePast();
  absl::Time recorded_at = absl::InfinitePast();
};
using RecKey = std::pair<absl::Time, std::uint64_t>;  // (nominal, incarnation): key order
using Ledger = std::map<RecKey, Rec>;

bool owns_run(const Rec& r) {
  return has_own_run(r.outcome) || r.outcome == LedgerOutcome::kCancelled;
}

bool dispatch_outcome(LedgerOutcome o) {
  return o == LedgerOutcome::kFired || o == LedgerOutcome::kLate || o == LedgerOutcome::kMovedDst ||
         o == LedgerOutcome::kSkippedOverlap || o == LedgerOutcome::kCoalesced ||
         o == LedgerOutcome::kSkippedMisfire;
}

std::string rec_text(const std::string& job, const RecKey& k, const Rec& r) {
  return absl::StrCat("ledger ", job, " nominal=", time_text(k.first), " incarnation=", k.second,
                      " outcome=", absl_sv(to_string(r.outcome)),
                      " recorded_at=", time_text(r.recorded_at));
}

}  // namespace

void ledger_retention(const History& h, const Replay&, Findings& out) {
  if (h.facts == nullptr || h.commits == nullptr) return;
  const std::vector<LedgerOp>& ops = h.facts->ledger_ops();
  if (ops.empty()) return;
  const Interner& names = h.facts->strings();
  const std::vector<RunFact>& runs = h.facts->runs();
  std::map<std::uint32_t, RunState> run_state;  // by interned run key: as last written
  const auto& run_erases = h.facts->run_erases();
  std::size_t ri = 0, rei = 0;
  std::map<std::uint32_t, Ledger> ledgers;  // by interned job id
  // The interned key of a record's own run (kNone: none, or never written).
  auto own_run = [&](std::uint32_t job, const RecKey& k, const Rec& r) {
    if (!owns_run(r)) return Interner::kNone;
    const absl::Time nominal = r.run_nominal == absl::InfinitePast() ? k.first : r.run_nominal;
    return names.find(idempotency_key(RunId{names.name(job), k.second, nominal}));
  };
  auto open_run = [&](std::uint32_t job, const RecKey& k, const Rec& r) {
    auto it = run_state.find(own_run(job, k, r));
    return it != run_state.end() && !is_terminal(it->second);
  };
  const std::int64_t keep = h.ledger_keep;
  std::size_t i = 0;
  while (i < ops.size() && out.open()) {
    const std::uint64_t commit = ops[i].commit;
    std::size_t e = i;
    while (e < ops.size() && ops[e].commit == commit) ++e;
    // The run records as the commits before this one left them.
    for (; ri < runs.size() && runs[ri].commit < commit; ++ri)
      if (!lost(h, runs[ri].commit)) run_state[runs[ri].run] = runs[ri].state;
    for (; rei < run_erases.size() && run_erases[rei].first < commit; ++rei)
      if (!lost(h, run_erases[rei].first)) run_state.erase(run_erases[rei].second);
    std::set<std::uint32_t> runs_erased_here;
    for (std::size_t x = rei; x < run_erases.size() && run_erases[x].first == commit; ++x)
      runs_erased_here.insert(run_erases[x].second);
    if (lost(h, commit)) {
      i = e;
      continue;
    }
    const absl::Time now = absl::FromUnixMicros(ops[i].store_us);
    std::map<std::uint32_t, std::uint32_t> pruned;  // by job: records erased by this commit
    std::set<std::uint32_t> decided;                // jobs with a new dispatch record
    for (std::size_t k = i; k < e; ++k) {
      const LedgerOp& o = ops[k];
      Ledger& l = ledgers[o.job];
      const RecKey key{o.nominal, o.incarnation};
      if (!o.erase) {
        auto [it, added] = l.insert_or_assign(key, Rec{o.outcome, o.run_nominal, o.recorded_at});
        (void)it;
        if (added && dispatch_outcome(o.outcome)) decided.insert(o.job);
        continue;
      }
      auto it = l.find(key);
      if (it == l.end()) continue;  // erasing an absent key changes nothing
      ++pruned[o.job];
      const std::string& job = names.name(o.job);
      const bool oldest = it == l.begin();
      const bool over_count = static_cast<std::int64_t>(l.size()) > keep;
      const bool over_age = it->second.recorded_at + h.ledger_max_age < now;
      const bool open = open_run(o.job, key, it->second);
      const std::uint32_t own = own_run(o.job, key, it->second);
      const bool run_left = !open && run_state.count(own) > 0 && runs_erased_here.count(own) == 0;
      if (!oldest || (!over_count && !over_age) || open || run_left) {
        Violation v;
        v.job = job;
        v.detail = absl::StrCat(
            "commit ", commit, " at store time ", time_text(now), " pruned a ledger record ",
            !oldest    ? "that was not the job's oldest"
            : open     ? "whose own run was still open"
            : run_left ? "and left its finished run in the store"
                       : absl::StrCat("inside the bounds (", l.size(), " records, keep ", keep,
                                      "; recorded ", time_text(it->second.recorded_at),
                                      ", max age ", absl::FormatDuration(h.ledger_max_age), ")"));
        v.evidence.push_back(rec_text(job, key, it->second));
        if (!oldest) v.evidence.push_back(rec_text(job, l.begin()->first, l.begin()->second));
        out.add(std::move(v));
      }
      l.erase(it);
    }
    // Bounds kept: the jobs this commit pruned short of the budget, and the
    // jobs it decided an occurrence of without pruning.
    std::set<std::uint32_t> judged;
    for (const auto& [job, n] : pruned)
      if (n < h.prune_budget) judged.insert(job);
    for (std::uint32_t job : decided)
      if (pruned.count(job) == 0) judged.insert(job);
    for (std::uint32_t job : judged) {
      const Ledger& l = ledgers[job];
      if (l.empty() || !out.open()) continue;
      const auto& [k, r] = *l.begin();
      const bool over_count = static_cast<std::int64_t>(l.size()) > keep;
      const bool over_age = r.recorded_at + h.ledger_max_age < now;
      if ((!over_count && !over_age) || open_run(job, k, r)) continue;
      Violation v;
      v.job = names.name(job);
      v.detail = absl::StrCat(
          "after commit ", commit, " at store time ", time_text(now), " (pruned ",
          pruned.count(job) ? pruned.at(job) : 0, " of a budget of ", h.prune_budget,
          ") the ledger holds ", l.size(), " records (keep ", keep, "), the oldest recorded ",
          time_text(r.recorded_at), " (max age ", absl::FormatDuration(h.ledger_max_age),
          "), and its run is not open: retention stopped early");
      v.evidence.push_back(rec_text(v.job, k, r));
      out.add(std::move(v));
    }
    i = e;
  }
}

// P14: a job record's ledger count is the number of ledger records its id
// holds (JobRecord::ledger_count, "live ledger records of this id, all
// incarnations": retention prunes by it, a re-created job inherits it).
// Replaying every ledger write and erase and the counts the job record
// writes stored, in commit order (rolled-back commits skipped): each job
// write the recorder kept (its first, a changed count, or one in a commit
// that touched the id's ledger) states the number of records the id holds
// after that commit, and after the last commit each job's last stored count
// still does -- a prune whose commit did not store the job record leaves a
// count that is too high, and the next incarnation prunes early by it.
void ledger_count_matches(const History& h, const Replay&, Findings& out) {
  if (h.facts == nullptr || h.commits == nullptr) return;
  const Interner& names = h.facts->strings();
  const auto& ops = h.facts->ledger_ops();
  const auto& counts = h.facts->ledger_counts();
  std::map<std::uint32_t, std::set<RecKey>> held;  // by job: the records the store holds
  std::map<std::uint32_t, std::pair<std::uint64_t, std::uint64_t>> stored;  // (commit, count)
  auto report = [&](std::uint32_t job, std::uint64_t commit, std::uint64_t count,
                    std::string when) {
    const std::size_t n = held[job].size();
    if (count == n) return;
    Violation v;
    v.job = names.name(job);
    v.detail = absl::StrCat("the job record written at commit ", commit, " counts ", count,
                            " ledger records, but the id holds ", n, " ", when);
    out.add(std::move(v));
  };
  std::size_t o = 0;
  for (std::size_t c = 0; c < counts.size() && out.open(); ++c) {
    const LedgerCountFact& f = counts[c];
    for (; o < ops.size() && ops[o].commit <= f.commit; ++o) {
      const LedgerOp& op = ops[o];
      if (lost(h, op.commit)) continue;
      auto& set = held[op.job];
      if (op.erase)
        set.erase({op.nominal, op.incarnation});
      else
        set.insert({op.nominal, op.incarnation});
    }
    if (lost(h, f.commit)) continue;
    stored[f.job] = {f.commit, f.count};
    report(f.job, f.commit, f.count, "after that commit");
  }
  for (; o < ops.size(); ++o) {
    const LedgerOp& op = ops[o];
    if (lost(h, op.commit)) continue;
    auto& set = held[op.job];
    if (op.erase)
      set.erase({op.nominal, op.incarnation});
    else
      set.insert({op.nominal, op.incarnation});
  }
  for (const auto& [job, s] : stored) {
    if (!out.open()) break;
    report(job, s.first, s.second, "at the end of the run (the last job record write)");
  }
}

}  // namespace kairos::sim
