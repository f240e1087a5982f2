#include "prod/runners/composite_runner.h"

#include <algorithm>
#include <string>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"

namespace kairos {

std::string_view payload_kind_name(PayloadKind kind) {
  switch (kind) {
    case PayloadKind::kCommand:
      return "command";
    case PayloadKind::kHttp:
      return "http";
  }
  return "unknown";
}

PayloadKind payload_kind(const Payload& payload) {
  return std::holds_alternative<HttpPayload>(payload) ? PayloadKind::kHttp : PayloadKind::kCommand;
}

CompositeRunner::CompositeRunner(Timers& timers, std::unique_ptr<Runner> command,
                                 std::unique_ptr<Runner> http, CompositeRunnerOptions options)
    : timers_(timers),
      command_(std::move(command)),
      http_(std::move(http)),
      options_(std::move(options)) {}

CompositeRunner::~CompositeRunner() {
  *alive_ = false;
  // The inner runners go with their members, reporting nothing.
}

Runner* CompositeRunner::runner_for(PayloadKind kind) const {
  if (options_.accepted_kinds) {
    const auto& k = *options_.accepted_kinds;
    if (std::find(k.begin(), k.end(), kind) == k.end()) return nullptr;
  }
  return kind == PayloadKind::kHttp ? http_.get() : command_.get();
}

RunHandle CompositeRunner::start(RunRequest request, std::function<void(RunOutcome)> done) {
  const RunHandle handle = ++next_handle_;
  const PayloadKind kind = payload_kind(request.payload);
  Runner* runner = runner_for(kind);
  if (runner == nullptr) {
    timers_.post([alive = alive_, done = std::move(done), kind] {
      if (!*alive) return;
      done(RunOutcome{RunStatus::kFailedPermanent, 0,
                      absl::StrCat("payload kind '", absl_sv(payload_kind_name(kind)),
                                   "' is not enabled on this server"),
                      /*started=*/false});
    });
    return handle;
  }
  // The inner runner never calls `done` inside start(), so the route exists
  // before any outcome can arrive.
  const RunHandle inner = runner->start(
      std::move(request), [this, alive = alive_, handle, done = std::move(done)](RunOutcome o) {
        if (!*alive) return;
        routes_.erase(handle);
        done(std::move(o));  // last: it may destroy this runner
      });
  routes_.emplace(handle, Route{runner, inner});
  return handle;
}

void CompositeRunner::stop(RunHandle handle) {
  const auto it = routes_.find(handle);
  if (it == routes_.end()) return;
  const Route route = it->second;
  route.runner->stop(route.inner);
}

void CompositeRunner::terminate_all() {
  std::vector<Route> all;
  for (const auto& [h, route] : routes_) all.push_back(route);
  for (const Route& r : all) r.runner->stop(r.inner);
}

}  // namespace kairos
