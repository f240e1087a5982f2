// The graceful-stop rules: what a worker's drain (Worker::drain, production's
// shutdown on SIGTERM, driven by `fault drain`) and a scheduler's leave
// (SchedulerNode::leave, `fault leave`) must achieve, judged from what the
// processes executed (History::executions), the store's commits (run,
// leader and node-record facts), the workers' report events and the drains
// the simulator drove (History::drains).
//
// A drain (core/kernel/worker.h, "Drain"): the worker claims nothing new
// (W1); it completes once nothing runs and every report was answered or
// given up, never while an attempt still runs or a lease it held is still
// the store's business (W3), and never after the worker was stopped; and it
// does complete, within the worker's own report bound of its last attempt's
// end once faults healed (W2). A leave (core/kernel/scheduler_node.h,
// "leave"): the node's record is withdrawn only after the shards it led
// were released (L1), so the others lead them at once instead of after a
// leader lease.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sim/oracle/replay.h"

namespace kairos::sim {

namespace {

bool in_process(const DrainFact& d, const Execution& e) {
  return e.node == d.node && e.start >= d.process_start && e.start <= d.completed &&
         e.start < d.ended;
}

std::string drain_text(const History& h, const DrainFact& d) {
  return absl::StrCat(
      "drain of ", (*h.node_names)[d.node], " began ", time_text(d.began), ", ",
      d.completed == absl::InfiniteFuture() ? std::string("never completed")
                                            : absl::StrCat("completed ", time_text(d.completed)),
      d.ended == absl::InfiniteFuture() ? std::string()
                                        : absl::StrCat(", process stopped ", time_text(d.ended)));
}

void drain_violation(const History& h, const DrainFact& d, const Execution* e, std::string detail,
                     Findings& out) {
  Violation v;
  if (e != nullptr) {
    v.job = h.facts->strings().name(e->job);
    v.run = h.facts->strings().name(e->run);
  }
  v.detail = std::move(detail);
  v.evidence.push_back(drain_text(h, d));
  out.add(std::move(v));
}

}  // namespace

absl::Time wait_start_after_faults(const History& h, absl::Time from, absl::Duration bound,
                                   std::string_view except) {
  // A fault that began while the wait was still within its bound touches
  // it, which then counts from its heal; one that began after the bound had
  // passed excuses nothing (the wait was already late).
  for (bool moved = h.faults != nullptr; moved;) {
    moved = false;
    for (const FaultWindow& w : *h.faults)
      if (w.what != except && w.from <= from + bound && w.to > from) {
        from = w.to;
        moved = true;
      }
  }
  return from;
}

// W1: once a drain began, the draining process starts no attempt (a grant
// still arriving is handed back unrun).
void drain_starts_nothing(const History& h, const Replay&, Findings& out) {
  if (h.drains == nullptr || h.executions == nullptr) return;
  for (const DrainFact& d : *h.drains)
    for (const Execution& e : *h.executions)
      if (out.open() && in_process(d, e) && e.start > d.began)
        drain_violation(h, d, &e,
                        absl::StrCat("token ", e.token, " started executing at ",
                                     time_text(e.start), ", after the drain began"),
                        out);
}

// W2: a drain completes. Its callback never runs after the worker was
// stopped (Worker::stop, a crash), and a drain whose process lived to the
// end of the run completed: within the worker's report bound (every report
// answered or given up after its retries) plus the settle bound of its last
// attempt's end or of the heal of the last fault touching that wait (one
// that began before the bound had passed).
void drain_completes(const History& h, const Replay&, Findings& out) {
  if (h.drains == nullptr) return;
  for (const DrainFact& d : *h.drains) {
    if (!out.open()) return;
    if (d.completed_after_stop) {
      drain_violation(h, d, nullptr, "the drain's callback ran after the worker was stopped", out);
      continue;
    }
    if (d.completed != absl::InfiniteFuture() || d.ended != absl::InfiniteFuture()) continue;
    absl::Time last = d.began;
    bool running = false;
    if (h.executions != nullptr)
      for (const Execution& e : *h.executions) {
        if (!in_process(d, e)) continue;
        if (e.end == absl::InfiniteFuture()) running = true;
        last = std::max(last, e.end);
      }
    if (running) continue;  // still waiting for an attempt (its timeout bounds it)
    const absl::Duration bound = h.report_bound + h.bounds.settle;
    last = wait_start_after_faults(h, last, bound, "drain");
    if (h.end - last > bound)
      drain_violation(
          h, d, nullptr,
          absl::StrCat("not drained by the end of the run: nothing ran from ", time_text(last),
                       " on (bound ", absl::FormatDuration(bound), ")"),
          out);
  }
}

// W3: a drain loses nothing. When it completes, no attempt of the process
// still executes, and every attempt it executed is settled: the store
// already holds its outcome (an applied commit by then ended or superseded
// that token's lease), or the worker recorded its report answered or given
// up (accepted, rejected, dropped, abandoned) by then.
void drain_loses_nothing(const History& h, const Replay&, Findings& out) {
  if (h.drains == nullptr || h.executions == nullptr) return;
  std::map<std::uint32_t, std::vector<const RunFact*>> by_run;
  for (const DrainFact& d : *h.drains) {
    if (d.completed == absl::InfiniteFuture() || d.completed_after_stop) continue;
    for (const Execution& e : *h.executions)
      if (in_process(d, e)) by_run.try_emplace(e.run);
  }
  if (by_run.empty()) return;
  for (const RunFact& f : h.facts->runs())
    if (auto it = by_run.find(f.run); it != by_run.end() && !lost(h, f.commit))
      it->second.push_back(&f);
  for (const DrainFact& d : *h.drains) {
    if (d.completed == absl::InfiniteFuture() || d.completed_after_stop) continue;
    for (const Execution& e : *h.executions) {
      if (!out.open()) return;
      if (!in_process(d, e)) continue;
      if (e.end > d.completed) {
        drain_violation(h, d, &e,
                        absl::StrCat("token ", e.token,
                                     " was still executing when the drain "
                                     "completed"),
                        out);
        continue;
      }
      bool settled = false;
      for (const ReportSettledFact& s : h.facts->settled())
        if (s.run == e.run && s.token == e.token && s.at <= d.completed) settled = true;
      for (const RunFact* f : by_run[e.run])
        if ((*h.commits)[f->commit].at <= d.completed &&
            (f->token > e.token || (f->token == e.token && f->state != RunState::kLeased)))
          settled = true;
      if (!settled)
        drain_violation(h, d, &e,
                        absl::StrCat("token ", e.token, " ended executing at ", time_text(e.end),
                                     ", but when the drain completed its lease was still held "
                                     "and its report neither answered nor given up"),
                        out);
    }
  }
}

// L1: a leaving scheduler withdraws its node record only after releasing
// the shards it led. At an applied departure commit, no shard's leader
// record (applied writes in commit order) names the departing node with
// more of its lease left, by the store's clock, than the node's own
// leadership deadline keeps back (leader lease x max drift + margin, one
// store round trip between its send and the write, and its clock's offset
// from the store's then): a release the node skipped because its own
// deadline had passed is allowed, one it did not wait for is not. Not
// judged: a leader write whose commit the node was not told of (a lost
// reply: it may not know it leads), and a departure with a fault window
// (other than a leave) or a time fault of the node or the store within a
// leader lease before it.
void leave_releases_before_depart(const History& h, const Replay& r, Findings& out) {
  if (h.facts == nullptr || h.facts->departs().empty()) return;
  const Interner& names = h.facts->strings();
  for (const DepartFact& dep : h.facts->departs()) {
    if (!out.open()) return;
    if (lost(h, dep.commit)) continue;
    const StoreCommit& c = (*h.commits)[dep.commit];
    const absl::Time from = c.at - h.leader_ttl;
    bool exempt = false;
    if (h.faults != nullptr)
      for (const FaultWindow& w : *h.faults)
        if (w.what != "leave" && w.from <= c.at && w.to >= from) exempt = true;
    if (h.time_faults != nullptr)
      for (const NodeWindow& w : *h.time_faults) {
        const bool ours =
            w.node == h.store_node ||
            (w.node < h.node_names->size() && (*h.node_names)[w.node] == names.name(dep.node));
        if (ours && w.from <= c.at && w.to >= from) exempt = true;
      }
    if (exempt) continue;
    const std::int64_t offset_us =
        dep.node_clock_us == 0 ? 0 : std::abs(dep.node_clock_us - dep.store_us);
    const absl::Duration allowance = h.leader_ttl * (static_cast<double>(h.max_drift_ppm) / 1e6) +
                                     h.lease_margin + h.bounds.round_trip +
                                     absl::Microseconds(offset_us);
    std::map<std::uint32_t, const LeaderFact*> latest;  // by shard, before the departure
    for (const LeaderStep& s : r.leader_steps) {
      if (s.fact->commit >= dep.commit) break;
      latest[s.fact->shard] = s.fact;
    }
    for (const auto& [shard, f] : latest) {
      if (f->holder != dep.node || !(*h.commits)[f->commit].acked) continue;
      const std::int64_t left_us = f->expiry_us - dep.store_us;
      if (absl::Microseconds(left_us) <= allowance) continue;
      Violation v;
      v.detail =
          absl::StrCat(names.name(dep.node), " withdrew its node record at ", us_text(dep.store_us),
                       " (store clock) while the leader record of shard ", shard,
                       " still named it (epoch ", f->epoch, ", expiry ", us_text(f->expiry_us),
                       ", ", absl::FormatDuration(absl::Microseconds(left_us)), " left; allowance ",
                       absl::FormatDuration(allowance), "): the shard was not released");
      out.add(std::move(v));
    }
  }
}

}  // namespace kairos::sim
