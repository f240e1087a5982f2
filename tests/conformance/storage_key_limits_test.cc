// core/ports/storage.h, "Limits": check_key_limits() is the one check every
// adapter calls, so each stops with the same message, naming the size.
#include <gtest/gtest.h>

#include <string>

#include "core/ports/storage.h"
#include "tests/conformance/storage_conformance.h"
#include "tests/conformance/storage_harness.h"

namespace kairos::storage_test {
namespace {

TEST(CheckKeyLimits, AcceptsEverySizeWithinTheLimits) {
  check_key_limits("k");
  check_key_limits(std::string(kMaxKeySize, 'k'));
  check_key_limits("k", "");
  check_key_limits(std::string(kMaxKeySize, 'k'), std::string(kMaxValueSize, 'v'));
}

TEST(CheckKeyLimits, StopsOnAKeyOrValueOutsideThemNamingTheSize) {
  EXPECT_DEATH(check_key_limits(""),
               "key size out of range: 0 bytes \\(keys are 1\\.\\.511 bytes\\)");
  EXPECT_DEATH(check_key_limits(std::string(kMaxKeySize + 1, 'k')),
               "key size out of range: 512 bytes");
  EXPECT_DEATH(check_key_limits("", "v"), "key size out of range: 0 bytes");
  EXPECT_DEATH(check_key_limits("k", std::string(kMaxValueSize + 1, 'v')),
               "value larger than kMaxValueSize: 16777217 bytes");
}

struct Adapter {
  std::string name;
  HarnessFactory make;
};
void PrintTo(const Adapter& a, std::ostream* os) { *os << a.name; }

class StorageKeyLimits : public ::testing::TestWithParam<Adapter> {};

// Every adapter gives the same message for every kind of violation.
TEST_P(StorageKeyLimits, EveryAdapterStopsWithTheSharedMessage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // LMDB checks on its writer thread
  const auto die_on = [&](TxnBody body, TxnMode mode) {
    auto h = GetParam().make();
    run_once(*h, std::move(body), mode);
  };
  EXPECT_DEATH(die_on(
                   [](Txn& t) {
                     (void)t.get("");
                     return absl::OkStatus();
                   },
                   TxnMode::kReadOnly),
               "key size out of range: 0 bytes");
  EXPECT_DEATH(die_on(
                   [](Txn& t) {
                     t.erase(std::string(kMaxKeySize + 1, 'k'));
                     return absl::OkStatus();
                   },
                   TxnMode::kReadWrite),
               "key size out of range: 512 bytes");
  EXPECT_DEATH(die_on(
                   [](Txn& t) {
                     t.put("k", std::string(kMaxValueSize + 1, 'v'));
                     return absl::OkStatus();
                   },
                   TxnMode::kReadWrite),
               "value larger than kMaxValueSize: 16777217 bytes");
}

INSTANTIATE_TEST_SUITE_P(Adapters, StorageKeyLimits,
                         ::testing::Values(Adapter{"Memory", [] { return make_memory_harness(); }},
                                           Adapter{"Lmdb", [] { return make_lmdb_harness(); }}),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace kairos::storage_test
