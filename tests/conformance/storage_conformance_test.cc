// The storage conformance suite: every adapter of core/ports/storage.h must pass
// every test here. Adapters: MemoryStorage (synced at once, and with deferred
// group sync), LmdbStorage, and both wrapped in the fault injector
// FaultyStorage (the checks then retry conflict/unavailable and accept either
// state after unknown), and PostgresStorage on a real server (KAIROS_TEST_PG;
// skipped when unset), also with some commits' backends killed mid-COMMIT.
#include "tests/conformance/storage_conformance.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "tests/conformance/postgres_test_db.h"
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
      {"PostgresKilledCommits", [] { return make_postgres_harness(5); }},
  };
}

class StorageConformance : public ::testing::TestWithParam<Adapter> {
 protected:
  void SetUp() override {
    h_ = GetParam().make();
    if (!h_) GTEST_SKIP() << kNoTestPg;
  }
  StoreHarness& h() { return *h_; }
  std::unique_ptr<StoreHarness> h_;
};

TEST_P(StorageConformance, GetPutEraseOverwriteAndEmptyValues) {
  EXPECT_EQ(check_basic_ops(h()), "");
}

TEST_P(StorageConformance, ScansAreOrderedAndHonourBoundsDirectionAndLimit) {
  EXPECT_EQ(check_scans(h()), "");
}

TEST_P(StorageConformance, ReadYourWritesIncludingAfterEraseRange) {
  EXPECT_EQ(check_read_your_writes(h()), "");
}

TEST_P(StorageConformance, AbortedBodyLeavesNoTrace) {
  EXPECT_EQ(check_abort_leaves_no_trace(h()), "");
}

TEST_P(StorageConformance, ReadOnlyTransactions) { EXPECT_EQ(check_read_only(h()), ""); }

TEST_P(StorageConformance, NowIsTheStoreClockAndConstantInARun) { EXPECT_EQ(check_now(h()), ""); }

TEST_P(StorageConformance, MaxSizeKeysAndLargeValues) { EXPECT_EQ(check_limits(h()), ""); }

TEST_P(StorageConformance, ConcurrentReadModifyWritesNeverLoseAnUpdate) {
  EXPECT_EQ(check_concurrent_increments(h(), 50), "");
}

TEST_P(StorageConformance, CrashKeepsEveryAcknowledgedCommit) {
  if (!h().can_crash()) GTEST_SKIP() << "no simulated crash (LMDB: see LmdbDurability)";
  for (std::uint64_t seed = 1; seed <= 5; ++seed)
    EXPECT_EQ(check_crash_keeps_acknowledged(h(), seed), "") << "seed " << seed;
}

TEST_P(StorageConformance, SeededRandomTransactionsMatchStdMap) {
  for (std::uint64_t seed = 1; seed <= 5; ++seed)
    EXPECT_EQ(check_model_random(h(), seed, 40), "") << "seed " << seed;
}

TEST_P(StorageConformance, KeyLongerThanMaxKeySizeIsAProgrammingError) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // LMDB checks on its writer thread
  EXPECT_DEATH(
      {
        for (int attempt = 0; attempt < 1000; ++attempt)  // until a body runs (faults)
          run_once(h(), [](Txn& t) {
            t.put(std::string(kMaxKeySize + 1, 'k'), "v");
            return absl::OkStatus();
          });
      },
      "key size out of range");
}

// RapidCheck: random sequences of transactions (gets, scans in both
// directions with bounds and limits, puts, erases, erase ranges, aborts,
// read-only bodies) give the same reads and final state as a std::map.
rc::Gen<std::string> gen_key() {
  return rc::gen::container<std::string>(static_cast<std::size_t>(*rc::gen::inRange(1, 4)),
                                         rc::gen::element<char>('\x00', 'a', 'b', '\xff'));
}
rc::Gen<std::string> gen_bound() { return rc::gen::oneOf(rc::gen::just(std::string()), gen_key()); }

rc::Gen<Op> gen_op(bool read_only) {
  return rc::gen::exec([read_only] {
    Op op;
    op.kind = static_cast<Op::Kind>(*rc::gen::inRange(0, read_only ? 2 : 5));
    const bool ranged = op.kind == Op::kScan || op.kind == Op::kEraseRange;
    op.a = ranged ? *gen_bound() : *gen_key();
    op.b = *gen_bound();
    op.value = *rc::gen::container<std::string>(rc::gen::inRange('a', 'e'));
    op.limit = static_cast<std::size_t>(*rc::gen::inRange(1, 6));
    op.reverse = *rc::gen::arbitrary<bool>();
    return op;
  });
}

rc::Gen<TxnSpec> gen_spec() {
  return rc::gen::exec([] {
    TxnSpec spec;
    spec.read_only = *rc::gen::weightedElement<bool>({{1, true}, {4, false}});
    spec.abort = *rc::gen::weightedElement<bool>({{1, true}, {7, false}});
    spec.ops = *rc::gen::resize(12, rc::gen::container<std::vector<Op>>(gen_op(spec.read_only)));
    return spec;
  });
}

TEST_P(StorageConformance, PropertyRandomTransactionsMatchStdMap) {
  EXPECT_TRUE(rc::check("random transactions match a std::map model", [this] {
    const auto specs = *rc::gen::resize(20, rc::gen::container<std::vector<TxnSpec>>(gen_spec()));
    const std::string violation = check_model(h(), specs);
    if (!violation.empty()) RC_FAIL(violation);
  }));
}

INSTANTIATE_TEST_SUITE_P(Adapters, StorageConformance, ::testing::ValuesIn(adapters()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace kairos::storage_test
