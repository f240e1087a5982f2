// The store-fact replay (sim/oracle/replay.h): state tracking only; the
// invariants (checker.cc, policy_checks.cc) judge what it records.
#include "sim/oracle/replay.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "core/base/check.h"
#include "core/kernel/records.h"
#include "sim/oracle/invariant_names.h"

namespace kairos::sim {

Findings::Findings(std::string_view invariant, std::vector<Violation>& out)
    : invariant_(invariant), out_(out) {
  KAIROS_CHECK_MSG(is_registered_invariant(invariant),
                   "a finding under an invariant name sim/oracle/invariant_names.h lacks");
}

void Findings::add(Violation v) {
  if (!open()) return;
  ++added_;
  v.invariant = std::string(invariant_);
  out_.push_back(std::move(v));
}

std::string fact_text(const History& h, const RunFact& f) {
  const Interner& s = h.facts->strings();
  const StoreCommit& c = (*h.commits)[f.commit];
  return absl::StrCat(
      "store commit #", f.commit, " at ", time_text(c.at), " (store clock ", us_text(f.store_us),
      ") by ", (*h.node_names)[f.client], ": run ", s.name(f.run), " -> ",
      absl_sv(to_string(f.state)), " attempt=", f.attempt, " token=", f.token,
      !s.name(f.owner).empty() ? absl::StrCat(" owner=", s.name(f.owner)) : std::string(),
      f.state == RunState::kLeased ? absl::StrCat(" lease_expiry=", us_text(f.lease_expiry_us))
                                   : std::string(),
      c.state == StoreCommit::State::kLost ? " (rolled back by a store crash)" : "");
}

namespace {

void replay_facts(const History& h, Replay& r) {
  if (h.facts == nullptr || h.commits == nullptr) return;
  KAIROS_CHECK(h.node_names != nullptr);
  const Interner& names = h.facts->strings();
  std::map<std::uint32_t, LeaderView> leaders;
  absl::flat_hash_map<std::uint32_t, std::uint64_t> job_tokens;
  auto& cancels = r.cancel_acks;
  if (h.cancels != nullptr) {
    for (const auto& c : *h.cancels) {
      const std::uint32_t j = names.find(c.job);
      if (j == Interner::kNone) continue;
      auto [it, fresh] = cancels.emplace(std::make_pair(j, c.incarnation), c.acked);
      if (!fresh) it->second = std::min(it->second, c.acked);
    }
  }
  r.runs.resize(names.size());
  const auto& runs = h.facts->runs();
  const auto& leader_facts = h.facts->leaders();
  // At most one step per fact: reserved once, so a day-long history's
  // steps are not copied (and held twice) as they grow.
  r.run_steps.reserve(runs.size());
  r.leader_steps.reserve(leader_facts.size());
  std::size_t ri = 0, li = 0;
  while (ri < runs.size() || li < leader_facts.size()) {
    // A commit's leader writes are replayed before its run writes.
    const bool take_leader = li < leader_facts.size() &&
                             (ri >= runs.size() || leader_facts[li].commit <= runs[ri].commit);
    if (take_leader) {
      const LeaderFact& f = leader_facts[li++];
      if (lost(h, f.commit)) continue;
      LeaderView& cur = leaders[f.shard];
      r.leader_steps.push_back(LeaderStep{&f, cur});
      cur = LeaderView{f.holder, f.epoch, f.expiry_us};
      continue;
    }
    const RunFact& f = runs[ri++];
    if (lost(h, f.commit)) continue;
    const StoreCommit& commit = (*h.commits)[f.commit];
    Replay::Track& t = r.runs[f.run];
    RunStep s;
    s.fact = &f;
    s.commit = &commit;
    s.created = !t.exists;
    s.grant = f.state == RunState::kLeased &&
              (t.state != RunState::kLeased || f.token != t.token || s.created);
    s.before_state = t.state;
    s.before_token = t.token;
    s.before_lease_expiry_us = t.lease_expiry_us;
    s.before_owner = t.owner;
    s.before_granted_at = t.granted_at;
    if (auto it = leaders.find(f.shard); it != leaders.end()) s.leader = it->second;
    if (auto c = cancels.find({f.job, f.incarnation}); c != cancels.end())
      s.cancel_acked = &c->second;
    if (s.created) {
      t.exists = true;
      t.job = f.job;
      t.incarnation = f.incarnation;
      t.due_us = f.due_us;
      t.created_ready_us = f.ready_us;
      t.created_us = f.store_us;
      t.created_waiting = f.state == RunState::kWaiting;
      t.offset_us = absl::ToUnixMicros(commit.at) - f.store_us;
    }
    if (s.grant) {
      std::uint64_t& max = job_tokens[f.job];
      s.job_max_token = max;
      max = std::max(max, f.token);
      if (t.first_grant_us < 0) t.first_grant_us = f.store_us;
      r.grants[{f.job, f.token}].push_back(f.owner);
    }
    if (is_terminal(f.state) && !t.terminal_at) t.terminal_at = commit.at;
    t.state = f.state;
    t.token = std::max(t.token, f.token);
    t.lease_expiry_us = f.lease_expiry_us;
    t.owner = f.owner;
    if (s.grant) t.granted_at = commit.at;
    r.run_steps.push_back(s);
  }
}

// The run facts per commit with each shard's ready runs, and the ledger's
// key facts, for the policy invariants (PolicyFacts).
class PolicyReplay {
 public:
  PolicyReplay(const History& h, PolicyFacts& out) : h_(h), out_(out), names_(h.facts->strings()) {}

  void run() {
    if (h_.jobs != nullptr)
      for (const ClientJob& j : *h_.jobs) {
        const std::uint32_t id = names_.find(j.id);
        if (id != Interner::kNone) out_.jobs[{id, j.incarnation}] = &j;
      }
    if (h_.expected != nullptr)
      for (const Occurrence& o : *h_.expected) {
        const std::uint32_t id = names_.find(o.job);
        if (id != Interner::kNone) out_.expected[{id, o.incarnation}].push_back(&o);
      }
    if (h_.cancelled_due != nullptr && h_.commits != nullptr) {
      // The store time of each incarnation's cancelling commit (the first
      // applied write of its record saying cancelled).
      std::map<JobKey, std::int64_t> cancelled_at;
      for (const JobFact& f : h_.facts->job_changes())
        if (f.cancelled && !lost(h_, f.commit))
          cancelled_at.try_emplace({f.job, f.incarnation}, f.store_us);
      for (const Occurrence& o : *h_.cancelled_due) {
        const std::uint32_t id = names_.find(o.job);
        if (id == Interner::kNone) continue;
        auto it = cancelled_at.find({id, o.incarnation});
        if (it != cancelled_at.end() && absl::ToUnixMicros(o.due) <= it->second)
          out_.cancelled_due[{id, o.incarnation}].push_back(&o);
      }
    }
    for (auto* m : {&out_.expected, &out_.cancelled_due})
      for (auto& [k, list] : *m)
        std::sort(list.begin(), list.end(),
                  [](const Occurrence* a, const Occurrence* b) { return a->nominal < b->nominal; });
    replay_runs();
    replay_ledger();
  }

 private:
  struct Run {
    bool exists = false;
    RunState state = RunState::kReady;
    std::uint64_t token = 0;
    std::int64_t ready_us = 0;
    std::int8_t priority = 0;
    std::uint32_t shard = 0;
    std::uint32_t job = Interner::kNone;
  };
  using Queue = std::set<std::pair<std::int64_t, std::uint32_t>>;  // (ready_us, run)
  struct Open {
    std::int64_t active = 0;
    std::int64_t waiting = 0;
  };

  void unready(std::uint32_t id) {
    Run& run = runs_[id];
    if (!run.exists || run.state != RunState::kReady) return;
    ready_all_[run.shard].erase({run.ready_us, id});
    ready_band_[{run.shard, run.priority}].erase({run.ready_us, id});
  }
  void enready(std::uint32_t id) {
    Run& run = runs_[id];
    if (passed_over_.count(run.job) != 0) return;
    ready_all_[run.shard].insert({run.ready_us, id});
    ready_band_[{run.shard, run.priority}].insert({run.ready_us, id});
  }

  // The shard's ready runs a grant of a ready run was chosen over.
  void ready_context(PolicyFacts::Grant& g) {
    auto it = ready_all_.find(g.shard);
    if (it != ready_all_.end() && !it->second.empty()) {
      g.has_oldest = true;
      g.oldest_us = it->second.begin()->first;
      g.oldest = it->second.begin()->second;
      g.oldest_priority = runs_[g.oldest].priority;
    }
    for (std::int32_t p = g.priority; p <= kMaxPriority; ++p) {
      auto band = ready_band_.find({g.shard, static_cast<std::int8_t>(p)});
      if (band == ready_band_.end() || band->second.empty()) continue;
      g.bands.push_back({p, band->second.begin()->first, band->second.begin()->second});
    }
  }

  // From the commit of a corrupt-record fault on, claims pass its job's
  // ready runs over (a record they need does not decode: JobStore::claim):
  // they leave the ready queues a grant is judged against, for good.
  void pass_over_corrupted(std::uint64_t before_commit) {
    if (h_.corrupted == nullptr) return;
    for (; next_corruption_ < h_.corrupted->size() &&
           (*h_.corrupted)[next_corruption_].commit < before_commit;
         ++next_corruption_) {
      const std::uint32_t job = names_.find((*h_.corrupted)[next_corruption_].job);
      if (job == Interner::kNone || !passed_over_.insert(job).second) continue;
      for (std::uint32_t id = 0; id < runs_.size(); ++id)
        if (runs_[id].job == job) unready(id);
    }
  }

  void replay_runs() {
    runs_.assign(names_.size(), Run{});
    const auto& facts = h_.facts->runs();
    // At most one grant and one unfinished count per fact (see replay_facts).
    out_.grants.reserve(facts.size());
    out_.unfinished.reserve(facts.size());
    for (std::size_t i = 0; i < facts.size();) {
      std::size_t e = i;
      while (e < facts.size() && facts[e].commit == facts[i].commit) ++e;
      pass_over_corrupted(facts[i].commit);
      if (lost(h_, facts[i].commit)) {
        i = e;
        continue;
      }
      const std::int64_t t = facts[i].store_us;
      // Grants are judged against the runs the commit left ready.
      for (std::size_t k = i; k < e; ++k) unready(facts[k].run);
      for (std::size_t k = i; k < e; ++k) {
        const RunFact& f = facts[k];
        const Run& before = runs_[f.run];
        const bool grant =
            f.state == RunState::kLeased &&
            (!before.exists || before.state != RunState::kLeased || before.token != f.token);
        if (!grant) continue;
        PolicyFacts::Grant g;
        g.fact = &f;
        g.t = t;
        g.was_ready = before.exists && before.state == RunState::kReady;
        g.ready_us = before.ready_us;
        g.priority = before.priority;
        g.shard = before.shard;
        if (g.was_ready) ready_context(g);
        out_.grants.push_back(std::move(g));
      }
      std::set<JobKey> touched;
      for (std::size_t k = i; k < e; ++k) {
        const RunFact& f = facts[k];
        Run& run = runs_[f.run];
        const JobKey jk{f.job, f.incarnation};
        // A retryable failure or timeout re-queues the run after its backoff.
        if (run.exists && run.state == RunState::kLeased && f.state == RunState::kReady &&
            (f.last_end == AttemptEnd::kFailed || f.last_end == AttemptEnd::kTimedOut) &&
            f.attempt >= 2)
          out_.retries.push_back({&f, t});
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
        run.job = f.job;
        if (f.state == RunState::kReady) enready(f.run);
      }
      for (const JobKey& jk : touched) {
        const Open& o = open_[jk];
        out_.unfinished.push_back({jk, facts[i].commit, t, o.active, o.waiting});
      }
      i = e;
    }
  }

  void replay_ledger() {
    struct Record {
      const LedgerFact* first = nullptr;  // the deciding write
      const LedgerFact* last = nullptr;   // the latest (e.g. fired -> cancelled)
    };
    // Key facts only, in commit order; a key's first write decides.
    std::map<std::tuple<std::uint32_t, std::uint64_t, absl::Time>, Record> records;
    for (const LedgerFact& l : h_.facts->ledger()) {
      if (l.commit == LedgerFact::kFromEvent || lost(h_, l.commit)) continue;
      Record& rec = records[{l.job, l.incarnation, l.from}];
      if (rec.first == nullptr) {
        rec.first = &l;
        out_.firsts.push_back(&l);
      }
      rec.last = &l;
    }
    for (const auto& [key, rec] : records)
      if (names_.name(rec.last->outcome) != "manual")
        out_.latest[{rec.last->job, rec.last->incarnation}].push_back(rec.last);
  }

  const History& h_;
  PolicyFacts& out_;
  const Interner& names_;
  std::vector<Run> runs_;
  std::map<JobKey, Open> open_;
  std::map<std::uint32_t, Queue> ready_all_;                           // by shard
  std::map<std::pair<std::uint32_t, std::int8_t>, Queue> ready_band_;  // by (shard, priority)
  std::size_t next_corruption_ = 0;                                    // into h_.corrupted
  std::set<std::uint32_t> passed_over_;  // jobs whose ready runs claims pass over
};

}  // namespace

Replay replay_history(const History& h) {
  Replay r;
  replay_facts(h, r);
  r.controlled = controlled_jobs(h);
  if (h.facts != nullptr && h.commits != nullptr) PolicyReplay(h, r.policy).run();
  return r;
}

}  // namespace kairos::sim
