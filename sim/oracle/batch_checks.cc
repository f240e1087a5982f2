// The rules over the client's batches, conditional applies and in-place
// updates (sim/scenario/workload.h, "Batches" and "Updates"), judged from
// the client events that record what it sent and what it was answered,
// against the store's job records (JobFact: each record write that changed
// the spec, generation, pause flag or incarnation, with a digest of the
// spec as stored, decoded with the data format) and run records.
//
// batches-all-or-nothing (docs/API.md, POST /v1/jobs:batch; job_store.h):
//   a batch holding an item the documented limits refuse (a bad field, an id
//   twice) is refused as a whole with InvalidArgument, its message names the
//   first failing item and its field ("jobs[i]: field"), the answer names
//   exactly the failing items, and no item's spec is ever stored; an empty
//   or oversized batch is refused naming "jobs". A valid batch is answered
//   with one item per spec, each holding the spec sent (normalised: whole
//   microseconds), at a generation under which the store holds that spec;
//   every item that changed something was written by one commit; an item
//   the client expects unchanged keeps its generation, an updated one moves
//   one on. One job's apply or update: with an If-Match that does not match
//   (stale, below a tombstone's, or the job absent) it is refused
//   FailedPrecondition as a generation mismatch; an update of a cancelled
//   job is refused FailedPrecondition, not as a mismatch (the job is not
//   live); an update of an id that never existed NotFound; an apply of a
//   spec past a limit InvalidArgument; none of these stores its spec; with a
//   matching If-Match (a live job's, or a tombstone's) it is accepted one
//   generation on and its spec stored.
// updates-follow-if-match (JobStore::update): an update carrying the
//   generation the client knew is accepted, answered one generation on with
//   the spec asked for, which the store holds at that generation; one with a
//   stale generation is refused as a generation mismatch and its spec is
//   never stored; one that changes nothing is accepted whatever the
//   generation, and the generation and spec stay; one that changes the id
//   is refused InvalidArgument and nothing is stored under the new id. And
//   for a job whose priority an update changed: every run created from then
//   on carries the priority of the job record in effect at its creation,
//   and the commit that changes the priority moves each of the
//   incarnation's ready or waiting runs to it (or withdraws it).
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "sim/oracle/checker.h"
#include "sim/oracle/replay.h"
#include "sim/scenario/client_events.h"

namespace kairos::sim {

namespace {

using client_events::text_of;
using client_events::uint_of;
std::vector<std::string> split(std::string_view s) {
  std::vector<std::string> out;
  if (s.empty()) return out;
  for (;;) {
    const std::size_t at = s.find(',');
    out.emplace_back(s.substr(0, at));
    if (at == std::string_view::npos) return out;
    s.remove_prefix(at + 1);
  }
}
std::uint64_t num(std::string_view s) {
  std::uint64_t v = 0;
  return absl::SimpleAtoi(absl_sv(s), &v) ? v : 0;
}

void add(Findings& out, std::string job, const NodeEvent& e, std::string detail) {
  if (!out.open()) return;
  out.add(
      {std::string(out.invariant()),
       std::move(job),
       "",
       absl::StrCat(absl_sv(e.event.kind), " at ", absl::FormatTime(e.at), ": ", std::move(detail)),
       {}});
}

// The applied job-record facts by (job id, spec digest).
class StoredSpecs {
 public:
  explicit StoredSpecs(const History& h) : h_(h) {
    if (h.facts == nullptr) return;
    for (const JobFact& f : h.facts->job_changes())
      if (!lost(h, f.commit)) by_spec_[{f.job, f.spec_digest}].push_back(&f);
  }
  // Every applied write of `job`'s record holding the spec of `digest`.
  const std::vector<const JobFact*>& writes(const std::string& job, std::uint64_t digest) const {
    static const std::vector<const JobFact*> kNone;
    if (h_.facts == nullptr) return kNone;
    const std::uint32_t id = h_.facts->strings().find(job);
    if (id == Interner::kNone) return kNone;
    auto it = by_spec_.find({id, digest});
    return it == by_spec_.end() ? kNone : it->second;
  }
  // The first applied write of that spec at `generation`, if any.
  const JobFact* at(const std::string& job, std::uint64_t digest, std::uint64_t generation) const {
    for (const JobFact* f : writes(job, digest))
      if (f->generation == generation) return f;
    return nullptr;
  }
  bool has_fact(const std::string& job) const {
    if (h_.facts == nullptr) return false;
    const std::uint32_t id = h_.facts->strings().find(job);
    for (const JobFact& f : h_.facts->job_changes())
      if (f.job == id && !lost(h_, f.commit)) return true;
    return false;
  }

 private:
  const History& h_;
  std::map<std::pair<std::uint32_t, std::uint64_t>, std::vector<const JobFact*>> by_spec_;
};

}  // namespace

void batches_all_or_nothing(const History& h, const Replay&, Findings& out) {
  if (h.events == nullptr || h.facts == nullptr) return;
  std::optional<StoredSpecs> stored;
  for (const NodeEvent& e : *h.events) {
    if (e.event.kind != client_events::kBatchAnswered) continue;
    if (!stored) stored.emplace(h);
    const Event& ev = e.event;
    const std::string probe = text_of(ev, "probe");
    const std::string code = text_of(ev, "code");
    const std::vector<std::string> ids = split(text_of(ev, "ids"));
    const std::vector<std::string> sent = split(text_of(ev, "sent"));
    const std::vector<std::string> want = split(text_of(ev, "want"));
    const std::vector<std::string> got = split(text_of(ev, "got"));
    const std::vector<std::string> got_spec = split(text_of(ev, "got_spec"));
    const std::vector<std::string> changed = split(text_of(ev, "changed"));
    const std::string field = text_of(ev, "field");
    const std::string planted = text_of(ev, "planted");
    const bool apply = text_of(ev, "op") != "batch";  // one job's apply or update
    const std::string first = ids.empty() ? std::string() : ids.front();
    auto never_stored = [&](const char* what) {
      for (std::size_t i = 0; i < ids.size() && i < sent.size(); ++i)
        if (!stored->writes(ids[i], num(sent[i])).empty())
          add(out, ids[i], e,
              absl::StrCat(probe, ": ", what, ", yet the store holds item ", i,
                           "'s spec under its id"));
    };
    auto stored_as_answered = [&]() -> std::set<std::uint64_t> {
      std::set<std::uint64_t> commits;  // of the items that changed something
      if (got.size() != ids.size() || got_spec.size() != ids.size()) {
        add(out, first, e,
            absl::StrCat(probe, ": accepted with ", got.size(), " answer items for ", ids.size(),
                         " specs"));
        return commits;
      }
      for (std::size_t i = 0; i < ids.size(); ++i) {
        if (got_spec[i] != sent[i])
          add(out, ids[i], e,
              absl::StrCat(probe, ": item ", i,
                           " was answered with another spec than the one sent"));
        if (i < want.size() && want[i] != "-" && got[i] != want[i])
          add(out, ids[i], e,
              absl::StrCat(probe, ": item ", i, " was answered at generation ", got[i], ", not ",
                           want[i], " (",
                           i < changed.size() && changed[i] == "1" ? "an update moves it one on"
                                                                   : "an unchanged item keeps it",
                           ")"));
        const JobFact* f = stored->at(ids[i], num(sent[i]), num(got[i]));
        if (f == nullptr)
          add(out, ids[i], e,
              absl::StrCat(probe, ": item ", i, " was accepted at generation ", got[i],
                           ", but no committed record of the job holds the spec sent at it"));
        else if (i < changed.size() && changed[i] == "1")
          commits.insert(f->commit);
      }
      return commits;
    };
    if (apply) {
      // One job's apply or update, and the answer its contract gives it.
      const std::string expect = text_of(ev, "expect");
      const bool mismatch = uint_of(ev, "mismatch") == 1;
      const std::string what = absl::StrCat(probe, ": an ", text_of(ev, "op"), " under If-Match ",
                                            text_of(ev, "if_match"));
      if (expect == "ok") {
        if (code != "OK") {
          add(out, first, e, absl::StrCat(what, " (the job's own generation) was answered ", code));
          continue;
        }
        stored_as_answered();
        continue;
      }
      if (expect == "mismatch" && (code != "FAILED_PRECONDITION" || !mismatch))
        add(out, first, e,
            absl::StrCat(what, ", which does not match, was answered ", code,
                         mismatch ? "" : " without", " as a generation mismatch"));
      if (expect == "cancelled" && (code != "FAILED_PRECONDITION" || mismatch))
        add(out, first, e,
            absl::StrCat(what, " of a cancelled job was answered ", code,
                         mismatch ? " as a generation mismatch" : "",
                         ", not FAILED_PRECONDITION for the cancelled job"));
      if (expect == "invalid" && code != "INVALID_ARGUMENT")
        add(out, first, e,
            absl::StrCat(what, " of a spec past a limit was answered ", code,
                         ", not INVALID_ARGUMENT"));
      if (expect == "not-found" && code != "NOT_FOUND")
        add(out, first, e,
            absl::StrCat(what, " of a job that never existed was answered ", code,
                         ", not NOT_FOUND"));
      never_stored("refused");
      continue;
    }
    if (!field.empty()) {  // an invalid batch
      if (code != "INVALID_ARGUMENT") {
        add(out, first, e,
            absl::StrCat(probe, ": a batch with invalid items was answered ", code,
                         ", not INVALID_ARGUMENT"));
      } else {
        const std::vector<std::string> p = split(planted);
        const std::string prefix =
            p.empty() ? absl::StrCat(field, ": ") : absl::StrCat("jobs[", p.front(), "]: ", field);
        const std::string message = text_of(ev, "message");
        if (!absl::StartsWith(message, prefix))
          add(out, first, e,
              absl::StrCat(probe, ": the refusal '", message, "' does not name '", prefix, "'"));
        if (text_of(ev, "errors") != planted)
          add(out, first, e,
              absl::StrCat(probe, ": the refusal names items [", text_of(ev, "errors"),
                           "], the invalid ones are [", planted, "]"));
      }
      never_stored("the batch was refused");
      continue;
    }
    if (code != "OK") {
      add(out, first, e, absl::StrCat(probe, ": a valid batch was answered ", code));
      continue;
    }
    const std::set<std::uint64_t> commits = stored_as_answered();
    if (commits.size() > 1)
      add(out, first, e,
          absl::StrCat(probe, ": the batch's changed items were written by ", commits.size(),
                       " commits (first #", *commits.begin(), ", last #", *commits.rbegin(),
                       "), not one"));
  }
}

void updates_follow_if_match(const History& h, const Replay&, Findings& out) {
  if (h.events == nullptr || h.facts == nullptr) return;
  std::optional<StoredSpecs> stored;
  for (const NodeEvent& e : *h.events) {
    if (e.event.kind != client_events::kUpdateAnswered) continue;
    if (!stored) stored.emplace(h);
    const Event& ev = e.event;
    const std::string job = text_of(ev, "job");
    const std::string kind = text_of(ev, "kind");
    const std::string code = text_of(ev, "code");
    const std::uint64_t if_match = uint_of(ev, "if_match");
    const std::uint64_t want = uint_of(ev, "want");
    if (kind == "change") {
      if (code != "OK") {
        add(out, job, e,
            absl::StrCat("an update with the generation the client knew (", if_match,
                         ") was answered ", code));
        continue;
      }
      if (uint_of(ev, "got") != want)
        add(out, job, e,
            "an accepted update was answered with another spec than the one asked for");
      if (uint_of(ev, "generation") != if_match + 1)
        add(out, job, e,
            absl::StrCat("an accepted update under If-Match ", if_match,
                         " was answered at generation ", uint_of(ev, "generation"), ", not ",
                         if_match + 1));
      if (stored->at(job, want, uint_of(ev, "generation")) == nullptr)
        add(out, job, e,
            absl::StrCat("an accepted update answered at generation ", uint_of(ev, "generation"),
                         ": no committed record of the job holds the spec asked for at it"));
    } else if (kind == "stale") {
      if (code != "FAILED_PRECONDITION" || uint_of(ev, "mismatch") != 1)
        add(out, job, e,
            absl::StrCat("an update under the stale If-Match ", if_match, " (the job is at ",
                         uint_of(ev, "known"), ") was answered ", code,
                         ", not a generation mismatch"));
      if (!stored->writes(job, want).empty())
        add(out, job, e,
            "an update refused for its stale If-Match, yet the store holds the spec it asked for");
    } else if (kind == "noop") {
      if (code != "OK") {
        add(out, job, e,
            absl::StrCat("an update that changes nothing was answered ", code,
                         " (it succeeds whatever the generation)"));
        continue;
      }
      if (uint_of(ev, "generation") != uint_of(ev, "known") || uint_of(ev, "changed") != 0 ||
          uint_of(ev, "got") != uint_of(ev, "before"))
        add(out, job, e,
            absl::StrCat("an update that changes nothing moved the job: generation ",
                         uint_of(ev, "known"), " -> ", uint_of(ev, "generation"),
                         uint_of(ev, "changed") != 0 ? ", reported changed" : "",
                         uint_of(ev, "got") != uint_of(ev, "before") ? ", another spec" : ""));
    } else if (kind == "rename") {
      if (code != "INVALID_ARGUMENT")
        add(out, job, e,
            absl::StrCat("an update changing the id was answered ", code,
                         ", not INVALID_ARGUMENT"));
      if (stored->has_fact(job + "-renamed"))
        add(out, job, e,
            "an update changing the id was refused, yet a job exists under the new id");
    }
  }

  // Priority changes within an incarnation, and what the runs do with them.
  const Interner& names = h.facts->strings();
  const std::vector<JobFact>& changes = h.facts->job_changes();
  std::set<std::uint32_t> reprioritised;
  {
    std::map<std::uint32_t, const JobFact*> last;
    for (const JobFact& c : changes) {
      if (lost(h, c.commit)) continue;
      auto [it, first] = last.try_emplace(c.job, &c);
      if (!first && it->second->incarnation == c.incarnation && it->second->priority != c.priority)
        reprioritised.insert(c.job);
      it->second = &c;
    }
  }
  if (reprioritised.empty()) return;
  std::map<std::uint32_t, const JobFact*> record;  // by job: the latest applied change
  std::map<std::uint32_t, const RunFact*> latest;  // by run: its latest applied write
  const std::vector<RunFact>& runs = h.facts->runs();
  std::size_t i = 0, j = 0;
  while (j < changes.size() || i < runs.size()) {
    if (!out.open()) return;
    // The job records of a commit are in effect for its runs.
    const bool job_next =
        j < changes.size() && (i == runs.size() || changes[j].commit <= runs[i].commit);
    if (job_next) {
      const JobFact& c = changes[j++];
      if (lost(h, c.commit) || !reprioritised.contains(c.job)) continue;
      const JobFact* before = record[c.job];
      record[c.job] = &c;
      if (before == nullptr || before->incarnation != c.incarnation ||
          before->priority == c.priority)
        continue;
      // The runs that were ready or waiting just before this commit, and
      // their writes by this commit.
      std::map<std::uint32_t, const RunFact*> moved;
      for (std::size_t k = i; k < runs.size() && runs[k].commit == c.commit; ++k)
        if (!lost(h, runs[k].commit)) moved[runs[k].run] = &runs[k];
      for (const auto& [run, f] : latest) {
        if (f->job != c.job || f->incarnation != c.incarnation ||
            (f->state != RunState::kReady && f->state != RunState::kWaiting))
          continue;
        auto m = moved.find(run);
        const RunFact& now = m == moved.end() ? *f : *m->second;
        if (now.priority == c.priority || now.state == RunState::kCancelled) continue;
        Violation v;
        v.job = names.name(c.job);
        v.run = names.name(run);
        v.detail =
            absl::StrCat("commit ", c.commit, " changed the job's priority ", before->priority,
                         " -> ", c.priority, " but left this ", absl_sv(to_string(now.state)),
                         " run at priority ", static_cast<int>(now.priority));
        v.evidence.push_back(fact_text(h, now));
        out.add(std::move(v));
      }
      continue;
    }
    const RunFact& f = runs[i++];
    if (lost(h, f.commit)) continue;
    const bool created = !latest.contains(f.run);
    latest[f.run] = &f;
    if (!created || !reprioritised.contains(f.job)) continue;
    auto it = record.find(f.job);
    if (it == record.end() || it->second->incarnation != f.incarnation ||
        it->second->priority == f.priority)
      continue;
    Violation v;
    v.job = names.name(f.job);
    v.run = names.name(f.run);
    v.detail = absl::StrCat("a run created at store time ", us_text(f.store_us), " has priority ",
                            static_cast<int>(f.priority), "; the job's record in effect (commit ",
                            it->second->commit, ") says ", it->second->priority);
    v.evidence.push_back(fact_text(h, f));
    out.add(std::move(v));
  }
}

}  // namespace kairos::sim
