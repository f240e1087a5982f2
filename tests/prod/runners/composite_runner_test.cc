// CompositeRunner with fake inner runners on a manual loop: routing by
// payload kind, its own handles, stop() forwarded to the right runner with
// the inner handle, outcomes passed through unchanged, kinds not configured
// (no runner, or not accepted) failing to start permanently and naming the
// kind, never inside start(), terminate_all(), and re-entrant destruction.
#include "prod/runners/composite_runner.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "core/twins/manual_clock.h"
#include "core/twins/manual_loop.h"

namespace kairos {
namespace {

// Records what it is asked; outcomes come when the test says so (posted).
class ScriptedRunner final : public Runner {
 public:
  explicit ScriptedRunner(Timers& loop) : loop_(loop) {}

  RunHandle start(RunRequest request, std::function<void(RunOutcome)> done) override {
    const RunHandle h = ++next_;
    started.push_back(request.job_id);
    pending_[h] = std::move(done);
    return h;
  }
  void stop(RunHandle h) override {
    stops.push_back(h);
    complete(h, RunOutcome{RunStatus::kStopped, 0, "stopped"});
  }
  void complete(RunHandle h, RunOutcome o) {
    auto it = pending_.find(h);
    if (it == pending_.end()) return;
    auto done = std::move(it->second);
    pending_.erase(it);
    loop_.post([done = std::move(done), o = std::move(o)] { done(o); });
  }

  std::vector<std::string> started;
  std::vector<RunHandle> stops;

 private:
  Timers& loop_;
  RunHandle next_ = 0;
  std::map<RunHandle, std::function<void(RunOutcome)>> pending_;
};

class CompositeRunnerTest : public ::testing::Test {
 protected:
  void make(bool with_command, bool with_http, CompositeRunnerOptions options = {}) {
    auto c = std::make_unique<ScriptedRunner>(loop_);
    auto h = std::make_unique<ScriptedRunner>(loop_);
    command_ = c.get();
    http_ = h.get();
    composite_ =
        std::make_unique<CompositeRunner>(loop_, with_command ? std::move(c) : nullptr,
                                          with_http ? std::move(h) : nullptr, std::move(options));
  }

  static RunRequest command(std::string job) {
    RunRequest r;
    r.job_id = std::move(job);
    r.payload = CommandPayload{{"/bin/true"}, {}, {}};
    return r;
  }
  static RunRequest webhook(std::string job) {
    RunRequest r;
    r.job_id = std::move(job);
    r.payload = HttpPayload{"POST", "http://127.0.0.1/", {}, ""};
    return r;
  }

  ManualClock clock_;
  ManualLoop loop_{clock_};
  ScriptedRunner* command_ = nullptr;
  ScriptedRunner* http_ = nullptr;
  std::unique_ptr<CompositeRunner> composite_;
};

TEST_F(CompositeRunnerTest, RoutesByKindWithItsOwnHandlesAndPassesOutcomesThrough) {
  make(true, true);
  std::map<std::string, RunOutcome> out;
  const RunHandle a = composite_->start(command("a"), [&](RunOutcome o) { out["a"] = o; });
  const RunHandle b = composite_->start(webhook("b"), [&](RunOutcome o) { out["b"] = o; });
  EXPECT_NE(a, 0u);
  EXPECT_NE(a, b) << "both inner runners returned handle 1";
  EXPECT_EQ(command_->started, std::vector<std::string>{"a"});
  EXPECT_EQ(http_->started, std::vector<std::string>{"b"});
  EXPECT_EQ(composite_->running(), 2u);

  RunOutcome o{RunStatus::kFailed, 503, "HTTP 503", true};
  o.output = "body";
  http_->complete(1, o);
  command_->complete(1, RunOutcome{RunStatus::kSucceeded, 0, "exited with code 0"});
  loop_.run_ready();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out["b"].status, RunStatus::kFailed);
  EXPECT_EQ(out["b"].exit_code, 503);
  EXPECT_EQ(out["b"].output, "body");
  EXPECT_EQ(out["a"].status, RunStatus::kSucceeded);
  EXPECT_EQ(composite_->running(), 0u);
}

TEST_F(CompositeRunnerTest, StopGoesToTheRunnerThatHasTheAttempt) {
  make(true, true);
  std::optional<RunOutcome> out;
  composite_->start(command("a"), [](RunOutcome) {});
  composite_->start(command("a2"), [](RunOutcome) {});
  const RunHandle b = composite_->start(webhook("b"), [&](RunOutcome o) { out = o; });
  composite_->stop(b);
  EXPECT_TRUE(command_->stops.empty());
  EXPECT_EQ(http_->stops, std::vector<RunHandle>{1});  // the inner handle
  EXPECT_FALSE(out.has_value());
  loop_.run_ready();
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->status, RunStatus::kStopped);
  composite_->stop(b);     // reported: no-op
  composite_->stop(4242);  // unknown: no-op
  EXPECT_EQ(http_->stops.size(), 1u);
}

TEST_F(CompositeRunnerTest, AKindWithoutARunnerFailsToStartNamingIt) {
  make(true, false);
  std::optional<RunOutcome> out;
  composite_->start(webhook("b"), [&](RunOutcome o) { out = o; });
  EXPECT_FALSE(out.has_value()) << "done must not run inside start()";
  EXPECT_FALSE(composite_->available(PayloadKind::kHttp));
  EXPECT_TRUE(composite_->available(PayloadKind::kCommand));
  loop_.run_ready();
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->status, RunStatus::kFailedPermanent);
  EXPECT_FALSE(out->started);
  EXPECT_EQ(out->detail, "payload kind 'http' is not enabled on this server");
  EXPECT_EQ(composite_->running(), 0u);
}

TEST_F(CompositeRunnerTest, AKindNotAcceptedFailsEvenWithARunner) {
  CompositeRunnerOptions options;
  options.accepted_kinds = std::vector<PayloadKind>{PayloadKind::kHttp};
  make(true, true, options);
  std::optional<RunOutcome> out;
  composite_->start(command("a"), [&](RunOutcome o) { out = o; });
  loop_.run_ready();
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->status, RunStatus::kFailedPermanent);
  EXPECT_TRUE(absl::StrContains(out->detail, "'command'")) << out->detail;
  EXPECT_TRUE(command_->started.empty());
  composite_->start(webhook("b"), [](RunOutcome) {});
  EXPECT_EQ(http_->started.size(), 1u);
}

TEST_F(CompositeRunnerTest, TerminateAllStopsEveryAttempt) {
  make(true, true);
  int stopped = 0;
  for (int i = 0; i < 2; ++i) {
    composite_->start(command("a"),
                      [&](RunOutcome o) { stopped += o.status == RunStatus::kStopped; });
    composite_->start(webhook("b"),
                      [&](RunOutcome o) { stopped += o.status == RunStatus::kStopped; });
  }
  composite_->terminate_all();
  loop_.run_ready();
  EXPECT_EQ(stopped, 4);
  EXPECT_EQ(composite_->running(), 0u);
}

TEST_F(CompositeRunnerTest, DoneMayDestroyTheRunnerAndDestructionReportsNothing) {
  make(true, true);
  int reported = 0;
  composite_->start(command("a"), [&](RunOutcome) {
    ++reported;
    composite_.reset();
  });
  composite_->start(webhook("b"), [&](RunOutcome) { ++reported; });
  command_->complete(1, RunOutcome{RunStatus::kSucceeded, 0, ""});
  http_->complete(1, RunOutcome{RunStatus::kSucceeded, 0, ""});  // posted, then orphaned
  loop_.run_ready();
  EXPECT_EQ(composite_, nullptr);
  EXPECT_EQ(reported, 1);
}

TEST(PayloadKindTest, NamesMatchTheApiFields) {
  EXPECT_EQ(payload_kind_name(PayloadKind::kCommand), "command");
  EXPECT_EQ(payload_kind_name(PayloadKind::kHttp), "http");
  EXPECT_EQ(payload_kind(Payload{HttpPayload{}}), PayloadKind::kHttp);
  EXPECT_EQ(payload_kind(Payload{CommandPayload{}}), PayloadKind::kCommand);
}

}  // namespace
}  // namespace kairos
