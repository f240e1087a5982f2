// The store-fact replay (sim/oracle/replay.h): state tracking only; the
// invariants judge its steps.
#include "sim/oracle/replay.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "core/base/check.h"
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
  // Acknowledged cancels by (interned job, incarnation): the earliest ack.
  std::map<std::pair<std::uint32_t, std::uint64_t>, absl::Time> cancels;
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
    if (auto it = leaders.find(f.shard); it != leaders.end()) s.leader = it->second;
    if (auto c = cancels.find({f.job, f.incarnation}); c != cancels.end())
      s.cancel_acked = c->second;
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
    r.run_steps.push_back(s);
  }
}

}  // namespace

Replay replay_history(const History& h) {
  Replay r;
  replay_facts(h, r);
  r.controlled = controlled_jobs(h);
  check_policies(h, r);
  return r;
}

}  // namespace kairos::sim
