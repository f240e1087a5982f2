#include "core/kernel/records.h"

#include <gtest/gtest.h>

#include "core/base/codec.h"
#include "core/kernel/keyspace.h"
#include "tests/support/kernel_test_util.h"

namespace kairos {
namespace {

RunRecord sample_run() {
  RunRecord r;
  r.id = {"job\0x", 3, test_support::T0()};
  r.id.job_id = std::string("job\0x", 5);
  r.shard = 2;
  r.due_at = test_support::T0() + absl::Seconds(1);
  r.attempt = 2;
  r.state = RunState::kLeased;
  r.ready_at = test_support::T0();
  r.token = 42;
  r.owner = "w1";
  r.lease_expiry = test_support::T0() + absl::Seconds(30);
  r.dispatched_at = test_support::T0();
  r.detail = "ok";
  return r;
}

TEST(Records, RoundTrip) {
  JobRecord j;
  j.spec = normalize_spec(test_support::interval_job("a"));
  j.spec.payload = HttpPayload{"POST", "https://x.test/h", {{"A", "b"}}, "body"};
  j.incarnation = 7;
  j.created_at = test_support::T0();
  j.next_due_at = test_support::T0() + absl::Minutes(1);
  j.next_nominal = *j.next_due_at;
  EXPECT_EQ(*decode_job(encode(j)), j);
  const RunRecord r = sample_run();
  EXPECT_EQ(*decode_run(encode(r)), r);
  LeaderRecord l{"n1", 9, test_support::T0()};
  EXPECT_EQ(*decode_leader(encode(l)), l);
  JobCounters c{3, 99};
  EXPECT_EQ(*decode_counters(encode(c)), c);
  DueEntry d{5, test_support::T0()};
  EXPECT_EQ(*decode_due(encode(d)), d);
}

TEST(Records, StrictDecode) {
  const std::string good = encode(sample_run());
  // Every truncation fails with DataLoss naming the record.
  for (std::size_t n = 0; n < good.size(); ++n) {
    auto r = decode_run(std::string_view(good).substr(0, n));
    ASSERT_FALSE(r.ok()) << n;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_NE(r.status().message().find("run"), std::string::npos) << r.status();
  }
  EXPECT_FALSE(decode_run(good + "x").ok());
  std::string v4 = good;
  v4[0] = 4;
  EXPECT_NE(decode_run(v4).status().message().find("unsupported record version 4"),
            std::string::npos);
  std::string v1 = good;
  v1[0] = 1;
  EXPECT_NE(decode_run(v1).status().message().find("unsupported record version 1"),
            std::string::npos);
}

// Every ledger record the kernel writes decodes: a counted range, one
// occurrence, and the uncounted range (count 0) that closes a backlog too
// long to list; a range that ends before it starts does not.
TEST(Records, LedgerRecordsTheKernelWritesDecode) {
  LedgerRecord l;
  l.incarnation = 2;
  l.nominal = test_support::T0();
  l.through = l.nominal;
  l.fire_at = l.nominal;
  l.recorded_at = l.nominal + absl::Seconds(1);
  l.outcome = LedgerOutcome::kFired;
  EXPECT_EQ(*decode_ledger(encode(l)), l);
  l.through = l.nominal + absl::Hours(30);
  l.outcome = LedgerOutcome::kCancelled;
  l.count = 108'000;
  EXPECT_EQ(*decode_ledger(encode(l)), l);
  l.count = 0;  // too long to count
  l.detail = "job cancelled before dispatch (backlog too long to count)";
  EXPECT_EQ(*decode_ledger(encode(l)), l);
  LedgerRecord backwards = l;
  backwards.through = l.nominal - absl::Seconds(1);
  EXPECT_EQ(decode_ledger(encode(backwards)).status().code(), absl::StatusCode::kDataLoss);
}

TEST(Keyspace, OrderAndParse) {
  using namespace keys;
  const absl::Time t = test_support::T0();
  EXPECT_LT(due(1, t, "z"), due(1, t + absl::Seconds(1), "a"));
  EXPECT_LT(due(1, t + absl::Hours(100), "a"), due(2, t, "a"));
  const Range r = due_until(1, t);
  EXPECT_GE(due(1, t, "zzz"), r.begin);
  EXPECT_LT(due(1, t, "zzz"), r.end);
  EXPECT_GE(due(1, t + absl::Microseconds(1), "a"), r.end);
  auto p = parse_due(due(3, t, "id"));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->shard, 3u);
  EXPECT_EQ(p->job_id, "id");
  RunId id{"j", 2, t};
  EXPECT_EQ(*parse_ready(ready(0, 5, t, id)), id);
  absl::Time e;
  EXPECT_EQ(*parse_expiry(expiry(0, t, id), &e), id);
  EXPECT_EQ(e, t);
  // Higher priority sorts first within a shard.
  EXPECT_LT(ready(0, 9, t + absl::Hours(1), id), ready(0, 0, t, id));
  EXPECT_FALSE(parse_due(job("x")).ok());
}

}  // namespace
}  // namespace kairos
