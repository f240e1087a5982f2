// The job-control rules, judged from the store alone: what a control request
// promises takes effect in the commit that records it (docs/POLICIES.md, "Job
// control"). A job record that says paused owns no due entry and names no
// next due time, so nothing of the job fires while it says so; a schedule change withdraws, in the
// same transaction, every run of the job that was not yet claimed; and the job's generation, the
// version a conditional request names, moves with every such change. The facts are the job records'
// changes (JobFact: pause flag, schedule and generation, decoded with the data format) and the run
// records, replayed in commit order, skipping commits a store crash rolled back.
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "sim/oracle/replay.h"

namespace kairos::sim {

// C1: no scheduled (not manual) run of a job is created by a commit at which
// the job's record -- as last written by an applied commit up to and
// including this one -- says the incarnation is paused; and no applied
// commit writes an active job record that says paused and still names a
// next due time: a pause removes the job's due entry, and every later write
// while paused (a reschedule, a policy change) keeps it removed, so the
// job's status shows no next due time and a resume is what brings one back.
void paused_fires_nothing(const History& h, const Replay&, Findings& out) {
  if (h.facts == nullptr) return;
  const std::vector<JobFact>& changes = h.facts->job_changes();
  if (changes.empty()) return;
  const Interner& names = h.facts->strings();
  for (const JobFact& c : changes) {
    if (!out.open()) return;
    if (!c.paused_with_due || lost(h, c.commit)) continue;
    Violation v;
    v.job = names.name(c.job);
    v.detail = absl::StrCat("commit ", c.commit, " wrote incarnation ", c.incarnation,
                            "'s record as paused with a next due time: a paused job owns no "
                            "due entry",
                            c.schedule_changed ? " (the commit changed its schedule)" : "");
    out.add(std::move(v));
  }
  std::map<std::uint32_t, const JobFact*> record;  // by job: the latest applied change
  std::set<std::uint32_t> created;                 // runs with an applied write
  std::size_t j = 0;
  for (const RunFact& f : h.facts->runs()) {
    if (!out.open()) break;
    for (; j < changes.size() && changes[j].commit <= f.commit; ++j)
      if (!lost(h, changes[j].commit)) record[changes[j].job] = &changes[j];
    if (lost(h, f.commit) || !created.insert(f.run).second || f.manual) continue;
    auto it = record.find(f.job);
    if (it == record.end() || it->second->incarnation != f.incarnation || !it->second->paused)
      continue;
    Violation v;
    v.job = names.name(f.job);
    v.run = names.name(f.run);
    v.detail =
        absl::StrCat("a scheduled run of incarnation ", f.incarnation,
                     " was created at store time ", us_text(f.store_us),
                     " while the job's record said paused (since commit ", it->second->commit, ")");
    v.evidence.push_back(fact_text(h, f));
    out.add(std::move(v));
  }
}

// C2: a commit that changes a job's schedule (same incarnation) writes every
// run of that incarnation that was, just before it, not yet claimed -- ready
// or waiting, never granted (token 0), scheduled (not manual) -- as
// cancelled: the old schedule's unclaimed runs are withdrawn in the same
// transaction, none is left to run; and it withdraws nothing else: a manual
// run and a run claimed before (leased, or ready for its retry) finish.
void reschedule_withdraws_unclaimed(const History& h, const Replay&, Findings& out) {
  if (h.facts == nullptr) return;
  std::map<std::uint64_t, std::vector<const JobFact*>> by_commit;
  for (const JobFact& c : h.facts->job_changes())
    if (c.schedule_changed && !lost(h, c.commit)) by_commit[c.commit].push_back(&c);
  if (by_commit.empty()) return;
  const Interner& names = h.facts->strings();
  std::map<std::uint32_t, const RunFact*> latest;  // by run: its latest applied write
  const std::vector<RunFact>& runs = h.facts->runs();
  std::size_t i = 0;
  auto apply_until = [&](std::uint64_t commit, bool inclusive) {
    for (; i < runs.size() && (runs[i].commit < commit || (inclusive && runs[i].commit == commit));
         ++i)
      if (!lost(h, runs[i].commit)) latest[runs[i].run] = &runs[i];
  };
  for (const auto& [commit, jobs] : by_commit) {
    if (!out.open()) break;
    apply_until(commit, false);
    std::vector<std::pair<std::uint32_t, const JobFact*>> unclaimed;
    std::vector<std::pair<std::uint32_t, const JobFact*>> kept;  // manual or claimed, unfinished
    for (const auto& [run, f] : latest)
      for (const JobFact* c : jobs) {
        if (f->job != c->job || f->incarnation != c->incarnation || is_terminal(f->state)) continue;
        if (!f->manual && f->token == 0 &&
            (f->state == RunState::kReady || f->state == RunState::kWaiting))
          unclaimed.push_back({run, c});
        else
          kept.push_back({run, c});
      }
    apply_until(commit, true);
    // The other side: a manual run (asked for by hand, not by the schedule)
    // and a run already claimed once (leased, or ready for its retry) are
    // not the schedule's to withdraw; they finish.
    for (const auto& [run, c] : kept) {
      const RunFact& now = *latest[run];
      if (now.state != RunState::kCancelled || now.commit != commit) continue;
      Violation v;
      v.job = names.name(c->job);
      v.run = names.name(run);
      v.detail =
          absl::StrCat("commit ", commit, " changed the schedule of incarnation ", c->incarnation,
                       " and withdrew this ", now.manual ? "manual" : "claimed",
                       " run, which a reschedule leaves to finish");
      v.evidence.push_back(fact_text(h, now));
      out.add(std::move(v));
    }
    for (const auto& [run, c] : unclaimed) {
      const RunFact& now = *latest[run];
      if (now.state == RunState::kCancelled && now.commit == commit) continue;
      Violation v;
      v.job = names.name(c->job);
      v.run = names.name(run);
      v.detail = absl::StrCat("commit ", commit, " changed the schedule of incarnation ",
                              c->incarnation, " but left this unclaimed run ",
                              absl_sv(to_string(now.state)), " instead of withdrawing it");
      v.evidence.push_back(fact_text(h, now));
      out.add(std::move(v));
    }
  }
}

// C3: within one incarnation, a job record's generation never goes back, and
// a write that changes the record's pause flag, schedule or any other part
// of its spec (an update of its policy, labels or namespace) raises it. The
// generation is what a conditional request (If-Match) compares: a pause,
// resume or reschedule written under the generation it found would let a
// request meant for the earlier state through.
void generation_moves_with_changes(const History& h, const Replay&, Findings& out) {
  if (h.facts == nullptr) return;
  const Interner& names = h.facts->strings();
  std::map<std::uint32_t, const JobFact*> last;  // by job: its latest applied fact
  for (const JobFact& c : h.facts->job_changes()) {
    if (!out.open()) return;
    if (lost(h, c.commit)) continue;
    auto [it, first] = last.try_emplace(c.job, &c);
    const JobFact& before = *it->second;
    it->second = &c;
    if (first || before.incarnation != c.incarnation) continue;
    const bool spec_changed = before.spec_digest != c.spec_digest;
    const bool changed = before.paused != c.paused || c.schedule_changed || spec_changed;
    if (c.generation > before.generation || (c.generation == before.generation && !changed))
      continue;
    Violation v;
    v.job = names.name(c.job);
    v.detail = absl::StrCat(
        "commit ", c.commit, " wrote incarnation ", c.incarnation, "'s record at generation ",
        c.generation, " after generation ", before.generation, " (commit ", before.commit, ")",
        changed ? absl::StrCat(" while changing its ", before.paused != c.paused ? "pause flag"
                                                       : c.schedule_changed      ? "schedule"
                                                                                 : "spec")
                : std::string());
    out.add(std::move(v));
  }
}

}  // namespace kairos::sim
