// The event log's per-event cost: formatting an event's line and recording
// it through the production LogEventLog (queue, writer thread, write(2)).
//
// A run's life records about seven events; each becomes one text line with
// two or three RFC 3339 instants. The events here are shaped as the node's
// run.completed is (core/kernel/run_lifecycle.cc: job, incarnation, nominal,
// attempt, token, shard, worker, outcome, status, exit_code, node).
//
//   build/release/bench/bench_prod_event_log_benchmark
//
// BM_FormatRfc3339Utc and BM_FormatEvent time one call on this thread.
// BM_LogEventLogRecord records events into a LogEventLog writing to
// /dev/null, 1,024 per iteration and then flush() (so the writer keeps up and
// nothing is dropped); its counter cpu_ns_per_event is getrusage user +
// system of the whole process (this thread and the writer) per event, the
// figure that says what the log costs a server per event.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "core/base/check.h"
#include "core/base/rfc3339.h"
#include "core/ports/event_log.h"
#include "prod/log/log_event_log.h"

namespace kairos {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1'800'000'000) + absl::Microseconds(123'456);

Event completed_event(std::uint64_t i) {
  Event e;
  e.at = kT0 + absl::Microseconds(static_cast<std::int64_t>(i) * 37);
  e.kind = "run.completed";
  e.with("job", std::string("bench-12345"))
      .with("incarnation", std::uint64_t{1})
      .with("nominal", kT0 - absl::Seconds(2))
      .with("attempt", std::uint64_t{1})
      .with("token", 4'000'000 + i)
      .with("shard", std::uint64_t{3})
      .with("worker", std::string("bench/w12"))
      .with("outcome", std::string("succeeded"))
      .with("status", std::uint64_t{1})
      .with("exit_code", std::int64_t{0})
      .with("node", std::string("bench"));
  return e;
}

double cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  auto sec = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return sec(u.ru_utime) + sec(u.ru_stime);
}

void BM_FormatRfc3339Utc(benchmark::State& state) {
  absl::Time t = kT0;
  for (auto _ : state) {
    std::string s = format_rfc3339_utc(t);
    benchmark::DoNotOptimize(s);
    t += absl::Microseconds(37);
  }
}
BENCHMARK(BM_FormatRfc3339Utc);

void BM_FormatEvent(benchmark::State& state) {
  const Event e = completed_event(7);
  for (auto _ : state) {
    std::string s = format_event(e);
    benchmark::DoNotOptimize(s);
  }
}
BENCHMARK(BM_FormatEvent);

void BM_LogEventLogRecord(benchmark::State& state) {
  const int fd = ::open("/dev/null", O_WRONLY);
  KAIROS_CHECK(fd >= 0);
  constexpr int kBatch = 1024;
  std::uint64_t events = 0;
  double cpu = 0;
  {
    LogEventLog log({fd});
    for (auto _ : state) {
      const double c0 = cpu_seconds();
      for (int i = 0; i < kBatch; ++i) log.record(completed_event(events++));
      log.flush();
      cpu += cpu_seconds() - c0;
    }
    KAIROS_CHECK_MSG(log.dropped() == 0, "the benchmark's log dropped events");
  }
  ::close(fd);
  state.SetItemsProcessed(static_cast<std::int64_t>(events));
  state.counters["cpu_ns_per_event"] = cpu * 1e9 / static_cast<double>(events);
}
BENCHMARK(BM_LogEventLogRecord);

}  // namespace
}  // namespace kairos

BENCHMARK_MAIN();
