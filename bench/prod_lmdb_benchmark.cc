// LMDB store benchmarks: durable commit rate (sync per commit vs group
// commit), records per durable commit with time-ordered vs random keys, and
// read-only get/scan. Every commit here is durable (fdatasync).
//
//   build/release/bench/bench_prod_lmdb_benchmark --benchmark_min_time=1
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "bench/lmdb_bench_store.h"
#include "core/base/check.h"
#include "core/base/key_codec.h"
#include "core/ports/random.h"
#include "prod/runtime/asio_runtime.h"
#include "prod/store/lmdb_storage.h"

namespace kairos {
namespace {

using Store = LmdbBenchStore;

const std::string kValue(100, 'v');

// A due-index-like key: tag, shard, time, id.
std::string ordered_key(std::uint64_t i) {
  return KeyBuilder()
      .tag('D')
      .u32(0)
      .time(absl::FromUnixMicros(static_cast<std::int64_t>(i)))
      .str("job")
      .build();
}
std::string random_key(Random& rng) {
  return KeyBuilder().tag('D').u32(0).u64(rng.next_u64()).str("job").build();
}

// One single-record transaction at a time: every commit waits for its own
// sync (the latency a lone writer sees).
void BM_DurableCommitOneAtATime(benchmark::State& state) {
  Store s;
  std::uint64_t i = 0;
  for (auto _ : state) {
    const std::string k = ordered_key(i++);
    s.run([&k](Txn& t) {
      t.put(k, kValue);
      return absl::OkStatus();
    });
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["syncs_per_commit"] = benchmark::Counter(
      static_cast<double>(s.store().stats().syncs) / static_cast<double>(state.iterations()));
}
BENCHMARK(BM_DurableCommitOneAtATime)->UseRealTime();

// `in_flight` single-record transactions submitted together. With
// max_batch = 1 each pays its own sync; otherwise the writer groups them.
void BM_DurableCommitsInFlight(benchmark::State& state) {
  const auto in_flight = static_cast<std::size_t>(state.range(0));
  const bool group = state.range(1) != 0;
  Store s(group ? 4096 : 1);
  std::uint64_t i = 0;
  for (auto _ : state) {
    std::vector<TxnBody> bodies;
    for (std::size_t j = 0; j < in_flight; ++j) {
      bodies.push_back([k = ordered_key(i++)](Txn& t) {
        t.put(k, kValue);
        return absl::OkStatus();
      });
    }
    s.run_all(std::move(bodies));
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(in_flight));
  state.counters["commits_per_sync"] =
      benchmark::Counter(static_cast<double>(i) / static_cast<double>(s.store().stats().syncs));
  state.SetLabel(group ? "group commit" : "sync per commit");
}
BENCHMARK(BM_DurableCommitsInFlight)
    ->ArgNames({"in_flight", "group"})
    ->Args({64, 0})
    ->Args({16, 1})
    ->Args({64, 1})
    ->Args({256, 1})
    ->Args({1024, 1})
    ->UseRealTime();

// One durable transaction writing `records` records; keys time-ordered
// (appends at the end of the B-tree) or random (touching pages everywhere).
void BM_RecordsPerDurableCommit(benchmark::State& state) {
  const auto records = static_cast<std::size_t>(state.range(0));
  const bool random = state.range(1) != 0;
  Store s;
  Random rng(1);
  std::uint64_t i = 0;
  for (auto _ : state) {
    std::vector<std::string> keys;
    keys.reserve(records);
    for (std::size_t j = 0; j < records; ++j)
      keys.push_back(random ? random_key(rng) : ordered_key(i++));
    s.run([&keys](Txn& t) {
      for (const auto& k : keys) t.put(k, kValue);
      return absl::OkStatus();
    });
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(records));
  state.SetLabel(random ? "random keys" : "time-ordered keys");
}
BENCHMARK(BM_RecordsPerDurableCommit)
    ->ArgNames({"records", "random"})
    ->Args({1, 0})
    ->Args({100, 0})
    ->Args({1000, 0})
    ->Args({1, 1})
    ->Args({100, 1})
    ->Args({1000, 1})
    ->UseRealTime();

// Read-only transactions over 100k records: 1000 random gets, or a scan of
// 1000 consecutive records.
void populate(Store& s, std::uint64_t n) {
  for (std::uint64_t base = 0; base < n; base += 10000)
    s.run([base](Txn& t) {
      for (std::uint64_t j = base; j < base + 10000; ++j) t.put(ordered_key(j), kValue);
      return absl::OkStatus();
    });
}

void BM_Get(benchmark::State& state) {
  Store s;
  populate(s, 100000);
  Random rng(2);
  for (auto _ : state) {
    s.run(
        [&rng](Txn& t) {
          for (int j = 0; j < 1000; ++j)
            benchmark::DoNotOptimize(t.get(ordered_key(rng.below(100000))));
          return absl::OkStatus();
        },
        TxnMode::kReadOnly);
  }
  state.SetItemsProcessed(state.iterations() * 1000);
}
BENCHMARK(BM_Get)->UseRealTime();

void BM_Scan(benchmark::State& state) {
  const bool reverse = state.range(0) != 0;
  Store s;
  populate(s, 100000);
  Random rng(3);
  for (auto _ : state) {
    s.run(
        [&rng, reverse](Txn& t) {
          const std::uint64_t start = rng.below(99000);
          auto kvs = t.scan(ordered_key(start), ordered_key(start + 1000), 1000,
                            reverse ? Direction::kReverse : Direction::kForward);
          KAIROS_CHECK(kvs.size() == 1000);
          benchmark::DoNotOptimize(kvs);
          return absl::OkStatus();
        },
        TxnMode::kReadOnly);
  }
  state.SetItemsProcessed(state.iterations() * 1000);
  state.SetLabel(reverse ? "reverse" : "forward");
}
BENCHMARK(BM_Scan)->ArgName("reverse")->Arg(0)->Arg(1)->UseRealTime();

}  // namespace
}  // namespace kairos

BENCHMARK_MAIN();
