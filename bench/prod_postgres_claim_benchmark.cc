// PostgreSQL claim benchmark: how fast concurrent claimers drain a queue of
// ready keys through Txn::scan_claimable, on the generic path (the plain
// scan, as every store has it) and with FOR UPDATE SKIP LOCKED (PostgresStorage's
// override). Each claim transaction takes up to 100 keys, erases each (and,
// with marker:1, writes a claimed marker for it under another prefix), and
// commits; a claim that ends kConflict is
// run again at once. `clients` claims are in flight at a time, one per store
// thread (one connection each). Every iteration drains a fresh queue of
// 10,000 keys and checks that each was claimed exactly once.
//
//   export KAIROS_TEST_PG=$(scripts/pg-server.sh start /tmp/pg)
//   build/release/bench/bench_prod_postgres_claim_benchmark
//
// Without KAIROS_TEST_PG every benchmark is skipped with a message. The data
// lives in the schema "kairos_bench_claim" (created on first use, emptied
// before every run).
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/base/check.h"
#include "core/base/key_codec.h"
#include "prod/runtime/asio_runtime.h"
#include "prod/store/postgres_storage.h"

namespace kairos {
namespace {

constexpr std::uint64_t kQueue = 10'000;
constexpr std::size_t kClaim = 100;

std::string queue_key(std::uint64_t i) { return KeyBuilder().tag('Q').u64(i).build(); }
std::string marker_key(std::string_view claimed) { return std::string("C").append(claimed); }
const std::string kQueueBegin = KeyBuilder().tag('Q').build();
const std::string kQueueEnd = KeyBuilder().tag('R').build();

class Store {
 public:
  Store(const std::string& conninfo, std::size_t threads, bool skip_locked) {
    PostgresOptions o;
    o.conninfo = conninfo;
    o.schema = "kairos_bench_claim";
    o.threads = threads;
    o.skip_locked_claims = skip_locked;
    auto migrated = PostgresStorage::Migrate(o, false);
    KAIROS_CHECK_MSG(migrated.ok(), migrated.status().ToString().c_str());
    auto opened = PostgresStorage::Open(o, timers_);
    KAIROS_CHECK_MSG(opened.ok(), opened.status().ToString().c_str());
    store_ = std::move(opened).value();
  }
  ~Store() {
    store_.reset();
    io_.poll();
  }
  // Runs one body to a commit.
  void run(TxnBody body) {
    bool done = false;
    store_->transact(std::move(body), [&](TxnResult r) {
      KAIROS_CHECK_MSG(r.committed(), r.status.ToString().c_str());
      done = true;
    });
    while (!done) io_.run_one();
  }
  Storage& storage() { return *store_; }
  boost::asio::io_context& io() { return io_; }

 private:
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_ =
      boost::asio::make_work_guard(io_);
  AsioTimers timers_{io_};
  std::unique_ptr<PostgresStorage> store_;
};

// One claimer: claims until a claim finds nothing, then stops.
struct Drain {
  Store& store;
  bool marker;
  std::uint64_t claimed = 0;
  std::uint64_t commits = 0;
  std::uint64_t conflicts = 0;
  int running = 0;

  void claim() {
    auto got = std::make_shared<std::size_t>(0);
    store.storage().transact(
        [got, marker = marker](Txn& t) {
          *got = 0;
          for (const KeyValue& kv : t.scan_claimable(kQueueBegin, kQueueEnd, kClaim)) {
            t.erase(kv.key);
            if (marker) t.put(marker_key(kv.key), kv.value);
            ++*got;
          }
          return absl::OkStatus();
        },
        [this, got](TxnResult r) {
          if (r.outcome == CommitOutcome::kConflict) {
            ++conflicts;
            claim();
            return;
          }
          KAIROS_CHECK_MSG(r.committed(), r.status.ToString().c_str());
          ++commits;
          claimed += *got;
          if (*got > 0) {
            claim();
          } else {
            --running;
          }
        });
  }
};

void BM_PostgresClaim(benchmark::State& state) {
  const char* conninfo = getenv("KAIROS_TEST_PG");
  if (conninfo == nullptr || *conninfo == '\0') {
    state.SkipWithError(
        "KAIROS_TEST_PG is not set: start a server with `scripts/pg-server.sh start DIR` and "
        "export KAIROS_TEST_PG to the conninfo it prints");
    return;
  }
  const auto clients = static_cast<std::size_t>(state.range(0));
  const bool skip_locked = state.range(1) != 0;
  const bool marker = state.range(2) != 0;
  Store s(conninfo, clients, skip_locked);
  std::uint64_t claimed = 0, commits = 0, conflicts = 0;
  for (auto _ : state) {
    state.PauseTiming();
    s.run([](Txn& t) {
      t.erase_range("", "");
      return absl::OkStatus();
    });
    for (std::uint64_t base = 0; base < kQueue; base += 1000)
      s.run([base](Txn& t) {
        for (std::uint64_t i = base; i < base + 1000; ++i) t.put(queue_key(i), "ready");
        return absl::OkStatus();
      });
    Drain d{s, marker};
    state.ResumeTiming();
    d.running = static_cast<int>(clients);
    for (std::size_t c = 0; c < clients; ++c) d.claim();
    while (d.running > 0) s.io().run_one();
    state.PauseTiming();
    KAIROS_CHECK_MSG(d.claimed == kQueue, "a key was claimed twice or not at all");
    std::uint64_t markers = 0;
    s.run([&markers](Txn& t) {
      markers = t.scan("C", "D", kQueue + 1).size();
      KAIROS_CHECK(t.scan(kQueueBegin, kQueueEnd, 1).empty());
      return absl::OkStatus();
    });
    KAIROS_CHECK_MSG(markers == (marker ? kQueue : 0), "markers do not match the claims");
    claimed += d.claimed;
    commits += d.commits;
    conflicts += d.conflicts;
    state.ResumeTiming();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(claimed));
  state.counters["conflicts_per_commit"] =
      benchmark::Counter(static_cast<double>(conflicts) / static_cast<double>(commits));
  state.SetLabel(skip_locked ? "skip locked" : "generic scan");
}
BENCHMARK(BM_PostgresClaim)
    ->ArgNames({"clients", "skip_locked", "marker"})
    ->ArgsProduct({{1, 2, 4}, {0, 1}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace kairos

BENCHMARK_MAIN();
