// Txn::scan_claimable (core/ports/storage.h), the one named store operation
// with a store-specific path: every adapter must give the plain scan's answer
// within one transaction (the generic default, and PostgreSQL's FOR UPDATE
// SKIP LOCKED override, which PostgresGenericClaims switches off), and claimed
// entries must be erasable in the same commit. On PostgreSQL two concurrent
// claimers of one range take disjoint entries and both commit, where the
// generic path makes the second one lose its claim.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "core/base/check.h"
#include "tests/conformance/postgres_test_db.h"
#include "tests/conformance/storage_conformance.h"
#include "tests/conformance/storage_harness.h"

namespace kairos::storage_test {
namespace {

struct Adapter {
  std::string name;
  HarnessFactory make;
};
void PrintTo(const Adapter& a, std::ostream* os) { *os << a.name; }

std::vector<Adapter> adapters() {
  return {
      {"Memory", [] { return make_memory_harness(); }},
      {"MemoryDeferredSync", [] { return make_memory_deferred_harness(); }},
      {"Lmdb", [] { return make_lmdb_harness(); }},
      {"FaultyMemory", [] { return make_faulty_harness(make_memory_deferred_harness(), 7); }},
      {"FaultyLmdb", [] { return make_faulty_harness(make_lmdb_harness(), 11); }},
      {"Postgres", [] { return make_postgres_harness(); }},
      {"PostgresGenericClaims", [] { return make_postgres_harness(0, false); }},
      {"PostgresKilledCommits", [] { return make_postgres_harness(5); }},
  };
}

std::string render(const std::vector<KeyValue>& kvs) {
  std::string out = "[";
  for (const KeyValue& kv : kvs)
    absl::StrAppend(&out, "\"", absl::CHexEscape(absl_sv(kv.key)), "\"=\"",
                    absl::CHexEscape(absl_sv(kv.value)), "\" ");
  return out + "]";
}

std::vector<std::string> keys_of(const std::vector<KeyValue>& kvs) {
  std::vector<std::string> out;
  for (const KeyValue& kv : kvs) out.push_back(kv.key);
  return out;
}

// Runs `body` until the store gives `want` (faulty stores may first answer
// otherwise); true when it did.
bool run_until_outcome(StoreHarness& h, const TxnBody& body, TxnMode mode, CommitOutcome want) {
  for (int attempt = 0; attempt < 1000; ++attempt)
    if (run_once(h, body, mode).outcome == want) return true;
  return false;
}

Model seed_model() {
  return {{std::string("\x00", 1), "zero"},
          {"a", "1"},
          {std::string("a\x00", 2), "2"},
          {"ab", "3"},
          {"b", "4"},
          {"b\xff", "5"},
          {"\xff", "6"},
          {"\xff\xff", "7"}};
}

void seed(StoreHarness& h, const Model& m) {
  clear_all(h);
  const TxnResult r = commit_idempotent(h, [&m](Txn& t) {
    for (const auto& [k, v] : m) t.put(k, v);
    return absl::OkStatus();
  });
  KAIROS_CHECK_MSG(r.committed(), "seed: no answer from the store");
}

// Compares scan_claimable with the model's forward scan for every pair of
// bounds and several limits; the first difference, or "".
std::string compare_with_model(Txn& t, Model& model) {
  const std::vector<std::string> bounds = {
      "",        std::string("\x00", 1), "a", std::string("a\x00", 2), "aa", "ab", "b", "c", "\xff",
      "\xff\xff"};
  ModelTxn expected_txn(model, t.now(), TxnMode::kReadOnly);
  for (const std::string& begin : bounds)
    for (const std::string& end : bounds)
      for (std::size_t limit : {1, 2, 3, 100}) {
        const std::vector<KeyValue> want =
            expected_txn.scan(begin, end, limit, Direction::kForward);
        const std::vector<KeyValue> got = t.scan_claimable(begin, end, limit);
        if (got != want)
          return absl::StrCat("scan_claimable(\"", absl::CHexEscape(absl_sv(begin)), "\", \"",
                              absl::CHexEscape(absl_sv(end)), "\", ", limit, ") gave ", render(got),
                              ", the scan gives ", render(want));
      }
  return "";
}

class StorageClaim : public ::testing::TestWithParam<Adapter> {
 protected:
  void SetUp() override {
    h_ = GetParam().make();
    if (!h_) GTEST_SKIP() << kNoTestPg;
  }
  StoreHarness& h() { return *h_; }
  std::unique_ptr<StoreHarness> h_;
};

// Alone, a claim passes over nothing: it is the forward scan, own writes
// (an insert, an overwrite, an erase) included, in read-write and read-only
// transactions alike.
TEST_P(StorageClaim, AloneItIsTheForwardScanIncludingOwnWrites) {
  const Model base = seed_model();
  seed(h(), base);
  std::string violation = "the body never ran";
  const TxnBody writer = [&](Txn& t) {
    Model model = base;
    t.put("aa", "new");
    t.put("ab", "overwritten");
    t.erase("b");
    model["aa"] = "new";
    model["ab"] = "overwritten";
    model.erase("b");
    violation = compare_with_model(t, model);
    return absl::AbortedError("leave nothing behind");
  };
  ASSERT_TRUE(run_until_outcome(h(), writer, TxnMode::kReadWrite, CommitOutcome::kAborted));
  EXPECT_EQ(violation, "") << "read-write, " << h().name();

  violation = "the body never ran";
  const TxnBody reader = [&](Txn& t) {
    Model model = base;
    violation = compare_with_model(t, model);
    return absl::OkStatus();
  };
  ASSERT_TRUE(run_until_outcome(h(), reader, TxnMode::kReadOnly, CommitOutcome::kCommitted));
  EXPECT_EQ(violation, "") << "read-only, " << h().name();
  EXPECT_EQ(read_all(h()), base) << "the aborted claims left a trace";
}

// What a claim returns, the same transaction erases and replaces by a marker
// in one commit; the next claim takes what is left, then nothing.
TEST_P(StorageClaim, ClaimedEntriesAreErasedAndMarkedInOneCommit) {
  if (h().faulty()) GTEST_SKIP() << "a claim body is not idempotent; checked on the clean stores";
  clear_all(h());
  ASSERT_TRUE(commit_idempotent(h(), [](Txn& t) {
                t.put("p", "outside");
                for (int i = 0; i < 10; ++i) t.put(absl::StrCat("q/", i), absl::StrCat("run", i));
                t.put("r", "outside");
                return absl::OkStatus();
              }).committed());
  const auto claim = [&](std::size_t limit) {
    std::vector<std::string> got;
    const TxnResult r = run_once(h(), [&, limit](Txn& t) {
      got.clear();
      for (const KeyValue& kv : t.scan_claimable("q/", "q0", limit)) {
        t.erase(kv.key);
        t.put("m/" + kv.key, kv.value);
        got.push_back(kv.key);
      }
      return absl::OkStatus();
    });
    EXPECT_TRUE(r.committed()) << r.status;
    return got;
  };
  EXPECT_EQ(claim(4), (std::vector<std::string>{"q/0", "q/1", "q/2", "q/3"}));
  EXPECT_EQ(claim(100), (std::vector<std::string>{"q/4", "q/5", "q/6", "q/7", "q/8", "q/9"}));
  EXPECT_EQ(claim(100), std::vector<std::string>{});
  Model want = {{"p", "outside"}, {"r", "outside"}};
  for (int i = 0; i < 10; ++i) want[absl::StrCat("m/q/", i)] = absl::StrCat("run", i);
  EXPECT_EQ(read_all(h()), want);
}

INSTANTIATE_TEST_SUITE_P(Adapters, StorageClaim, ::testing::ValuesIn(adapters()),
                         [](const auto& info) { return info.param.name; });

// A one-shot signal between two store threads, bounded against hangs only.
class Signal {
 public:
  void raise() {
    std::lock_guard<std::mutex> lock(mu_);
    raised_ = true;
    cv_.notify_all();
  }
  void wait() {
    std::unique_lock<std::mutex> lock(mu_);
    KAIROS_CHECK_MSG(cv_.wait_for(lock, std::chrono::seconds(60), [&] { return raised_; }),
                     "the other claimer never got this far");
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool raised_ = false;
};

struct TwoClaims {
  std::vector<std::string> first, second;
  std::optional<TxnResult> first_result, second_result;
};

// Two claims of two entries each from one queue, interleaved on two store
// threads: the first claims, the second claims while the first is still
// open, then both erase what they claimed and commit.
TwoClaims claim_concurrently(StoreHarness& h) {
  clear_all(h);
  KAIROS_CHECK(commit_idempotent(h, [](Txn& t) {
                 for (int i = 0; i < 8; ++i) t.put(absl::StrCat("q/", i), "");
                 return absl::OkStatus();
               }).committed());
  TwoClaims out;
  Signal first_claimed, second_claimed;
  h.store().transact(
      [&](Txn& t) {
        out.first = keys_of(t.scan_claimable("q/", "q0", 2));
        first_claimed.raise();
        second_claimed.wait();
        for (const std::string& k : out.first) t.erase(k);
        return absl::OkStatus();
      },
      [&](TxnResult r) { out.first_result = std::move(r); });
  h.store().transact(
      [&](Txn& t) {
        first_claimed.wait();
        out.second = keys_of(t.scan_claimable("q/", "q0", 2));
        second_claimed.raise();
        for (const std::string& k : out.second) t.erase(k);
        return absl::OkStatus();
      },
      [&](TxnResult r) { out.second_result = std::move(r); });
  h.run_until([&] { return out.first_result && out.second_result; });
  return out;
}

TEST(PostgresClaims, ConcurrentClaimersTakeDisjointEntriesAndBothCommit) {
  auto h = make_postgres_harness();
  if (!h) GTEST_SKIP() << kNoTestPg;
  const TwoClaims c = claim_concurrently(*h);
  EXPECT_EQ(c.first, (std::vector<std::string>{"q/0", "q/1"}));
  EXPECT_EQ(c.second, (std::vector<std::string>{"q/2", "q/3"})) << "passes over the held entries";
  EXPECT_TRUE(c.first_result->committed()) << c.first_result->status;
  EXPECT_TRUE(c.second_result->committed()) << c.second_result->status;
  Model want;
  for (int i = 4; i < 8; ++i) want[absl::StrCat("q/", i)] = "";
  EXPECT_EQ(read_all(*h), want);
}

// The generic path on the same interleaving: both claim the queue's head;
// whichever erases second waits for the other's row locks and then loses
// (kConflict, retried by the kernel): the cost the override removes.
TEST(PostgresClaims, OnTheGenericPathTheSecondClaimerOfTheHeadConflicts) {
  auto h = make_postgres_harness(0, false);
  if (!h) GTEST_SKIP() << kNoTestPg;
  const TwoClaims c = claim_concurrently(*h);
  EXPECT_EQ(c.first, (std::vector<std::string>{"q/0", "q/1"}));
  EXPECT_EQ(c.second, (std::vector<std::string>{"q/0", "q/1"}));
  const bool first_won = c.first_result->committed();
  const TxnResult& winner = first_won ? *c.first_result : *c.second_result;
  const TxnResult& loser = first_won ? *c.second_result : *c.first_result;
  EXPECT_TRUE(winner.committed()) << winner.status;
  EXPECT_EQ(loser.outcome, CommitOutcome::kConflict) << loser.status;
  Model want;
  for (int i = 2; i < 8; ++i) want[absl::StrCat("q/", i)] = "";
  EXPECT_EQ(read_all(*h), want);
}

}  // namespace
}  // namespace kairos::storage_test
