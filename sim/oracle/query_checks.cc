// The rules over the client's boundary inputs and its filtered and bounded
// queries (sim/scenario/workload.h, "Inputs" and "Queries"), judged from the
// client events that record what it sent and what it was answered, against
// the checker's own model of what the client was told: the jobs whose
// create was acknowledged (with the namespace and labels it sent) and the
// run and ledger entries earlier answers showed it.
//
// inputs-within-documented-limits: a request one past a documented limit
//   of the job API is refused with InvalidArgument and writes nothing (a
//   refused create leaves no job record under its id); one exactly at the
//   limit is accepted.
// queries-match-the-model: a listing's pages are each within the page size
//   and together strictly ascending by id (sorted, nothing twice); with a
//   filter, every listed job the model knows matches it, and every job
//   acknowledged before the listing was sent that matches it is listed; a
//   runs walk's pages lie at or above their lower bound, ascend, stay within
//   the limit and hold every run of the incarnation an earlier walk showed;
//   a ledger answer's records all meet the window [from, to), ascend, stay
//   within the limit, and hold every record an earlier answer showed that
//   meets the window (with `more`, those sorting before the last returned).
//   Entries the ledger's retention may have removed (a job with more
//   ledger writes than ledger_keep, entries older than ledger_max_age) are
//   not required.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "sim/oracle/checker.h"
#include "sim/oracle/replay.h"
#include "sim/scenario/client_events.h"

namespace kairos::sim {

namespace {

using client_events::int_of;
using client_events::label_text;
using client_events::parse_label_text;
using client_events::text_of;
using client_events::uint_of;

void add(Findings& out, std::string job, const NodeEvent& e, std::string detail) {
  if (!out.open()) return;
  out.add(
      {std::string(out.invariant()),
       std::move(job),
       "",
       absl::StrCat(absl_sv(e.event.kind), " at ", absl::FormatTime(e.at), ": ", std::move(detail)),
       {}});
}

// The pieces of `s` between `sep`s (none for an empty `s`).
std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  if (s.empty()) return out;
  for (;;) {
    const std::size_t at = s.find(sep);
    out.push_back(s.substr(0, at));
    if (at == std::string_view::npos) return out;
    s.remove_prefix(at + 1);
  }
}
template <typename T>
bool number(std::string_view s, T* out) {
  return absl::SimpleAtoi(absl_sv(s), out);
}

bool matches(const std::string& ns, const std::map<std::string, std::string>& labels,
             const std::string& want_ns, const std::map<std::string, std::string>& selector) {
  if (!want_ns.empty() && ns != want_ns) return false;
  for (const auto& [k, v] : selector) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  return true;
}

struct ModelJob {
  std::string ns;
  std::map<std::string, std::string> labels;
};

// How many ledger writes the history holds per job id (interned): an upper
// bound of the records the job's ledger ever held.
std::map<std::uint32_t, std::uint64_t> ledger_writes(const History& h) {
  std::map<std::uint32_t, std::uint64_t> n;
  if (h.facts == nullptr) return n;
  for (const LedgerFact& f : h.facts->ledger())
    if (f.commit != LedgerFact::kFromEvent) ++n[f.job];
  return n;
}

// A run the store held: its occurrence (the idempotency key's last part,
// `job/incarnation/nominal`), the true time of its first applied write and of
// its erasure (InfiniteFuture when never erased).
struct StoreRun {
  std::int64_t nominal_us = 0;
  absl::Time created = absl::InfiniteFuture();
  absl::Time erased = absl::InfiniteFuture();
};

// Every run of every (job, incarnation), from the applied commits.
std::map<std::pair<std::string, std::uint64_t>, std::vector<StoreRun>> runs_by_incarnation(
    const History& h) {
  std::map<std::pair<std::string, std::uint64_t>, std::vector<StoreRun>> out;
  if (h.facts == nullptr || h.commits == nullptr) return out;
  const Interner& names = h.facts->strings();
  std::map<std::uint32_t, std::pair<std::pair<std::string, std::uint64_t>, std::size_t>> where;
  for (const RunFact& f : h.facts->runs()) {
    if (lost(h, f.commit) || where.contains(f.run)) continue;
    const std::string& key = names.name(f.run);
    const std::size_t slash = key.rfind('/');
    std::int64_t nominal = 0;
    if (slash == std::string::npos || !number(std::string_view(key).substr(slash + 1), &nominal))
      continue;
    auto& runs = out[{names.name(f.job), f.incarnation}];
    where[f.run] = {{names.name(f.job), f.incarnation}, runs.size()};
    runs.push_back({nominal, (*h.commits)[f.commit].at, absl::InfiniteFuture()});
  }
  for (const auto& [commit, run] : h.facts->run_erases()) {
    if (lost(h, commit)) continue;
    auto it = where.find(run);
    if (it == where.end()) continue;
    StoreRun& r = out[it->second.first][it->second.second];
    r.erased = std::min(r.erased, (*h.commits)[commit].at);
  }
  return out;
}

}  // namespace

void inputs_within_documented_limits(const History& h, const Replay&, Findings& out) {
  if (h.events == nullptr) return;
  std::set<std::uint32_t> written;  // jobs with a job record write
  if (h.facts != nullptr)
    for (const JobFact& f : h.facts->job_changes()) written.insert(f.job);
  for (const NodeEvent& e : *h.events) {
    if (e.event.kind != client_events::kInputAnswered) continue;
    const std::string probe = text_of(e.event, "probe");
    const std::string code = text_of(e.event, "code");
    const std::string job = text_of(e.event, "job");
    const bool past = text_of(e.event, "bound") == "past";
    // The runs of a job id nobody created are not found (docs/API.md: 404),
    // not an empty list; every other probe's far side is an invalid input.
    const std::string_view refusal =
        probe == "runs-of-unknown-job" ? "NOT_FOUND" : "INVALID_ARGUMENT";
    if (past && code != refusal)
      add(out, job, e,
          absl::StrCat(probe, " one past its documented limit was answered ", code, ", not ",
                       absl_sv(refusal)));
    if (!past && code != "OK")
      add(out, job, e,
          absl::StrCat(probe, " exactly at its documented limit was answered ", code,
                       ", not accepted"));
    if (past && !job.empty() && h.facts != nullptr) {
      const std::uint32_t id = h.facts->strings().find(job);
      if (id != Interner::kNone && written.contains(id))
        add(out, job, e,
            absl::StrCat(probe,
                         " one past its documented limit was refused, yet the store "
                         "holds a job record written under its id"));
    }
  }
}

void queries_match_the_model(const History& h, const Replay&, Findings& out) {
  if (h.events == nullptr) return;
  std::map<std::string, ModelJob> model;
  std::vector<std::string> known;  // model ids in the order they were acknowledged
  struct Started {
    std::string ns;
    std::map<std::string, std::string> selector;
    std::size_t known = 0;  // how many model jobs were acknowledged before the send
  };
  std::map<std::uint64_t, Started> listings;
  // Entries earlier answers showed: runs by (job, incarnation), ledger
  // records by job as (incarnation, nominal) -> through.
  std::map<std::pair<std::string, std::uint64_t>, std::set<std::int64_t>> runs_seen;
  std::map<std::string, std::map<std::pair<std::uint64_t, std::int64_t>, std::int64_t>> ledger_seen;
  const auto writes = ledger_writes(h);
  std::optional<std::map<std::pair<std::string, std::uint64_t>, std::vector<StoreRun>>> store_runs;
  auto retained = [&](const std::string& job, std::int64_t nominal_us, absl::Time at) {
    if (absl::FromUnixMicros(nominal_us) < at - h.ledger_max_age) return false;
    if (h.facts == nullptr) return true;
    const std::uint32_t id = h.facts->strings().find(job);
    auto it = writes.find(id);
    return it == writes.end() || it->second <= h.ledger_keep;
  };
  auto learn = [&](const std::string& id, const Event& ev) {
    if (ev.find("namespace") == nullptr) return;
    if (!model.contains(id)) known.push_back(id);
    model[id] = {text_of(ev, "namespace"), parse_label_text(text_of(ev, "labels"))};
  };
  for (const NodeEvent& e : *h.events) {
    const Event& ev = e.event;
    if (ev.kind == client_events::kJobCreated) {
      learn(text_of(ev, "job"), ev);
    } else if (ev.kind == client_events::kInputAnswered) {
      if (text_of(ev, "code") == "OK" && !text_of(ev, "job").empty()) learn(text_of(ev, "job"), ev);
    } else if (ev.kind == client_events::kListStarted) {
      listings[uint_of(ev, "listing")] = {text_of(ev, "namespace"),
                                          parse_label_text(text_of(ev, "selector")), known.size()};
    } else if (ev.kind == client_events::kListed) {
      auto it = listings.find(uint_of(ev, "listing"));
      if (it == listings.end()) continue;
      const Started& s = it->second;
      const std::uint64_t limit = uint_of(ev, "limit");
      std::vector<std::string> ids;
      const std::string all = text_of(ev, "ids");
      for (std::string_view page : split(all, '|')) {
        const std::vector<std::string_view> p = split(page, ',');
        if (p.size() > limit)
          add(out, "", e, absl::StrCat("a listing page holds ", p.size(), " jobs, above ", limit));
        for (std::string_view id : p) ids.emplace_back(id);
      }
      for (std::size_t k = 1; k < ids.size(); ++k)
        if (!(ids[k - 1] < ids[k]))
          add(out, ids[k], e,
              absl::StrCat("listed after '", ids[k - 1],
                           "': the pages are not strictly ascending by id (unsorted or a "
                           "job listed twice)"));
      const std::set<std::string> listed(ids.begin(), ids.end());
      const std::string filter =
          absl::StrCat("namespace '", s.ns, "' selector '", label_text(s.selector), "'");
      for (const std::string& id : ids) {
        auto m = model.find(id);
        if (m != model.end() && !matches(m->second.ns, m->second.labels, s.ns, s.selector))
          add(out, id, e,
              absl::StrCat("listed under ", filter, " although its namespace is '", m->second.ns,
                           "' and its labels '", label_text(m->second.labels), "'"));
      }
      for (std::size_t k = 0; k < s.known; ++k) {
        const ModelJob& m = model[known[k]];
        if (matches(m.ns, m.labels, s.ns, s.selector) && !listed.contains(known[k]))
          add(out, known[k], e,
              absl::StrCat("an acknowledged job matching ", filter,
                           " is missing from the listing"));
      }
      listings.erase(it);
    } else if (ev.kind == client_events::kRunsWalked) {
      const std::string job = text_of(ev, "job");
      const std::uint64_t limit = uint_of(ev, "limit");
      std::set<std::int64_t>& seen = runs_seen[{job, uint_of(ev, "incarnation")}];
      std::vector<std::int64_t> all;
      const std::string walk = text_of(ev, "walk");
      for (std::string_view page : split(walk, ';')) {
        const std::size_t colon = page.find(':');
        if (colon == std::string_view::npos) continue;
        std::int64_t from = std::numeric_limits<std::int64_t>::min();
        if (page.substr(0, colon) != "-") (void)number(page.substr(0, colon), &from);
        std::size_t n = 0;
        for (std::string_view v : split(page.substr(colon + 1), ',')) {
          std::int64_t nominal = 0;
          if (!number(v, &nominal)) continue;
          ++n;
          if (nominal < from)
            add(out, job, e,
                absl::StrCat("run ", absl::FormatTime(absl::FromUnixMicros(nominal)),
                             " returned below the page's lower bound ",
                             absl::FormatTime(absl::FromUnixMicros(from))));
          if (!all.empty() && nominal <= all.back())
            add(out, job, e,
                absl::StrCat("run ", absl::FormatTime(absl::FromUnixMicros(nominal)), " after ",
                             absl::FormatTime(absl::FromUnixMicros(all.back())),
                             ": the walk is not strictly ascending"));
          all.push_back(nominal);
        }
        if (n > limit) add(out, job, e, absl::StrCat("a runs page holds ", n, ", above ", limit));
      }
      if (uint_of(ev, "more") == 0) {
        const std::set<std::int64_t> got(all.begin(), all.end());
        for (std::int64_t nominal : seen)
          if (!got.contains(nominal) && retained(job, nominal, e.at))
            add(out, job, e,
                absl::StrCat("run ", absl::FormatTime(absl::FromUnixMicros(nominal)),
                             " that an earlier answer showed is missing from a full walk"));
        // The store's side: every run of the incarnation committed before the
        // walk was sent, and not erased before it ended, is in a full walk.
        // The send is on the client's clock; its offset from true time at
        // the end converts it (a second of margin for drift).
        if (ev.find("sent") != nullptr) {
          if (!store_runs) store_runs = runs_by_incarnation(h);
          const absl::Time sent_true =
              absl::FromUnixMicros(int_of(ev, "sent")) + (e.at - ev.at) - absl::Seconds(1);
          auto it = store_runs->find({job, uint_of(ev, "incarnation")});
          if (it != store_runs->end())
            for (const StoreRun& r : it->second)
              if (r.created < sent_true && r.erased > e.at && !got.contains(r.nominal_us))
                add(out, job, e,
                    absl::StrCat("run ", absl::FormatTime(absl::FromUnixMicros(r.nominal_us)),
                                 ", committed at ", absl::FormatTime(r.created),
                                 " before the walk was sent and never erased, is missing from a "
                                 "full walk"));
        }
      }
      seen.insert(all.begin(), all.end());
    } else if (ev.kind == client_events::kLedgerQueried) {
      const std::string job = text_of(ev, "job");
      const std::int64_t from = int_of(ev, "from"), to = int_of(ev, "to");
      const std::uint64_t limit = uint_of(ev, "limit");
      const bool more = uint_of(ev, "more") != 0;
      std::vector<std::tuple<std::uint64_t, std::int64_t, std::int64_t>> recs;
      const std::string records = text_of(ev, "records");
      for (std::string_view r : split(records, ',')) {
        const std::vector<std::string_view> f = split(r, ':');
        std::uint64_t inc = 0;
        std::int64_t nominal = 0, through = 0;
        if (f.size() != 3 || !number(f[0], &inc) || !number(f[1], &nominal) ||
            !number(f[2], &through))
          continue;
        recs.emplace_back(inc, nominal, through);
      }
      if (recs.size() > limit)
        add(out, job, e, absl::StrCat(recs.size(), " ledger records, above the limit ", limit));
      std::set<std::pair<std::uint64_t, std::int64_t>> got;
      for (std::size_t k = 0; k < recs.size(); ++k) {
        const auto& [inc, nominal, through] = recs[k];
        got.insert({inc, nominal});
        if (!(through >= from && nominal < to))
          add(out, job, e,
              absl::StrCat("ledger record ", absl::FormatTime(absl::FromUnixMicros(nominal)), "..",
                           absl::FormatTime(absl::FromUnixMicros(through)),
                           " does not meet the window asked for"));
        if (k > 0 && !(std::make_pair(std::get<1>(recs[k - 1]), std::get<0>(recs[k - 1])) <
                       std::make_pair(nominal, inc)))
          add(out, job, e,
              absl::StrCat("ledger record ", absl::FormatTime(absl::FromUnixMicros(nominal)),
                           " out of order or twice"));
      }
      auto& seen = ledger_seen[job];
      // With `more`, only the records sorting before the last returned one
      // are certainly due in this answer.
      std::optional<std::pair<std::int64_t, std::uint64_t>> last;
      if (more && !recs.empty()) last = {std::get<1>(recs.back()), std::get<0>(recs.back())};
      if (!more || last) {
        for (const auto& [key, through] : seen) {
          const auto& [inc, nominal] = key;
          if (!(through >= from && nominal < to) || got.contains(key)) continue;
          if (last && !(std::make_pair(nominal, inc) < *last)) continue;
          if (!retained(job, nominal, e.at)) continue;
          add(out, job, e,
              absl::StrCat("ledger record ", absl::FormatTime(absl::FromUnixMicros(nominal)), "..",
                           absl::FormatTime(absl::FromUnixMicros(through)),
                           " meets the window and an earlier answer showed it, but it is missing"));
        }
      }
      for (const auto& [inc, nominal, through] : recs) seen[{inc, nominal}] = through;
    }
  }
}

}  // namespace kairos::sim
