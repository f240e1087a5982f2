// FaultyStorage: each fault does what it says, and one seed gives one
// sequence of faults.
#include "sim/world/faulty_storage.h"

#include <gtest/gtest.h>

#include <optional>

#include "core/twins/manual_clock.h"
#include "core/twins/manual_loop.h"
#include "core/twins/memory_storage.h"

namespace kairos {
namespace {

struct Rig {
  ManualClock clock;
  ManualLoop loop{clock};
  MemoryStorage inner{clock, loop};

  TxnResult run(FaultyStorage& s, const std::string& key) {
    std::optional<TxnResult> r;
    s.transact(
        [key](Txn& t) {
          t.put(key, "v");
          return absl::OkStatus();
        },
        [&](TxnResult x) { r = std::move(x); });
    EXPECT_FALSE(r.has_value()) << "delivered re-entrantly";
    loop.run_ready();
    return *r;
  }
  bool has(const std::string& key) { return inner.contents().count(key) > 0; }
};

TEST(FaultyStorage, EachFaultAppliesOrNotAsDocumented) {
  struct Case {
    StorageFaultRates rates;
    CommitOutcome outcome;
    bool applied;
  };
  const Case cases[] = {
      {{.conflict = 1000}, CommitOutcome::kConflict, false},
      {{.unavailable = 1000}, CommitOutcome::kUnavailable, false},
      {{.unknown_applied = 1000}, CommitOutcome::kUnknown, true},
      {{.unknown_not_applied = 1000}, CommitOutcome::kUnknown, false},
      {{}, CommitOutcome::kCommitted, true},
  };
  int i = 0;
  for (const Case& c : cases) {
    Rig rig;
    FaultyStorage s(rig.inner, rig.loop, Random(1), c.rates);
    const std::string key = "k" + std::to_string(i++);
    const TxnResult r = rig.run(s, key);
    EXPECT_EQ(r.outcome, c.outcome) << key;
    EXPECT_EQ(rig.has(key), c.applied) << key;
  }
}

TEST(FaultyStorage, UnknownAppliedPassesAbortsThrough) {
  Rig rig;
  FaultyStorage s(rig.inner, rig.loop, Random(1), {.unknown_applied = 1000});
  std::optional<TxnResult> r;
  s.transact([](Txn&) { return absl::InvalidArgumentError("no"); },
             [&](TxnResult x) { r = std::move(x); });
  rig.loop.run_ready();
  EXPECT_EQ(r->outcome, CommitOutcome::kAborted);
}

TEST(FaultyStorage, SameSeedSameFaults) {
  auto outcomes = [](std::uint64_t seed) {
    Rig rig;
    FaultyStorage s(
        rig.inner, rig.loop, Random(seed),
        {.conflict = 200, .unavailable = 200, .unknown_applied = 200, .unknown_not_applied = 200});
    std::vector<CommitOutcome> out;
    for (int i = 0; i < 200; ++i) out.push_back(rig.run(s, "k" + std::to_string(i)).outcome);
    EXPECT_EQ(s.counts().transactions, 200u);
    return out;
  };
  EXPECT_EQ(outcomes(42), outcomes(42));
  EXPECT_NE(outcomes(42), outcomes(43));
}

TEST(FaultyStorage, RatesAreRoughlyHonoured) {
  Rig rig;
  FaultyStorage s(rig.inner, rig.loop, Random(9), {.conflict = 250, .unknown_applied = 100});
  for (int i = 0; i < 4000; ++i) rig.run(s, "k");
  EXPECT_NEAR(static_cast<double>(s.counts().conflict), 1000, 150);
  EXPECT_NEAR(static_cast<double>(s.counts().unknown_applied), 400, 100);
  EXPECT_EQ(s.counts().unavailable, 0u);
  s.set_rates({});
  EXPECT_EQ(rig.run(s, "healed").outcome, CommitOutcome::kCommitted);
}

}  // namespace
}  // namespace kairos
