// Job-group records: what a server leaves on disk so that its successor can
// kill the jobs a dead incarnation left running.
//
// Purpose. Every job attempt runs in its own process group, led by the job
// shim (prod/runners/job_shim.h). Before the shim starts the job it writes one
// record, DIR/<pgid>, naming the group, the group leader's start time, the
// worker process that owns it (pid and start time) and the run's fencing
// token; the ProcessRunner removes the record once it has killed the group
// and reaped the shim. A record that outlives its owner therefore marks a
// group that may still hold running job processes. At startup, before its
// workers start, `kairos server` calls clean_up_job_groups() on its records
// directory (DATA_DIR/running): every recorded group whose owner is dead is
// killed (SIGKILL) and the record removed.
//
// Guarantees.
// - A recycled pid is never killed. A process is killed only when it is
//   proven to belong to the recorded group: its process group is the recorded
//   one and either the group leader still runs with the recorded start time
//   (a process group id cannot be reused while any member exists), or, when
//   the leader is gone, the process started no earlier than the leader and
//   its environment carries the recorded KAIROS_FENCING_TOKEN. Each process
//   is signalled through a pidfd opened before it was checked, so it cannot
//   be swapped for another between the check and the kill.
// - Records of a live owner (another server on the same directory, or a
//   worker still running) are left alone.
// - Records are hostile input: a name must be a decimal pid, a record a
//   regular file of at most kMaxRecordBytes in the exact format below; the
//   directory is read through one descriptor and no path is taken from a
//   record. Anything else is reported and, when it is a regular file or a
//   symlink, removed; nothing is killed on its account.
// - No fsync: a record matters only while processes survive, and no process
//   survives the machine.
//
// Format (text, every line ends in '\n', numbers are canonical decimals):
//   kairos-job-group v2
//   pgid=<pid>
//   start=<leader start time, clock ticks after boot (/proc/PID/stat field 22)>
//   owner=<pid of the worker process>
//   owner_start=<the worker's start time>
//   token=<fencing token of the attempt>
//   job=<job id, as validate_job_id accepts it>
//   incarnation=<the job's incarnation, >= 1>
//   nominal=<nominal time, exactly as KAIROS_NOMINAL_TIME: RFC 3339 UTC,
//            fractional seconds only as needed>
//   attempt=<attempt number, >= 1>
// The last four name the run (its idempotency key) and attempt, so that a
// restarted server can hand the run back to the scheduler (fenced by the
// token) as soon as its group is proven over, instead of waiting for the
// lease. A v1 record (the first six lines, magic "kairos-job-group v1", as
// written by older servers) is still read: its group is cleaned up, but it
// names no run.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "core/kernel/records.h"

namespace kairos {

inline constexpr std::size_t kMaxRecordBytes = 1024;
inline constexpr std::size_t kMaxRecords = 4096;  // more entries are reported, not read

struct JobGroupRecord {
  pid_t pgid = 0;
  std::uint64_t start = 0;
  pid_t owner = 0;
  std::uint64_t owner_start = 0;
  std::uint64_t token = 0;
  // The run and attempt the group is running (v2); nullopt for a v1 record.
  std::optional<RunId> run;
  std::uint32_t attempt = 0;
};

// A v2 record when `run` is set (it must be valid: a checked job id,
// incarnation and attempt >= 1), else v1.
std::string format_job_group_record(const JobGroupRecord& r);
// Strict: exactly the format above, pgid and owner > 1 and <= INT32_MAX, the
// job id accepted by validate_job_id, the nominal time in its canonical text.
std::optional<JobGroupRecord> parse_job_group_record(std::string_view text);

// The nominal time as the runner passes it (KAIROS_NOMINAL_TIME) and the
// record stores it, and its strict inverse (only the canonical text).
std::string format_nominal_time(absl::Time t);
std::optional<absl::Time> parse_nominal_time(std::string_view text);

// Facts about one process from /proc/PID/stat; nullopt when there is no such
// process (or its stat cannot be parsed).
struct ProcStat {
  char state = '?';
  pid_t ppid = 0;
  pid_t pgrp = 0;
  std::uint64_t start = 0;
};
std::optional<ProcStat> read_proc_stat(pid_t pid);

// Writes DIR/<pgid> atomically (a temporary name, then rename).
absl::Status write_job_group_record(const std::string& dir, const JobGroupRecord& r);
// Removes DIR/<pgid>; a missing record is not an error.
void remove_job_group_record(const std::string& dir, pid_t pgid);

// What clean_up_job_groups() did with one directory entry.
struct JobGroupCleanup {
  std::string entry;   // the file name (printable excerpt)
  std::string action;  // killed | gone | recycled | owner_alive | invalid | survivors
  std::string detail;  // human-readable
  pid_t pgid = 0;      // 0 for invalid entries
  std::size_t killed = 0;
  // From the record (not set for invalid entries): the attempt's token and,
  // for a v2 record, its run and attempt number.
  std::uint64_t token = 0;
  std::optional<RunId> run;
  std::uint32_t attempt = 0;
};

// The recorded group is proven to have ended (killed, gone, or its pid
// recycled): nothing of the attempt runs any more, so its run may be handed
// back. Never true for owner_alive, survivors or invalid.
bool group_proven_over(const JobGroupCleanup& c);

// Creates `dir` (mode 0700) if missing; fails if it is not a directory.
absl::Status prepare_job_group_records(const std::string& dir);

// Kills what the records in `dir` prove to be ours and whose owner is dead,
// waits up to `wait` in all for it to be gone (SIGKILL takes effect at once
// except for processes in uninterruptible sleep), and removes the records. Returns one
// entry per record or anomaly.
std::vector<JobGroupCleanup> clean_up_job_groups(const std::string& dir,
                                                 absl::Duration wait = absl::Seconds(5));

}  // namespace kairos
