// Runner: executes one attempt of a job run.
//
// Purpose. The worker loop (core) decides *when* to run what, under which
// lease and fencing token; a Runner adapter does the running: a child process
// (prod/runners/process_runner), an HTTP request (an HTTP runner; not built
// yet: the process runner answers an HttpPayload with kFailedPermanent) or a
// simulated job with a duration and failure rates (sim/world/sim_runner).
//
// An attempt's life. start() begins the attempt and returns its handle at
// once; it never blocks on the job and never calls `done` itself. The
// attempt then ends in exactly one RunOutcome, delivered through `done`:
// - exactly once per start(), including a start that failed (below);
// - on the node's event loop (the loop of the Timers the adapter was given),
//   never re-entrantly inside start() or stop();
// - only after the attempt is really over: nothing the adapter started for it
//   is still running. A process runner reports after the child and every
//   process left in its process group are killed and reaped; an HTTP runner
//   after the response was read or the request abandoned (connection closed,
//   so no further byte of it is sent). What the job already handed to another
//   system before that (a write in flight) may still land afterwards; that is
//   what the fencing token and the idempotency key are for.
// The one exception to "exactly once": destroying the runner (process exit,
// a simulated crash) ends every attempt still running and delivers none of
// their outcomes.
//
// Failure to start. When the attempt cannot begin at all (the program is
// missing or not executable, a bad working directory, an empty argv, a
// payload kind this runner cannot run, no processes or descriptors left) it
// is still reported through `done`, never synchronously: RunOutcome::started
// is false, status is kFailedPermanent when retrying cannot help and kFailed
// when it might (resource exhaustion), exit_code is 0 and detail names the
// cause ("cannot execute 'x': No such file or directory"). Nothing of the job
// ran, so there is no side effect to fence. A job that ran and failed has
// started == true.
//
// Outcomes of an attempt that started:
//   kSucceeded        the job finished and said so (exit 0, HTTP 2xx)
//   kFailed           it finished and failed (exit N != 0, killed by a
//                     signal nobody here sent, HTTP 5xx); retryable
//   kFailedPermanent  it failed in a way retrying cannot fix
//   kTimedOut         request.deadline came first: the adapter stopped it
//   kStopped          stop() came first
// exit_code is the process exit code (128 + signal when killed) or the HTTP
// status, 0 when there is none; detail is a short human-readable explanation.
//
// Deadline. request.deadline is on the worker's own clock (the job's own
// timeout; the worker enforces its lease itself, through stop()). The adapter
// must have stopped the attempt by then: a process runner sends SIGTERM a
// grace period before it and SIGKILL at it, so `done` (kTimedOut) follows the
// deadline by the time the kernel needs to kill and reap. A deadline already
// past at start() stops the attempt at once. When the job finishes on its
// own before the deadline fires, the real outcome is reported.
//
// Cancellation. stop(handle) asks for an early stop (lease about to lapse,
// shutdown) and returns at once; the attempt is then stopped the same way
// (SIGTERM, SIGKILL after the grace period) and `done` is still called
// exactly once: kStopped when the stop took effect, even if the job would
// have completed anyway (so kStopped means "effect unknown": the next
// attempt, with a higher token, settles it), or the real outcome when the
// attempt had already finished. stop() of an unknown, failed-to-start or
// already reported handle, and a second stop(), are no-ops.
//
// Identity and fencing. The adapter hands the run's identity to the job so
// downstream systems can deduplicate retries and fence stale attempts:
// - a process gets the environment variables KAIROS_IDEMPOTENCY_KEY
//   (request.idempotency_key verbatim: "job/incarnation/nominal-micros") and
//   KAIROS_FENCING_TOKEN (request.fencing_token in decimal), plus
//   KAIROS_JOB_ID, KAIROS_INCARNATION, KAIROS_NOMINAL_TIME (RFC 3339, UTC)
//   and KAIROS_ATTEMPT; they override the server's and the payload's own
//   environment, so a payload cannot forge a token;
// - an HTTP request carries the headers Idempotency-Key and
//   Kairos-Fencing-Token with the same values;
// - the simulated runner writes its effect to the simulated sink with the
//   same key and token, and the sink rejects a token lower than one it saw.
// A runner never interprets the token or the key itself.
//
// Re-entrancy. `done` may call start() and stop() and may destroy the runner:
// adapters call it last and touch nothing of theirs after it returns.
// Handles are never 0 and never reused by one Runner instance.
//
// Threading. start(), stop() and the destructor run on the node's event
// loop; nothing here is thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

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
  absl::Time deadline;  // worker clock: the adapter stops the attempt by then
  // How late the occurrence fired (dispatch time minus its fire time; zero
  // when on time and for manual runs) and how many nominal occurrences this
  // run stands for (more than 1 when run-once folded a backlog into it). A
  // process gets them as KAIROS_LATE_BY and KAIROS_OCCURRENCES when late or
  // standing for more than one.
  absl::Duration late_by = absl::ZeroDuration();
  std::uint32_t occurrences = 1;
  // The run's id as the API shows it (KAIROS_RUN_ID): job/incarnation/nominal.
  std::string run_id;
};

enum class RunStatus : std::uint8_t {
  kSucceeded,
  kFailed,           // failed; the retry policy may try again
  kFailedPermanent,  // failed in a way retrying cannot fix (e.g. bad URL)
  kTimedOut,         // exceeded the job's own timeout
  kStopped,          // stopped by the worker (lease deadline, shutdown)
};
// The status's one name, in the API, the logs and the metrics: "succeeded",
// "failed", "failed_permanent", "timed_out", "stopped".
constexpr std::string_view to_string(RunStatus status) {
  switch (status) {
    case RunStatus::kSucceeded:
      return "succeeded";
    case RunStatus::kFailed:
      return "failed";
    case RunStatus::kFailedPermanent:
      return "failed_permanent";
    case RunStatus::kTimedOut:
      return "timed_out";
    case RunStatus::kStopped:
      return "stopped";
  }
  return "?";
}

struct RunOutcome {
  RunStatus status = RunStatus::kFailed;
  int exit_code = 0;   // process exit code or HTTP status, when there is one
  std::string detail;  // short human-readable explanation
  // False when the attempt never began (see "Failure to start"): nothing of
  // the job ran.
  bool started = true;
  // What the job printed (process: the tail of stdout and stderr; HTTP: the
  // start of the response body), at most kMaxRunOutputSize bytes; the
  // adapter truncates, never the caller.
  std::string output;
};
inline constexpr std::size_t kMaxRunOutputSize = 64 * 1024;

using RunHandle = std::uint64_t;

class Runner {
 public:
  // Ends every attempt still running without reporting it (see above).
  virtual ~Runner() = default;

  // Begins one attempt of `request` and returns its handle; the outcome
  // arrives later through `done`, exactly once (see the file comment).
  virtual RunHandle start(RunRequest request, std::function<void(RunOutcome)> done) = 0;

  // Asks the attempt to stop early; a no-op for an unknown or finished handle.
  virtual void stop(RunHandle handle) = 0;
};

}  // namespace kairos
