// Cron engine micro benchmarks: next_after for typical expressions in UTC and
// in a DST zone, and parsing. Targets (docs/PERFORMANCE.md): median under
// 150 ns per next_after in UTC, under 500 ns in Europe/Berlin, parse under 2 us.
//
//   build/release/bench/bench_core_cron_benchmark --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <vector>

#include "core/base/check.h"
#include "core/ports/random.h"
#include "core/schedule/cron_schedule.h"
#include "core/schedule/schedule.h"

namespace {

const char* const kExprs[] = {"*/5 * * * *", "0 2 * * *", "0 9 * * 1-5", "0 0 L * *",
                              "0 9 * * 5#3"};

// 1024 start instants spread over 2020-2040, fixed seed.
const std::vector<absl::Time>& starts() {
  static const std::vector<absl::Time> v = [] {
    kairos::Random rng(42);
    std::vector<absl::Time> out;
    const std::int64_t lo = 1577836800;  // 2020-01-01
    const std::int64_t hi = 2208988800;  // 2040-01-01
    for (int i = 0; i < 1024; ++i) out.push_back(absl::FromUnixSeconds(rng.between(lo, hi)));
    return out;
  }();
  return v;
}

void BM_NextAfter(benchmark::State& state, const char* expr, const char* zone) {
  auto s = kairos::cron::CronSchedule::create(expr, zone);
  KAIROS_CHECK(s.ok());
  const auto& ts = starts();
  std::size_t i = 0;
  for (auto _ : state) {
    auto f = s->next_after(ts[i++ & 1023]);
    benchmark::DoNotOptimize(f);
  }
}

void BM_ScheduleNextAfter(benchmark::State& state, const char* zone) {
  kairos::ScheduleSpec spec;
  spec.cron = "0 2 * * *";
  spec.zone = zone;
  auto s = kairos::Schedule::compile(spec, "job-1");
  KAIROS_CHECK(s.ok());
  const auto& ts = starts();
  std::size_t i = 0;
  for (auto _ : state) {
    auto f = s->next_after(ts[i++ & 1023]);
    benchmark::DoNotOptimize(f);
  }
}

void BM_Parse(benchmark::State& state, const char* expr) {
  for (auto _ : state) {
    auto e = kairos::cron::CronExpr::parse(expr, "job-1");
    benchmark::DoNotOptimize(e);
  }
}

const int kRegistered = [] {
  for (const char* zone : {"UTC", "Europe/Berlin"}) {
    for (const char* expr : kExprs) {
      benchmark::RegisterBenchmark((std::string("next_after/") + zone + "/" + expr).c_str(),
                                   BM_NextAfter, expr, zone);
    }
    benchmark::RegisterBenchmark(
        (std::string("Schedule::next_after/") + zone + "/0 2 * * *").c_str(), BM_ScheduleNextAfter,
        zone);
  }
  for (const char* expr : {"0 9 * * 1-5", "*/5 * * * *", "0 0 L * *", "0 9 * * 5#3",
                           "30 2 1,15 JAN-JUN MON-FRI", "@daily", "H H(0-5) * * *"}) {
    benchmark::RegisterBenchmark((std::string("parse/") + expr).c_str(), BM_Parse, expr);
  }
  return 0;
}();

}  // namespace

BENCHMARK_MAIN();
