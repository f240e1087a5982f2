// MemoryStorage's point-lookup index against a plain ordered-map model.
//
// MemoryStorage serves get/put/erase through a hash index over its ordered
// map's nodes; scans and erase_range walk the map. This suite drives a long,
// seeded sequence of transactions (puts, erases, range erases, reads, scans,
// aborted bodies, syncs and crashes that lose unsynced commits) and checks
// after each one that the map, every point read and every scan agree with a
// model that is just a std::map, including transactions that write the same
// key many times (past the linear search of earlier writes).
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/twins/manual_clock.h"
#include "core/twins/manual_loop.h"
#include "core/twins/memory_storage.h"

namespace kairos {
namespace {

using Model = std::map<std::string, std::string, std::less<>>;

// A small deterministic generator (the test's own; no global state).
struct Lcg {
  std::uint64_t s;
  std::uint64_t next(std::uint64_t n) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (s >> 33) % n;
  }
};

// Keys with long shared prefixes, as the kernel's run keys have.
std::string key(std::uint64_t i) {
  return absl::StrCat("R/a-long-shared-job-prefix-for-every-key/", i % 7, "/", i);
}

void expect_agrees(MemoryStorage& store, const Model& model, std::uint64_t universe) {
  ASSERT_EQ(store.contents(), model);
  const TxnResult r = store.run(
      [&](Txn& txn) {
        for (std::uint64_t i = 0; i < universe; ++i) {
          const std::string k = key(i);
          auto it = model.find(k);
          const std::optional<std::string> got = txn.get(k);
          EXPECT_EQ(got.has_value(), it != model.end()) << k;
          if (got && it != model.end()) {
            EXPECT_EQ(*got, it->second) << k;
          }
        }
        const std::vector<KeyValue> all = txn.scan("", "", 1u << 20, Direction::kForward);
        EXPECT_EQ(all.size(), model.size());
        return absl::OkStatus();
      },
      TxnMode::kReadOnly);
  EXPECT_TRUE(r.committed());
}

TEST(MemoryStorageIndex, AgreesWithAnOrderedMapThroughWritesAbortsSyncsAndLosses) {
  ManualClock clock(absl::FromUnixSeconds(1000));
  ManualLoop loop(clock);
  MemoryStorage store(clock, loop);
  store.set_deferred_sync(true);
  Model applied;  // what the store shows
  Model durable;  // what survives lose_unsynced()
  Lcg rng{42};
  constexpr std::uint64_t kUniverse = 300;
  for (int round = 0; round < 2000; ++round) {
    const std::uint64_t action = rng.next(20);
    if (action == 0) {
      store.sync();
      durable = applied;
    } else if (action == 1) {
      store.lose_unsynced();
      applied = durable;
    } else {
      const bool abort = rng.next(5) == 0;
      // Many writes in some transactions, so they pass the linear search of
      // earlier writes and repeat keys.
      const std::uint64_t writes = rng.next(4) == 0 ? 40 + rng.next(40) : 1 + rng.next(6);
      Model next = applied;
      std::vector<std::uint64_t> plan;
      for (std::uint64_t w = 0; w < writes * 3; ++w) plan.push_back(rng.next(kUniverse));
      const TxnResult r = store.run([&](Txn& txn) {
        for (std::uint64_t w = 0; w < writes; ++w) {
          const std::uint64_t op = plan[3 * w] % 10;
          const std::string k = key(plan[3 * w + 1]);
          if (op < 6) {
            const std::string v = absl::StrCat("value-", round, "-", w, std::string(op * 5, 'x'));
            txn.put(k, v);
            next.insert_or_assign(k, v);
          } else if (op < 8) {
            txn.erase(k);
            next.erase(k);
          } else if (op == 8) {
            std::string b = key(plan[3 * w + 1]);
            std::string e = key(plan[3 * w + 2]);
            if (e < b) std::swap(b, e);
            txn.erase_range(b, e);
            next.erase(next.lower_bound(b), next.lower_bound(e));
          } else {
            const std::optional<std::string> got = txn.get(k);
            auto it = next.find(k);
            EXPECT_EQ(got.has_value(), it != next.end());
            if (got && it != next.end()) {
              EXPECT_EQ(*got, it->second);
            }
          }
        }
        return abort ? absl::AbortedError("planned abort") : absl::OkStatus();
      });
      EXPECT_EQ(r.committed(), !abort);
      if (!abort) applied = std::move(next);
    }
    expect_agrees(store, applied, kUniverse);
    if (HasFatalFailure()) return;
  }
}

// clear() leaves an empty store whose index knows none of the old keys, drops
// unsynced commits without delivering their results, and serves new writes.
TEST(MemoryStorageIndex, ClearForgetsRecordsIndexAndUnsyncedCommits) {
  ManualClock clock(absl::FromUnixSeconds(1000));
  ManualLoop loop(clock);
  MemoryStorage store(clock, loop);
  store.set_deferred_sync(true);
  Model model;
  for (std::uint64_t i = 0; i < 50; ++i) {
    ASSERT_TRUE(store
                    .run([&](Txn& txn) {
                      txn.put(key(i), "v");
                      return absl::OkStatus();
                    })
                    .committed());
  }
  store.sync();
  int delivered = 0;
  store.transact(
      [](Txn& txn) {
        txn.put(key(99), "unsynced");
        return absl::OkStatus();
      },
      [&](TxnResult) { ++delivered; });
  ASSERT_EQ(store.unsynced_count(), 1u);
  store.clear();
  EXPECT_EQ(store.unsynced_count(), 0u);
  store.sync();
  loop.run_ready();
  EXPECT_EQ(delivered, 0);
  expect_agrees(store, model, 100);
  ASSERT_TRUE(store
                  .run([&](Txn& txn) {
                    txn.put(key(3), "again");
                    return absl::OkStatus();
                  })
                  .committed());
  model[key(3)] = "again";
  expect_agrees(store, model, 100);
}

}  // namespace
}  // namespace kairos
