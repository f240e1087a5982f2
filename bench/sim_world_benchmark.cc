// Event-queue throughput of the simulator's World: schedule + pop of world
// events with random delays, with and without node scoping.
#include <benchmark/benchmark.h>

#include <functional>

#include "sim/world/world.h"

namespace kairos::sim {
namespace {

void BM_WorldEvents(benchmark::State& state) {
  const auto pending = static_cast<int>(state.range(0));
  const bool node_scoped = state.range(1) != 0;
  for (auto _ : state) {
    state.PauseTiming();
    World w(1);
    const NodeId n = w.add_node("n");
    Random r(2);
    std::int64_t left = 1000000;
    std::function<void()> tick = [&] {
      if (--left <= 0) return;
      w.schedule_after(absl::Microseconds(r.below(10000)), EventKind::kTimer,
                       node_scoped ? n : kWorldNode, 0, tick);
    };
    for (int i = 0; i < pending; ++i)
      w.schedule_after(absl::Microseconds(r.below(10000)), EventKind::kTimer, kWorldNode, 0, tick);
    state.ResumeTiming();
    while (w.step()) {
    }
    state.SetItemsProcessed(state.items_processed() + static_cast<std::int64_t>(w.events_run()));
  }
}
BENCHMARK(BM_WorldEvents)
    ->Args({100, 0})
    ->Args({10000, 0})
    ->Args({10000, 1})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace kairos::sim

BENCHMARK_MAIN();
