// ProcessRunner: runs a job's CommandPayload as a child process.
//
// Purpose. The production Runner (core/ports/runner.h) for command jobs. Each
// attempt is one child process started from an argv vector (never through a
// shell: argv[0] is the program, found on the server's PATH when it has no
// '/'), in its own process group, with
//   environment = the server's environment
//               + the payload's env (overrides the server's)
//               + KAIROS_IDEMPOTENCY_KEY, KAIROS_FENCING_TOKEN, KAIROS_JOB_ID,
//                 KAIROS_INCARNATION, KAIROS_NOMINAL_TIME (RFC 3339, UTC),
//                 KAIROS_ATTEMPT, KAIROS_RUN_ID (request.run_id) and
//                 KAIROS_SCHEDULED_AT (the nominal time again, RFC 3339 UTC);
//                 for a run that fired late (request.late_by > 0) or stands
//                 for several occurrences (request.occurrences > 1) also
//                 KAIROS_LATE_BY (decimal seconds with exactly six fraction
//                 digits, e.g. "90.250000"; format_late_by) and
//                 KAIROS_OCCURRENCES (decimal); otherwise those two are
//                 removed. These override both; a job cannot be given a
//                 forged token,
//   working directory = payload.working_dir, else options.working_dir, else
//                 the server's,
//   stdin = /dev/null; stdout and stderr = one pipe the runner reads.
//
// Outcomes (delivered through `done`, exactly once, on the loop, never inside
// start() or stop()):
//   exit 0                              -> kSucceeded
//   exit N != 0                         -> kFailed, exit_code N
//   killed by a signal nobody here sent -> kFailed, exit_code 128 + signal
//   the program cannot be executed (missing, not executable, not a
//   program, bad working directory)     -> kFailedPermanent, started = false
//   fork/exec failed for lack of resources (EAGAIN, ENOMEM, EMFILE)
//                                       -> kFailed (a retry may work),
//                                          started = false
//   request.deadline reached            -> kTimedOut
//   stop()                              -> kStopped (or the real outcome if
//                                          the process had already exited)
//   HttpPayload                         -> kFailedPermanent, started = false:
//                                          "http runner not available in
//                                          this build" (the server routes
//                                          HTTP payloads to the HttpRunner
//                                          through the CompositeRunner;
//                                          this runner never runs them)
// `detail` says what happened ("exited with code 3", "killed by SIGKILL at
// the deadline", ...) followed by the last options.output_tail_bytes bytes of
// the combined stdout/stderr. RunOutcome::output is the last
// options.output_bytes bytes of it (a tail that starts inside a UTF-8
// sequence drops the cut sequence). Output is kept in one fixed ring of
// max(output_bytes, output_tail_bytes) bytes per attempt (output_ring.h): a
// job printing gigabytes costs the server no more memory, and the pipe is
// read as fast as the job writes, so the job never stalls on it. If
// options.on_exit is set it receives the same facts for logging.
//
// Stopping. At the deadline, or on stop(), the whole process group gets
// SIGTERM, then SIGKILL options.kill_grace later if anything is left. The
// deadline is met: SIGTERM is sent kill_grace before request.deadline (or at
// once when less is left), SIGKILL at the deadline. A stop() is finished at
// most kill_grace after it was asked; keep kill_grace below the lease margin
// (LeaseConfig::margin) so a stopped attempt is gone before its lease lapses.
// `done` is called only after the process was reaped, so a reported attempt
// is really over. When the main process exits on its own, anything it left
// running in its process group is killed too (a run's side effects must not
// outlive its report); a job that means to leave a daemon behind must put it
// in its own session.
//
// Dying with the worker. With options.job_shim set (the server always sets
// it) the child is not the job but the job shim (prod/runners/job_shim.h):
// the `kairos` binary again, leading the job's process group, which runs the
// job and reports its exit status as its own. If the worker process dies in
// any way, the shim kills the whole group; if the shim is killed, this runner
// kills the group as above. With options.record_dir the shim records the
// group before the job starts, and the record is removed once the group was
// killed and the shim reaped, so a restarted server can kill what a dead one
// left (prod/runners/job_records.h). The pid given to on_start is the shim's,
// i.e. the job's process group id; a job that cannot be executed is reported
// as before (kFailedPermanent, "cannot execute ..."), with ProcessExit::pid 0,
// after on_start.
//
// Reaping never blocks the loop: each child has a pidfd (Linux >= 5.3)
// watched by the io_context; where pidfd_open is unavailable the runner polls
// with waitid(WNOHANG | WNOWAIT) every 20 ms. The child is reaped only after
// its group was signalled, so a process group id is never signalled after it
// could have been reused.
//
// Threading. Everything (constructor, start, stop, terminate_all, destructor)
// runs on the loop thread that runs `io`; `timers` must post to that loop.
// The destructor kills (SIGKILL) and reaps, blocking briefly, whatever is
// still running; outcomes of those attempts are never delivered.
#pragma once

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "core/ports/clock.h"
#include "core/ports/runner.h"
#include "core/ports/timers.h"

namespace kairos {

struct ProcessExit {
  const RunRequest* request = nullptr;  // valid during the call only
  pid_t pid = 0;                        // 0 when the process never started
  RunOutcome outcome;
  std::string output_tail;  // the last bytes of stdout+stderr
  absl::Duration elapsed;
};

struct ProcessRunnerOptions {
  // SIGTERM -> SIGKILL grace, and how long before the deadline SIGTERM goes.
  absl::Duration kill_grace = absl::Seconds(1);
  // How much of the combined stdout/stderr goes into `detail` and
  // ProcessExit::output_tail (the log line): the last bytes.
  std::size_t output_tail_bytes = 1024;
  // How much goes into RunOutcome::output: the last bytes; at most
  // kMaxRunOutputSize.
  std::size_t output_bytes = 16 * 1024;
  // Default working directory for payloads without one; empty: the server's.
  std::string working_dir;
  // The job shim (prod/runners/job_shim.h) to start every job through: the
  // `kairos` binary, e.g. "/proc/self/exe" in the server. With it, a job and
  // everything in its process group die with the worker process. Empty: jobs
  // are started directly and outlive a worker that dies (kill -9, crash).
  std::string job_shim;
  // With job_shim: the directory where each job's process group is recorded
  // while it runs (prod/runners/job_records.h); empty: no records.
  std::string record_dir;
  // Called on the loop when a process started / finished (for logs).
  std::function<void(const RunRequest&, pid_t)> on_start;
  std::function<void(const ProcessExit&)> on_exit;
};

// KAIROS_LATE_BY's text: "S.ffffff", decimal seconds with six fraction
// digits; a negative duration prints as "0.000000".
std::string format_late_by(absl::Duration late_by);

class ProcessRunner final : public Runner {
 public:
  ProcessRunner(boost::asio::io_context& io, Timers& timers, const Clock& clock,
                ProcessRunnerOptions options = {});
  ~ProcessRunner() override;
  ProcessRunner(const ProcessRunner&) = delete;
  ProcessRunner& operator=(const ProcessRunner&) = delete;

  RunHandle start(RunRequest request, std::function<void(RunOutcome)> done) override;
  void stop(RunHandle handle) override;

  // Shutdown: stop() every running attempt. Their outcomes (kStopped) are
  // delivered as usual; running() drops to 0 within kill_grace plus the time
  // the kernel needs to deliver SIGKILL.
  void terminate_all();

  // Attempts started and not yet reported.
  std::size_t running() const { return procs_.size(); }

 private:
  struct Proc;
  using ProcPtr = std::shared_ptr<Proc>;
  enum class Kill : std::uint8_t { kNone, kDeadline, kStop };

  struct ShimStatus {
    int exec_errno = 0;   // the job could not be executed
    std::string refused;  // the shim refused to run the job
  };
  ShimStatus read_shim_status(Proc& p);
  void forget_group(const Proc& p);
  void fail_to_start(RunRequest request, std::function<void(RunOutcome)> done, RunStatus status,
                     std::string detail);
  void watch_output(const ProcPtr& p);
  void watch_exit(const ProcPtr& p);
  void poll_exit(const ProcPtr& p);
  void on_exited(const ProcPtr& p);
  void finish(const ProcPtr& p);
  void begin_kill(const ProcPtr& p, Kill why, absl::Duration grace);
  void drain_output(Proc& p);
  void append_output(Proc& p, const char* data, std::size_t n);

  boost::asio::io_context& io_;
  Timers& timers_;
  const Clock& clock_;
  ProcessRunnerOptions options_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  RunHandle next_handle_ = 0;
  std::map<RunHandle, ProcPtr> procs_;
};

}  // namespace kairos
