// The misfire rule of misfire.h, as a pure function.
#include "core/kernel/misfire.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"

namespace kairos {

absl::Duration misfire_lateness(const Fire& f, absl::Time created_at, absl::Time now) {
  const absl::Duration d = now - std::max(f.at, created_at);
  return d < absl::ZeroDuration() ? absl::ZeroDuration() : d;
}

bool misfired(const JobPolicy& p, const Fire& f, absl::Time created_at, absl::Time now) {
  return misfire_lateness(f, created_at, now) > p.misfire_threshold;
}

std::string misfire_policy_name(MisfirePolicy p) {
  return p == MisfirePolicy::kRunOnce   ? "run-once"
         : p == MisfirePolicy::kCatchUp ? "catch-up"
                                        : "skip";
}

namespace {

LedgerOutcome on_time_outcome(const Fire& f) {
  return f.note == DstNote::kGapShifted ? LedgerOutcome::kMovedDst : LedgerOutcome::kFired;
}

std::uint32_t saturate(std::uint64_t n) {
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(n, UINT32_MAX));
}

MisfireAction run_of(const MisfireInput& in, std::size_t i, std::uint32_t stands_for) {
  MisfireAction a;
  a.kind = MisfireAction::Kind::kRun;
  a.index = i;
  const Fire& f = in.due[i];
  a.outcome =
      misfired(in.policy, f, in.created_at, in.now) ? LedgerOutcome::kLate : on_time_outcome(f);
  a.lateness = misfire_lateness(f, in.created_at, in.now);
  a.stands_for = stands_for;
  return a;
}

// A record action for due[b, e); none when the range is empty.
void add_record(MisfireDecision& d, std::size_t b, std::size_t e, LedgerOutcome o,
                std::string detail, bool linked = false) {
  if (b == e) return;
  MisfireAction a;
  a.kind = MisfireAction::Kind::kRecord;
  a.begin = b;
  a.end = e;
  a.outcome = o;
  a.detail = std::move(detail);
  a.linked = linked;
  d.actions.push_back(std::move(a));
}

}  // namespace

namespace {

MisfireDecision decide(const MisfireInput& in) {
  const JobPolicy& p = in.policy;
  const std::vector<Fire>& due = in.due;
  for (std::size_t i = 1; i < due.size(); ++i) {
    KAIROS_CHECK(due[i].nominal > due[i - 1].nominal);
    KAIROS_CHECK(due[i].at <= in.now);
  }
  KAIROS_CHECK(!in.after_last || in.after_last->nominal > due.back().nominal);
  MisfireDecision d;
  d.misfire = misfired(p, due[0], in.created_at, in.now);
  if (!d.misfire) {
    KAIROS_CHECK_MSG(due.size() == 1 && !in.capped, "an on-time entry stands for itself only");
    MisfireAction a;
    a.kind = MisfireAction::Kind::kRun;
    a.index = 0;
    a.outcome = on_time_outcome(due[0]);
    a.lateness = misfire_lateness(due[0], in.created_at, in.now);
    a.stands_for = saturate(1 + in.backlog);
    d.actions.push_back(a);
    d.backlog = 0;
    d.next = in.after_last;
    if (d.next) d.next_at = d.next->at;
    return d;
  }
  while (d.misfired < due.size() && misfired(p, due[d.misfired], in.created_at, in.now))
    ++d.misfired;
  const std::size_t n = due.size();

  switch (p.misfire) {
    case MisfirePolicy::kRunOnce:
      if (in.capped) {
        add_record(d, 0, n, LedgerOutcome::kCoalesced, "run-once: backlog, run follows");
        d.backlog = in.backlog + n;
        d.coalesced = n;
      } else {
        d.actions.push_back(run_of(in, n - 1, saturate(n + in.backlog)));
        add_record(d, 0, n - 1, LedgerOutcome::kCoalesced,
                   absl::StrCat("run-once: ", n + in.backlog, " occurrences, one run"),
                   /*linked=*/true);
        d.coalesced = n - 1;
        d.backlog = 0;
      }
      d.next = in.after_last;
      if (d.next) d.next_at = d.next->at;
      break;
    case MisfirePolicy::kSkip:
      add_record(d, 0, d.misfired, LedgerOutcome::kSkippedMisfire,
                 "skip: past the misfire threshold");
      d.skipped = d.misfired;
      d.backlog = 0;
      d.next = d.misfired < n ? std::optional<Fire>(due[d.misfired]) : in.after_last;
      if (d.next) d.next_at = d.next->at;
      break;
    case MisfirePolicy::kCatchUp: {
      d.backlog = 0;
      const bool bounded = in.bound_catch_up;
      const std::size_t excess = bounded && n > p.catch_up_max ? n - p.catch_up_max : 0;
      KAIROS_CHECK(!(bounded && in.capped) || excess > 0);
      add_record(d, 0, excess, LedgerOutcome::kSkippedMisfire,
                 absl::StrCat("catch-up: beyond the bound of ", p.catch_up_max));
      d.skipped = excess;
      if (in.capped && bounded) {
        d.next = due[excess];
        d.next_at = d.next->at;
      } else {
        d.actions.push_back(run_of(in, excess, 1));
        d.next = excess + 1 < n ? std::optional<Fire>(due[excess + 1]) : in.after_last;
        if (d.next) {
          d.next_at = d.next->at;
          // Rate limit: a next occurrence that is already due waits the spacing.
          if (bounded && d.next_at <= in.now)
            d.next_at = std::max(d.next_at, in.now + p.catch_up_spacing);
        }
      }
      break;
    }
  }
  return d;
}

}  // namespace

MisfireDecision decide_misfire(const MisfireInput& in) {
  KAIROS_CHECK(!in.due.empty());
  const MisfireDecision d = decide(in);
  // What every decision guarantees: progress (the next occurrence comes
  // after the entry's own), at most one run, actions within `due`, and no
  // occurrence both run and recorded.
  const std::size_t n = in.due.size();
  KAIROS_CHECK_MSG(!d.next || d.next->nominal > in.due[0].nominal, "misfire: no progress");
  KAIROS_CHECK(d.misfire == (d.misfired > 0));
  KAIROS_CHECK(d.skipped + d.coalesced <= n);
  std::size_t runs = 0, recorded = 0;
  for (const MisfireAction& a : d.actions) {
    if (a.kind == MisfireAction::Kind::kRun) {
      ++runs;
      KAIROS_CHECK(a.index < n && has_own_run(a.outcome));
    } else {
      KAIROS_CHECK(a.begin < a.end && a.end <= n && !has_own_run(a.outcome));
      recorded += a.end - a.begin;
    }
  }
  KAIROS_CHECK(runs <= 1);
  KAIROS_CHECK(recorded == d.skipped + d.coalesced);
  KAIROS_CHECK(d.backlog == 0 || (in.policy.misfire == MisfirePolicy::kRunOnce && in.capped));
  return d;
}

}  // namespace kairos
