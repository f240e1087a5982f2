// Body-level fixture for the policy tests: a one-shard StoreBench
// (job_store_fixture.h) led by node "n1", with one-line wrappers of the
// bodies the policy tests drive (each expecting its transaction to commit).
#pragma once

#include <gtest/gtest.h>

#include "core/kernel/job_store.h"
#include "core/kernel/keyspace.h"
#include "core/kernel/policy.h"
#include "core/twins/manual_clock.h"
#include "tests/support/job_store_fixture.h"
#include "tests/support/kernel_test_util.h"

namespace kairos::test_support {

class PolicyTest : public ::testing::Test {
 protected:
  explicit PolicyTest(PlantedBugs bugs = {}, PolicyOptions opts = {}) : b(1, bugs, opts) {}

  JobRecord create(const JobSpec& spec) { return b.create(spec); }
  LeaderToken lead() {
    LeadershipResult out;
    auto r = b.run(
        [&](Txn& t) { return store.acquire_or_renew(t, 0, "n1", epoch, absl::Hours(1000), &out); });
    EXPECT_TRUE(r.committed());
    epoch = out.record.epoch;
    return {"n1", epoch};
  }
  DispatchResult dispatch() {
    const LeaderToken l = lead();
    DispatchResult all;
    for (int i = 0; i < 100; ++i) {
      DispatchResult out;
      auto r = b.run([&](Txn& t) { return store.dispatch(t, 0, l, 100, &out); });
      EXPECT_TRUE(r.committed()) << r.status;
      for (auto& x : out.dispatched) all.dispatched.push_back(x);
      for (auto& e : out.events) all.events.push_back(e);
      if (!out.more) break;
    }
    return all;
  }
  std::vector<Grant> claim(std::uint32_t n = 10, const std::string& worker = "w") {
    ClaimResult out;
    ClaimArgs a{worker, n, absl::Seconds(30), 0};
    auto r = b.run([&](Txn& t) { return store.claim(t, a, &out); });
    EXPECT_TRUE(r.committed()) << r.status;
    return out.grants;
  }
  CompleteResult complete(const RunRecord& run, RunStatus s) {
    CompleteResult out;
    std::vector<CompleteItem> items{{run.id, run.token, s, 1, "x"}};
    auto r = b.run([&](Txn& t) { return store.complete(t, "w", items, &out); });
    EXPECT_TRUE(r.committed()) << r.status;
    return out;
  }
  ReapResult reap() {
    const LeaderToken l = lead();
    ReapResult out;
    auto r = b.run([&](Txn& t) { return store.reap(t, 0, l, 100, &out); });
    EXPECT_TRUE(r.committed()) << r.status;
    return out;
  }
  RunRecord run_of(const RunId& id) {
    std::optional<RunRecord> out;
    b.run([&](Txn& t) { return store.get_run(t, id, &out); });
    EXPECT_TRUE(out.has_value()) << idempotency_key(id);
    return out.value_or(RunRecord{});
  }
  JobRecord job(const std::string& id) {
    std::optional<JobRecord> out;
    b.run([&](Txn& t) { return store.get(t, id, &out); });
    return out.value_or(JobRecord{});
  }
  std::vector<LedgerRecord> ledger(const std::string& id) {
    LedgerResult out;
    LedgerQuery q;
    q.job_id = id;
    auto r = b.run([&](Txn& t) { return store.ledger(t, q, &out); });
    EXPECT_TRUE(r.committed()) << r.status;
    return out.records;
  }
  std::vector<RunRecord> runs(const std::string& id) {
    RunsResult out;
    RunsQuery q;
    q.job_id = id;
    auto r = b.run([&](Txn& t) { return store.runs(t, q, &out); });
    EXPECT_TRUE(r.committed()) << r.status;
    return out.runs;
  }
  template <typename R, typename F>
  std::pair<TxnResult, R> body(F&& f) {
    return b.body<R>(std::forward<F>(f));
  }
  static std::size_t count(const std::vector<Event>& ev, std::string_view kind) {
    std::size_t n = 0;
    for (const auto& e : ev) n += e.kind == kind;
    return n;
  }

  StoreBench b;
  JobStore& store = b.store;
  std::uint64_t epoch = 0;
};

inline JobSpec with_overlap(JobSpec s, OverlapPolicy o, std::uint32_t max = 1) {
  s.policy.overlap = o;
  s.policy.max_concurrent = max;
  return s;
}

}  // namespace kairos::test_support
