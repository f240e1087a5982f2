// The two-sided policy rules (docs/SIMULATION.md, "Policy invariants"): what
// a policy must do, not only what it must not exceed. Each is a model of the
// policy written from docs/POLICIES.md, never with the kernel's policy
// functions, judged from the store facts the replay recorded:
//   overlap-reaches-limit  the dispatcher refuses an occurrence for overlap
//                          (or queues it) only when the job already has as
//                          many unfinished runs as its policy allows: with
//                          work available, `allow max_concurrent=N` reaches N
//   attempts-counted       every grant of a run carries the number of grants
//                          before it plus one (failures, timeouts, lapses and
//                          releases each end one attempt), and a run of a live
//                          job that fails for a retryable reason does so on
//                          attempt max_attempts exactly, never before
// (The catch-up rule's upper side, that a late run waiting for the spacing
// is decided when the spacing is over, is part of catch-up-bounded in
// sim/oracle/policy_checks.cc, next to the lower side.)
#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "sim/oracle/replay.h"

namespace kairos::sim {

namespace {

void report(const History& h, Findings& out, std::uint32_t job, std::string run,
            std::string detail) {
  Violation v;
  v.job = h.facts->strings().name(job);
  v.run = std::move(run);
  v.detail = std::move(detail);
  out.add(std::move(v));
}

// A job's unfinished runs just before and just after one commit.
struct OpenAround {
  std::int64_t active_before = 0, waiting_before = 0;
  std::int64_t active_after = 0, waiting_after = 0;
};

// The unfinished runs of each (job, incarnation) after each commit that
// wrote one of its runs (PolicyFacts::unfinished), in commit order.
class OpenRunsIndex {
 public:
  explicit OpenRunsIndex(const PolicyFacts& pf) {
    for (const PolicyFacts::Unfinished& u : pf.unfinished) by_job_[u.job].push_back(&u);
  }
  OpenAround around(JobKey k, std::uint64_t commit) const {
    OpenAround o;
    auto it = by_job_.find(k);
    if (it == by_job_.end()) return o;
    const auto& v = it->second;
    auto at = std::lower_bound(
        v.begin(), v.end(), commit,
        [](const PolicyFacts::Unfinished* u, std::uint64_t c) { return u->commit < c; });
    if (at != v.begin()) {
      o.active_before = (*(at - 1))->active;
      o.waiting_before = (*(at - 1))->waiting;
    }
    o.active_after = o.active_before;
    o.waiting_after = o.waiting_before;
    if (at != v.end() && (*at)->commit == commit) {
      o.active_after = (*at)->active;
      o.waiting_after = (*at)->waiting;
    }
    return o;
  }

 private:
  std::map<JobKey, std::vector<const PolicyFacts::Unfinished*>> by_job_;
};

const char* overlap_text(OverlapPolicy o) {
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

// The jobs whose (job, incarnation) the client saw cancelled, and the jobs
// whose record a fault corrupted: their runs end by other rules.
std::set<JobKey> cancelled_jobs(const History& h) {
  std::set<JobKey> out;
  if (h.cancels != nullptr)
    for (const CancelAck& c : *h.cancels)
      if (const std::uint32_t id = h.facts->strings().find(c.job); id != Interner::kNone)
        out.insert({id, c.incarnation});
  return out;
}
std::set<std::uint32_t> corrupted_jobs(const History& h) {
  std::set<std::uint32_t> out;
  if (h.corrupted != nullptr)
    for (const CorruptedRecord& c : *h.corrupted)
      if (const std::uint32_t id = h.facts->strings().find(c.job); id != Interner::kNone)
        out.insert(id);
  return out;
}

// The counts a `skipped_overlap` record's detail states, as docs/POLICIES.md
// ("Overlap") words it: "overlap POLICY: A unfinished, W waiting", for the
// policy named; nullopt when the detail does not say that.
std::optional<std::pair<std::int64_t, std::int64_t>> skip_detail_counts(std::string_view detail,
                                                                        std::string_view policy) {
  const std::string prefix = absl::StrCat("overlap ", absl_sv(policy), ": ");
  constexpr std::string_view kMid = " unfinished, ", kEnd = " waiting";
  if (!detail.starts_with(prefix) || !detail.ends_with(kEnd)) return std::nullopt;
  detail.remove_prefix(prefix.size());
  detail.remove_suffix(kEnd.size());
  const std::size_t mid = detail.find(kMid);
  if (mid == std::string_view::npos) return std::nullopt;
  auto number = [](std::string_view text) -> std::optional<std::int64_t> {
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
    return v;
  };
  const auto a = number(detail.substr(0, mid));
  const auto w = number(detail.substr(mid + kMid.size()));
  if (!a || !w) return std::nullopt;
  return std::pair{*a, *w};
}

}  // namespace

// P8: the overlap policy as docs/POLICIES.md ("Overlap") states it, from
// the side the upper bound (overlap-respected) cannot see. Before creating
// a run, dispatch counts the job's unfinished runs (ready, leased, waiting):
//   skip   refuses (`skipped_overlap`) only when one is unfinished;
//   queue  creates the run `waiting` only when one is active, and refuses
//          only when one already waits;
//   allow  refuses only when max_concurrent are active.
// So "work is available" is exact here: an occurrence that is being decided
// is work, and refusing it while fewer runs are unfinished than the policy
// allows is a policy that does too little (an `allow 3` behaving as 1).
// The count the dispatch saw lies between the job's unfinished runs just
// before the deciding commit and just after it (one commit may create a run
// and then refuse a later occurrence); the rule holds if either count
// justifies the refusal, so it never depends on the order inside a commit.
// The refusal's record says why: its detail names the job's policy and the
// counts the decision saw ("overlap skip: 1 unfinished, 0 waiting"), each
// within those two counts.
void overlap_reaches_limit(const History& h, const Replay& r, Findings& out) {
  if (h.facts == nullptr) return;
  const Interner& names = h.facts->strings();
  const PolicyFacts& pf = r.policy;
  const OpenRunsIndex open(pf);
  std::set<JobKey> reported;  // one finding per job is enough to act on
  auto finding = [&](JobKey k, std::string run, std::string detail) {
    if (reported.insert(k).second) report(h, out, k.first, std::move(run), std::move(detail));
  };
  for (const LedgerFact* l : pf.firsts) {
    if (names.name(l->outcome) != "skipped_overlap") continue;
    const JobKey k{l->job, l->incarnation};
    const ClientJob* cj = pf.job(k);
    if (cj == nullptr) continue;
    const JobPolicy& p = cj->policy;
    const OpenAround o = open.around(k, l->commit);
    const std::int64_t active = std::max(o.active_before, o.active_after);
    const std::int64_t waiting = std::max(o.waiting_before, o.waiting_after);
    // The record says why, in the words of the policy that decided and with
    // the counts the decision saw.
    const std::string& detail = names.name(l->detail);
    const std::optional<std::pair<std::int64_t, std::int64_t>> said =
        skip_detail_counts(detail, overlap_text(p.overlap));
    if (!said || said->first < std::min(o.active_before, o.active_after) || said->first > active ||
        said->second < std::min(o.waiting_before, o.waiting_after) || said->second > waiting) {
      finding(
          k, "",
          absl::StrCat("occurrence ", time_text(l->from), " was recorded skipped_overlap (commit #",
                       l->commit, ") with detail '", detail, "'; the job's policy is overlap ",
                       overlap_text(p.overlap), " and incarnation ", k.second, " had ",
                       o.active_before, "..", o.active_after, " active and ", o.waiting_before,
                       "..", o.waiting_after, " waiting unfinished runs"));
      continue;
    }
    bool justified = false;
    switch (p.overlap) {
      case OverlapPolicy::kSkip:
        justified =
            std::max(o.active_before + o.waiting_before, o.active_after + o.waiting_after) >= 1;
        break;
      case OverlapPolicy::kQueue:
        justified = waiting >= 1;
        break;
      case OverlapPolicy::kAllow:
        justified = active >= static_cast<std::int64_t>(p.max_concurrent) || waiting >= 1;
        break;
    }
    if (justified) continue;
    finding(k, "",
            absl::StrCat("occurrence ", time_text(l->from),
                         " was recorded skipped_overlap at store "
                         "time ",
                         us_text(l->store_us), " (commit #", l->commit, ") while incarnation ",
                         k.second, " had ", active, " active and ", waiting,
                         " waiting unfinished runs; overlap ", overlap_text(p.overlap),
                         p.overlap == OverlapPolicy::kAllow
                             ? absl::StrCat(" refuses only at ", p.max_concurrent, " active")
                         : p.overlap == OverlapPolicy::kQueue
                             ? std::string(" refuses only when one already waits")
                             : std::string(" refuses only when one is unfinished")));
  }
  // Queue: a run is created waiting only behind an active one.
  for (const RunStep& s : r.run_steps) {
    if (!s.created || s.fact->state != RunState::kWaiting) continue;
    const RunFact& f = *s.fact;
    const JobKey k{f.job, f.incarnation};
    const ClientJob* cj = pf.job(k);
    if (cj == nullptr || cj->policy.overlap != OverlapPolicy::kQueue) continue;
    const OpenAround o = open.around(k, f.commit);
    if (std::max(o.active_before, o.active_after) >= 1) continue;
    finding(k, names.name(f.run),
            absl::StrCat("run created waiting at store time ", us_text(f.store_us), " (commit #",
                         f.commit, ") with no active run of incarnation ", k.second,
                         " to wait for; overlap queue runs it at once"));
  }
}

// P9: attempts as docs/POLICIES.md ("Retries") counts them: an attempt is
// one grant; whatever ends it -- a failure, a timeout, a lapse of its lease,
// a release at the worker's lease deadline -- the next grant is the next
// attempt, so the n-th grant of a run (applied, not rolled back) carries
// attempt n. A run of a live job (no acknowledged cancel of its
// incarnation, record not corrupted) whose attempt ends for a retryable
// reason (failed, timed out, lapsed, released) is re-queued while attempts
// are left and fails on attempt max_attempts exactly: failing earlier is a
// policy that retries too little (the other side, never granted beyond
// max_attempts, is attempts-bounded). A permanent failure ends the run at
// any attempt.
void attempts_counted(const History& h, const Replay& r, Findings& out) {
  if (h.facts == nullptr) return;
  const Interner& names = h.facts->strings();
  const PolicyFacts& pf = r.policy;
  const std::set<JobKey> cancelled = cancelled_jobs(h);
  const std::set<std::uint32_t> corrupted = corrupted_jobs(h);
  std::map<std::uint32_t, std::uint32_t> grants;  // run -> applied grants so far
  for (const RunStep& s : r.run_steps) {
    const RunFact& f = *s.fact;
    if (s.grant) {
      const std::uint32_t n = ++grants[f.run];
      if (f.attempt != n)
        report(h, out, f.job, names.name(f.run),
               absl::StrCat("grant #", n, " of the run (token ", f.token, ", store commit #",
                            f.commit, ") carries attempt ", f.attempt, "; ", n - 1,
                            " earlier grants each ended one attempt, so it is attempt ", n));
      continue;
    }
    if (s.created || f.state != RunState::kFailed || s.before_state != RunState::kLeased) continue;
    const bool retryable = f.last_end == AttemptEnd::kFailed ||
                           f.last_end == AttemptEnd::kTimedOut ||
                           f.last_end == AttemptEnd::kLapsed || f.last_end == AttemptEnd::kReleased;
    const JobKey k{f.job, f.incarnation};
    const ClientJob* cj = pf.job(k);
    if (!retryable || cj == nullptr || cancelled.count(k) != 0 || corrupted.count(f.job) != 0)
      continue;
    if (f.attempt != cj->policy.max_attempts)
      report(h, out, f.job, names.name(f.run),
             absl::StrCat("the run failed (", absl_sv(to_string(f.last_end)), ") on attempt ",
                          f.attempt, " at store time ", us_text(f.store_us), " (commit #", f.commit,
                          "); the job allows ", cj->policy.max_attempts,
                          " attempts, so a retryable end before the last is retried"));
  }
}

}  // namespace kairos::sim
