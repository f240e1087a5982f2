// The job shim: the supervising step between a worker and a job, so that a
// job never outlives the worker that started it.
//
// Purpose. The ProcessRunner does not start a job directly: it starts the
// `kairos` binary again as `kairos __job-shim ...` (an internal subcommand,
// not for users), as the leader of a new process group, with the job's
// environment, working directory and stdin/stdout/stderr. The shim
//   1. asks the kernel for SIGTERM when its parent (the worker) dies
//      (PR_SET_PDEATHSIG), then checks that the parent is still the one it
//      was started by (the parent may have died before the request);
//   2. writes the group's record (prod/runners/job_records.h) when given a
//      records directory, and refuses to run the job if it cannot;
//   3. forks and executes the job in its own (the shim's) process group; the
//      job's main process gets SIGKILL if the shim dies (PR_SET_PDEATHSIG,
//      kept across execve);
//   4. waits. When the job's main process ends, the shim ends the same way
//      (exit code, or the same signal) so the runner sees the job's outcome;
//      the runner then kills what is left in the group and reaps the shim,
//      as it did for the job itself before. When the parent dies, the shim
//      kills its whole process group (SIGKILL: the job, its children and
//      grandchildren, and the shim itself). Any other signal (the worker's
//      SIGTERM to the group when it stops a run, a job signalling its own
//      group) leaves the shim waiting.
//
// Why this and not something else. The group id is the shim's pid and the
// runner holds the shim unreaped until it has signalled the group, so the
// runner's stop path keeps its guarantee that a group id is never signalled
// after it could have been reused. If the shim itself is killed (kill -9, the
// OOM killer) while the worker lives, the runner sees the shim exit and kills
// the group as before. A child subreaper would see orphaned descendants but
// would still need a pdeath signal and a way to find them; a cgroup per job
// would also catch processes that leave the group (setsid), but needs
// delegated cgroup rights the server cannot assume. What escapes a process
// group on purpose (setsid) is out of reach, as before.
//
// Protocol. argv: `__job-shim --parent PID --records DIR --path PATH -- ARGV...`
// (DIR may be empty: no record; PATH is the server's search path for an
// ARGV[0] without '/'). The token recorded is the job environment's
// KAIROS_FENCING_TOKEN; the run recorded with it is KAIROS_JOB_ID,
// KAIROS_INCARNATION, KAIROS_NOMINAL_TIME and KAIROS_ATTEMPT (all valid, or
// the record names no run and its run is not handed back at restart). fd 3, when open, is the
// status pipe: the shim writes at most one line before it exits, "exec-error ERRNO" (the job could
// not be executed) or "shim-error TEXT" (the shim refused to run the job), and closes it on exec so
// the job never sees it.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

namespace kairos {

inline constexpr std::string_view kJobShimCommand = "__job-shim";
inline constexpr int kJobShimStatusFd = 3;
// The shim's own exit code when it refuses to run the job.
inline constexpr int kJobShimRefused = 125;

// The argv that runs `job_argv` under the shim found at `program`.
std::vector<std::string> job_shim_argv(const std::string& program, pid_t parent,
                                       const std::string& record_dir,
                                       const std::string& search_path,
                                       const std::vector<std::string>& job_argv);

// The `kairos __job-shim` subcommand; argv[0] is "__job-shim".
int job_shim_main(int argc, char** argv);

}  // namespace kairos
