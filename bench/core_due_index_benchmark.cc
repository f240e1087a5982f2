// Due-poll cost against the number of stored jobs.
//
// A store holds `stored` jobs whose next occurrence is far in the future and
// `due` jobs due now. One iteration is one leader dispatch pass over the
// shard (JobStore::dispatch: leader check, range scan of the due index,
// run creation, next-fire computation, due-entry advance), run inside a
// MemoryStorage transaction that is rolled back afterwards so every
// iteration sees the same store. The claim: the cost follows `due`, not
// `stored`.
//
//   build/release/bench/bench_core_due_index_benchmark
#include <benchmark/benchmark.h>

#include <memory>

#include "core/kernel/job_store.h"
#include "core/kernel/keyspace.h"
#include "core/twins/manual_clock.h"
#include "core/twins/manual_loop.h"
#include "core/twins/memory_storage.h"

namespace kairos {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1'800'000'000);

struct World {
  ManualClock clock{kT0};
  ManualLoop loop{clock};
  MemoryStorage storage{clock, loop};
  JobStore store{1};
  LeaderToken leader{"bench", 1};
};

JobRecord make_job(const std::string& id, absl::Time due) {
  JobRecord j;
  j.spec.id = id;
  j.spec.schedule.kind = ScheduleSpec::Kind::kInterval;
  j.spec.schedule.every = absl::Hours(24 * 365);
  j.spec.schedule.start = due;
  j.spec.payload = CommandPayload{{"/bin/true"}, {}, ""};
  j.incarnation = 1;
  j.created_at = kT0;
  j.next_due_at = due;
  j.next_nominal = due;
  return j;
}

// Builds (once per shape) a store with `stored` future jobs and `due` due ones.
World& world(std::int64_t stored, std::int64_t due) {
  // One store in memory at a time (the 10^6 one is large).
  static std::pair<std::int64_t, std::int64_t> shape{-1, -1};
  static std::unique_ptr<World> current;
  if (current && shape == std::make_pair(stored, due)) return *current;
  current.reset();
  auto w = std::make_unique<World>();
  auto put_job = [&](Txn& t, const std::string& id, absl::Time at) {
    const JobRecord j = make_job(id, at);
    t.put(keys::job(id), encode(j));
    t.put(keys::due(0, at, id), encode(DueEntry{1, at}));
  };
  const std::int64_t chunk = 50'000;
  for (std::int64_t base = 0; base < stored; base += chunk) {
    w->storage.run([&](Txn& t) {
      for (std::int64_t i = base; i < std::min(stored, base + chunk); ++i)
        put_job(t, "future-" + std::to_string(i), kT0 + absl::Hours(1) + absl::Seconds(i % 86'400));
      return absl::OkStatus();
    });
  }
  w->storage.run([&](Txn& t) {
    for (std::int64_t i = 0; i < due; ++i)
      put_job(t, "due-" + std::to_string(i), kT0 - absl::Seconds(i % 60));
    t.put(keys::leader(0), encode(LeaderRecord{"bench", 1, kT0 + absl::Hours(100)}));
    return absl::OkStatus();
  });
  shape = {stored, due};
  current = std::move(w);
  return *current;
}

void BM_DuePoll(benchmark::State& state) {
  const std::int64_t stored = state.range(0);
  const std::int64_t due = state.range(1);
  World& w = world(stored, due);
  std::size_t dispatched = 0;
  for (auto _ : state) {
    DispatchResult out;
    w.storage.run([&](Txn& t) {
      const absl::Status s = w.store.dispatch(t, 0, w.leader, 100'000, &out);
      benchmark::DoNotOptimize(s);
      return absl::CancelledError("roll back so the next iteration sees the same store");
    });
    dispatched = out.dispatched.size();
  }
  if (dispatched != static_cast<std::size_t>(due)) state.SkipWithError("wrong dispatch count");
  state.counters["stored"] = static_cast<double>(stored);
  state.counters["due"] = static_cast<double>(due);
}

BENCHMARK(BM_DuePoll)
    ->ArgNames({"stored", "due"})
    ->Args({10'000, 0})
    ->Args({1'000'000, 0})
    ->Args({10'000, 100})
    ->Args({1'000'000, 100})
    ->Args({10'000, 1'000})
    ->Args({1'000'000, 1'000})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace kairos

BENCHMARK_MAIN();
