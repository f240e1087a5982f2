// The body-level test rig of the kernel: a JobStore over a MemoryStorage
// whose clock (the store's Txn::now()) is a ManualClock starting at T0().
//
// Purpose. The job store, policy and property tests drive transaction bodies
// directly, one synchronous transaction at a time, and look at the store's
// contents afterwards. StoreBench is that rig; gtest fixtures hold one as a
// member, and RapidCheck systems under test hold or extend one.
//
// Guarantees. run() and body() run the body at once, inside one transaction
// that commits if the body returns OK and leaves no trace otherwise (as
// MemoryStorage::run does); the clock moves only when the test moves it.
// Deterministic: no real clock, no threads.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "core/kernel/job_store.h"
#include "core/kernel/planted_bugs.h"
#include "core/kernel/policy.h"
#include "core/kernel/records.h"
#include "core/ports/storage.h"
#include "core/twins/manual_clock.h"
#include "core/twins/manual_loop.h"
#include "core/twins/memory_storage.h"
#include "tests/support/kernel_test_util.h"

namespace kairos::test_support {

struct StoreBench {
  explicit StoreBench(std::uint32_t shards = 1, PlantedBugs bugs = {}, PolicyOptions opts = {})
      : store(shards, bugs, opts) {}

  ManualClock clock{T0()};
  ManualLoop loop{clock};
  MemoryStorage storage{clock, loop};
  JobStore store;

  absl::Time now() const { return clock.now(); }

  // Runs body(Txn&) as one transaction, now.
  template <typename F>
  TxnResult run(F&& body) {
    return storage.run([&](Txn& t) { return body(t); });
  }
  // Runs f(Txn&, R*) as one transaction; returns its outcome and what the
  // body wrote.
  template <typename R, typename F>
  std::pair<TxnResult, R> body(F&& f) {
    R out;
    auto r = run([&](Txn& t) { return f(t, &out); });
    return {r, std::move(out)};
  }
  // Creates the job, expecting the transaction to commit.
  JobRecord create(const JobSpec& spec) {
    CreateResult out;
    auto r = run([&](Txn& t) { return store.create(t, spec, &out); });
    EXPECT_TRUE(r.committed()) << r.status;
    return out.job;
  }
  // How many keys in the store carry the tag (keys::kJob, keys::kDue, ...).
  std::size_t count_keys(std::uint8_t tag) const { return test_support::count_keys(storage, tag); }
  std::vector<RunRecord> runs() const { return stored_runs(storage); }
};

}  // namespace kairos::test_support
