// The HTTP runner against the real fencing sink (tests/e2e/fencing_sink):
// the headers the runner sends are exactly what docs/FENCING.md's HTTP
// pattern needs. A first attempt applies, a retry with a higher token gets
// the first answer back (and succeeds), a stale token is refused with 409
// (a permanent failure), and the sink's state file records one effect.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "prod/runners/http_runner.h"
#include "prod/runtime/asio_runtime.h"
#include "tests/support/loop_wait.h"

extern char** environ;

namespace kairos {
namespace {

std::string make_temp_dir() {
  std::string tmpl = "/tmp/kairos-fencing-sink-XXXXXX";
  EXPECT_NE(::mkdtemp(tmpl.data()), nullptr);
  return tmpl;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class FencingSinkE2eTest : public ::testing::Test {
 protected:
  FencingSinkE2eTest() : dir_(make_temp_dir()) {
    std::string state = dir_ + "/state.json";
    std::string port_file = dir_ + "/port";
    std::vector<std::string> args = {FENCING_SINK_BINARY, "--state", state, "--port-file",
                                     port_file};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    EXPECT_EQ(::posix_spawn(&pid_, argv[0], nullptr, nullptr, argv.data(), environ), 0);
    test_support::run_until(io_, [&] { return std::filesystem::exists(port_file); });
    port_ = slurp(port_file);
    while (!port_.empty() && port_.back() == '\n') port_.pop_back();
    auto r = HttpRunner::create(io_, timers_, clock_, {});
    EXPECT_TRUE(r.ok()) << r.status();
    if (r.ok()) runner_ = *std::move(r);
  }
  ~FencingSinkE2eTest() override {
    runner_.reset();
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int status = 0;
      ::waitpid(pid_, &status, 0);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    }
    std::filesystem::remove_all(dir_);
  }

  RunOutcome attempt(std::uint64_t token, std::uint32_t number) {
    RunRequest r;
    r.job_id = "job-1";
    r.incarnation = 1;
    r.nominal_time = absl::FromUnixSeconds(1'767'225'600);
    r.attempt = number;
    r.fencing_token = token;
    r.idempotency_key = "job-1/1/1767225600000000";
    r.run_id = "job-1/1/2026-01-01T00:00:00Z";
    r.payload = HttpPayload{"POST", "http://127.0.0.1:" + port_ + "/effects", {}, "report"};
    r.deadline = clock_.now() + absl::Minutes(1);
    std::optional<RunOutcome> out;
    runner_->start(std::move(r), [&](RunOutcome o) { out = std::move(o); });
    test_support::run_until(io_, [&] { return out.has_value(); });
    return out.value_or(RunOutcome{RunStatus::kFailed, -1, "no outcome within the bound"});
  }

  std::string dir_;
  pid_t pid_ = 0;
  std::string port_;
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_ =
      boost::asio::make_work_guard(io_);
  SystemClock clock_;
  AsioTimers timers_{io_};
  std::unique_ptr<HttpRunner> runner_;
};

TEST_F(FencingSinkE2eTest, OneEffectPerRunAndStaleAttemptsRefused) {
  ASSERT_NE(runner_, nullptr);
  const RunOutcome first = attempt(5, 1);
  EXPECT_EQ(first.status, RunStatus::kSucceeded) << first.detail;
  const RunOutcome retry = attempt(7, 2);
  EXPECT_EQ(retry.status, RunStatus::kSucceeded) << retry.detail;
  EXPECT_EQ(retry.output, first.output) << "a duplicate gets the first answer";
  const RunOutcome stale = attempt(5, 1);
  EXPECT_EQ(stale.status, RunStatus::kFailedPermanent) << stale.detail;
  EXPECT_EQ(stale.exit_code, 409);

  const auto state = boost::json::parse(slurp(dir_ + "/state.json"));
  const auto& effects = state.at("effects").as_array();
  ASSERT_EQ(effects.size(), 1u);
  EXPECT_EQ(effects[0].at("token").to_number<std::uint64_t>(), 5u);
  EXPECT_EQ(effects[0].at("body").as_string(), "report");
  const auto& key = state.at("keys").at("job-1/1/1767225600000000");
  EXPECT_EQ(key.at("highest_token").to_number<std::uint64_t>(), 7u);
  EXPECT_EQ(key.at("rejected").to_number<std::uint64_t>(), 1u);
}

}  // namespace
}  // namespace kairos
