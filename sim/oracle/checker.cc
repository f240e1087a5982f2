// The checker's invariants: one rule per entry of kInvariants
// (sim/oracle/invariant_names.h), each a function over the history and the
// facts its replay computed once (sim/oracle/replay.h), registered in kRules.
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
#include "sim/scenario/client_events.h"

namespace kairos::sim {

namespace {

std::string attempt_text(const SinkAttempt& a) {
  return absl::StrCat("sink attempt #", a.index, " at ", time_text(a.at), " from node ", a.from,
                      " key=", a.write.key, " token=", a.write.token, " attempt=", a.write.attempt,
                      " -> ", absl_sv(to_string(a.outcome)),
                      a.reply_dropped ? " (reply dropped)" : "");
}

// A violation about the run a step wrote, with the step's fact as evidence.
void run_violation(const History& h, const RunStep& s, std::string detail, Findings& out) {
  const Interner& names = h.facts->strings();
  Violation v;
  v.job = names.name(s.fact->job);
  v.run = names.name(s.fact->run);
  v.detail = std::move(detail);
  v.evidence.push_back(fact_text(h, *s.fact));
  out.add(std::move(v));
}

// --- Rules over the replay's steps -----------------------------------------

// 2: an occurrence's run is created once; its token never goes back and a
// terminal state is final. (A waiting run becoming ready, overlap `queue`, is
// its promotion.)
void run_created_once(const History& h, const Replay& r, Findings& out) {
  for (const RunStep& s : r.run_steps) {
    if (s.created) continue;
    const RunFact& f = *s.fact;
    if (f.state == RunState::kReady && f.attempt == 1 && f.token == 0 &&
        (s.before_token != 0 ||
         (s.before_state != RunState::kReady && s.before_state != RunState::kWaiting)))
      run_violation(
          h, s,
          absl::StrCat("run created again over an existing ", absl_sv(to_string(s.before_state)),
                       " run with token ", s.before_token),
          out);
    else if (f.token < s.before_token)
      run_violation(
          h, s, absl::StrCat("run token went back from ", s.before_token, " to ", f.token), out);
    else if (is_terminal(s.before_state) && f.state != s.before_state)
      run_violation(h, s,
                    absl::StrCat("terminal run (", absl_sv(to_string(s.before_state)),
                                 ") changed to ", absl_sv(to_string(f.state))),
                    out);
  }
}

// 3: at most one valid lease per run at any instant.
void single_valid_lease(const History& h, const Replay& r, Findings& out) {
  for (const RunStep& s : r.run_steps) {
    const RunFact& f = *s.fact;
    if (s.grant && !s.created && s.before_state == RunState::kLeased &&
        s.before_lease_expiry_us > f.store_us)
      run_violation(h, s,
                    absl::StrCat("granted token ", f.token, " while token ", s.before_token,
                                 " was valid until ", us_text(s.before_lease_expiry_us)),
                    out);
  }
}

// 4: tokens strictly increase per job.
void tokens_increase(const History& h, const Replay& r, Findings& out) {
  for (const RunStep& s : r.run_steps) {
    if (s.grant && s.fact->token <= s.job_max_token)
      run_violation(h, s,
                    absl::StrCat("granted token ", s.fact->token, " after token ", s.job_max_token,
                                 " of the same job"),
                    out);
  }
}

// 4: leader epochs strictly increase per shard; one epoch has one holder.
void epochs_increase(const History& h, const Replay& r, Findings& out) {
  if (h.facts == nullptr) return;
  const Interner& names = h.facts->strings();
  for (const LeaderStep& s : r.leader_steps) {
    const LeaderFact& f = *s.fact;
    const LeaderView& cur = s.before;
    if (!cur.known()) continue;
    if (f.epoch < cur.epoch || (f.epoch == cur.epoch && f.holder != cur.holder)) {
      Violation v;
      v.detail = absl::StrCat("shard ", f.shard, ": leader record went from epoch ", cur.epoch,
                              " (", names.name(cur.holder), ") to epoch ", f.epoch, " (",
                              names.name(f.holder), ") at store commit #", f.commit);
      out.add(std::move(v));
    }
  }
}

// 5: scheduled runs are created only by the shard's current leader (a manual
// run, trigger now, is a job API write any node may make).
void no_stale_leader_writes(const History& h, const Replay& r, Findings& out) {
  if (h.facts == nullptr) return;
  const Interner& names = h.facts->strings();
  for (const RunStep& s : r.run_steps) {
    const RunFact& f = *s.fact;
    if (!s.created || f.manual) continue;
    const LeaderView& l = s.leader;
    const std::string& writer = (*h.node_names)[f.client];
    if (l.known() && names.name(l.holder) == writer && l.expiry_us > f.store_us) continue;
    run_violation(
        h, s,
        !l.known()
            ? absl::StrCat(writer, " created a run of shard ", f.shard, " which has no leader")
            : absl::StrCat(writer, " created a run of shard ", f.shard,
                           " while the store's leader record named ", names.name(l.holder),
                           " epoch ", l.epoch,
                           l.expiry_us <= f.store_us
                               ? absl::StrCat(", expired at ", us_text(l.expiry_us))
                               : std::string()),
        out);
  }
}

// 5: only a leased run can be completed; a completion that lands after the
// run was re-queued carries a stale token (store side). And from the node
// logs: every accepted completion, renewal or release names the worker that
// was granted the token it carries.
void no_stale_token_writes(const History& h, const Replay& r, Findings& out) {
  for (const RunStep& s : r.run_steps) {
    const RunFact& f = *s.fact;
    if (!s.created && s.before_state == RunState::kReady &&
        (f.state == RunState::kSucceeded || f.state == RunState::kFailed))
      run_violation(h, s,
                    absl::StrCat("run completed as ", absl_sv(to_string(f.state)),
                                 " while it was not leased (its lease had lapsed and it was "
                                 "re-queued)"),
                    out);
  }
  if (h.facts == nullptr) return;
  const Interner& names = h.facts->strings();
  for (const WriteFact& w : h.facts->writes()) {
    if (!out.open()) break;
    auto g = r.grants.find({w.job, w.token});
    if (g == r.grants.end()) continue;  // granted by a commit the history lacks
    if (std::find(g->second.begin(), g->second.end(), w.worker) != g->second.end()) continue;
    Violation v;
    v.job = names.name(w.job);
    v.run = names.name(w.run);
    v.detail = absl::StrCat(absl_sv(to_string(w.kind)), " by ", names.name(w.worker), " at ",
                            time_text(w.at), " committed with token ", w.token,
                            ", which was granted to ", names.name(g->second.front()));
    out.add(std::move(v));
  }
}

// 6: nothing starts after an acknowledged cancel.
void cancel_stops_runs(const History& h, const Replay& r, Findings& out) {
  for (const RunStep& s : r.run_steps) {
    if (!(s.created || s.grant) || !s.cancel_acked || s.commit->at <= *s.cancel_acked) continue;
    run_violation(
        h, s,
        absl::StrCat(s.created ? "run created" : "run granted", " at ", time_text(s.commit->at),
                     ", after the cancel was acknowledged at ", time_text(*s.cancel_acked)),
        out);
  }
}

// 9: no run is created or granted before its due time by the store's clock.
void not_before_due(const History& h, const Replay& r, Findings& out) {
  for (const RunStep& s : r.run_steps) {
    const RunFact& f = *s.fact;
    if (f.store_us >= f.due_us) continue;
    if (s.created)
      run_violation(h, s,
                    absl::StrCat("run created at store time ", us_text(f.store_us),
                                 ", before its due time ", us_text(f.due_us)),
                    out);
    if (s.grant)
      run_violation(h, s,
                    absl::StrCat("run granted at store time ", us_text(f.store_us),
                                 ", before its due time ", us_text(f.due_us)),
                    out);
  }
}

// --- Rules over the sink and the commits -----------------------------------

// 2 (sink side): at most one accepted effect per idempotency key.
void sink_one_effect_per_key(const History& h, const Replay&, Findings& out) {
  absl::flat_hash_map<std::string_view, const SinkAttempt*> first;  // lookups only
  for (const auto& a : *h.sink) {
    if (!a.applied) continue;
    auto [it, fresh] = first.emplace(a.write.key, &a);
    if (!fresh)
      out.add({"",
               a.write.job_id,
               a.write.key,
               absl::StrCat("key ", a.write.key, " has two accepted effects"),
               {attempt_text(*it->second), attempt_text(a)}});
  }
}

// 2 (execution side): at most one token-valid attempt per (key, token): the
// sink's dedupe must not be what hides a double execution under one grant.
void sink_one_attempt_per_token(const History& h, const Replay&, Findings& out) {
  absl::flat_hash_map<std::pair<std::string_view, std::uint64_t>, const SinkAttempt*> seen;
  for (const auto& a : *h.sink) {
    if (a.outcome != SinkOutcome::kAccepted && a.outcome != SinkOutcome::kDuplicate) continue;
    auto [it, fresh] =
        seen.emplace(std::make_pair(std::string_view(a.write.key), a.write.token), &a);
    if (!fresh)
      out.add({"",
               a.write.job_id,
               a.write.key,
               absl::StrCat("two token-valid attempts with token ", a.write.token, " for key ",
                            a.write.key, ": one grant executed twice"),
               {attempt_text(*it->second), attempt_text(a)}});
  }
}

// 8: nothing acknowledged rolls back; the durable history replays to the
// store's final contents.
void acked_commits_durable(const History& h, const Replay&, Findings& out) {
  for (const auto& c : *h.commits) {
    if (c.acked && c.state == StoreCommit::State::kLost)
      out.add({"",
               "",
               "",
               absl::StrCat("commit #", c.index, " of request ", c.request, " from node ", c.client,
                            " was acknowledged and then lost"),
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
    out.add({"",
             "",
             "",
             absl::StrCat("replaying the ", h.commits->size(),
                          " recorded commits does not reproduce the store (", replay.size(),
                          " keys vs ", h.final_store->size(), ")"),
             {}});
}

// --- Rules over the replay's final tracks ----------------------------------

// The interned ids of the jobs a corrupt-record fault made a record of
// undecodable (its job record, counters, due entry, run or ledger records),
// each with the (true) time of its first corruption. From that moment the
// job is excused: a body that needs one of those records passes the job's
// entries over (its lapsed leases stay leased, its ready runs stay ready, its
// due entry stays due, its reports are refused), so rules 1 and 7 do not
// require its unfinished runs to end, and corruption-contained judges the
// other jobs.
std::map<std::uint32_t, absl::Time> corrupted_job_ids(const History& h) {
  std::map<std::uint32_t, absl::Time> out;
  if (h.corrupted != nullptr && h.facts != nullptr)
    for (const CorruptedRecord& c : *h.corrupted)
      if (const std::uint32_t id = h.facts->strings().find(c.job); id != Interner::kNone)
        out.try_emplace(id, c.at);  // time order: the first one stays
  return out;
}

// 1: every occurrence due before the quiet tail reaches a terminal state
// (succeeded, failed, or withdrawn by a cancel), and so does every run the
// store holds that was due before the quiet tail. Except a run of a job a
// fault corrupted a record of, unfinished at the end (so unfinished at the
// corruption, or created after it): it cannot be judged without the records
// that no longer decode, so the bodies pass it over and it stays
// (JobStore::reap, claim); corruption-contained judges the other jobs.
void occurrences_complete(const History& h, const Replay& r, Findings& out) {
  if (h.expected == nullptr || h.facts == nullptr) return;
  const Interner& names = h.facts->strings();
  const std::map<std::uint32_t, absl::Time> corrupted = corrupted_job_ids(h);
  auto stuck = [&](const Replay::Track& t) {
    return !is_terminal(t.state) && corrupted.count(t.job) != 0;
  };
  const std::int64_t until_us = absl::ToUnixMicros(h.end - h.quiet_tail);
  auto report = [&](std::string job, std::string key, std::string detail) {
    out.add({"", std::move(job), std::move(key), std::move(detail), {}});
  };
  // Recorded policy decisions (the occurrence ledger) by (job, incarnation).
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
    } else if (!is_terminal(t->state) && !stuck(*t)) {
      report(o.job, key,
             absl::StrCat("occurrence ", time_text(o.nominal), " is still ",
                          absl_sv(to_string(t->state)), " (token ", t->token, ")"));
    }
  }
  for (std::uint32_t id = 0; id < r.runs.size(); ++id) {
    const Replay::Track& t = r.runs[id];
    if (!t.exists || t.due_us > until_us || is_terminal(t.state) || stuck(t)) continue;
    report(names.name(t.job), names.name(id),
           absl::StrCat("run due ", us_text(t.due_us), " is still ", absl_sv(to_string(t.state))));
  }
}

// 10: a stored record that does not decode stops at most its own job, and
// only from the moment it stopped decoding. Every expected occurrence due
// from the first corruption on (and before the quiet tail: `expected` holds
// no later ones) is dispatched, it has a run or a policy decision in the
// ledger covers it, unless its own job had a record corrupted at or before
// its due time: a job corrupted later is judged like any other until then.
// (A corrupted job's occurrences due after its corruption are not expected
// at all; that its other occurrences and runs end is rule 1's.)
void corruption_contained(const History& h, const Replay& r, Findings& out) {
  if (h.corrupted == nullptr || h.corrupted->empty() || h.expected == nullptr || h.facts == nullptr)
    return;
  const Interner& names = h.facts->strings();
  std::map<std::string, absl::Time> corrupted;  // job -> first corruption
  absl::Time first = absl::InfiniteFuture();
  for (const CorruptedRecord& c : *h.corrupted) {
    corrupted.try_emplace(c.job, c.at);
    first = std::min(first, c.at);
  }
  std::map<std::pair<std::uint32_t, std::uint64_t>, std::vector<const LedgerFact*>> ledger;
  for (const auto& l : h.facts->ledger())
    if (l.commit == LedgerFact::kFromEvent || !lost(h, l.commit))
      ledger[{l.job, l.incarnation}].push_back(&l);
  for (const auto& o : *h.expected) {
    if (o.due < first) continue;
    if (auto it = corrupted.find(o.job); it != corrupted.end() && it->second <= o.due) continue;
    const std::string key = idempotency_key(RunId{o.job, o.incarnation, o.nominal});
    const std::uint32_t id = names.find(key);
    if (id != Interner::kNone && id < r.runs.size() && r.runs[id].exists) continue;
    bool decided = false;
    if (auto it = ledger.find({names.find(o.job), o.incarnation}); it != ledger.end())
      for (const LedgerFact* l : it->second)
        if (l->from <= o.nominal && o.nominal <= l->through) decided = true;
    if (decided) continue;
    out.add({"",
             o.job,
             key,
             absl::StrCat("occurrence ", time_text(o.nominal), " (due ", time_text(o.due),
                          ") was never dispatched after the record of job ",
                          h.corrupted->front().job, " stopped decoding at ", time_text(first)),
             {}});
  }
}

// 10b: the client's requests are refused for a record that does not decode
// (DataLoss: client.request_undecodable) only on a job a corrupt-record
// fault had reached before the answer: a healthy job's control, cancel or
// re-create never fails on another job's bad record, nor on one that was
// fine when it was answered. Likewise a node reports a stored record
// undecodable (`record.undecodable`: the dispatch, claim, reap, sweep or a
// report passing it over) only for a job a corrupt-record fault had reached
// by then: a healthy job passed over as undecodable is a job stopped for
// nothing, and an operator sent to repair records that are fine.
void undecodable_only_where_corrupted(const History& h, const Replay&, Findings& out) {
  std::map<std::string, absl::Time, std::less<>> corrupted;  // job -> first corruption
  if (h.corrupted != nullptr)
    for (const CorruptedRecord& c : *h.corrupted) corrupted.try_emplace(c.job, c.at);
  if (h.facts != nullptr) {
    const Interner& names = h.facts->strings();
    for (const UndecodableFact& u : h.facts->undecodables()) {
      if (!out.open()) return;
      auto it = corrupted.find(names.name(u.job));
      if (it != corrupted.end() && it->second <= u.at) continue;
      out.add(
          {std::string(out.invariant()),
           names.name(u.job),
           "",
           absl::StrCat("a node reported record ", names.name(u.key), " undecodable (op ",
                        names.name(u.op), ") at ", absl::FormatTime(u.at), " but ",
                        it == corrupted.end() ? std::string("no record of the job was corrupted")
                                              : absl::StrCat("its first corruption came at ",
                                                             absl::FormatTime(it->second))),
           {}});
    }
  }
  if (h.events == nullptr) return;
  for (const NodeEvent& e : *h.events) {
    if (e.event.kind != client_events::kRequestUndecodable || !out.open()) continue;
    const std::string job = client_events::text_of(e.event, "job");
    auto it = corrupted.find(job);
    if (it != corrupted.end() && it->second <= e.at) continue;
    out.add({std::string(out.invariant()),
             job,
             "",
             absl::StrCat(client_events::text_of(e.event, "op"), " answered at ",
                          absl::FormatTime(e.at), " refused for an undecodable record (",
                          client_events::text_of(e.event, "error"), ") but ",
                          it == corrupted.end() ? std::string("no record of the job was corrupted")
                                                : absl::StrCat("its first corruption came at ",
                                                               absl::FormatTime(it->second))),
             {}});
  }
}

// 2 (completion side): a succeeded occurrence has exactly one accepted effect.
void effect_per_success(const History& h, const Replay& r, Findings& out) {
  if (h.facts == nullptr) return;
  const Interner& names = h.facts->strings();
  absl::flat_hash_map<std::string_view, int> effects;  // lookups only
  for (const auto& a : *h.sink)
    if (a.applied) ++effects[a.write.key];
  for (std::uint32_t id = 0; id < r.runs.size(); ++id) {
    const Replay::Track& t = r.runs[id];
    if (!t.exists || t.state != RunState::kSucceeded) continue;
    auto it = effects.find(names.name(id));
    const int n = it == effects.end() ? 0 : it->second;
    if (n == 1) continue;
    out.add({"",
             names.name(t.job),
             names.name(id),
             absl::StrCat("run succeeded (token ", t.token, ") with ", n, " accepted sink effects"),
             {}});
  }
}

// 7: timeliness, with the bounds of docs/SIMULATION.md. A run of a job a
// fault corrupted a record of has no completion bound that ends after the
// corruption (see corrupted_job_ids); one that ended before it is judged.
void timeliness(const History& h, const Replay& r, Findings& out) {
  if (h.facts == nullptr) return;
  const std::map<std::uint32_t, absl::Time> corrupted = corrupted_job_ids(h);
  std::vector<FaultWindow> windows = h.faults ? *h.faults : std::vector<FaultWindow>{};
  std::sort(windows.begin(), windows.end(),
            [](const FaultWindow& a, const FaultWindow& b) { return a.from < b.from; });
  const Bounds& b = h.bounds;
  const Interner& names = h.facts->strings();
  auto report = [&](const Replay::Track& t, std::string_view key, std::string detail) {
    out.add({"", names.name(t.job), std::string(key), std::move(detail), {}});
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
    if (auto c = corrupted.find(t.job); c != corrupted.end() && c->second <= deadline) continue;
    if (!t.terminal_at || *t.terminal_at > deadline)
      report(t, key,
             absl::StrCat("occurrence due ", time_text(due), " not finished by ",
                          time_text(deadline), " (last fault healed ", time_text(ref), ", bound ",
                          absl::FormatDuration(done), ")",
                          t.terminal_at ? absl::StrCat("; finished ", time_text(*t.terminal_at))
                                        : std::string("; never finished")));
  }
}

// The registry: the rule of every name in kInvariants (the policy rules are
// in sim/oracle/policy_checks.cc, the true-time rules in
// sim/oracle/execution_checks.cc).
struct RuleEntry {
  std::string_view name;
  Invariant::Rule rule;
};
// R1: the client judged each read's answer against what it had been told
// before sending it (sim/scenario/workload.h, "Reads"); every read it found
// contradicting that is one violation, with the client's detail.
void reads_see_acknowledged_writes(const History& h, const Replay&, Findings& out) {
  if (h.events == nullptr) return;
  for (const NodeEvent& e : *h.events) {
    if (e.event.kind != client_events::kReadAnomaly || !out.open()) continue;
    auto text = [&](std::string_view name) {
      const auto* v = e.event.find(name);
      return v != nullptr && std::get_if<std::string>(v) ? std::get<std::string>(*v)
                                                         : std::string();
    };
    out.add({std::string(out.invariant()),
             text("job"),
             "",
             absl::StrCat(text("op"), " at ", absl::FormatTime(e.at), ": ", text("detail")),
             {}});
  }
}

// C1: leadership spreads within three leader leases of a membership change
// or a fault (a sample is judged only when neither is that recent).
void leadership_balanced(const History& h, const Replay&, Findings& out) {
  if (h.balance == nullptr || h.shard_count == 0) return;
  const absl::Duration grace = 3 * h.leader_ttl;
  for (const BalanceSample& s : *h.balance) {
    if (s.live == 0 || s.at - s.since < grace) continue;
    const std::uint32_t fair = (h.shard_count + s.live - 1) / s.live;
    if (s.leads <= fair) continue;
    bool quiet = true;
    if (h.faults != nullptr)
      for (const FaultWindow& w : *h.faults)
        if (w.from <= s.at && w.to + grace >= s.at) quiet = false;
    if (!quiet) continue;
    out.add({"",
             "",
             s.node,
             absl::StrCat(s.node, " leads ", s.leads, " of ", h.shard_count, " shards at ",
                          time_text(s.at), " with ", s.live, " live schedulers (fair share ", fair,
                          ") since ", time_text(s.since)),
             {}});
  }
}

// C2: the other side of C1 -- a shard is not left unled. A release ends
// its holder's lease at once, so the shard is free: the others learn of it
// at their next announcement (every leader_renew_period, on a tick) or by
// probing it, and one below its fair share acquires it. Once a release
// commits, an acquisition of the shard commits within the renew period plus
// the start bound (two ticks and four store round trips), judged while a
// scheduler other than the releaser stays live throughout and no fault
// other than a leave, drain or stop is open or settling (a partition or
// pause delays the others' view; a crash leaves a dead node counted live
// until its record lapses). A lapsed lease is not judged here: who waits
// for it depends on when each node last probed it.
void released_shards_taken_over(const History& h, const Replay& r, Findings& out) {
  if (h.live_sets == nullptr || h.commits == nullptr || h.facts == nullptr) return;
  if (h.leader_renew_period <= absl::ZeroDuration()) return;
  const Interner& names = h.facts->strings();
  const absl::Duration bound = h.leader_renew_period + h.bounds.start;
  auto quiet = [&](absl::Time from, absl::Time to) {
    if (h.faults == nullptr) return true;
    for (const FaultWindow& w : *h.faults) {
      if (w.what == "leave" || w.what == "drain" || w.what == "stop") continue;
      if (w.from <= to && w.to + h.bounds.settle >= from) return false;
    }
    return true;
  };
  auto other_live = [&](const std::string& releaser, absl::Time from, absl::Time to) {
    const std::vector<LiveSet>& sets = *h.live_sets;
    auto it = std::upper_bound(sets.begin(), sets.end(), from,
                               [](absl::Time t, const LiveSet& s) { return t < s.at; });
    if (it == sets.begin()) return false;
    for (--it; it != sets.end() && it->at <= to; ++it)
      if (std::none_of(it->nodes.begin(), it->nodes.end(),
                       [&](const std::string& n) { return n != releaser; }))
        return false;
    return true;
  };
  const std::vector<LeaderStep>& steps = r.leader_steps;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (!out.open()) return;
    const LeaderFact& f = *steps[i].fact;
    const LeaderView& before = steps[i].before;
    if (f.expiry_us > f.store_us || !before.known() || before.holder != f.holder ||
        before.epoch != f.epoch || before.expiry_us <= f.store_us)
      continue;  // not a release of a lease still running
    const absl::Time released = (*h.commits)[f.commit].at;
    const absl::Time due = released + bound;
    const std::string& releaser = names.name(f.holder);
    if (due > h.end || !quiet(released, due) || !other_live(releaser, released, due)) continue;
    const LeaderFact* next = nullptr;
    for (std::size_t j = i + 1; j < steps.size() && next == nullptr; ++j) {
      const LeaderFact& g = *steps[j].fact;
      if (g.shard == f.shard && g.expiry_us > g.store_us) next = &g;
    }
    const absl::Time taken =
        next != nullptr ? (*h.commits)[next->commit].at : absl::InfiniteFuture();
    if (taken <= due) continue;
    out.add({"",
             "",
             releaser,
             absl::StrCat(
                 "shard ", f.shard, " released by ", releaser, " (epoch ", f.epoch, ") at ",
                 time_text(released), " was ",
                 next == nullptr ? std::string("never acquired again")
                                 : absl::StrCat("acquired again only at ", time_text(taken), " by ",
                                                names.name(next->holder)),
                 ", though another scheduler stayed live: allowed ", absl::FormatDuration(bound),
                 " (renew period ", absl::FormatDuration(h.leader_renew_period), " + start bound ",
                 absl::FormatDuration(h.bounds.start), ")"),
             {}});
  }
}

constexpr RuleEntry kRules[] = {
    {inv::kOccurrencesComplete, occurrences_complete},
    {inv::kEffectPerSuccess, effect_per_success},
    {inv::kSinkOneEffectPerKey, sink_one_effect_per_key},
    {inv::kSinkOneAttemptPerToken, sink_one_attempt_per_token},
    {inv::kRunCreatedOnce, run_created_once},
    {inv::kSingleValidLease, single_valid_lease},
    {inv::kTokensIncrease, tokens_increase},
    {inv::kEpochsIncrease, epochs_increase},
    {inv::kNoStaleLeaderWrites, no_stale_leader_writes},
    {inv::kNoStaleTokenWrites, no_stale_token_writes},
    {inv::kCancelStopsRuns, cancel_stops_runs},
    {inv::kTimeliness, timeliness},
    {inv::kAckedCommitsDurable, acked_commits_durable},
    {inv::kNotBeforeDue, not_before_due},
    {inv::kCorruptionContained, corruption_contained},
    {inv::kUndecodableOnlyWhereCorrupted, undecodable_only_where_corrupted},
    {inv::kRunsRecordReports, runs_record_reports},
    {inv::kReportVerdictsTruthful, report_verdicts_truthful},
    {inv::kReportEventsTruthful, report_events_truthful},
    {inv::kReportsAbandonedUnanswered, reports_abandoned_unanswered},
    {inv::kJobEventsTruthful, job_events_truthful},
    {inv::kLedgerOneOutcome, ledger_one_outcome},
    {inv::kAttemptsBounded, attempts_bounded},
    {inv::kRetryBackoff, retry_backoff},
    {inv::kOverlapRespected, overlap_respected},
    {inv::kCatchUpBounded, catch_up_bounded},
    {inv::kMisfireThreshold, misfire_threshold},
    {inv::kPriorityOrder, priority_order},
    {inv::kOverlapReachesLimit, overlap_reaches_limit},
    {inv::kAttemptsCounted, attempts_counted},
    {inv::kLedgerRetention, ledger_retention},
    {inv::kLedgerCountMatches, ledger_count_matches},
    {inv::kPausedFiresNothing, paused_fires_nothing},
    {inv::kRescheduleWithdrawsUnclaimed, reschedule_withdraws_unclaimed},
    {inv::kGenerationMovesWithChanges, generation_moves_with_changes},
    {inv::kExecutionWithinLease, execution_within_lease},
    {inv::kExecutionsNeverOverlap, executions_never_overlap},
    {inv::kDeadlineInsideLease, deadline_inside_lease},
    {inv::kReaperWaitsForExpiry, reaper_waits_for_expiry},
    {inv::kRenewalWithinLease, renewal_within_lease},
    {inv::kLeaderWritesWithinLease, leader_writes_within_lease},
    {inv::kHandbackAfterHolderDied, handback_after_holder_died},
    {inv::kLeaderRenewsOnCadence, leader_renews_on_cadence},
    {inv::kGrantStartedWithinDeadline, grant_started_within_deadline},
    {inv::kLeaseLossStopsExecution, lease_loss_stops_execution},
    {inv::kLeaderActsWithinOwnDeadline, leader_acts_within_own_deadline},
    {inv::kFencedLeaderStops, fenced_leader_stops},
    {inv::kLeadershipBalanced, leadership_balanced},
    {inv::kReleasedShardsTakenOver, released_shards_taken_over},
    {inv::kDrainStartsNothing, drain_starts_nothing},
    {inv::kDrainCompletes, drain_completes},
    {inv::kDrainLosesNothing, drain_loses_nothing},
    {inv::kReportsSettle, reports_settle},
    {inv::kLeaveReleasesBeforeDepart, leave_releases_before_depart},
    {inv::kReadsSeeAcknowledgedWrites, reads_see_acknowledged_writes},
    {inv::kInputsWithinDocumentedLimits, inputs_within_documented_limits},
    {inv::kQueriesMatchTheModel, queries_match_the_model},
    {inv::kBatchesAllOrNothing, batches_all_or_nothing},
    {inv::kUpdatesFollowIfMatch, updates_follow_if_match},
    {inv::kExpectationsMet, expectations_met},
};

constexpr bool rules_match_names() {
  if (std::size(kRules) != kInvariants.size()) return false;
  for (std::size_t i = 0; i < kInvariants.size(); ++i)
    if (kRules[i].name != kInvariants[i].name) return false;
  return true;
}
static_assert(rules_match_names(), "kRules must list kInvariants' names, in their order");

}  // namespace

Checker Checker::with_defaults() {
  Checker c;
  for (std::size_t i = 0; i < kInvariants.size(); ++i)
    c.invariants_.emplace_back(kInvariants[i], kRules[i].rule);
  return c;
}

Checker::Report Checker::run(const History& h, const std::vector<std::string>& ignored) const {
  Report report;
  const Replay replay = replay_history(h);
  for (const Invariant& inv : invariants_) {
    const std::string name(inv.name());
    if (std::find(ignored.begin(), ignored.end(), name) != ignored.end()) {
      report.ignored.push_back(name);
      continue;
    }
    Findings findings(inv.name(), report.violations);
    inv.check(h, replay, findings);
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
