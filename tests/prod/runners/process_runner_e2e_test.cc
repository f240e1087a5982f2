// ProcessRunner against real child processes: exit codes, the environment
// the job sees, argv without a shell, missing programs, the deadline
// (SIGTERM, then SIGKILL for a job that ignores it), stop(), cleanup of the
// process group, bounded output, and the destructor. Waits are event-driven
// (the loop runs until the outcome arrives) with generous upper bounds.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "core/base/absl_compat.h"
#include "core/kernel/records.h"
#include "prod/runners/process_runner.h"
#include "prod/runtime/asio_runtime.h"

namespace kairos {
namespace {

constexpr auto kBound = std::chrono::seconds(30);

// True when `pid` no longer runs (absent, or a zombie nobody reaped yet).
bool process_gone(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  std::string line;
  std::getline(stat, line);
  const auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() &&
         (line[close + 2] == 'Z' || line[close + 2] == 'X');
}

class ProcessRunnerTest : public ::testing::Test {
 protected:
  ProcessRunnerTest() { make_runner({}); }

  void make_runner(ProcessRunnerOptions options) {
    runner_.reset();
    options.on_start = [this](const RunRequest&, pid_t pid) { started_pids_.push_back(pid); };
    runner_ = std::make_unique<ProcessRunner>(io_, timers_, clock_, std::move(options));
  }

  RunRequest request(std::vector<std::string> argv, absl::Duration timeout = absl::Minutes(5)) {
    RunRequest r;
    r.job_id = "job-1";
    r.incarnation = 2;
    r.nominal_time = absl::FromUnixSeconds(1'767'225'600);  // 2026-01-01T00:00:00Z
    r.attempt = 3;
    r.fencing_token = 42;
    r.idempotency_key = idempotency_key(RunId{r.job_id, r.incarnation, r.nominal_time});
    r.payload = CommandPayload{std::move(argv), {}, {}};
    r.deadline = clock_.now() + timeout;
    return r;
  }

  // Starts `r` and runs the loop until its outcome arrives.
  RunOutcome run(RunRequest r) {
    std::optional<RunOutcome> out;
    runner_->start(std::move(r), [&](RunOutcome o) { out = std::move(o); });
    EXPECT_FALSE(out.has_value()) << "done must not run inside start()";
    wait_for([&] { return out.has_value(); });
    return out.value_or(RunOutcome{RunStatus::kFailed, -1, "no outcome within the bound"});
  }

  template <typename Pred>
  bool wait_for(Pred pred) {
    const auto end = std::chrono::steady_clock::now() + kBound;
    while (!pred()) {
      if (std::chrono::steady_clock::now() > end) {
        ADD_FAILURE() << "condition not met within the bound";
        return false;
      }
      io_.run_one_for(std::chrono::milliseconds(50));
    }
    return true;
  }

  boost::asio::io_context io_;
  // Without outstanding work an io_context stops itself and ignores later
  // posts; the server holds a guard the same way.
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_ =
      boost::asio::make_work_guard(io_);
  SystemClock clock_;
  AsioTimers timers_{io_};
  std::vector<pid_t> started_pids_;
  std::unique_ptr<ProcessRunner> runner_;
};

TEST_F(ProcessRunnerTest, ExitZeroSucceedsAndCapturesBothStreams) {
  const RunOutcome o = run(request({"/bin/sh", "-c", "echo to-stdout; echo to-stderr >&2"}));
  EXPECT_EQ(o.status, RunStatus::kSucceeded) << o.detail;
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_TRUE(absl::StrContains(o.detail, "exited with code 0")) << o.detail;
  EXPECT_TRUE(absl::StrContains(o.detail, "to-stdout")) << o.detail;
  EXPECT_TRUE(absl::StrContains(o.detail, "to-stderr")) << o.detail;
  EXPECT_EQ(runner_->running(), 0u);
}

TEST_F(ProcessRunnerTest, NonZeroExitFailsWithTheCode) {
  const RunOutcome o = run(request({"/bin/sh", "-c", "exit 3"}));
  EXPECT_EQ(o.status, RunStatus::kFailed);
  EXPECT_EQ(o.exit_code, 3);
  EXPECT_TRUE(absl::StrContains(o.detail, "exited with code 3")) << o.detail;
}

TEST_F(ProcessRunnerTest, ASignalFromElsewhereIsAFailure) {
  const RunOutcome o = run(request({"/bin/sh", "-c", "kill -KILL $$"}));
  EXPECT_EQ(o.status, RunStatus::kFailed);
  EXPECT_EQ(o.exit_code, 128 + SIGKILL);
  EXPECT_TRUE(absl::StrContains(o.detail, "SIGKILL")) << o.detail;
}

TEST_F(ProcessRunnerTest, TheJobSeesItsIdentityTokenAndEnvironment) {
  ::setenv("KAIROS_TEST_FROM_SERVER", "server-value", 1);
  char tmpl[] = "/tmp/kairos-runner-wd-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string wd = tmpl;
  RunRequest r = request({"/bin/sh", "-c",
                          "echo \"key=$KAIROS_IDEMPOTENCY_KEY token=$KAIROS_FENCING_TOKEN "
                          "job=$KAIROS_JOB_ID inc=$KAIROS_INCARNATION nominal=$KAIROS_NOMINAL_TIME "
                          "attempt=$KAIROS_ATTEMPT extra=$EXTRA server=$KAIROS_TEST_FROM_SERVER "
                          "pwd=$(pwd)\""});
  auto& cmd = std::get<CommandPayload>(r.payload);
  cmd.env = {{"EXTRA", "from-payload"}, {"KAIROS_FENCING_TOKEN", "999"}};
  cmd.working_dir = wd;
  const std::string key = r.idempotency_key;
  const RunOutcome o = run(std::move(r));
  ::rmdir(wd.c_str());
  ::unsetenv("KAIROS_TEST_FROM_SERVER");
  ASSERT_EQ(o.status, RunStatus::kSucceeded) << o.detail;
  EXPECT_TRUE(absl::StrContains(o.detail, "key=" + key + " ")) << o.detail;
  EXPECT_TRUE(absl::StrContains(o.detail, "token=42 "))
      << "a payload must not forge the token: " << o.detail;
  EXPECT_TRUE(absl::StrContains(o.detail, "job=job-1 ")) << o.detail;
  EXPECT_TRUE(absl::StrContains(o.detail, "inc=2 ")) << o.detail;
  EXPECT_TRUE(absl::StrContains(o.detail, "nominal=2026-01-01T00:00:00Z ")) << o.detail;
  EXPECT_TRUE(absl::StrContains(o.detail, "attempt=3 ")) << o.detail;
  EXPECT_TRUE(absl::StrContains(o.detail, "extra=from-payload ")) << o.detail;
  EXPECT_TRUE(absl::StrContains(o.detail, "server=server-value ")) << o.detail;
  EXPECT_TRUE(absl::StrContains(o.detail, "pwd=" + wd)) << o.detail;
}

TEST_F(ProcessRunnerTest, ArgvIsNeverGivenToAShell) {
  const RunOutcome o = run(request({"/bin/echo", "$HOME;", "`id`", "a b"}));
  ASSERT_EQ(o.status, RunStatus::kSucceeded) << o.detail;
  EXPECT_TRUE(absl::StrContains(o.detail, "$HOME; `id` a b")) << o.detail;
}

TEST_F(ProcessRunnerTest, AProgramWithoutASlashIsFoundOnThePath) {
  const RunOutcome o = run(request({"true"}));
  EXPECT_EQ(o.status, RunStatus::kSucceeded) << o.detail;
}

TEST_F(ProcessRunnerTest, AMissingProgramIsAPermanentFailure) {
  RunOutcome o = run(request({"/nonexistent/kairos-no-such-program"}));
  EXPECT_EQ(o.status, RunStatus::kFailedPermanent);
  EXPECT_TRUE(absl::StrContains(o.detail, "cannot execute '/nonexistent/kairos-no-such-program'"))
      << o.detail;
  EXPECT_TRUE(absl::StrContains(o.detail, "No such file")) << o.detail;

  o = run(request({"kairos-no-such-program-on-path"}));
  EXPECT_EQ(o.status, RunStatus::kFailedPermanent) << o.detail;

  o = run(request({"/etc/hostname"}));  // exists, not executable
  EXPECT_EQ(o.status, RunStatus::kFailedPermanent) << o.detail;

  RunRequest r = request({"/bin/true"});
  std::get<CommandPayload>(r.payload).working_dir = "/nonexistent/dir";
  o = run(std::move(r));
  EXPECT_EQ(o.status, RunStatus::kFailedPermanent);
  EXPECT_TRUE(absl::StrContains(o.detail, "working directory '/nonexistent/dir'")) << o.detail;
  EXPECT_EQ(runner_->running(), 0u);
}

TEST_F(ProcessRunnerTest, HttpPayloadsAreNotAvailableYet) {
  RunRequest r = request({"/bin/true"});
  r.payload = HttpPayload{"POST", "http://127.0.0.1:1/hook", {}, ""};
  const RunOutcome o = run(std::move(r));
  EXPECT_EQ(o.status, RunStatus::kFailedPermanent);
  EXPECT_TRUE(absl::StrContains(o.detail, "http runner not available in this build")) << o.detail;
}

TEST_F(ProcessRunnerTest, TheDeadlineTerminatesTheJob) {
  ProcessRunnerOptions options;
  options.kill_grace = absl::Milliseconds(500);
  make_runner(options);
  const auto t0 = std::chrono::steady_clock::now();
  const RunOutcome o = run(request({"/bin/sleep", "60"}, absl::Seconds(1)));
  EXPECT_EQ(o.status, RunStatus::kTimedOut) << o.detail;
  EXPECT_TRUE(absl::StrContains(o.detail, "SIGTERM")) << o.detail;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
  ASSERT_EQ(started_pids_.size(), 1u);
  EXPECT_TRUE(process_gone(started_pids_[0]));
}

TEST_F(ProcessRunnerTest, AJobIgnoringSigtermIsKilledWithItsWholeGroupAtTheDeadline) {
  ProcessRunnerOptions options;
  options.kill_grace = absl::Milliseconds(500);
  make_runner(options);
  // The shell and its child `sleep` both ignore SIGTERM; the grandchild
  // writes its pid first so the test can check it is gone too.
  const RunOutcome o = run(request(
      {"/bin/sh", "-c", "trap '' TERM; sleep 60 & echo child=$!; wait; wait"}, absl::Seconds(1)));
  EXPECT_EQ(o.status, RunStatus::kTimedOut) << o.detail;
  EXPECT_TRUE(absl::StrContains(o.detail, "SIGKILL")) << o.detail;
  const auto at = o.detail.find("child=");
  ASSERT_NE(at, std::string::npos) << o.detail;
  int child = 0;
  ASSERT_TRUE(absl::SimpleAtoi(
      absl_sv(o.detail.substr(at + 6, o.detail.find_first_not_of("0123456789", at + 6) - at - 6)),
      &child));
  EXPECT_TRUE(wait_for([&] { return process_gone(child); }))
      << "grandchild " << child << " survived";
}

TEST_F(ProcessRunnerTest, WhatTheJobLeavesInItsGroupIsEndedWhenItExits) {
  const RunOutcome o = run(request({"/bin/sh", "-c", "sleep 60 & echo child=$!"}));
  ASSERT_EQ(o.status, RunStatus::kSucceeded) << o.detail;
  const auto at = o.detail.find("child=");
  ASSERT_NE(at, std::string::npos) << o.detail;
  int child = 0;
  ASSERT_TRUE(absl::SimpleAtoi(
      absl_sv(o.detail.substr(at + 6, o.detail.find_first_not_of("0123456789\n", at + 6) - at - 6)),
      &child))
      << o.detail;
  EXPECT_TRUE(wait_for([&] { return process_gone(child); }))
      << "background child " << child << " survived";
}

TEST_F(ProcessRunnerTest, StopEndsTheJobAsStopped) {
  std::optional<RunOutcome> out;
  const RunHandle h =
      runner_->start(request({"/bin/sleep", "60"}), [&](RunOutcome o) { out = std::move(o); });
  ASSERT_EQ(runner_->running(), 1u);
  runner_->stop(h);
  EXPECT_FALSE(out.has_value()) << "done must not run inside stop()";
  ASSERT_TRUE(wait_for([&] { return out.has_value(); }));
  EXPECT_EQ(out->status, RunStatus::kStopped) << out->detail;
  EXPECT_EQ(runner_->running(), 0u);
  runner_->stop(h);      // finished handle: no-op
  runner_->stop(12345);  // unknown handle: no-op
  ASSERT_EQ(started_pids_.size(), 1u);
  EXPECT_TRUE(process_gone(started_pids_[0]));
}

TEST_F(ProcessRunnerTest, StopAfterTheJobFinishedReportsTheRealOutcome) {
  std::optional<RunOutcome> out;
  const RunHandle h =
      runner_->start(request({"/bin/true"}), [&](RunOutcome o) { out = std::move(o); });
  ASSERT_TRUE(wait_for([&] { return out.has_value(); }));
  runner_->stop(h);
  EXPECT_EQ(out->status, RunStatus::kSucceeded);
}

TEST_F(ProcessRunnerTest, TerminateAllStopsEveryJob) {
  int stopped = 0;
  for (int i = 0; i < 3; ++i)
    runner_->start(request({"/bin/sleep", "60"}),
                   [&](RunOutcome o) { stopped += o.status == RunStatus::kStopped; });
  EXPECT_EQ(runner_->running(), 3u);
  runner_->terminate_all();
  EXPECT_TRUE(wait_for([&] { return runner_->running() == 0; }));
  EXPECT_EQ(stopped, 3);
}

TEST_F(ProcessRunnerTest, OutputIsBoundedToItsTail) {
  ProcessRunnerOptions options;
  options.output_tail_bytes = 100;
  make_runner(options);
  const RunOutcome o = run(
      request({"/bin/sh", "-c",
               "i=0; while [ $i -lt 20000 ]; do echo line-$i; i=$((i+1)); done; echo the-end"}));
  ASSERT_EQ(o.status, RunStatus::kSucceeded) << o.detail.substr(0, 200);
  EXPECT_LT(o.detail.size(), 200u) << o.detail;
  EXPECT_TRUE(absl::StrContains(o.detail, "output: ...")) << o.detail;
  EXPECT_TRUE(absl::StrContains(o.detail, "the-end")) << o.detail;
}

TEST_F(ProcessRunnerTest, DestroyingTheRunnerKillsWhatRunsAndReportsNothing) {
  bool reported = false;
  runner_->start(request({"/bin/sleep", "60"}), [&](RunOutcome) { reported = true; });
  ASSERT_EQ(started_pids_.size(), 1u);
  const pid_t pid = started_pids_[0];
  runner_.reset();
  EXPECT_TRUE(process_gone(pid));
  io_.run_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(reported);
}

}  // namespace
}  // namespace kairos
