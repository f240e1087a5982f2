// The runners of a process that executes jobs (`kairos server` with local
// workers, `kairos worker`): built in one place, logged the same way.
//
// Purpose. build_job_runners() makes the CompositeRunner a Worker holds: the
// ProcessRunner for command jobs (every job under the job shim, its process
// group recorded in `job_records_dir`, SIGKILL half a lease margin after
// SIGTERM so a job stopped at its lease deadline is gone before the lease
// lapses) and the HttpRunner for webhook jobs, restricted to `kinds`. Every
// attempt is logged: process.started / process.exited, http.exited.
// shutdown_runners() stops every attempt and waits, bounded, until the
// processes are reaped.
#pragma once

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/kernel/lease_config.h"
#include "core/ports/clock.h"
#include "core/ports/event_log.h"
#include "core/ports/runner.h"
#include "prod/runners/composite_runner.h"
#include "prod/runtime/asio_runtime.h"

namespace kairos::cli {

struct JobRunnerSetup {
  std::string job_records_dir;
  LeaseConfig lease;
  // The kinds this process runs; unset: command and http.
  std::optional<std::vector<PayloadKind>> kinds;
  // Webhooks: extra CA certificates (PEM) trusted besides the system store.
  std::string http_ca_file;
};

// Fails (naming the file) when the CA file cannot be loaded.
absl::StatusOr<std::unique_ptr<CompositeRunner>> build_job_runners(boost::asio::io_context& io,
                                                                   AsioTimers& timers,
                                                                   const Clock& clock,
                                                                   EventLog& log,
                                                                   const JobRunnerSetup& setup);

// Stops every running attempt, then runs the loop until they are all
// reported or `kill_grace` plus a few seconds have passed.
void shutdown_runners(boost::asio::io_context& io, CompositeRunner& runners,
                      absl::Duration kill_grace);

// Records one event of `kind` now.
void note(EventLog& log, const Clock& clock, std::string_view kind,
          std::vector<EventField> fields = {});

std::uint64_t fresh_seed();

}  // namespace kairos::cli
