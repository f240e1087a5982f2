// Record encoding and decoding: the per-run cost of the kernel's value codec.
//
// A run's life writes its run record three times (dispatch, claim,
// complete) and decodes its job record about three times, so these four
// operations are on every run's path through the writer. Each benchmark
// encodes or decodes one record shaped as the pipeline's are: a run with
// one attempt, an owner and a detail; a one-off command job. The counters
// are per record.
//
//   build/release/bench/bench_core_records_benchmark
#include <benchmark/benchmark.h>

#include <string>

#include "core/kernel/records.h"

namespace kairos {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1'800'000'000);

RunRecord sample_run() {
  RunRecord r;
  r.id = {"job-0123456789abcdef", 1, kT0};
  r.shard = 3;
  r.due_at = kT0;
  r.state = RunState::kLeased;
  r.ready_at = kT0;
  r.token = 42;
  r.owner = "node-1/w7";
  r.lease_expiry = kT0 + absl::Seconds(30);
  r.dispatched_at = kT0;
  r.claimed_at = kT0 + absl::Milliseconds(3);
  r.detail = "exit 0";
  AttemptRecord a;
  a.attempt = 1;
  a.token = 42;
  a.worker = r.owner;
  a.claimed_at = r.claimed_at;
  r.attempts.push_back(a);
  return r;
}

JobRecord sample_job() {
  JobRecord j;
  j.spec.id = "job-0123456789abcdef";
  j.spec.schedule.kind = ScheduleSpec::Kind::kOnce;
  j.spec.schedule.at = kT0;
  j.spec.payload = CommandPayload{{"/bin/true"}, {}, ""};
  j.incarnation = 1;
  j.created_at = kT0;
  j.next_due_at = kT0;
  j.next_nominal = kT0;
  return j;
}

void BM_EncodeRun(benchmark::State& state) {
  const RunRecord r = sample_run();
  for (auto _ : state) benchmark::DoNotOptimize(encode(r));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EncodeRun);

void BM_DecodeRun(benchmark::State& state) {
  const std::string bytes = encode(sample_run());
  for (auto _ : state) benchmark::DoNotOptimize(decode_run(bytes));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DecodeRun);

void BM_EncodeJob(benchmark::State& state) {
  const JobRecord j = sample_job();
  for (auto _ : state) benchmark::DoNotOptimize(encode(j));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EncodeJob);

void BM_DecodeJob(benchmark::State& state) {
  const std::string bytes = encode(sample_job());
  for (auto _ : state) benchmark::DoNotOptimize(decode_job(bytes));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DecodeJob);

}  // namespace
}  // namespace kairos

BENCHMARK_MAIN();
