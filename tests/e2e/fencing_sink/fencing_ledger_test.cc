// FencingLedger: the rules of the HTTP fencing pattern (docs/FENCING.md):
// the first request for a key applies its effect, duplicates get the first
// answer back and raise the highest token, lower tokens are refused with
// 409, malformed requests with 400; the JSON state lists exactly that.
#include "tests/e2e/fencing_sink/fencing_ledger.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace kairos::fencing_sink {
namespace {

namespace json = boost::json;

TEST(FencingLedgerTest, FirstAppliesDuplicatesReplayStaleTokensAreRefused) {
  FencingLedger ledger;
  bool changed = false;
  const Answer first = ledger.handle("job/1/100", "5", "effect-a", &changed);
  EXPECT_TRUE(changed);
  EXPECT_EQ(first.status, 200);
  EXPECT_FALSE(first.replayed);

  // The retry after a lost lease: same key, higher token -> the first answer.
  const Answer retry = ledger.handle("job/1/100", "7", "effect-a", &changed);
  EXPECT_EQ(retry.status, 200);
  EXPECT_EQ(retry.body, first.body);
  EXPECT_TRUE(retry.replayed);

  // The stale attempt's late write: refused, nothing applied.
  const Answer stale = ledger.handle("job/1/100", "5", "effect-a", &changed);
  EXPECT_EQ(stale.status, 409);
  EXPECT_NE(stale.body.find("stale fencing token 5 (highest seen 7)"), std::string::npos)
      << stale.body;

  // The same attempt resent (equal token): a duplicate, not stale.
  EXPECT_EQ(ledger.handle("job/1/100", "7", "x", &changed).status, 200);

  // Another run is another key, whatever its token.
  EXPECT_EQ(ledger.handle("job/1/200", "1", "effect-b", &changed).status, 200);

  const json::value state = ledger.to_json();
  const auto& k = state.at("keys").at("job/1/100").as_object();
  EXPECT_EQ(k.at("highest_token").as_uint64(), 7u);
  EXPECT_EQ(k.at("first_token").as_uint64(), 5u);
  EXPECT_EQ(k.at("duplicates").as_uint64(), 2u);
  EXPECT_EQ(k.at("rejected").as_uint64(), 1u);
  const auto& effects = state.at("effects").as_array();
  ASSERT_EQ(effects.size(), 2u) << "exactly one effect per key";
  EXPECT_EQ(effects[0].at("body").as_string(), "effect-a");
  EXPECT_EQ(effects[1].at("key").as_string(), "job/1/200");
  ASSERT_EQ(state.at("rejected").as_array().size(), 1u);
  EXPECT_EQ(state.at("rejected").as_array()[0].at("highest_token").as_uint64(), 7u);
}

TEST(FencingLedgerTest, MalformedRequestsAreRefusedAndRecordNothing) {
  FencingLedger ledger;
  bool changed = true;
  EXPECT_EQ(ledger.handle("", "1", "b", &changed).status, 400);
  EXPECT_FALSE(changed);
  for (const char* bad :
       {"", "-1", "1.5", "abc", " 1", "18446744073709551616", "123456789012345678901"}) {
    EXPECT_EQ(ledger.handle("k", bad, "b", &changed).status, 400) << bad;
    EXPECT_FALSE(changed);
  }
  EXPECT_EQ(ledger.handle(std::string(1025, 'k'), "1", "b", &changed).status, 400);
  EXPECT_EQ(ledger.handle("k", "18446744073709551615", "b", &changed).status, 200);
  EXPECT_TRUE(ledger.to_json().at("effects").as_array().size() == 1);
}

TEST(FencingLedgerTest, AFullLedgerRefusesNewKeysButServesKnownOnes) {
  FencingLedger ledger(2);
  bool changed = false;
  EXPECT_EQ(ledger.handle("a", "1", "", &changed).status, 200);
  EXPECT_EQ(ledger.handle("b", "1", "", &changed).status, 200);
  EXPECT_EQ(ledger.handle("c", "1", "", &changed).status, 503);
  EXPECT_FALSE(changed);
  EXPECT_EQ(ledger.handle("a", "2", "", &changed).status, 200);
}

}  // namespace
}  // namespace kairos::fencing_sink
