// The LMDB data-file check that runs before every open of an existing store
// (prod/store/lmdb_file_check.h): it reads every page a tree reaches, so its
// cost grows with the store and bounds restart to ready.
//
//   build/release/bench/bench_prod_lmdb_file_check_benchmark
//   KAIROS_CHECK_FILE=DIR/data.mdb
//       build/release/bench/bench_prod_lmdb_file_check_benchmark --benchmark_filter=GivenFile
//
// CheckStore/N: a store of N job-sized records (700 bytes under 60-byte
// keys with a shared prefix, written in batches of 1,000 per durable commit),
// checked after it was closed; the file is in the page cache, as it is at a
// restart. GivenFile: the file KAIROS_CHECK_FILE names (skipped without
// it), e.g. a kairos-load --stored run's data directory kept with --keep.
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/lmdb_bench_store.h"
#include "core/base/check.h"
#include "core/base/key_codec.h"
#include "prod/store/lmdb_file_check.h"

namespace kairos {
namespace {

void Report(benchmark::State& state, const std::string& file) {
  const std::uint64_t bytes = std::filesystem::file_size(file);
  state.counters["file_MiB"] = static_cast<double>(bytes) / (1 << 20);
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes) * state.iterations());
}

void CheckStore(benchmark::State& state) {
  const auto n = static_cast<std::uint64_t>(state.range(0));
  LmdbBenchStore s;
  const std::string value(700, 'j');
  for (std::uint64_t from = 0; from < n; from += 1000) {
    std::vector<TxnBody> bodies;
    bodies.push_back([&, from](Txn& t) {
      for (std::uint64_t i = from; i < std::min(n, from + 1000); ++i)
        t.put(KeyBuilder().str("J").str("default").str("job-0123456789abcdef-").u64(i).build(),
              value);
      return absl::OkStatus();
    });
    s.run_all(std::move(bodies));
  }
  s.close();
  const std::string file = s.dir() + "/data.mdb";
  for (auto _ : state) KAIROS_CHECK(CheckLmdbDataFile(file).ok());
  Report(state, file);
}
BENCHMARK(CheckStore)->Arg(100'000)->Arg(1'000'000)->Unit(benchmark::kMillisecond);

void GivenFile(benchmark::State& state) {
  const char* file = getenv("KAIROS_CHECK_FILE");
  if (file == nullptr || *file == '\0') {
    state.SkipWithError("KAIROS_CHECK_FILE is not set");
    return;
  }
  for (auto _ : state) {
    const absl::Status s = CheckLmdbDataFile(file);
    if (!s.ok()) {
      state.SkipWithError(std::string(s.message()).c_str());
      return;
    }
  }
  Report(state, file);
}
BENCHMARK(GivenFile)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
}  // namespace kairos
BENCHMARK_MAIN();
