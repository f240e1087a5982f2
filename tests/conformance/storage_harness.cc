#include "tests/conformance/storage_harness.h"

#include <stdlib.h>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <filesystem>
#include <optional>

#include "core/base/check.h"
#include "core/ports/random.h"
#include "core/twins/manual_clock.h"
#include "core/twins/manual_loop.h"
#include "core/twins/memory_storage.h"
#include "prod/runtime/asio_runtime.h"
#include "prod/store/lmdb_storage.h"
#include "prod/store/postgres_storage.h"
#include "sim/world/faulty_storage.h"
#include "tests/conformance/postgres_test_db.h"

namespace kairos::storage_test {

TempDir::TempDir() {
  const char* base = getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/kairos-storage-XXXXXX";
  KAIROS_CHECK(mkdtemp(tmpl.data()) != nullptr);
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

namespace {

// Runs `io` until `pred` holds. A wall-clock bound only against hangs; logic
// never waits on it.
void run_io_until(boost::asio::io_context& io, const std::function<bool()>& pred, const char* who) {
  while (!pred()) {
    if (io.run_one_for(std::chrono::seconds(120)) == 0) {
      const std::string message = std::string(who) + ": no result within 120 s";
      KAIROS_CHECK_MSG(false, message.c_str());
    }
  }
}

class MemoryHarness final : public StoreHarness {
 public:
  explicit MemoryHarness(bool deferred) : deferred_(deferred) {
    store_.set_deferred_sync(deferred);
  }
  std::string name() const override { return deferred_ ? "memory-deferred-sync" : "memory"; }
  Storage& store() override { return store_; }
  ManualClock& clock() override { return clock_; }
  Timers& loop() override { return loop_; }
  void run_until(const std::function<bool()>& pred) override {
    while (!pred()) {
      if (loop_.run_ready() > 0) continue;
      // Idle: the deferred store's group commit happens now.
      KAIROS_CHECK_MSG(deferred_ && store_.unsynced_count() > 0,
                       "memory harness: no progress possible");
      store_.sync();
    }
  }
  bool can_crash() const override { return deferred_; }
  void crash() override {
    store_.lose_unsynced();
    loop_.run_ready();
  }

 private:
  bool deferred_;
  ManualClock clock_{absl::FromUnixSeconds(1'700'000'000)};
  ManualLoop loop_{clock_};
  MemoryStorage store_{clock_, loop_};
};

class LmdbHarness final : public StoreHarness {
 public:
  LmdbHarness() {
    LmdbOptions options;
    options.path = dir_.path();
    options.initial_map_size = std::size_t{1} << 20;  // small, so tests grow it
    auto opened = LmdbStorage::Open(options, clock_, timers_);
    KAIROS_CHECK_MSG(opened.ok(), opened.status().ToString().c_str());
    store_ = std::move(opened).value();
  }
  ~LmdbHarness() override {
    store_.reset();
    io_.poll();  // deliver what the destructor finished
  }
  std::string name() const override { return "lmdb"; }
  Storage& store() override { return *store_; }
  ManualClock& clock() override { return clock_; }
  Timers& loop() override { return timers_; }
  void run_until(const std::function<bool()>& pred) override {
    run_io_until(io_, pred, "lmdb harness");
  }

 private:
  TempDir dir_;
  ManualClock clock_{absl::FromUnixSeconds(1'700'000'000)};
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_ =
      boost::asio::make_work_guard(io_);
  AsioTimers timers_{io_};
  std::unique_ptr<LmdbStorage> store_;
};

class PostgresHarness final : public StoreHarness {
 public:
  PostgresHarness(const std::string& conninfo, int kill_every, bool skip_locked_claims)
      : schema_(conninfo), kill_every_(kill_every), skip_locked_claims_(skip_locked_claims) {
    PostgresOptions options = schema_.options();
    options.skip_locked_claims = skip_locked_claims;
    auto migrated = PostgresStorage::Migrate(options, false);
    KAIROS_CHECK_MSG(migrated.ok(), migrated.status().ToString().c_str());
    options.clock = &clock_;  // the suite sets the store's clock
    if (kill_every_ > 0)
      options.before_commit = [this](int pid) {
        if (commits_.fetch_add(1) % kill_every_ == kill_every_ - 1) schema_.terminate_backend(pid);
      };
    auto opened = PostgresStorage::Open(options, timers_);
    KAIROS_CHECK_MSG(opened.ok(), opened.status().ToString().c_str());
    store_ = std::move(opened).value();
  }
  ~PostgresHarness() override {
    store_.reset();
    io_.poll();
  }
  std::string name() const override {
    if (kill_every_ > 0) return "postgres-killed-commits";
    return skip_locked_claims_ ? "postgres" : "postgres-generic-claims";
  }
  Storage& store() override { return *store_; }
  ManualClock& clock() override { return clock_; }
  Timers& loop() override { return timers_; }
  void run_until(const std::function<bool()>& pred) override {
    run_io_until(io_, pred, "postgres harness");
  }
  bool faulty() const override { return kill_every_ > 0; }

 private:
  PgTestSchema schema_;
  int kill_every_;
  bool skip_locked_claims_;
  std::atomic<int> commits_{0};
  ManualClock clock_{absl::FromUnixSeconds(1'700'000'000)};
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_ =
      boost::asio::make_work_guard(io_);
  AsioTimers timers_{io_};
  std::unique_ptr<PostgresStorage> store_;
};

class FaultyHarness final : public StoreHarness {
 public:
  FaultyHarness(std::unique_ptr<StoreHarness> inner, std::uint64_t seed)
      : inner_(std::move(inner)),
        store_(inner_->store(), inner_->loop(), Random(seed),
               StorageFaultRates{.conflict = 100,
                                 .unavailable = 100,
                                 .unknown_applied = 60,
                                 .unknown_not_applied = 60}) {}
  std::string name() const override { return "faulty(" + inner_->name() + ")"; }
  Storage& store() override { return store_; }
  ManualClock& clock() override { return inner_->clock(); }
  Timers& loop() override { return inner_->loop(); }
  void run_until(const std::function<bool()>& pred) override { inner_->run_until(pred); }
  bool faulty() const override { return true; }
  bool can_crash() const override { return inner_->can_crash(); }
  void crash() override { inner_->crash(); }

 private:
  std::unique_ptr<StoreHarness> inner_;
  FaultyStorage store_;
};

class WrappedHarness final : public StoreHarness {
 public:
  WrappedHarness(std::unique_ptr<StoreHarness> inner, std::string name,
                 const std::function<std::unique_ptr<Storage>(StoreHarness&)>& wrap)
      : inner_(std::move(inner)), name_(std::move(name)), store_(wrap(*inner_)) {}
  std::string name() const override { return name_; }
  Storage& store() override { return *store_; }
  ManualClock& clock() override { return inner_->clock(); }
  Timers& loop() override { return inner_->loop(); }
  void run_until(const std::function<bool()>& pred) override { inner_->run_until(pred); }
  bool can_crash() const override { return inner_->can_crash(); }
  void crash() override { inner_->crash(); }

 private:
  std::unique_ptr<StoreHarness> inner_;
  std::string name_;
  std::unique_ptr<Storage> store_;
};

}  // namespace

std::unique_ptr<StoreHarness> make_memory_harness() {
  return std::make_unique<MemoryHarness>(false);
}
std::unique_ptr<StoreHarness> make_memory_deferred_harness() {
  return std::make_unique<MemoryHarness>(true);
}
std::unique_ptr<StoreHarness> make_lmdb_harness() { return std::make_unique<LmdbHarness>(); }
std::unique_ptr<StoreHarness> make_postgres_harness(int kill_every, bool skip_locked_claims) {
  const std::optional<std::string> conninfo = test_pg_conninfo();
  if (!conninfo) return nullptr;
  return std::make_unique<PostgresHarness>(*conninfo, kill_every, skip_locked_claims);
}
std::unique_ptr<StoreHarness> make_faulty_harness(std::unique_ptr<StoreHarness> inner,
                                                  std::uint64_t seed) {
  return std::make_unique<FaultyHarness>(std::move(inner), seed);
}
std::unique_ptr<StoreHarness> make_wrapped_harness(
    std::unique_ptr<StoreHarness> inner, std::string name,
    std::function<std::unique_ptr<Storage>(StoreHarness&)> wrap) {
  return std::make_unique<WrappedHarness>(std::move(inner), std::move(name), wrap);
}

}  // namespace kairos::storage_test
