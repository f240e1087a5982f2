#include "sim/oracle/checker.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "core/base/check.h"
#include "sim/oracle/replay.h"

namespace kairos::sim {

namespace {

std::string attempt_text(const SinkAttempt& a) {
  return absl::StrCat("sink attempt #", a.index, " at ", time_text(a.at), " from node ", a.from,
                      " key=", a.write.key, " token=", a.write.token, " attempt=", a.write.attempt,
                      " -> ", absl_sv(to_string(a.outcome)),
                      a.reply_dropped ? " (reply dropped)" : "");
}

}  // namespace

namespace {

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

Replay replay_facts(const History& h) {
  Replay r;
  if (h.facts == nullptr || h.commits == nullptr) return r;
  KAIROS_CHECK(h.node_names != nullptr);
  const Interner& names = h.facts->strings();
  struct Leader {
    std::uint32_t holder = Interner::kNone;
    std::uint64_t epoch = 0;
    std::int64_t expiry_us = 0;
  };
  std::map<std::uint32_t, Leader> leaders;
  absl::flat_hash_map<std::uint32_t, std::uint64_t> job_tokens;
  // Acknowledged cancels by (interned job, incarnation).
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
  auto run_violation = [&](std::string_view inv, const RunFact& f, std::string detail) {
    Violation v;
    v.job = names.name(f.job);
    v.run = names.name(f.run);
    v.detail = std::move(detail);
    v.evidence.push_back(fact_text(h, f));
    r.add(inv, std::move(v));
  };
  while (ri < runs.size() || li < leader_facts.size()) {
    const bool take_leader = li < leader_facts.size() &&
                             (ri >= runs.size() || leader_facts[li].commit <= runs[ri].commit);
    if (take_leader) {
      const LeaderFact& f = leader_facts[li++];
      if (lost(h, f.commit)) continue;
      Leader& cur = leaders[f.shard];
      if (cur.holder != Interner::kNone) {
        if (f.epoch < cur.epoch || (f.epoch == cur.epoch && f.holder != cur.holder)) {
          Violation v;
          v.detail = absl::StrCat("shard ", f.shard, ": leader record went from epoch ", cur.epoch,
                                  " (", names.name(cur.holder), ") to epoch ", f.epoch, " (",
                                  names.name(f.holder), ") at store commit #", f.commit);
          r.add("epochs-increase", std::move(v));
        }
      }
      cur = Leader{f.holder, f.epoch, f.expiry_us};
      continue;
    }
    const RunFact& f = runs[ri++];
    if (lost(h, f.commit)) continue;
    const StoreCommit& commit = (*h.commits)[f.commit];
    Replay::Track& t = r.runs[f.run];
    const bool created = !t.exists;
    const bool grant = f.state == RunState::kLeased &&
                       (t.state != RunState::kLeased || f.token != t.token || created);
    if (created) {
      t.exists = true;
      t.job = f.job;
      t.incarnation = f.incarnation;
      t.due_us = f.due_us;
      t.created_ready_us = f.ready_us;
      t.created_us = f.store_us;
      t.created_waiting = f.state == RunState::kWaiting;
      t.offset_us = absl::ToUnixMicros(commit.at) - f.store_us;
      // 9: dispatched no earlier than due, by the store's clock.
      if (f.store_us < f.due_us)
        run_violation("not-before-due", f,
                      absl::StrCat("run created at store time ", us_text(f.store_us),
                                   ", before its due time ", us_text(f.due_us)));
      // 5: scheduled runs are created only by the shard's current leader (a
      // manual run, trigger now, is a job API write any node may make).
      auto it = leaders.find(f.shard);
      const std::string& writer = (*h.node_names)[f.client];
      if (!f.manual && (it == leaders.end() || names.name(it->second.holder) != writer ||
                        it->second.expiry_us <= f.store_us)) {
        run_violation(
            "no-stale-leader-writes", f,
            it == leaders.end()
                ? absl::StrCat(writer, " created a run of shard ", f.shard, " which has no leader")
                : absl::StrCat(writer, " created a run of shard ", f.shard,
                               " while the store's leader record named ",
                               names.name(it->second.holder), " epoch ", it->second.epoch,
                               it->second.expiry_us <= f.store_us
                                   ? absl::StrCat(", expired at ", us_text(it->second.expiry_us))
                                   : std::string()));
      }
    } else {
      // 2: an occurrence's run is created once; its token never goes back and
      // a terminal state is final.
      // (A waiting run becoming ready, overlap `queue`, is its promotion.)
      if (f.state == RunState::kReady && f.attempt == 1 && f.token == 0 &&
          (t.token != 0 || (t.state != RunState::kReady && t.state != RunState::kWaiting)))
        run_violation("run-created-once", f,
                      absl::StrCat("run created again over an existing ",
                                   absl_sv(to_string(t.state)), " run with token ", t.token));
      else if (f.token < t.token)
        run_violation("run-created-once", f,
                      absl::StrCat("run token went back from ", t.token, " to ", f.token));
      else if (is_terminal(t.state) && f.state != t.state)
        run_violation("run-created-once", f,
                      absl::StrCat("terminal run (", absl_sv(to_string(t.state)), ") changed to ",
                                   absl_sv(to_string(f.state))));
      // 5: only a leased run can be completed; a completion that lands after
      // the run was re-queued carries a stale token.
      if (t.state == RunState::kReady &&
          (f.state == RunState::kSucceeded || f.state == RunState::kFailed))
        run_violation("no-stale-token-writes", f,
                      absl::StrCat("run completed as ", absl_sv(to_string(f.state)),
                                   " while it was not leased (its lease had lapsed and it was "
                                   "re-queued)"));
    }
    if (grant) {
      // 3: at most one valid lease per run at any instant.
      if (!created && t.state == RunState::kLeased && t.lease_expiry_us > f.store_us)
        run_violation("single-valid-lease", f,
                      absl::StrCat("granted token ", f.token, " while token ", t.token,
                                   " was valid until ", us_text(t.lease_expiry_us)));
      // 4: tokens strictly increase per job.
      std::uint64_t& max = job_tokens[f.job];
      if (f.token <= max)
        run_violation(
            "tokens-increase", f,
            absl::StrCat("granted token ", f.token, " after token ", max, " of the same job"));
      max = std::max(max, f.token);
      // 9: no run starts before its due time by the store's clock.
      if (f.store_us < f.due_us)
        run_violation("not-before-due", f,
                      absl::StrCat("run granted at store time ", us_text(f.store_us),
                                   ", before its due time ", us_text(f.due_us)));
      if (t.first_grant_us < 0) t.first_grant_us = f.store_us;
      r.grants[{f.job, f.token}].push_back(f.owner);
    }
    if (created || grant) {
      // 6: nothing starts after an acknowledged cancel.
      auto c = cancels.find({f.job, f.incarnation});
      if (c != cancels.end() && commit.at > c->second)
        run_violation(
            "cancel-stops-runs", f,
            absl::StrCat(created ? "run created" : "run granted", " at ", time_text(commit.at),
                         ", after the cancel was acknowledged at ", time_text(c->second)));
    }
    if (is_terminal(f.state) && !t.terminal_at) t.terminal_at = commit.at;
    t.state = f.state;
    t.token = std::max(t.token, f.token);
    t.lease_expiry_us = f.lease_expiry_us;
  }
  return r;
}

// Invariants whose findings come from the replay.
class ReplayInvariant final : public Invariant {
 public:
  ReplayInvariant(std::string_view name, std::string_view description)
      : name_(name), description_(description) {}
  std::string_view name() const override { return name_; }
  std::string_view description() const override { return description_; }
  void check(const History&, const Replay& r, std::vector<Violation>& out) const override {
    auto it = r.found.find(name_);
    if (it != r.found.end()) out.insert(out.end(), it->second.begin(), it->second.end());
  }

 private:
  std::string_view name_;
  std::string_view description_;
};

// 5 (token side, from the node logs): every accepted completion, renewal or
// release names the worker that was granted the token it carries.
class CompletionsByHolder final : public Invariant {
 public:
  std::string_view name() const override { return "no-stale-token-writes"; }
  std::string_view description() const override {
    return "(5) no completion, renewal or release commits with a stale token";
  }
  void check(const History& h, const Replay& r, std::vector<Violation>& out) const override {
    // The replay's part of this invariant.
    if (auto it = r.found.find(name()); it != r.found.end())
      out.insert(out.end(), it->second.begin(), it->second.end());
    if (h.facts == nullptr) return;
    const Interner& names = h.facts->strings();
    std::size_t reported = 0;
    for (const WriteFact& w : h.facts->writes()) {
      auto g = r.grants.find({w.job, w.token});
      if (g == r.grants.end()) continue;  // granted by a commit the history lacks
      if (std::find(g->second.begin(), g->second.end(), w.worker) != g->second.end()) continue;
      if (++reported > kMaxPerInvariant) break;
      Violation v;
      v.invariant = std::string(name());
      v.job = names.name(w.job);
      v.run = names.name(w.run);
      v.detail = absl::StrCat(absl_sv(to_string(w.kind)), " by ", names.name(w.worker), " at ",
                              time_text(w.at), " committed with token ", w.token,
                              ", which was granted to ", names.name(g->second.front()));
      out.push_back(std::move(v));
    }
  }
};

// 2 (sink side): at most one accepted effect per idempotency key.
class OneEffectPerKey final : public Invariant {
 public:
  std::string_view name() const override { return "sink-one-effect-per-key"; }
  std::string_view description() const override {
    return "(2) at most one accepted sink effect per idempotency key";
  }
  void check(const History& h, const Replay&, std::vector<Violation>& out) const override {
    absl::flat_hash_map<std::string_view, const SinkAttempt*> first;  // lookups only
    for (const auto& a : *h.sink) {
      if (!a.applied) continue;
      auto [it, fresh] = first.emplace(a.write.key, &a);
      if (!fresh && out.size() < kMaxPerInvariant)
        out.push_back({std::string(name()),
                       a.write.job_id,
                       a.write.key,
                       absl::StrCat("key ", a.write.key, " has two accepted effects"),
                       {attempt_text(*it->second), attempt_text(a)}});
    }
  }
};

// 2 (execution side): at most one token-valid attempt per (key, token): the
// sink's dedupe must not be what hides a double execution under one grant.
class OneValidAttemptPerToken final : public Invariant {
 public:
  std::string_view name() const override { return "sink-one-attempt-per-token"; }
  std::string_view description() const override {
    return "(2) at most one token-valid sink attempt per (idempotency key, fencing token)";
  }
  void check(const History& h, const Replay&, std::vector<Violation>& out) const override {
    absl::flat_hash_map<std::pair<std::string_view, std::uint64_t>, const SinkAttempt*> seen;
    std::size_t reported = 0;
    for (const auto& a : *h.sink) {
      if (a.outcome != SinkOutcome::kAccepted && a.outcome != SinkOutcome::kDuplicate) continue;
      auto [it, fresh] =
          seen.emplace(std::make_pair(std::string_view(a.write.key), a.write.token), &a);
      if (!fresh && ++reported <= kMaxPerInvariant)
        out.push_back({std::string(name()),
                       a.write.job_id,
                       a.write.key,
                       absl::StrCat("two token-valid attempts with token ", a.write.token,
                                    " for key ", a.write.key, ": one grant executed twice"),
                       {attempt_text(*it->second), attempt_text(a)}});
    }
  }
};

// 8: nothing acknowledged rolls back; the durable history replays to the
// store's final contents.
class AckedCommitsDurable final : public Invariant {
 public:
  std::string_view name() const override { return "acked-commits-durable"; }
  std::string_view description() const override {
    return "(8) every commit reported kCommitted survives crashes, and replaying the durable "
           "commits reproduces the store";
  }
  void check(const History& h, const Replay&, std::vector<Violation>& out) const override {
    for (const auto& c : *h.commits) {
      if (c.acked && c.state == StoreCommit::State::kLost && out.size() < kMaxPerInvariant)
        out.push_back({std::string(name()),
                       "",
                       "",
                       absl::StrCat("commit #", c.index, " of request ", c.request, " from node ",
                                    c.client, " was acknowledged and then lost"),
                       {}});
    }
    if (h.final_store == nullptr || !h.commits_have_ops) return;
    MemoryStorage::Map replay;
    for (const auto& c : *h.commits) {
      if (c.state == StoreCommit::State::kLost) continue;
      for (const auto& op : c.ops) {
        switch (op.kind) {
          case WriteOp::Kind::kPut:
            replay.insert_or_assign(op.key, op.value);
            break;
          case WriteOp::Kind::kErase:
            replay.erase(op.key);
            break;
          case WriteOp::Kind::kEraseRange: {
            auto it = replay.lower_bound(op.key);
            while (it != replay.end() && (op.value.empty() || it->first < op.value))
              it = replay.erase(it);
            break;
          }
        }
      }
    }
    if (replay != *h.final_store)
      out.push_back({std::string(name()),
                     "",
                     "",
                     absl::StrCat("replaying the ", h.commits->size(),
                                  " recorded commits does not reproduce the store (", replay.size(),
                                  " keys vs ", h.final_store->size(), ")"),
                     {}});
  }
};

// 1: every occurrence due before the quiet tail reaches a terminal state
// (succeeded, failed, or withdrawn by a cancel), and so does every run the
// store holds that was due before the quiet tail. The runs' final states come
// from the replayed store facts.
class OccurrencesComplete final : public Invariant {
 public:
  std::string_view name() const override { return "occurrences-complete"; }
  std::string_view description() const override {
    return "(1) every occurrence due before the quiet tail reaches a terminal state";
  }
  void check(const History& h, const Replay& r, std::vector<Violation>& out) const override {
    if (h.expected == nullptr || h.facts == nullptr) return;
    const Interner& names = h.facts->strings();
    const std::int64_t until_us = absl::ToUnixMicros(h.end - h.quiet_tail);
    std::size_t reported = 0;
    auto report = [&](std::string job, std::string key, std::string detail) {
      if (++reported > kMaxPerInvariant) return;
      out.push_back({std::string(name()), std::move(job), std::move(key), std::move(detail), {}});
    };
    // Recorded policy decisions (issue 6's ledger) by (job, incarnation).
    std::map<std::pair<std::uint32_t, std::uint64_t>, std::vector<const LedgerFact*>> ledger;
    for (const auto& l : h.facts->ledger())
      if (l.commit == LedgerFact::kFromEvent || !lost(h, l.commit))
        ledger[{l.job, l.incarnation}].push_back(&l);
    auto track = [&](const std::string& key) -> const Replay::Track* {
      const std::uint32_t id = names.find(key);
      return id == Interner::kNone || id >= r.runs.size() || !r.runs[id].exists ? nullptr
                                                                                : &r.runs[id];
    };
    for (const auto& o : *h.expected) {
      std::string key = idempotency_key(RunId{o.job, o.incarnation, o.nominal});
      const Replay::Track* t = track(key);
      if (t == nullptr) {
        // A policy decision covering the occurrence: without a run it is
        // terminal by itself; with one (run-once coalescing) that run counts.
        auto it = ledger.find({names.find(o.job), o.incarnation});
        const LedgerFact* decision = nullptr;
        if (it != ledger.end())
          for (const LedgerFact* l : it->second)
            if (l->from <= o.nominal && o.nominal <= l->through) decision = l;
        if (decision != nullptr && !decision->run_nominal) continue;
        if (decision != nullptr) {
          key = idempotency_key(RunId{o.job, o.incarnation, *decision->run_nominal});
          t = track(key);
        }
      }
      if (t == nullptr) {
        report(o.job, key,
               absl::StrCat("occurrence ", time_text(o.nominal), " (due ", time_text(o.due),
                            ") was never dispatched"));
      } else if (!is_terminal(t->state)) {
        report(o.job, key,
               absl::StrCat("occurrence ", time_text(o.nominal), " is still ",
                            absl_sv(to_string(t->state)), " (token ", t->token, ")"));
      }
    }
    for (std::uint32_t id = 0; id < r.runs.size(); ++id) {
      const Replay::Track& t = r.runs[id];
      if (!t.exists || t.due_us > until_us || is_terminal(t.state)) continue;
      report(
          names.name(t.job), names.name(id),
          absl::StrCat("run due ", us_text(t.due_us), " is still ", absl_sv(to_string(t.state))));
    }
  }
};

// 2 (completion side): a succeeded occurrence has exactly one accepted effect.
class EffectPerSuccess final : public Invariant {
 public:
  std::string_view name() const override { return "effect-per-success"; }
  std::string_view description() const override {
    return "(2) every succeeded occurrence has exactly one accepted sink effect";
  }
  void check(const History& h, const Replay& r, std::vector<Violation>& out) const override {
    if (h.facts == nullptr) return;
    const Interner& names = h.facts->strings();
    absl::flat_hash_map<std::string_view, int> effects;  // lookups only
    for (const auto& a : *h.sink)
      if (a.applied) ++effects[a.write.key];
    std::size_t reported = 0;
    for (std::uint32_t id = 0; id < r.runs.size(); ++id) {
      const Replay::Track& t = r.runs[id];
      if (!t.exists || t.state != RunState::kSucceeded) continue;
      auto it = effects.find(names.name(id));
      const int n = it == effects.end() ? 0 : it->second;
      if (n == 1 || ++reported > kMaxPerInvariant) continue;
      out.push_back(
          {std::string(name()),
           names.name(t.job),
           names.name(id),
           absl::StrCat("run succeeded (token ", t.token, ") with ", n, " accepted sink effects"),
           {}});
    }
  }
};

// 7: timeliness, with the bounds of docs/SIMULATION.md.
class Timeliness final : public Invariant {
 public:
  std::string_view name() const override { return "timeliness"; }
  std::string_view description() const override {
    return "(7) fault-free occurrences start within the start bound; after faults heal every "
           "due occurrence completes within the completion bound";
  }
  void check(const History& h, const Replay& r, std::vector<Violation>& out) const override {
    if (h.facts == nullptr) return;
    std::vector<FaultWindow> windows = h.faults ? *h.faults : std::vector<FaultWindow>{};
    std::sort(windows.begin(), windows.end(),
              [](const FaultWindow& a, const FaultWindow& b) { return a.from < b.from; });
    const Bounds& b = h.bounds;
    const Interner& names = h.facts->strings();
    std::size_t reported = 0;
    auto report = [&](const Replay::Track& t, std::string_view key, std::string detail) {
      if (++reported > kMaxPerInvariant) return;
      out.push_back(
          {std::string(name()), names.name(t.job), std::string(key), std::move(detail), {}});
    };
    // Per-job completion bounds (retries, overlap queue) from the client's
    // view of each job; jobs it never saw use the scenario's bound.
    std::map<std::pair<std::uint32_t, std::uint64_t>, absl::Duration> job_done;
    if (h.jobs != nullptr)
      for (const ClientJob& j : *h.jobs)
        if (const std::uint32_t id = names.find(j.id); id != Interner::kNone)
          job_done[{id, j.incarnation}] = std::max(b.done, done_bound(b, j));
    for (std::uint32_t id = 0; id < r.runs.size(); ++id) {
      const Replay::Track& t = r.runs[id];
      if (!t.exists) continue;
      const std::string& key = names.name(id);
      // The run's own start: its due time, or later when the policy made it
      // ready later (catch-up spacing); a queued run starts when promoted.
      std::int64_t start_us = std::max(t.due_us, t.created_ready_us);
      // A job the client paused or rescheduled may get a run for an old
      // occurrence when it is resumed: judged from the run's creation.
      if (r.controlled.count(t.job) != 0) start_us = std::max(start_us, t.created_us);
      const absl::Time due = absl::FromUnixMicros(start_us + t.offset_us);  // true time
      // Start bound: only when no fault (or its after-effects) touches
      // [due - settle, due + start].
      if (b.check_start && t.first_grant_us >= 0 && !t.created_waiting) {
        bool quiet = true;
        for (const auto& w : windows)
          if (w.from <= due + b.start && w.to + b.settle >= due) quiet = false;
        const absl::Duration late = absl::Microseconds(t.first_grant_us - start_us);
        if (quiet && late > b.start)
          report(t, key,
                 absl::StrCat("fault-free occurrence due ", time_text(due), " first granted ",
                              absl::FormatDuration(late), " late (bound ",
                              absl::FormatDuration(b.start), ")"));
      }
      auto jd = job_done.find({t.job, t.incarnation});
      const absl::Duration done = jd == job_done.end() ? b.done : jd->second;
      // Completion bound: from the due time, pushed past every fault that
      // begins before the deadline.
      absl::Time ref = due;
      for (const auto& w : windows)
        if (w.from <= ref + done && w.to > ref) ref = w.to;
      const absl::Time deadline = ref + done;
      if (deadline > h.end || t.state == RunState::kCancelled) continue;
      if (!t.terminal_at || *t.terminal_at > deadline)
        report(t, key,
               absl::StrCat("occurrence due ", time_text(due), " not finished by ",
                            time_text(deadline), " (last fault healed ", time_text(ref), ", bound ",
                            absl::FormatDuration(done), ")",
                            t.terminal_at ? absl::StrCat("; finished ", time_text(*t.terminal_at))
                                          : std::string("; never finished")));
    }
  }
};

}  // namespace

void Checker::add(std::unique_ptr<Invariant> invariant) {
  for (auto& i : invariants_) {
    if (i->name() == invariant->name()) {
      i = std::move(invariant);
      return;
    }
  }
  invariants_.push_back(std::move(invariant));
}

Checker Checker::with_defaults() {
  Checker c;
  c.add(std::make_unique<OccurrencesComplete>());
  c.add(std::make_unique<EffectPerSuccess>());
  c.add(std::make_unique<OneEffectPerKey>());
  c.add(std::make_unique<OneValidAttemptPerToken>());
  c.add(std::make_unique<ReplayInvariant>(
      "run-created-once",
      "(2) an occurrence's run is created once; its token never decreases; terminal is final"));
  c.add(std::make_unique<ReplayInvariant>("single-valid-lease",
                                          "(3) at most one valid lease per run at any instant"));
  c.add(std::make_unique<ReplayInvariant>(
      "tokens-increase", "(4) fencing tokens strictly increase per job, across incarnations"));
  c.add(std::make_unique<ReplayInvariant>("epochs-increase",
                                          "(4) leader epochs strictly increase per shard"));
  c.add(std::make_unique<ReplayInvariant>(
      "no-stale-leader-writes",
      "(5) runs are created only by the shard's current, unexpired leader"));
  c.add(std::make_unique<CompletionsByHolder>());
  c.add(std::make_unique<ReplayInvariant>(
      "cancel-stops-runs", "(6) no run is created or granted after its cancel was acknowledged"));
  c.add(std::make_unique<Timeliness>());
  c.add(std::make_unique<AckedCommitsDurable>());
  c.add(std::make_unique<ReplayInvariant>(
      "not-before-due", "(9) no run is dispatched or granted before its due time (store clock)"));
  // Issue 6's policy invariants (sim/oracle/policy_checks.cc).
  c.add(std::make_unique<ReplayInvariant>(
      "ledger-one-outcome",
      "(P1) every occurrence that became due has exactly one ledger outcome"));
  c.add(std::make_unique<ReplayInvariant>(
      "attempts-bounded", "(P2) no run is granted more often than its job's max_attempts"));
  c.add(std::make_unique<ReplayInvariant>(
      "retry-backoff",
      "(P3) a failed attempt's retry becomes ready within [lower bound, base] of its backoff"));
  c.add(std::make_unique<ReplayInvariant>(
      "overlap-respected",
      "(P4) a job's unfinished runs never exceed what its overlap policy allows"));
  c.add(std::make_unique<ReplayInvariant>(
      "catch-up-bounded",
      "(P5) catch-up keeps at most catch_up_max of a backlog and starts one late run per spacing"));
  c.add(std::make_unique<ReplayInvariant>(
      "misfire-threshold",
      "(P6) on-time, late and misfire outcomes match the threshold and the policy"));
  c.add(std::make_unique<ReplayInvariant>(
      "priority-order",
      "(P7) a claim serves a shard's due runs starved-first, then by priority, FIFO"));
  return c;
}

Checker::Report Checker::run(const History& h, const std::vector<std::string>& ignored) const {
  Report report;
  Replay replay = replay_facts(h);
  replay.controlled = controlled_jobs(h);
  check_policies(h, replay);
  for (const auto& inv : invariants_) {
    const std::string name(inv->name());
    if (std::find(ignored.begin(), ignored.end(), name) != ignored.end()) {
      report.ignored.push_back(name);
      continue;
    }
    inv->check(h, replay, report.violations);
    report.checked.push_back(name);
  }
  // Evidence: the store facts of the run and the events about the job.
  for (std::size_t i = 0; i < report.violations.size() && i < 8; ++i) {
    Violation& v = report.violations[i];
    if (!v.run.empty() && h.facts != nullptr) {
      const std::uint32_t run = h.facts->strings().find(v.run);
      std::vector<std::string> facts;
      for (const auto& f : h.facts->runs())
        if (f.run == run) facts.push_back(fact_text(h, f));
      if (facts.size() > 12) facts.erase(facts.begin(), facts.end() - 12);
      if (!facts.empty()) {
        v.evidence.push_back("store facts of the run:");
        for (auto& f : facts) v.evidence.push_back("  " + f);
      }
    }
    if (!v.job.empty() && h.events != nullptr) {
      std::vector<std::string> lines;
      for (const auto& e : *h.events) {
        const auto* job = e.event.find("job");
        if (job == nullptr || std::get_if<std::string>(job) == nullptr ||
            std::get<std::string>(*job) != v.job)
          continue;
        lines.push_back(absl::StrCat(time_text(e.at), " ", (*h.node_names)[e.node], ": ",
                                     format_event(e.event)));
      }
      if (lines.size() > 16) lines.erase(lines.begin(), lines.end() - 16);
      if (!lines.empty()) {
        v.evidence.push_back("events about the job (last 16):");
        for (auto& l : lines) v.evidence.push_back("  " + l);
      }
    }
  }
  return report;
}

}  // namespace kairos::sim
