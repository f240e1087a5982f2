// The suite's own test: deliberately broken adapters must FAIL the
// conformance checks. If one of these tests fails, a check has gone blind.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <functional>
#include <memory>
#include <vector>

#include "core/base/check.h"
#include "core/twins/memory_storage.h"
#include "tests/conformance/storage_conformance.h"
#include "tests/conformance/storage_harness.h"

namespace kairos::storage_test {
namespace {

// Forwards every call to an inner Txn; subclasses break one thing.
class ForwardingTxn : public Txn {
 public:
  explicit ForwardingTxn(Txn& inner) : inner_(inner) {}
  absl::Time now() const override { return inner_.now(); }
  std::optional<std::string> get(std::string_view key) override { return inner_.get(key); }
  std::vector<KeyValue> scan(std::string_view b, std::string_view e, std::size_t limit,
                             Direction d) override {
    return inner_.scan(b, e, limit, d);
  }
  void put(std::string_view k, std::string_view v) override { inner_.put(k, v); }
  void erase(std::string_view k) override { inner_.erase(k); }
  void erase_range(std::string_view b, std::string_view e) override { inner_.erase_range(b, e); }

 protected:
  Txn& inner_;
};

// Broken #1: scans with two or more entries come out with the first two
// swapped.
class ScrambledScanTxn final : public ForwardingTxn {
 public:
  using ForwardingTxn::ForwardingTxn;
  std::vector<KeyValue> scan(std::string_view b, std::string_view e, std::size_t limit,
                             Direction d) override {
    auto out = inner_.scan(b, e, limit, d);
    if (out.size() >= 2) std::swap(out[0], out[1]);
    return out;
  }
};

class ScrambledScans final : public Storage {
 public:
  explicit ScrambledScans(Storage& inner) : inner_(inner) {}
  void transact(TxnBody body, TxnDone done, TxnMode mode) override {
    inner_.transact(
        [body = std::move(body)](Txn& t) {
          ScrambledScanTxn broken(t);
          return body(broken);
        },
        std::move(done), mode);
  }

 private:
  Storage& inner_;
};

// Broken #2: every third read-write transaction reports kCommitted but is
// rolled back (a lost committed write).
class LosesCommittedWrites final : public Storage {
 public:
  explicit LosesCommittedWrites(Storage& inner) : inner_(inner) {}
  void transact(TxnBody body, TxnDone done, TxnMode mode) override {
    if (mode == TxnMode::kReadWrite && ++n_ % 3 == 0) {
      inner_.transact(
          [body = std::move(body)](Txn& t) -> absl::Status {
            absl::Status s = body(t);
            return s.ok() ? absl::CancelledError("dropped") : s;
          },
          [done = std::move(done)](TxnResult r) {
            if (r.status == absl::CancelledError("dropped")) r = TxnResult::Committed();
            done(std::move(r));
          },
          mode);
      return;
    }
    inner_.transact(std::move(body), std::move(done), mode);
  }

 private:
  Storage& inner_;
  int n_ = 0;
};

// Broken #3: acknowledges a commit before the sync that covers it.
class AcksBeforeSync final : public Storage {
 public:
  AcksBeforeSync(MemoryStorage& inner, Timers& loop) : inner_(inner), loop_(loop) {}
  void transact(TxnBody body, TxnDone done, TxnMode mode) override {
    TxnResult r = inner_.run(body, mode);  // applied, not yet synced
    loop_.post([done = std::move(done), r = std::move(r)]() mutable { done(std::move(r)); });
  }

 private:
  MemoryStorage& inner_;
  Timers& loop_;
};

// Broken #4: runs every transaction submitted in the same loop turn against
// one snapshot taken at the start of the turn, then applies their writes in
// order (no conflict detection): lost updates.
class StaleSnapshots final : public Storage {
 public:
  StaleSnapshots(MemoryStorage& inner, Timers& loop) : inner_(inner), loop_(loop) {}
  void transact(TxnBody body, TxnDone done, TxnMode mode) override {
    if (pending_.empty()) loop_.post([this] { flush(); });
    pending_.push_back({std::move(body), std::move(done), mode});
  }

 private:
  struct Pending {
    TxnBody body;
    TxnDone done;
    TxnMode mode;
  };
  void flush() {
    const Model snapshot(inner_.contents().begin(), inner_.contents().end());
    auto batch = std::move(pending_);
    pending_.clear();
    for (auto& p : batch) {
      Model copy = snapshot;
      ModelTxn txn(copy, absl::UnixEpoch(), p.mode);
      absl::Status s = p.body(txn);
      if (s.ok() && p.mode == TxnMode::kReadWrite) {
        // Write back what this body changed relative to the snapshot.
        inner_.run([&](Txn& t) {
          for (const auto& [k, v] : snapshot)
            if (!copy.count(k)) t.erase(k);
          for (const auto& [k, v] : copy) {
            auto it = snapshot.find(k);
            if (it == snapshot.end() || it->second != v) t.put(k, v);
          }
          return absl::OkStatus();
        });
      }
      TxnResult r = s.ok() ? TxnResult::Committed() : TxnResult{CommitOutcome::kAborted, s};
      loop_.post([done = std::move(p.done), r]() { done(r); });
    }
  }
  MemoryStorage& inner_;
  Timers& loop_;
  std::vector<Pending> pending_;
};

std::unique_ptr<StoreHarness> broken(std::string name, bool deferred,
                                     std::function<std::unique_ptr<Storage>(StoreHarness&)> wrap) {
  return make_wrapped_harness(deferred ? make_memory_deferred_harness() : make_memory_harness(),
                              std::move(name), std::move(wrap));
}

TEST(BrokenAdapters, OutOfOrderScansFailTheSuite) {
  auto h = broken("scrambled-scans", false, [](StoreHarness& inner) {
    return std::make_unique<ScrambledScans>(inner.store());
  });
  const std::string v = check_scans(*h);
  EXPECT_NE(v, "");
  EXPECT_NE(check_model_random(*h, 1, 40), "");
  // The RapidCheck property finds it too.
  EXPECT_FALSE(rc::check("scrambled scans match a std::map (must fail)", [&] {
    std::vector<TxnSpec> specs(2);
    for (auto& s : specs)
      for (const char* k : {"a", "b", "c"}) s.ops.push_back({Op::kPut, k, "", "v"});
    specs[1].ops.push_back({Op::kScan, "", "", "",
                            static_cast<std::size_t>(*rc::gen::inRange(2, 5)),
                            *rc::gen::arbitrary<bool>()});
    const std::string violation = check_model(*h, specs);
    RC_ASSERT(violation.empty());
  }));
}

TEST(BrokenAdapters, LostCommittedWriteFailsTheSuite) {
  auto h = broken("loses-committed-writes", false, [](StoreHarness& inner) {
    return std::make_unique<LosesCommittedWrites>(inner.store());
  });
  EXPECT_NE(check_basic_ops(*h) + check_model_random(*h, 2, 40), "");
}

TEST(BrokenAdapters, AcknowledgingBeforeTheSyncFailsTheCrashCheck) {
  auto h = broken("acks-before-sync", true, [](StoreHarness& inner) {
    return std::make_unique<AcksBeforeSync>(dynamic_cast<MemoryStorage&>(inner.store()),
                                            inner.loop());
  });
  std::string v;
  for (std::uint64_t seed = 1; seed <= 5 && v.empty(); ++seed)
    v = check_crash_keeps_acknowledged(*h, seed);
  EXPECT_NE(v, "");
}

TEST(BrokenAdapters, StaleSnapshotsFailTheConcurrencyCheck) {
  auto h = broken("stale-snapshots", false, [](StoreHarness& inner) {
    return std::make_unique<StaleSnapshots>(dynamic_cast<MemoryStorage&>(inner.store()),
                                            inner.loop());
  });
  EXPECT_NE(check_concurrent_increments(*h, 10), "");
}

// And the clean twin passes the same checks (so the failures above are the
// adapters', not the harness's).
TEST(BrokenAdapters, CleanMemoryStorePassesTheSameChecks) {
  auto h = make_memory_deferred_harness();
  EXPECT_EQ(check_scans(*h), "");
  EXPECT_EQ(check_basic_ops(*h), "");
  EXPECT_EQ(check_model_random(*h, 2, 40), "");
  EXPECT_EQ(check_crash_keeps_acknowledged(*h, 1), "");
  EXPECT_EQ(check_concurrent_increments(*h, 10), "");
}

}  // namespace
}  // namespace kairos::storage_test
