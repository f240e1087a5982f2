// LmdbStorage's write path inside one group commit: the bodies of a group
// share one LMDB cursor for their scans (opened once per parent
// transaction) and buffer their writes in an overlay whose nodes, keys and
// values live in a scratch arena reset between bodies. These tests drive
// many bodies through one group and check every read against a model of
// what the committed bodies before it wrote: scans after the parent was
// changed under the shared cursor by earlier bodies' puts and erases, a
// body that buffers more than the arena's first block, failed bodies whose
// buffered writes vanish, and empty values.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "prod/store/lmdb_storage.h"
#include "tests/conformance/storage_harness.h"
#include "tests/support/lmdb_rig.h"

namespace kairos {
namespace {

using storage_test::TempDir;
using Rig = test_support::LmdbRig;
using Model = std::map<std::string, std::string>;

LmdbOptions options_for(const TempDir& dir) {
  LmdbOptions o;
  o.path = dir.path();
  return o;
}

std::string key_of(int i) { return absl::StrFormat("table/%05d", i); }

// The model's entries in [begin, end), at most `limit`, in `direction`.
std::vector<KeyValue> model_scan(const Model& m, const std::string& begin, const std::string& end,
                                 std::size_t limit, Direction direction) {
  std::vector<KeyValue> out;
  auto lo = m.lower_bound(begin);
  auto hi = end.empty() ? m.end() : m.lower_bound(end);
  if (direction == Direction::kForward) {
    for (auto it = lo; it != hi && out.size() < limit; ++it) out.push_back({it->first, it->second});
  } else {
    for (auto it = hi; it != lo && out.size() < limit;) {
      --it;
      out.push_back({it->first, it->second});
    }
  }
  return out;
}

TEST(LmdbOverlay, BodiesOfOneGroupSeeEachOthersWritesThroughTheSharedCursor) {
  TempDir dir;
  Rig rig(options_for(dir));
  ASSERT_TRUE(rig.open().ok());
  // Some stored keys first, so scans merge the overlay with the parent.
  {
    std::vector<TxnBody> seed;
    for (int i = 0; i < 300; i += 3)
      seed.push_back([i](Txn& t) {
        t.put(key_of(i), "seed");
        return absl::OkStatus();
      });
    for (const TxnResult& r : rig.run_all(std::move(seed))) ASSERT_TRUE(r.committed());
  }
  Model model;
  for (int i = 0; i < 300; i += 3) model[key_of(i)] = "seed";
  // Body i (in submission order, which is the group's order) scans around
  // its keys in both directions, puts two keys and erases one, then scans
  // again; every fifth body fails after writing. Each body records what it
  // saw; the expected views are replayed on the model afterwards.
  constexpr int kBodies = 240;
  struct Seen {
    std::vector<KeyValue> before_fwd, before_rev, after_fwd, after_rev;
    std::optional<std::string> got;
  };
  std::vector<Seen> seen(kBodies);
  std::vector<TxnBody> bodies;
  auto ops = [](Txn& t, int i) {
    t.put(key_of(i + 1), absl::StrFormat("v%d", i));
    t.put(key_of((i * 7) % 300), i % 4 == 0 ? "" : absl::StrFormat("w%d", i));
    t.erase(key_of((i * 11 + 5) % 300));
  };
  for (int i = 0; i < kBodies; ++i) {
    bodies.push_back([&, i](Txn& t) -> absl::Status {
      Seen& s = seen[i];
      const std::string b = key_of(i > 20 ? i - 20 : 0), e = key_of(i + 20);
      s.before_fwd = t.scan(b, e, 15);
      s.before_rev = t.scan(b, e, 15, Direction::kReverse);
      ops(t, i);
      s.got = t.get(key_of((i * 7) % 300));
      s.after_fwd = t.scan(b, "", 30);
      s.after_rev = t.scan("", e, 30, Direction::kReverse);
      if (i % 5 == 4) return absl::InvalidArgumentError("this body fails");
      return absl::OkStatus();
    });
  }
  const auto syncs_before = rig.store().stats().syncs;
  const std::vector<TxnResult> results = rig.run_all(std::move(bodies));
  EXPECT_LT(rig.store().stats().syncs - syncs_before, static_cast<std::uint64_t>(kBodies))
      << "the bodies should have shared group commits";
  for (int i = 0; i < kBodies; ++i) {
    SCOPED_TRACE(i);
    const bool fails = i % 5 == 4;
    ASSERT_EQ(results[i].committed(), !fails);
    Model m = model;
    const std::string b = key_of(i > 20 ? i - 20 : 0), e = key_of(i + 20);
    EXPECT_EQ(seen[i].before_fwd, model_scan(m, b, e, 15, Direction::kForward));
    EXPECT_EQ(seen[i].before_rev, model_scan(m, b, e, 15, Direction::kReverse));
    m[key_of(i + 1)] = absl::StrFormat("v%d", i);
    m[key_of((i * 7) % 300)] = i % 4 == 0 ? "" : absl::StrFormat("w%d", i);
    m.erase(key_of((i * 11 + 5) % 300));
    const auto it = m.find(key_of((i * 7) % 300));
    EXPECT_EQ(seen[i].got, it == m.end() ? std::nullopt : std::optional(it->second));
    EXPECT_EQ(seen[i].after_fwd, model_scan(m, b, "", 30, Direction::kForward));
    EXPECT_EQ(seen[i].after_rev, model_scan(m, "", e, 30, Direction::kReverse));
    if (!fails) model = std::move(m);
  }
  // What is stored is the model, read back in a fresh transaction.
  std::vector<KeyValue> all;
  ASSERT_TRUE(rig.run(
                     [&](Txn& t) {
                       all = t.scan("", "", 100'000);
                       return absl::OkStatus();
                     },
                     TxnMode::kReadOnly)
                  .committed());
  EXPECT_EQ(all, model_scan(model, "", "", 100'000, Direction::kForward));
}

TEST(LmdbOverlay, BodyThatBuffersMoreThanTheArenaBlockCommitsWhole) {
  TempDir dir;
  Rig rig(options_for(dir));
  ASSERT_TRUE(rig.open().ok());
  // About 3 MiB of buffered keys and values: well past the first block.
  const std::string value(700, 'x');
  constexpr int kKeys = 4'000;
  std::vector<TxnBody> bodies;
  bodies.push_back([&](Txn& t) {
    for (int i = 0; i < kKeys; ++i) t.put(key_of(i), value + std::to_string(i));
    // Overwrite and erase some of them again: the overlay's own entries.
    for (int i = 0; i < kKeys; i += 10) t.put(key_of(i), "again");
    t.erase_range(key_of(100), key_of(200));
    return absl::OkStatus();
  });
  // The next body of the group starts on a reset arena and still sees all.
  std::size_t seen = 0;
  bodies.push_back([&](Txn& t) {
    seen = t.scan("", "", 100'000).size();
    t.put("after", "");
    return absl::OkStatus();
  });
  for (const TxnResult& r : rig.run_all(std::move(bodies))) ASSERT_TRUE(r.committed());
  EXPECT_EQ(seen, static_cast<std::size_t>(kKeys - 100));
  EXPECT_EQ(rig.get(key_of(10)), "again");
  EXPECT_EQ(rig.get(key_of(11)), value + "11");
  EXPECT_EQ(rig.get(key_of(150)), std::nullopt);
  EXPECT_EQ(rig.get("after"), "");
}

}  // namespace
}  // namespace kairos
