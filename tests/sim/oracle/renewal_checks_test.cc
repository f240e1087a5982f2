// `renewal-within-lease` (sim/oracle/execution_checks.cc) on hand-made
// histories: a write that keeps a run leased under the same token and moves
// its expiry later (a renewal) commits before the expiry it extends. It
// fires on a renewal committed at or after the expiry, and stays quiet on a
// renewal inside the lease, on a re-grant under a new token after the
// lease lapsed, and on a rolled-back late renewal.
#include <gtest/gtest.h>

#include "tests/support/history_builder.h"

namespace kairos::sim {
namespace {

using test_support::granted;
using test_support::Hist;

constexpr NodeId kNode = 1;
constexpr std::string_view kRenewal = "renewal-within-lease";

struct RenewHist : Hist {
  RunRecord r;
  RenewHist() {
    r.id = RunId{"job-r", 1, t0 + absl::Seconds(10)};
    r.due_at = r.ready_at = r.dispatched_at = r.id.nominal;
    commit(absl::Seconds(10), kNode, r);
    r = granted(r, 1, t0 + absl::Seconds(11));  // leased until t0 + 41s
    commit(absl::Seconds(11), kNode, r);
  }
  void renew(absl::Duration at) {
    r.lease_expiry = t0 + at + absl::Seconds(30);
    commit(at, kNode, r);
  }
  bool fires() const {
    for (const auto& v : Checker::with_defaults().run(history(), {}).violations)
      if (v.invariant == kRenewal) return true;
    return false;
  }
};

TEST(RenewalChecks, ARenewalAtOrAfterTheExpiryIsAViolation) {
  RenewHist late;
  late.renew(absl::Seconds(45));
  EXPECT_TRUE(late.fires());
  RenewHist at;
  at.renew(absl::Seconds(41));  // a lease is over at its expiry
  EXPECT_TRUE(at.fires());
}

TEST(RenewalChecks, RenewalsInsideTheLeaseRegrantsAndLostWritesAreQuiet) {
  RenewHist inside;
  inside.renew(absl::Seconds(30));
  inside.renew(absl::Seconds(55));  // inside the renewed lease (until t0 + 60s)
  EXPECT_FALSE(inside.fires());

  // Lapsed, re-queued and granted again under a new token: not a renewal.
  RenewHist regrant;
  RunRecord ready = regrant.r;
  ready.state = RunState::kReady;
  ready.owner.clear();
  ready.lease_expiry = absl::InfinitePast();
  ready.attempts.back().end = AttemptEnd::kLapsed;
  regrant.commit(absl::Seconds(42), kNode, ready);
  regrant.commit(absl::Seconds(43), kNode, granted(ready, 2, regrant.t0 + absl::Seconds(43)));
  EXPECT_FALSE(regrant.fires());

  RenewHist lost;
  lost.renew(absl::Seconds(45));
  lost.commits.back().state = StoreCommit::State::kLost;
  EXPECT_FALSE(lost.fires());
}

}  // namespace
}  // namespace kairos::sim
