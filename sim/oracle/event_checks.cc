// The node's job events, judged against the job records the store holds.
//
// (15) A job event states the record its commit wrote: `job.created` of
// (job, incarnation), and `job.updated` / `job.resumed` of (job,
// incarnation, generation), carry `next_due` exactly when that write of the
// job record names a next due time, and then the same instant
// (docs/ARCHITECTURE.md, "Events and metrics"). An operator reads when a job
// will next fire off these lines; one that names no next due, or another,
// for a job the store will fire says something the scheduler will not do.
// The record is the first write of the job record under that identity (the
// commit the event reports); events with no such write (the commit's
// answer lost, or the record corrupted) are not judged.
//
// A `run.retry_scheduled` event states the retry its commit scheduled by the
// documented backoff (docs/POLICIES.md): its window [delay_min, delay_max]
// is [base - base x jitter/100, base] for the failed attempt, and its delay
// is the point the run's deterministic jitter picks inside it. An operator
// reads from these lines when a failing job will be tried again; a window
// that is not the policy's misstates it. (The delay the store holds is
// retry-backoff's to judge; this is what the line says.) Judged for the
// jobs whose policy the client knows.
//
// A `misfire.decided` event names the job's misfire policy by its
// documented name and its threshold, as the client created the job, says
// `capped` 0 or 1, and counts no more misfired occurrences than due ones:
// the line an operator reads to learn why a backlog was run, skipped or
// coalesced.
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "core/kernel/event_kinds.h"
#include "core/kernel/records.h"
#include "sim/oracle/replay.h"

namespace kairos::sim {

namespace {

template <typename T>
const T* field(const Event& e, std::string_view name) {
  const auto* v = e.find(name);
  return v == nullptr ? nullptr : std::get_if<T>(v);
}

void retry_event_truthful(const History& h, const Replay& r, const NodeEvent& ne, Findings& out) {
  const Event& e = ne.event;
  const auto* job = field<std::string>(e, "job");
  const auto* inc = field<std::uint64_t>(e, "incarnation");
  const auto* nominal = field<absl::Time>(e, "nominal");
  const auto* failed = field<std::uint64_t>(e, "failed_attempt");
  const auto* delay = field<absl::Duration>(e, "delay");
  const auto* lo = field<absl::Duration>(e, "delay_min");
  const auto* hi = field<absl::Duration>(e, "delay_max");
  Violation v;
  if (job == nullptr || inc == nullptr || nominal == nullptr || failed == nullptr ||
      delay == nullptr || lo == nullptr || hi == nullptr) {
    v.job = job == nullptr ? std::string() : *job;
    v.detail = absl::StrCat(absl_sv(e.kind),
                            " lacks one of job, incarnation, nominal, failed_attempt, delay, "
                            "delay_min, delay_max");
    out.add(std::move(v));
    return;
  }
  const std::uint32_t id = h.facts->strings().find(*job);
  if (id == Interner::kNone || *failed < 1 || *failed > 1000) return;
  const ClientJob* cj = r.policy.job({id, *inc});
  if (cj == nullptr) return;
  const auto k = static_cast<std::uint32_t>(*failed);
  const std::string key = idempotency_key(RunId{*job, *inc, *nominal});
  const std::int64_t want_hi = documented_retry_base_us(cj->policy, k);
  const std::int64_t want_lo = documented_retry_floor_us(cj->policy, k);
  const std::int64_t want = documented_retry_delay_us(cj->policy, key, k);
  if (absl::ToInt64Microseconds(*lo) == want_lo && absl::ToInt64Microseconds(*hi) == want_hi &&
      absl::ToInt64Microseconds(*delay) == want)
    return;
  v.job = *job;
  v.run = key;
  v.detail = absl::StrCat(
      absl_sv(e.kind), " after attempt ", k, " says delay ", absl::FormatDuration(*delay), " in [",
      absl::FormatDuration(*lo), ", ", absl::FormatDuration(*hi), "]; the documented backoff is ",
      absl::FormatDuration(absl::Microseconds(want)), " in [",
      absl::FormatDuration(absl::Microseconds(want_lo)), ", ",
      absl::FormatDuration(absl::Microseconds(want_hi)), "] (initial ",
      absl::FormatDuration(cj->policy.retry_initial), ", x", cj->policy.retry_multiplier_percent,
      "%, max ", absl::FormatDuration(cj->policy.retry_max), ", jitter ",
      cj->policy.retry_jitter_percent, "%)");
  out.add(std::move(v));
}

// The documented name of a misfire policy (docs/POLICIES.md), written here
// rather than taken from the kernel's own naming function.
std::string_view documented_misfire_name(MisfirePolicy p) {
  switch (p) {
    case MisfirePolicy::kRunOnce:
      return "run-once";
    case MisfirePolicy::kCatchUp:
      return "catch-up";
    case MisfirePolicy::kSkip:
      return "skip";
  }
  return "?";
}

void misfire_event_truthful(const History& h, const Replay& r, const NodeEvent& ne, Findings& out) {
  const Event& e = ne.event;
  const auto* job = field<std::string>(e, "job");
  const auto* inc = field<std::uint64_t>(e, "incarnation");
  const auto* policy = field<std::string>(e, "policy");
  const auto* threshold = field<absl::Duration>(e, "threshold");
  const auto* due = field<std::uint64_t>(e, "due");
  const auto* misfired = field<std::uint64_t>(e, "misfired");
  const auto* capped = field<std::uint64_t>(e, "capped");
  Violation v;
  v.job = job == nullptr ? std::string() : *job;
  if (job == nullptr || inc == nullptr || policy == nullptr || threshold == nullptr ||
      due == nullptr || misfired == nullptr || capped == nullptr) {
    v.detail = absl::StrCat(absl_sv(e.kind),
                            " lacks one of job, incarnation, policy, threshold, due, misfired, "
                            "capped");
    out.add(std::move(v));
    return;
  }
  if (*capped > 1 || *misfired > *due) {
    v.detail = absl::StrCat(absl_sv(e.kind), " says ", *misfired, " of ", *due,
                            " due occurrences misfired and capped=", *capped,
                            ": capped is 0 or 1, and no more occurrences misfire than are due");
    out.add(std::move(v));
    return;
  }
  const std::uint32_t id = h.facts->strings().find(*job);
  if (id == Interner::kNone) return;
  const ClientJob* cj = r.policy.job({id, *inc});
  if (cj == nullptr) return;
  const std::string_view want = documented_misfire_name(cj->policy.misfire);
  if (*policy == want && *threshold == cj->policy.misfire_threshold) return;
  v.detail = absl::StrCat(absl_sv(e.kind), " of incarnation ", *inc, " names policy ", *policy,
                          " with threshold ", absl::FormatDuration(*threshold),
                          "; the job was created with ", absl_sv(want), " and threshold ",
                          absl::FormatDuration(cj->policy.misfire_threshold));
  out.add(std::move(v));
}

}  // namespace

void job_events_truthful(const History& h, const Replay& r, Findings& out) {
  if (h.events == nullptr || h.facts == nullptr) return;
  const Interner& names = h.facts->strings();
  // The first write of each (job, incarnation) and of each (job,
  // incarnation, generation), in commit order.
  std::map<std::pair<std::uint32_t, std::uint64_t>, const JobFact*> created;
  std::map<std::tuple<std::uint32_t, std::uint64_t, std::uint64_t>, const JobFact*> by_generation;
  for (const JobFact& f : h.facts->job_changes()) {
    created.try_emplace({f.job, f.incarnation}, &f);
    by_generation.try_emplace({f.job, f.incarnation, f.generation}, &f);
  }
  for (const NodeEvent& ne : *h.events) {
    if (!out.open()) return;
    const Event& e = ne.event;
    if (e.kind == event_kinds::kRunRetryScheduled) {
      retry_event_truthful(h, r, ne, out);
      continue;
    }
    if (e.kind == event_kinds::kMisfireDecided) {
      misfire_event_truthful(h, r, ne, out);
      continue;
    }
    const bool is_created = e.kind == event_kinds::kJobCreated;
    if (!is_created && e.kind != event_kinds::kJobUpdated && e.kind != event_kinds::kJobResumed)
      continue;
    const auto* job = e.find("job");
    const auto* inc = e.find("incarnation");
    const auto* gen = e.find("generation");
    if (job == nullptr || inc == nullptr || !std::holds_alternative<std::string>(*job) ||
        !std::holds_alternative<std::uint64_t>(*inc))
      continue;
    const std::uint32_t id = names.find(std::get<std::string>(*job));
    if (id == Interner::kNone) continue;
    const std::uint64_t incarnation = std::get<std::uint64_t>(*inc);
    const JobFact* f = nullptr;
    if (is_created) {
      auto it = created.find({id, incarnation});
      if (it != created.end()) f = it->second;
    } else if (gen != nullptr && std::holds_alternative<std::uint64_t>(*gen)) {
      auto it = by_generation.find({id, incarnation, std::get<std::uint64_t>(*gen)});
      if (it != by_generation.end()) f = it->second;
    }
    if (f == nullptr) continue;
    const auto* due = e.find("next_due");
    const bool said = due != nullptr && std::holds_alternative<absl::Time>(*due);
    const bool stored = f->next_due_us != JobFact::kNoDue;
    if (said == stored &&
        (!said || absl::ToUnixMicros(std::get<absl::Time>(*due)) == f->next_due_us))
      continue;
    Violation v;
    v.job = std::get<std::string>(*job);
    v.detail = absl::StrCat(
        absl_sv(e.kind), " of incarnation ", incarnation, " says ",
        said ? absl::StrCat("next_due ", time_text(std::get<absl::Time>(*due)))
             : std::string("no next due"),
        ", but the job record it wrote (commit #", f->commit, ") ",
        stored ? absl::StrCat("names next due ", time_text(absl::FromUnixMicros(f->next_due_us)))
               : std::string("names none"));
    out.add(std::move(v));
  }
}

}  // namespace kairos::sim
