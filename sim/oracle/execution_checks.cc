// The clock-safety rules, judged in true time: what the simulated processes
// really executed (History::executions, recorded by the runners), the lease
// expiries the store's clock set (the run and leader facts), the workers'
// own clocks at their lease writes and lease deadlines, and when a node's
// own timekeeping was outside what the kernel assumes (History::time_faults:
// a pause, a clock step, a rate change or a configured rate beyond the
// kernel's max drift). These are the promises behind the sink's fencing:
// a holder stops before its lease can lapse, so no run executes twice at
// once, and the reaper and a leader act only on what the store's clock says.
//
// Exemptions are stated per rule: a paused process cannot stop on time (its
// events wait), and a clock stepped or drifting beyond the bound breaks the
// assumption the rule is about; fencing at the sink covers those, and the
// sink invariants judge them.
#include <algorithm>
#include <iterator>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "sim/oracle/replay.h"

namespace kairos::sim {

namespace {

// One applied leased write of a (run, token): the store time of its commit,
// the expiry it set, the true time of the commit and the owner's clock then.
struct LeaseWrite {
  std::int64_t store_us = 0;
  std::int64_t expiry_us = 0;
  absl::Time at;
  std::int64_t owner_clock_us = 0;
};
using LeaseKey = std::pair<std::uint32_t, std::uint64_t>;  // (interned run, token)

// Every applied leased write (commits a store crash rolled back are
// skipped: their replies never reached the holder), by (run, token), in
// commit order.
std::map<LeaseKey, std::vector<LeaseWrite>> lease_writes(const History& h) {
  std::map<LeaseKey, std::vector<LeaseWrite>> out;
  for (const RunFact& f : h.facts->runs()) {
    if (f.state != RunState::kLeased || lost(h, f.commit)) continue;
    out[{f.run, f.token}].push_back(
        {f.store_us, f.lease_expiry_us, (*h.commits)[f.commit].at, f.owner_clock_us});
  }
  return out;
}

// Whether a time fault of `node` (or of the store, whose clock is the
// reference) touches [from, to].
bool time_faulted(const History& h, NodeId node, absl::Time from, absl::Time to) {
  if (h.time_faults == nullptr) return false;
  for (const NodeWindow& w : *h.time_faults)
    if ((w.node == node || w.node == h.store_node) && w.from <= to && w.to >= from) return true;
  return false;
}

// Each shard's applied leader-record writes in commit order: the record a
// shard's leader body was judged against at any commit.
class LeaderViews {
 public:
  explicit LeaderViews(const Replay& r) {
    for (const LeaderStep& s : r.leader_steps)
      steps_[s.fact->shard].push_back(
          {s.fact->commit, LeaderView{s.fact->holder, s.fact->epoch, s.fact->expiry_us}});
  }
  // The shard's last leader write at or before `commit` (!known(): none).
  LeaderView at(std::uint32_t shard, std::uint64_t commit) const {
    auto it = steps_.find(shard);
    if (it == steps_.end()) return {};
    const auto& steps = it->second;
    auto after =
        std::upper_bound(steps.begin(), steps.end(), commit,
                         [](std::uint64_t c, const std::pair<std::uint64_t, LeaderView>& step) {
                           return c < step.first;
                         });
    return after == steps.begin() ? LeaderView{} : std::prev(after)->second;
  }

 private:
  std::map<std::uint32_t, std::vector<std::pair<std::uint64_t, LeaderView>>> steps_;
};

// A ledger write of the dispatch's (the writes leader-writes-within-lease
// judges): an applied key fact with an outcome only the dispatch records (a
// cancel's, a manual run's and a pause's may come from a control request on
// any node).
bool dispatch_decision(const History& h, const LedgerFact& l) {
  if (l.commit == LedgerFact::kFromEvent || lost(h, l.commit)) return false;
  const std::string& outcome = h.facts->strings().name(l.outcome);
  return outcome != "cancelled" && outcome != "manual" && outcome != "paused";
}

// The shard of each job that has runs (a ledger decision's shard).
std::map<std::uint32_t, std::uint32_t> job_shards(const History& h) {
  std::map<std::uint32_t, std::uint32_t> shard_of;
  for (const RunFact& f : h.facts->runs()) shard_of.emplace(f.job, f.shard);
  return shard_of;
}

std::string execution_text(const History& h, const Execution& e) {
  return absl::StrCat(
      "execution of token ", e.token, " on ", (*h.node_names)[e.node], " from ", time_text(e.start),
      " to ",
      e.end == absl::InfiniteFuture() ? std::string("the end of the run") : time_text(e.end),
      " (store clock ", us_text(e.start_store_us), " .. ", us_text(e.end_store_us), ")");
}

void execution_violation(const History& h, const Execution& e, std::string detail,
                         std::vector<std::string> evidence, Findings& out) {
  const Interner& names = h.facts->strings();
  Violation v;
  v.job = names.name(e.job);
  v.run = names.name(e.run);
  v.detail = std::move(detail);
  v.evidence = std::move(evidence);
  v.evidence.insert(v.evidence.begin(), execution_text(h, e));
  out.add(std::move(v));
}

}  // namespace

// E1: an attempt stops executing no later than its lease's expiry by the
// store's clock: the latest expiry an applied write of its (run, token) had
// set by then. Exempt: its worker (or the store) had a time fault during it.
void execution_within_lease(const History& h, const Replay&, Findings& out) {
  if (h.executions == nullptr || h.facts == nullptr) return;
  const auto leases = lease_writes(h);
  for (const Execution& e : *h.executions) {
    if (!out.open()) break;
    auto it = leases.find({e.run, e.token});
    if (it == leases.end()) continue;  // granted by a commit the history lacks
    std::int64_t expiry_us = 0;
    for (const LeaseWrite& w : it->second)
      if (w.store_us <= e.end_store_us) expiry_us = std::max(expiry_us, w.expiry_us);
    if (e.end_store_us <= expiry_us || time_faulted(h, e.node, e.start, e.end)) continue;
    execution_violation(h, e,
                        absl::StrCat("executed until store time ", us_text(e.end_store_us),
                                     ", after its lease expired at ", us_text(expiry_us)),
                        {}, out);
  }
}

// E2: no two attempts of one run execute at overlapping true times (the
// promise "never run twice at the same time", whatever the sink dedupes).
// Exempt: an attempt whose worker (or the store) had a time fault during it.
void executions_never_overlap(const History& h, const Replay&, Findings& out) {
  if (h.executions == nullptr || h.facts == nullptr) return;
  // Per run, the non-exempt execution that ends last so far (executions are
  // recorded in start order).
  std::map<std::uint32_t, const Execution*> last;
  for (const Execution& e : *h.executions) {
    if (!out.open()) break;
    if (time_faulted(h, e.node, e.start, e.end)) continue;
    const Execution*& prev = last[e.run];
    if (prev != nullptr && e.start < prev->end)
      execution_violation(
          h, e,
          absl::StrCat("started at ", time_text(e.start), " while the attempt with token ",
                       prev->token, " on ", (*h.node_names)[prev->node], " was still executing"),
          {execution_text(h, *prev)}, out);
    if (prev == nullptr || e.end > prev->end) prev = &e;
  }
}

// E3: a worker's own-clock lease deadline lies a margin inside its lease
// under the configured drift: measured from its clock at the latest applied
// write of the lease (it sent its request no later), the deadline is at most
// lease x (1 - max_drift) - margin away. Judged where the deadline is seen:
// the worker stopping a run at it. Exempt: a time fault of the worker from
// one lease length before that write to the deadline.
void deadline_inside_lease(const History& h, const Replay&, Findings& out) {
  if (h.facts == nullptr) return;
  const auto leases = lease_writes(h);
  const Interner& names = h.facts->strings();
  for (const DeadlineFact& d : h.facts->deadlines()) {
    if (!out.open()) break;
    auto it = leases.find({d.run, d.token});
    if (it == leases.end()) continue;
    const LeaseWrite* w = nullptr;
    for (const LeaseWrite& x : it->second)
      if (x.at <= d.at) w = &x;
    if (w == nullptr || w->owner_clock_us == 0) continue;
    const std::int64_t ttl_us = w->expiry_us - w->store_us;
    // The owner of the lease: the run fact names it; its time faults exempt.
    NodeId owner = kWorldNode;
    for (const RunFact& f : h.facts->runs())
      if (f.run == d.run && f.token == d.token && f.state == RunState::kLeased) {
        for (NodeId n = 0; n < h.node_names->size(); ++n)
          if ((*h.node_names)[n] == names.name(f.owner)) owner = n;
        break;
      }
    if (owner != kWorldNode && time_faulted(h, owner, w->at - absl::Microseconds(ttl_us), d.at))
      continue;
    const std::int64_t allowed_us =
        ttl_us - ttl_us * h.max_drift_ppm / 1'000'000 - absl::ToInt64Microseconds(h.lease_margin);
    const std::int64_t deadline_us = absl::ToUnixMicros(d.local);
    // Two microseconds for the clock readings' truncation and timer rounding.
    if (deadline_us <= w->owner_clock_us + allowed_us + 2) continue;
    Violation v;
    v.run = names.name(d.run);
    v.detail = absl::StrCat(
        "worker deadline at its clock ", time_text(d.local), " is ",
        absl::FormatDuration(absl::Microseconds(deadline_us - w->owner_clock_us)),
        " after its clock read ", us_text(w->owner_clock_us), " at the lease write (token ",
        d.token, ", lease ", absl::FormatDuration(absl::Microseconds(ttl_us)),
        "); at most lease x (1 - max drift) - margin = ",
        absl::FormatDuration(absl::Microseconds(allowed_us)), " is inside the lease");
    out.add(std::move(v));
  }
}

bool handed_back(const History& h, const RunStep& s) {
  const RunFact& f = *s.fact;
  if (s.created || s.before_state != RunState::kLeased || f.state == RunState::kLeased ||
      f.last_end != AttemptEnd::kLapsed || h.facts == nullptr || h.node_names == nullptr ||
      h.commits == nullptr)
    return false;
  const std::string& writer = (*h.node_names)[s.commit->client];
  return writer == h.facts->strings().name(s.before_owner);
}

// A step in which the store took a lapsed lease back (the run ready again,
// or failed on its last attempt), whoever wrote it (the reaper, or the
// holder handing it back: handed_back()).
bool lease_lapsed(const RunStep& s) {
  const RunFact& f = *s.fact;
  return !s.created && s.before_state == RunState::kLeased && f.last_end == AttemptEnd::kLapsed &&
         (f.state == RunState::kReady || f.state == RunState::kFailed);
}

// Whether a process of `node` started in (after, by].
bool started_between(const History& h, NodeId node, absl::Time after, absl::Time by) {
  if (h.process_starts == nullptr) return false;
  for (const ProcessStart& p : *h.process_starts)
    if (p.node == node && p.at > after && p.at <= by) return true;
  return false;
}

// E4: the reaper re-queues (or fails) a leased run only once its lease has
// expired by the store's clock: a lapse commits at a store time at or after
// the expiry it ends. (A hand-back by the holder's own restarted node need
// not wait: handback-after-holder-died judges it.)
void reaper_waits_for_expiry(const History& h, const Replay& r, Findings& out) {
  for (const RunStep& s : r.run_steps) {
    const RunFact& f = *s.fact;
    if (!lease_lapsed(s)) continue;
    if (f.store_us >= s.before_lease_expiry_us || handed_back(h, s)) continue;
    Violation v;
    const Interner& names = h.facts->strings();
    v.job = names.name(f.job);
    v.run = names.name(f.run);
    v.detail = absl::StrCat("lease of token ", s.before_token, " lapsed at store time ",
                            us_text(f.store_us), ", before its expiry ",
                            us_text(s.before_lease_expiry_us));
    v.evidence.push_back(fact_text(h, f));
    out.add(std::move(v));
  }
}

// E8: a renewal extends only a live lease: a write that keeps a run leased
// under the same token with a later expiry commits at a store time before
// the expiry it extends. A lease is over at its expiry (the reaper may take
// it from then on, reaper-waits-for-expiry), so a renewal arriving at or
// after it must be refused, or the attempt would run on under a lease the
// store had already let go.
void renewal_within_lease(const History& h, const Replay& r, Findings& out) {
  if (h.facts == nullptr) return;
  for (const RunStep& s : r.run_steps) {
    if (!out.open()) return;
    const RunFact& f = *s.fact;
    if (s.created || s.before_state != RunState::kLeased || f.state != RunState::kLeased ||
        f.token != s.before_token || f.lease_expiry_us <= s.before_lease_expiry_us)
      continue;
    if (f.store_us < s.before_lease_expiry_us) continue;
    Violation v;
    const Interner& names = h.facts->strings();
    v.job = names.name(f.job);
    v.run = names.name(f.run);
    v.detail =
        absl::StrCat("lease of token ", f.token, " renewed at store time ", us_text(f.store_us),
                     ", at or after its expiry ", us_text(s.before_lease_expiry_us), " (to ",
                     us_text(f.lease_expiry_us), ")");
    v.evidence.push_back(fact_text(h, f));
    out.add(std::move(v));
  }
}

// E5: a leader body's writes -- the reaper's lapses and the dispatch's
// occurrence decisions (ledger records other than a cancel's, a manual
// run's, and a pause's, which a resume on any node may write) -- commit
// only by the node the shard's leader record names, before that record's
// expiry by the store's clock. (The runs a dispatch creates:
// no-stale-leader-writes.)
void leader_writes_within_lease(const History& h, const Replay& r, Findings& out) {
  if (h.facts == nullptr) return;
  const Interner& names = h.facts->strings();
  auto judge = [&](const LeaderView& l, std::uint64_t commit, std::int64_t store_us,
                   std::uint32_t shard, std::string what, std::string job, std::string run) {
    const std::string& writer = (*h.node_names)[(*h.commits)[commit].client];
    if (l.known() && names.name(l.holder) == writer && store_us < l.expiry_us) return;
    Violation v;
    v.job = std::move(job);
    v.run = std::move(run);
    v.detail = absl::StrCat(
        writer, " wrote ", what, " of shard ", shard, " at store time ", us_text(store_us),
        !l.known() ? std::string(", which has no leader")
                   : absl::StrCat(" while the leader record named ", names.name(l.holder),
                                  " epoch ", l.epoch, " until ", us_text(l.expiry_us)));
    out.add(std::move(v));
  };
  for (const RunStep& s : r.run_steps) {
    const RunFact& f = *s.fact;
    if (!lease_lapsed(s) || handed_back(h, s)) continue;
    judge(s.leader, f.commit, f.store_us, f.shard, "a lease lapse", names.name(f.job),
          names.name(f.run));
  }
  // The ledger's dispatch decisions, judged against the shard's leader
  // record at their commit (a job's shard: from its runs).
  const std::map<std::uint32_t, std::uint32_t> shard_of = job_shards(h);
  const LeaderViews leaders(r);
  for (const LedgerFact& l : h.facts->ledger()) {
    if (!out.open()) break;
    if (!dispatch_decision(h, l)) continue;
    auto sh = shard_of.find(l.job);
    if (sh == shard_of.end()) continue;
    judge(leaders.at(sh->second, l.commit), l.commit, l.store_us, sh->second,
          absl::StrCat("a ledger decision (", names.name(l.outcome), ", ", time_text(l.from), ")"),
          names.name(l.job), "");
  }
}

// T10: a leader renews its lease on the documented cadence, not more often
// (docs/SIMULATION.md, "Bounds": leader lease LT renewed every P = 2.5 s; a
// renewal every tick multiplies the store's leadership writes by P / poll).
// A renewal -- an applied leader write keeping the holder and epoch and
// moving the expiry later -- follows the same holder's previous write of that
// epoch, if the holder's node was told that one committed, by at least
// P / (1 + max_drift) - client_timeout of true time: the node sends the next
// renewal P after it sent the previous one (its own clock, running at most
// max_drift fast), and that one committed no later than the store client's
// timeout after its send. Not judged: a predecessor whose answer the node did
// not get (it retries), a process start of the holder between the two (a new
// process knows no renewal time), and a time fault of the holder or the store
// from the predecessor's send to the renewal. Only a renewal the node sent
// after the predecessor's answer is judged (one leadership request per shard
// is in flight at a time, so a later request id of the node means a later
// send): a request that timed out may still be applied after the next one.
void leader_renews_on_cadence(const History& h, const Replay& r, Findings& out) {
  if (h.facts == nullptr || h.node_names == nullptr || h.commits == nullptr) return;
  if (h.leader_renew_period <= absl::ZeroDuration()) return;
  const Interner& names = h.facts->strings();
  const absl::Duration min_gap =
      h.leader_renew_period / (1.0 + static_cast<double>(h.max_drift_ppm) / 1e6) -
      h.store_client_timeout;
  if (min_gap <= absl::ZeroDuration()) return;
  std::map<std::uint32_t, const LeaderFact*> last;  // by shard: the previous applied write
  for (const LeaderStep& s : r.leader_steps) {
    if (!out.open()) return;
    const LeaderFact& f = *s.fact;
    const LeaderFact* prev = std::exchange(last[f.shard], &f);
    if (prev == nullptr || prev->holder != f.holder || prev->epoch != f.epoch ||
        f.expiry_us <= prev->expiry_us)
      continue;
    const StoreCommit& pc = (*h.commits)[prev->commit];
    const StoreCommit& c = (*h.commits)[f.commit];
    const std::string& holder = names.name(f.holder);
    // (A later request of the node: a renewal sent before the predecessor's
    // answer -- the one before it, timed out and applied late -- is not.)
    if (!pc.acked || pc.client != c.client || (*h.node_names)[c.client] != holder ||
        c.request < pc.request)
      continue;
    if (c.at - pc.at >= min_gap) continue;
    if (started_between(h, c.client, pc.at - h.store_client_timeout, c.at) ||
        time_faulted(h, c.client, pc.at - h.store_client_timeout, c.at))
      continue;
    Violation v;
    v.detail = absl::StrCat(holder, " renewed its lease of shard ", f.shard, " epoch ", f.epoch,
                            " at ", time_text(c.at), ", ", absl::FormatDuration(c.at - pc.at),
                            " after its acknowledged write at ", time_text(pc.at), " (commit ",
                            prev->commit, "): renewals come every ",
                            absl::FormatDuration(h.leader_renew_period), ", at least ",
                            absl::FormatDuration(min_gap), " apart");
    out.add(std::move(v));
  }
}

// T11: a leader acts only before its own-clock leadership deadline (the
// leader's side of T3 and T6; T5 judges the same writes by the store's
// clock, and a write in the margin between the two is accepted by the
// store). A leader-body transaction -- a dispatch that records occurrence
// decisions, a reap that lapses leases: the writes T5 judges -- and a
// release of the node's own leadership (it ends that lease early) is sent at
// a node clock reading earlier than its clock at the send of an acquisition
// or renewal of that shard and epoch that it was told committed, plus
// leader_ttl x (1 - max_drift) - margin (docs/SIMULATION.md, "Bounds": the
// leader lease a slow clock can trust). The node may have learnt of any of
// its acknowledged writes sent before the transaction (one leadership
// request per shard is in flight at a time, so its request ids order its
// sends), so the latest of their deadlines is the one judged: a node that
// had not yet handled the newest answer had an earlier deadline still.
// A transaction committed under an epoch for which its node had no
// acknowledged leadership write sent before it is a violation too: a node
// leads an epoch only once a write of it was acknowledged.
// Both readings are the node's own clock, stamped by the store client in
// the very instant the node read it to time its deadline, so no slack and
// no time fault exempts: a pause or a step changes what the clock reads,
// not the comparison the node makes (as T6). Not judged: a leadership write
// followed by a process start of the node before the transaction's commit
// (the process it was acknowledged to is gone; a new process acquires a new
// epoch), and commits without the send's clock reading.
void leader_acts_within_own_deadline(const History& h, const Replay& r, Findings& out) {
  if (h.facts == nullptr || h.node_names == nullptr || h.commits == nullptr) return;
  if (h.leader_ttl <= absl::ZeroDuration()) return;
  const Interner& names = h.facts->strings();
  const std::int64_t ttl_us = absl::ToInt64Microseconds(h.leader_ttl);
  const std::int64_t allowed_us =
      ttl_us - ttl_us * h.max_drift_ppm / 1'000'000 - absl::ToInt64Microseconds(h.lease_margin);
  // Acquisitions and renewals their writer was told committed, by (shard,
  // epoch): applied leader writes naming the writing node, with an expiry
  // past their store time (a release sets it to the store's now and extends
  // nothing).
  std::map<std::pair<std::uint32_t, std::uint64_t>, std::vector<const StoreCommit*>> acked;
  for (const LeaderStep& s : r.leader_steps) {
    const LeaderFact& f = *s.fact;
    const StoreCommit& c = (*h.commits)[f.commit];
    if (!c.acked || f.expiry_us <= f.store_us || c.client >= h.node_names->size() ||
        (*h.node_names)[c.client] != names.name(f.holder))
      continue;
    acked[{f.shard, f.epoch}].push_back(&c);
  }
  // The leader-body transactions, one per commit (its first such write),
  // with the shard's leader record at the commit.
  struct Act {
    std::uint32_t shard = 0;
    LeaderView leader;
    std::string what, job, run;
  };
  std::map<std::uint64_t, Act> acts;
  for (const RunStep& s : r.run_steps) {
    const RunFact& f = *s.fact;
    if (!lease_lapsed(s) || handed_back(h, s)) continue;
    acts.emplace(f.commit, Act{f.shard, s.leader, "a reap (a lease lapse)", names.name(f.job),
                               names.name(f.run)});
  }
  // A release is a leader write too: it ends the holder's own lease early,
  // so it is sent while that lease is still the node's to end (past its
  // deadline the lease lapses by itself and the node sends nothing).
  for (const LeaderStep& s : r.leader_steps) {
    const LeaderFact& f = *s.fact;
    if (f.expiry_us > f.store_us || !s.before.known() || s.before.holder != f.holder ||
        s.before.epoch != f.epoch || s.before.expiry_us <= f.store_us)
      continue;
    acts.emplace(f.commit, Act{f.shard, LeaderView{f.holder, f.epoch, s.before.expiry_us},
                               "a release of its leadership", "", ""});
  }
  const std::map<std::uint32_t, std::uint32_t> shard_of = job_shards(h);
  const LeaderViews leaders(r);
  for (const LedgerFact& l : h.facts->ledger()) {
    if (!dispatch_decision(h, l)) continue;
    auto sh = shard_of.find(l.job);
    if (sh == shard_of.end()) continue;
    acts.emplace(l.commit, Act{sh->second, leaders.at(sh->second, l.commit),
                               absl::StrCat("a dispatch (a ledger decision: ",
                                            names.name(l.outcome), ", ", time_text(l.from), ")"),
                               names.name(l.job), ""});
  }
  // A release is a leader write too: it ends the holder's own lease early,
  // so it is sent while that lease is still the node's to end (past its
  // deadline the lease lapses by itself and the node sends nothing).
  for (const LeaderStep& s : r.leader_steps) {
    const LeaderFact& f = *s.fact;
    if (f.expiry_us > f.store_us || !s.before.known() || s.before.holder != f.holder ||
        s.before.epoch != f.epoch || s.before.expiry_us <= f.store_us)
      continue;
    acts.emplace(f.commit, Act{f.shard, LeaderView{f.holder, f.epoch, s.before.expiry_us},
                               "a release of its leadership", "", ""});
  }
  for (const auto& [index, a] : acts) {
    if (!out.open()) return;
    const StoreCommit& c = (*h.commits)[index];
    if (c.sent_local_ns == 0 || c.client >= h.node_names->size()) continue;
    const std::string& node = (*h.node_names)[c.client];
    // Another node's epoch, or none: leader-writes-within-lease judges it.
    if (!a.leader.known() || names.name(a.leader.holder) != node) continue;
    const StoreCommit* basis = nullptr;  // the write with the latest deadline
    std::int64_t deadline_ns = 0;
    bool any = false, unknown = false;
    if (auto it = acked.find({a.shard, a.leader.epoch}); it != acked.end())
      for (const StoreCommit* w : it->second) {
        if (w->client != c.client || w->request >= c.request) continue;
        any = true;
        if (started_between(h, c.client, w->at, c.at)) continue;
        if (w->sent_local_ns == 0) unknown = true;
        const std::int64_t d = w->sent_local_ns + allowed_us * 1000;
        if (basis == nullptr || d > deadline_ns) {
          basis = w;
          deadline_ns = d;
        }
      }
    if (unknown || (any && basis == nullptr)) continue;
    if (basis != nullptr && c.sent_local_ns < deadline_ns) continue;
    const absl::Time sent = absl::FromUnixNanos(c.sent_local_ns);
    Violation v;
    v.job = a.job;
    v.run = a.run;
    v.detail = absl::StrCat(node, " sent ", a.what, " of shard ", a.shard, " epoch ",
                            a.leader.epoch, " at its clock ", time_text(sent), " (commit ", index,
                            " at ", time_text(c.at), ")");
    if (basis == nullptr) {
      absl::StrAppend(&v.detail,
                      " with no acknowledged leadership write of that epoch sent before");
    } else {
      const absl::Time base = absl::FromUnixNanos(basis->sent_local_ns);
      absl::StrAppend(&v.detail, ", ",
                      absl::FormatDuration(sent - absl::FromUnixNanos(deadline_ns)),
                      " past its own leadership deadline ",
                      time_text(absl::FromUnixNanos(deadline_ns)), ": its clock read ",
                      time_text(base), " at the send of its acknowledged leadership write (commit ",
                      basis->index, "), and leader_ttl x (1 - max drift) - margin = ",
                      absl::FormatDuration(absl::Microseconds(allowed_us)));
    }
    out.add(std::move(v));
  }
}

// E9: a hand-back ends a lease early, so only a holder that is certainly
// over may give it: the write is its own node's, by a process that started
// after the commit that granted the lease (the granted process died: a
// process never hands back its own running attempts), and when it commits no
// execution of that (run, token) still runs (true time). Otherwise the run
// could be granted anew while the old attempt executes.
void handback_after_holder_died(const History& h, const Replay& r, Findings& out) {
  if (h.facts == nullptr || h.node_names == nullptr || h.commits == nullptr) return;
  const Interner& names = h.facts->strings();
  for (const RunStep& s : r.run_steps) {
    if (!out.open()) return;
    if (!handed_back(h, s)) continue;
    const RunFact& f = *s.fact;
    const NodeId writer = s.commit->client;
    const absl::Time at = s.commit->at;
    absl::Time started = absl::InfinitePast();  // the writer's process at the commit
    if (h.process_starts != nullptr)
      for (const ProcessStart& p : *h.process_starts)
        if (p.node == writer && p.at <= at) started = std::max(started, p.at);
    std::string why;
    if (started <= s.before_granted_at)
      why = absl::StrCat("by the process that was granted it (started ", time_text(started),
                         ", lease granted ", time_text(s.before_granted_at), ")");
    if (why.empty() && h.executions != nullptr)
      for (const Execution& e : *h.executions)
        if (e.run == f.run && e.token == s.before_token && e.start <= at && e.end > at) {
          why = absl::StrCat("while ", (*h.node_names)[e.node], " still executed it (since ",
                             time_text(e.start), ")");
          break;
        }
    if (why.empty()) continue;
    Violation v;
    v.job = names.name(f.job);
    v.run = names.name(f.run);
    v.detail = absl::StrCat((*h.node_names)[writer], " handed back token ", s.before_token,
                            " at commit ", f.commit, " (", time_text(at), ") ", why);
    v.evidence.push_back(fact_text(h, f));
    out.add(std::move(v));
  }
}

// E6: a worker starts an attempt only before its own-clock deadline for the
// grant: its clock when it sent the claim the grant answers, plus the lease
// the grant carries less max_drift of it and the margin (the lease a slow
// clock can trust, docs/SIMULATION.md "Bounds"). Judged by the worker's own
// clock alone -- it reads that clock when it handles the grant -- so no time
// fault exempts it: a grant whose answer came too late is dropped unrun,
// however it got late.
void grant_started_within_deadline(const History& h, const Replay&, Findings& out) {
  if (h.executions == nullptr || h.facts == nullptr) return;
  for (const Execution& e : *h.executions) {
    if (!out.open()) break;
    if (e.grant_sent == absl::InfinitePast()) continue;
    const std::int64_t ttl_us = absl::ToInt64Microseconds(e.grant_ttl);
    const absl::Time deadline =
        e.grant_sent + absl::Microseconds(ttl_us - ttl_us * h.max_drift_ppm / 1'000'000 -
                                          absl::ToInt64Microseconds(h.lease_margin));
    if (e.start_local < deadline) continue;
    execution_violation(
        h, e,
        absl::StrCat("started at its worker's clock ", time_text(e.start_local),
                     ", at or after its deadline ", time_text(deadline), " (claim sent at ",
                     time_text(e.grant_sent), ", lease ", absl::FormatDuration(e.grant_ttl), ")"),
        {}, out);
  }
}

// E7: once a worker knows an attempt's lease is gone, the attempt executes no
// more: from the true instant the worker handled the store's refusal of its
// renewal, or recorded that it lost the lease, passed its own-clock deadline
// or hit the job's timeout, no execution of that (run, token) is still
// running or starts. A refusal seen on the wire is judged where the worker
// still waited for it: the first answer to the request, handled within the
// rpc timeout of its send by the worker's clock, with no clock step or rate
// change of the worker in between (a pause is no excuse: the worker acts
// when it resumes).
void lease_loss_stops_execution(const History& h, const Replay&, Findings& out) {
  if (h.executions == nullptr || h.facts == nullptr) return;
  struct Moment {
    absl::Time at;
    std::string what;
  };
  std::map<LeaseKey, std::vector<Moment>> moments;
  for (const DeadlineFact& d : h.facts->deadlines())
    moments[{d.run, d.token}].push_back({d.at, "its worker passed its own-clock lease deadline"});
  for (const StopFact& s : h.facts->stops())
    moments[{s.run, s.token}].push_back({s.at, s.kind == StopFact::Kind::kLeaseLost
                                                   ? "its worker recorded the lease lost"
                                                   : "its worker recorded the job's timeout"});
  if (h.refusals != nullptr)
    for (const LeaseRefusal& r : *h.refusals) {
      if (r.local - r.sent > h.rpc_timeout) continue;
      bool stepped = false;
      if (h.time_faults != nullptr)
        for (const NodeWindow& w : *h.time_faults)
          if (w.node == r.node && w.what != "pause" && w.from <= r.at && w.to >= r.sent_at)
            stepped = true;
      if (!stepped)
        moments[{r.run, r.token}].push_back(
            {r.at, "its worker handled the store's refusal of its renewal"});
    }
  if (moments.empty()) return;
  for (const Execution& e : *h.executions) {
    if (!out.open()) break;
    auto it = moments.find({e.run, e.token});
    if (it == moments.end()) continue;
    const Moment* first = nullptr;
    for (const Moment& m : it->second)
      if (e.end > m.at && (first == nullptr || m.at < first->at)) first = &m;
    if (first == nullptr) continue;
    execution_violation(h, e,
                        absl::StrCat(e.start > first->at ? "started" : "was still executing",
                                     " after ", first->what, " at ", time_text(first->at)),
                        {}, out);
  }
}

// T12: a fenced leader stops. Once a scheduler handled the store's refusal
// of a leader write as made under a stale epoch of a shard, it leads that
// shard no more under that epoch (docs/ARCHITECTURE.md, events:
// `write.rejected_stale_epoch`): it sends no further leader write under it.
// The refusals are what the rule sees of those writes (a refused write is
// not applied), so: every later refusal of the same (node, shard, epoch)
// answers a transaction the node had sent before the first was handled,
// and so is handled within the store client's timeout (on the node's clock,
// at most max drift slow) of the first. Not judged: a time fault of the node
// or the store in between (a paused node handles its answers late).
void fenced_leader_stops(const History& h, const Replay&, Findings& out) {
  if (h.facts == nullptr || h.node_names == nullptr) return;
  if (h.store_client_timeout <= absl::ZeroDuration()) return;
  const Interner& names = h.facts->strings();
  const absl::Duration bound = h.store_client_timeout +
                               h.store_client_timeout * (h.max_drift_ppm / 1e6) +
                               h.bounds.round_trip;
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint64_t>, const StaleEpochFact*> first;
  for (const StaleEpochFact& f : h.facts->stale_epochs()) {
    if (!out.open()) return;
    auto [it, fresh] = first.try_emplace({f.node, f.shard, f.epoch}, &f);
    if (fresh) continue;
    const StaleEpochFact& a = *it->second;
    if (f.at - a.at <= bound) continue;
    NodeId node = kWorldNode;
    for (NodeId n = 0; n < h.node_names->size(); ++n)
      if ((*h.node_names)[n] == names.name(f.node)) node = n;
    if (time_faulted(h, node, a.at, f.at)) continue;
    Violation v;
    v.detail =
        absl::StrCat(names.name(f.node), " was refused a write of shard ", f.shard, " under epoch ",
                     f.epoch, " as stale at ", time_text(a.at), " and again at ", time_text(f.at),
                     ", ", absl::FormatDuration(f.at - a.at),
                     " later: it went on leading under a fenced epoch (a transaction in "
                     "flight at the first refusal is answered within ",
                     absl::FormatDuration(bound), ")");
    out.add(std::move(v));
    it->second = &f;  // one finding per repetition, not per pair
  }
}

}  // namespace kairos::sim
