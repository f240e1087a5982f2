// core/ports/runner.h, "Failure to start": an attempt that never began is
// reported through `done` (never inside start()) with started == false, and
// is told apart from a job that ran and failed (started == true). Checked on
// the process runner with real (short-lived) processes; the simulated runner
// always starts its attempts.
#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "core/ports/runner.h"
#include "prod/runners/process_runner.h"
#include "prod/runtime/asio_runtime.h"

namespace kairos {
namespace {

class RunnerStartFailure : public ::testing::Test {
 protected:
  // `stop`: stop() right after start() (a no-op when the attempt never began).
  RunOutcome run(Payload payload, bool stop = true) {
    RunRequest r;
    r.job_id = "job";
    r.fencing_token = 1;
    r.idempotency_key = "job/1/0";
    r.payload = std::move(payload);
    r.deadline = clock_.now() + absl::Minutes(1);
    std::optional<RunOutcome> out;
    const RunHandle h = runner_.start(std::move(r), [&](RunOutcome o) { out = std::move(o); });
    EXPECT_NE(h, 0u);
    EXPECT_FALSE(out.has_value()) << "done ran inside start()";
    if (stop) runner_.stop(h);
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!out && std::chrono::steady_clock::now() < end)
      io_.run_one_for(std::chrono::milliseconds(50));
    EXPECT_TRUE(out.has_value()) << "no outcome";
    return out.value_or(RunOutcome{});
  }
  static Payload command(std::vector<std::string> argv) {
    return CommandPayload{std::move(argv), {}, {}};
  }

  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_ =
      boost::asio::make_work_guard(io_);
  SystemClock clock_;
  AsioTimers timers_{io_};
  ProcessRunner runner_{io_, timers_, clock_};
};

TEST_F(RunnerStartFailure, AMissingProgramNeverStarted) {
  const RunOutcome o = run(command({"/nonexistent/kairos-no-such-program"}));
  EXPECT_FALSE(o.started) << o.detail;
  EXPECT_EQ(o.status, RunStatus::kFailedPermanent);
  EXPECT_EQ(o.exit_code, 0);
}

TEST_F(RunnerStartFailure, AnEmptyArgvAndABadWorkingDirectoryNeverStarted) {
  EXPECT_FALSE(run(command({})).started);
  CommandPayload c{{"/bin/true"}, {}, {}};
  c.working_dir = "/nonexistent/dir";
  EXPECT_FALSE(run(c).started);
}

TEST_F(RunnerStartFailure, AnHttpPayloadNeverStartedInThisBuild) {
  EXPECT_FALSE(run(HttpPayload{}).started);
}

TEST_F(RunnerStartFailure, AJobThatRanAndFailedStarted) {
  const RunOutcome o = run(command({"/bin/false"}), /*stop=*/false);
  EXPECT_TRUE(o.started) << o.detail;
  EXPECT_EQ(o.status, RunStatus::kFailed);
  EXPECT_EQ(o.exit_code, 1);
}

}  // namespace
}  // namespace kairos
