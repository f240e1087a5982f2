// The store side of `queries-match-the-model`'s runs walks
// (sim/oracle/query_checks.cc) on hand-made histories: a walk that ends with
// no `more` holds every run of its incarnation that an applied commit wrote
// before the walk was sent and that was not erased before it ended, whether
// or not an earlier answer showed it. It fires on a walk that stops after a
// full first page while the store holds more, and stays quiet on a complete
// walk, on runs created after the send, on erased runs, on rolled-back writes
// and on runs of another incarnation.
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "core/kernel/keyspace.h"
#include "sim/scenario/client_events.h"
#include "tests/support/history_builder.h"

namespace kairos::sim {
namespace {

using test_support::Hist;
namespace ce = client_events;

constexpr std::string_view kQueries = "queries-match-the-model";
constexpr NodeId kLeader = 1;
constexpr NodeId kClient = 2;

struct WalkHist : Hist {
  RunRecord run(std::uint64_t incarnation, absl::Duration nominal) const {
    RunRecord r;
    r.id = RunId{"job-a", incarnation, t0 + nominal};
    r.due_at = r.ready_at = r.dispatched_at = r.id.nominal;
    return r;
  }
  // A run of incarnation 1 due at t0 + `nominal`, created then.
  void create(absl::Duration nominal, std::uint64_t incarnation = 1) {
    commit(nominal, kLeader, run(incarnation, nominal));
  }
  void erase(absl::Duration at, absl::Duration nominal) {
    commit_ops(at, kLeader, {{WriteOp::Kind::kErase, keys::run(run(1, nominal).id), ""}});
  }
  // A walk of incarnation 1 sent at t0 + `sent` and answered one second
  // later, its pages listing the runs due at t0 + each of `pages`.
  void walk(absl::Duration sent, const std::vector<std::vector<absl::Duration>>& pages) {
    std::string text;
    absl::Time from = absl::InfinitePast();
    for (const auto& page : pages) {
      absl::StrAppend(
          &text, text.empty() ? "" : ";",
          from == absl::InfinitePast() ? std::string("-") : absl::StrCat(absl::ToUnixMicros(from)),
          ":");
      for (std::size_t k = 0; k < page.size(); ++k)
        absl::StrAppend(&text, k == 0 ? "" : ",", absl::ToUnixMicros(t0 + page[k]));
      if (!page.empty()) from = t0 + page.back() + absl::Microseconds(1);
    }
    NodeEvent e;
    e.at = t0 + sent + absl::Seconds(1);
    e.node = kClient;
    e.event.at = e.at;
    e.event.kind = ce::kRunsWalked;
    e.event.with("job", "job-a")
        .with("incarnation", std::uint64_t{1})
        .with("limit", std::uint64_t{2})
        .with("more", std::uint64_t{0})
        .with("sent", absl::ToUnixMicros(t0 + sent))
        .with("walk", std::move(text));
    events.push_back(std::move(e));
  }
  bool fires() const {
    for (const auto& v : Checker::with_defaults().run(history(), {}).violations)
      if (v.invariant == kQueries) return true;
    return false;
  }
};

const absl::Duration s10 = absl::Seconds(10), s20 = absl::Seconds(20), s30 = absl::Seconds(30);

TEST(RunsWalkStoreChecks, AWalkThatStopsWhileTheStoreHoldsMoreIsAViolation) {
  WalkHist x;
  x.create(s10);
  x.create(s20);
  x.create(s30);
  x.walk(absl::Minutes(1), {{s10, s20}});  // a full first page, then "no more"
  EXPECT_TRUE(x.fires());
}

TEST(RunsWalkStoreChecks, CompleteLateErasedLostAndOtherIncarnationsAreQuiet) {
  WalkHist all;
  all.create(s10);
  all.create(s20);
  all.create(s30);
  all.walk(absl::Minutes(1), {{s10, s20}, {s30}});
  EXPECT_FALSE(all.fires());

  // The third run is created after the walk was sent: it need not be in it.
  WalkHist late;
  late.create(s10);
  late.create(s20);
  late.walk(absl::Seconds(25), {{s10, s20}});
  late.create(s30);
  EXPECT_FALSE(late.fires());

  // Erased (retention) before the walk ended: not required.
  WalkHist erased;
  erased.create(s10);
  erased.create(s20);
  erased.create(s30);
  erased.erase(absl::Seconds(40), s10);
  erased.walk(absl::Minutes(1), {{s20, s30}});
  EXPECT_FALSE(erased.fires());

  // A write a store crash rolled back never held the run.
  WalkHist lost;
  lost.create(s10);
  lost.create(s20);
  lost.create(s30);
  lost.commits.back().state = StoreCommit::State::kLost;
  lost.walk(absl::Minutes(1), {{s10, s20}});
  EXPECT_FALSE(lost.fires());

  // Runs of another incarnation are another walk's.
  WalkHist other;
  other.create(s10);
  other.create(s20);
  other.create(s30, /*incarnation=*/2);
  other.walk(absl::Minutes(1), {{s10, s20}});
  EXPECT_FALSE(other.fires());
}

}  // namespace
}  // namespace kairos::sim
