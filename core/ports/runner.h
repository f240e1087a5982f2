// Runner: executes one attempt of a job run.
//
// Purpose. The worker loop (core) decides *when* to run what, under which
// lease and fencing token; a Runner adapter does the running: a child process
// (prod/process_runner), an HTTP request (prod/http_runner) or a simulated job
// with a duration and a failure probability (sim/).
//
// Contract.
// - start() begins the attempt and returns at once; the outcome arrives later
//   through `done`, called exactly once, on the node's event loop, never
//   re-entrantly inside start().
// - The request carries the run's identity and fencing token; the adapter
//   passes both to the job (environment variables KAIROS_IDEMPOTENCY_KEY and
//   KAIROS_FENCING_TOKEN, or the HTTP headers Idempotency-Key and
//   Kairos-Fencing-Token) so downstream systems can fence stale attempts.
// - By `deadline` (the worker's own clock) the adapter must have stopped the
//   attempt; it then reports kTimedOut (the job's own timeout) or kStopped.
// - stop() asks for an early stop (lease about to lapse, shutdown). `done` is
//   still called once: with kStopped, or with the real outcome if the attempt
//   had already finished. Stopping an unknown or finished handle is a no-op.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "absl/time/time.h"
#include "core/ports/payload.h"

namespace kairos {

struct RunRequest {
  std::string job_id;
  std::uint64_t incarnation = 0;
  absl::Time nominal_time;    // the occurrence this run stands for
  std::uint32_t attempt = 1;  // 1-based
  std::uint64_t fencing_token = 0;
  std::string idempotency_key;  // (job id, incarnation, nominal time), encoded
  Payload payload;
  absl::Time deadline;  // worker clock: the attempt must be over by then
};

enum class RunStatus : std::uint8_t {
  kSucceeded,
  kFailed,           // failed; the retry policy may try again
  kFailedPermanent,  // failed in a way retrying cannot fix (e.g. bad URL)
  kTimedOut,         // exceeded the job's own timeout
  kStopped,          // stopped by the worker (lease deadline, shutdown)
};

struct RunOutcome {
  RunStatus status = RunStatus::kFailed;
  int exit_code = 0;   // process exit code or HTTP status, when there is one
  std::string detail;  // short human-readable explanation
};

using RunHandle = std::uint64_t;

class Runner {
 public:
  virtual ~Runner() = default;
  virtual RunHandle start(RunRequest request, std::function<void(RunOutcome)> done) = 0;
  virtual void stop(RunHandle handle) = 0;
};

}  // namespace kairos
