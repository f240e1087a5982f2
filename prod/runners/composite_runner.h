// CompositeRunner: one Runner that hands each attempt to the runner for its
// payload's kind (a command to the process runner, an HTTP request to the
// HTTP runner).
//
// Purpose. The worker loop holds one Runner (core/ports/runner.h); a server
// runs several kinds of payload. The composite routes by kind, forwards
// stop() to the runner that has the attempt, and passes every outcome
// through unchanged, so the composite keeps each runner's guarantees (`done`
// exactly once, on the loop, never inside start() or stop(), after the
// attempt is over).
//
// Kinds. A kind is available when a runner for it was given and, when
// options.accepted_kinds is set, it is listed there (a server can turn off
// webhooks, or commands, without removing the code). An attempt of another
// kind fails to start: kFailedPermanent, started = false, detail "payload
// kind 'http' is not enabled on this server", posted through `timers`.
//
// Handles are the composite's own (never 0, never reused), mapped to the
// inner runner's. The composite owns its runners: destroying it destroys
// them (which ends their attempts without outcomes, per the port).
//
// Threading. The loop's thread only, like the runners it holds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "core/ports/payload.h"
#include "core/ports/runner.h"
#include "core/ports/timers.h"

namespace kairos {

enum class PayloadKind : std::uint8_t { kCommand, kHttp };

// "command" / "http", as in the API's job fields.
std::string_view payload_kind_name(PayloadKind kind);
PayloadKind payload_kind(const Payload& payload);

struct CompositeRunnerOptions {
  // The kinds this server runs; unset: every kind that has a runner.
  std::optional<std::vector<PayloadKind>> accepted_kinds;
};

class CompositeRunner final : public Runner {
 public:
  // Either runner may be null: that kind is then not available.
  CompositeRunner(Timers& timers, std::unique_ptr<Runner> command, std::unique_ptr<Runner> http,
                  CompositeRunnerOptions options = {});
  ~CompositeRunner() override;
  CompositeRunner(const CompositeRunner&) = delete;
  CompositeRunner& operator=(const CompositeRunner&) = delete;

  RunHandle start(RunRequest request, std::function<void(RunOutcome)> done) override;
  void stop(RunHandle handle) override;

  // Shutdown: stop() every attempt routed and not yet reported.
  void terminate_all();
  // Attempts routed and not yet reported.
  std::size_t running() const { return routes_.size(); }
  // Whether attempts of `kind` are run (and not failed at start).
  bool available(PayloadKind kind) const { return runner_for(kind) != nullptr; }

  // The inner runners (null when not given), e.g. for their own statistics.
  Runner* command_runner() const { return command_.get(); }
  Runner* http_runner() const { return http_.get(); }

 private:
  struct Route {
    Runner* runner = nullptr;
    RunHandle inner = 0;
  };
  Runner* runner_for(PayloadKind kind) const;

  Timers& timers_;
  std::unique_ptr<Runner> command_;
  std::unique_ptr<Runner> http_;
  CompositeRunnerOptions options_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  RunHandle next_handle_ = 0;
  std::map<RunHandle, Route> routes_;
};

}  // namespace kairos
