#include "prod/cli/job_runners.h"

#include <chrono>
#include <random>
#include <utility>

#include "prod/api/job_json.h"
#include "prod/runners/http_runner.h"
#include "prod/runners/process_runner.h"

namespace kairos::cli {
namespace {

// How long shutdown waits for stopped jobs beyond the kill grace.
constexpr absl::Duration kShutdownSlack = absl::Seconds(5);

std::vector<EventField> attempt_fields(const RunRequest& r) {
  return {{"job", r.job_id},
          {"nominal", r.nominal_time},
          {"attempt", static_cast<std::uint64_t>(r.attempt)},
          {"token", r.fencing_token}};
}

void add_outcome(std::vector<EventField>& f, const RunOutcome& o) {
  f.push_back({"status", std::string(api::to_string(o.status))});
  f.push_back({"exit_code", static_cast<std::int64_t>(o.exit_code)});
}

}  // namespace

void note(EventLog& log, const Clock& clock, std::string_view kind,
          std::vector<EventField> fields) {
  Event e;
  e.at = clock.now();
  e.kind = kind;
  e.fields = std::move(fields);
  log.record(std::move(e));
}

std::uint64_t fresh_seed() {
  std::random_device rd;
  return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
}

absl::StatusOr<std::unique_ptr<CompositeRunner>> build_job_runners(boost::asio::io_context& io,
                                                                   AsioTimers& timers,
                                                                   const Clock& clock,
                                                                   EventLog& log,
                                                                   const JobRunnerSetup& setup) {
  ProcessRunnerOptions po;
  po.kill_grace = setup.lease.margin / 2;
  po.job_shim = "/proc/self/exe";
  po.record_dir = setup.job_records_dir;
  po.on_start = [&log, &clock](const RunRequest& r, pid_t pid) {
    std::vector<EventField> f = attempt_fields(r);
    f.push_back({"pid", static_cast<std::int64_t>(pid)});
    note(log, clock, "process.started", std::move(f));
  };
  po.on_exit = [&log, &clock](const ProcessExit& x) {
    std::vector<EventField> f = attempt_fields(*x.request);
    f.push_back({"pid", static_cast<std::int64_t>(x.pid)});
    add_outcome(f, x.outcome);
    f.push_back({"elapsed", x.elapsed});
    std::string output = x.output_tail;
    while (!output.empty() && output.back() == '\n') output.pop_back();
    if (!output.empty()) f.push_back({"output", std::move(output)});
    if (x.pid == 0) f.push_back({"detail", x.outcome.detail});
    note(log, clock, "process.exited", std::move(f));
  };
  HttpRunnerOptions ho;
  ho.ca_file = setup.http_ca_file;
  ho.on_exit = [&log, &clock](const HttpExit& x) {
    std::vector<EventField> f = attempt_fields(*x.request);
    add_outcome(f, x.outcome);
    f.push_back({"elapsed", x.elapsed});
    f.push_back({"detail", x.outcome.detail});
    note(log, clock, "http.exited", std::move(f));
  };
  auto http = HttpRunner::create(io, timers, clock, std::move(ho));
  if (!http.ok()) return http.status();
  CompositeRunnerOptions co;
  co.accepted_kinds = setup.kinds;
  return std::make_unique<CompositeRunner>(
      timers, std::make_unique<ProcessRunner>(io, timers, clock, std::move(po)),
      std::move(http).value(), std::move(co));
}

void shutdown_runners(boost::asio::io_context& io, CompositeRunner& runners,
                      absl::Duration kill_grace) {
  runners.terminate_all();
  const auto bound =
      std::chrono::steady_clock::now() +
      std::chrono::microseconds(absl::ToInt64Microseconds(kill_grace + kShutdownSlack));
  io.restart();
  while (runners.running() > 0 && std::chrono::steady_clock::now() < bound)
    io.run_one_for(std::chrono::milliseconds(50));
}

}  // namespace kairos::cli
