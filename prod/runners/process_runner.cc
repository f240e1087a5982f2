#include "prod/runners/process_runner.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/base/absl_compat.h"
#include "core/base/check.h"
#include "core/base/rfc3339.h"
#include "prod/runners/job_records.h"
#include "prod/runners/job_shim.h"
#include "prod/runners/output_ring.h"

extern char** environ;

namespace kairos {

namespace asio = boost::asio;

struct ProcessRunner::Proc {
  Proc(asio::io_context& io, int out_fd, std::size_t keep) : out(io, out_fd), output(keep) {}

  RunHandle handle = 0;
  RunRequest request;
  std::function<void(RunOutcome)> done;
  pid_t pid = 0;
  absl::Time started;
  asio::posix::stream_descriptor out;
  int status_fd = -1;  // the job shim's status pipe (read end), or -1
  std::optional<asio::posix::stream_descriptor> pidfd;
  std::array<char, 4096> buf{};
  OutputRing output;  // the last bytes of stdout+stderr
  Kill kill = Kill::kNone;
  bool exited = false;       // the main process has exited (and been reaped)
  bool output_done = false;  // the output reader has stopped (EOF or cancelled)
  bool finished = false;     // the outcome has been reported
  pid_t waited = -1;         // waitpid's result, once exited
  int wait_status = 0;
  int wait_errno = 0;
  std::optional<TimerId> term_timer;
  std::optional<TimerId> kill_timer;
  std::optional<TimerId> poll_timer;
  std::optional<TimerId> eof_timer;
};

namespace {

constexpr absl::Duration kPollPeriod = absl::Milliseconds(20);
// After the main process exited and its group was killed, how long to wait
// for the output pipe to reach EOF (a process that left the group may still
// hold it) before the rest of the output is abandoned.
constexpr absl::Duration kOutputEofWait = absl::Seconds(1);

std::string signal_name(int sig) {
  if (const char* abbrev = sigabbrev_np(sig)) return absl::StrCat("SIG", abbrev);
  return absl::StrCat("signal ", sig);
}

// The server's program search path, for a job shim finding the job's argv[0]
// (what posix_spawnp would use).
std::string server_search_path() {
  const char* path = std::getenv("PATH");
  return path != nullptr ? path : "/bin:/usr/bin";
}

// errno of a failed spawn -> does retrying have a chance?
bool permanent_spawn_error(int err) {
  switch (err) {
    case ENOENT:
    case EACCES:
    case ENOEXEC:
    case ENOTDIR:
    case EISDIR:
    case ELOOP:
    case ENAMETOOLONG:
    case EPERM:
    case E2BIG:
    case EINVAL:
      return true;
    default:
      return false;
  }
}

std::string rfc3339(absl::Time t) { return format_rfc3339_utc(t); }

}  // namespace

std::string format_late_by(absl::Duration late_by) {
  if (late_by < absl::ZeroDuration()) late_by = absl::ZeroDuration();
  const std::int64_t micros = absl::ToInt64Microseconds(late_by);
  return absl::StrFormat("%d.%06d", micros / 1'000'000, micros % 1'000'000);
}

namespace {

// The child's environment: the server's, then the payload's, then Kairos's.
std::vector<std::string> child_environment(const RunRequest& r, const CommandPayload& cmd) {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string_view kv(*e);
    const auto eq = kv.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    env[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
  }
  for (const auto& [k, v] : cmd.env) env[k] = v;
  env["KAIROS_IDEMPOTENCY_KEY"] = r.idempotency_key;
  env["KAIROS_FENCING_TOKEN"] = absl::StrCat(r.fencing_token);
  env["KAIROS_JOB_ID"] = r.job_id;
  env["KAIROS_INCARNATION"] = absl::StrCat(r.incarnation);
  env["KAIROS_NOMINAL_TIME"] = rfc3339(r.nominal_time);
  env["KAIROS_ATTEMPT"] = absl::StrCat(r.attempt);
  env["KAIROS_RUN_ID"] = r.run_id;
  env["KAIROS_SCHEDULED_AT"] = rfc3339(r.nominal_time);
  // Present only for a late or folded run; never inherited or forged.
  env.erase("KAIROS_LATE_BY");
  env.erase("KAIROS_OCCURRENCES");
  if (r.late_by > absl::ZeroDuration() || r.occurrences > 1) {
    env["KAIROS_LATE_BY"] = format_late_by(r.late_by);
    env["KAIROS_OCCURRENCES"] = absl::StrCat(r.occurrences);
  }
  std::vector<std::string> out;
  out.reserve(env.size());
  for (auto& [k, v] : env) out.push_back(absl::StrCat(k, "=", v));
  return out;
}

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  out.reserve(v.size() + 1);
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// RAII for the spawn attribute objects.
struct SpawnSetup {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  SpawnSetup() {
    KAIROS_CHECK(posix_spawn_file_actions_init(&actions) == 0);
    KAIROS_CHECK(posix_spawnattr_init(&attr) == 0);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;
};

}  // namespace

ProcessRunner::ProcessRunner(asio::io_context& io, Timers& timers, const Clock& clock,
                             ProcessRunnerOptions options)
    : io_(io), timers_(timers), clock_(clock), options_(std::move(options)) {
  KAIROS_CHECK(options_.kill_grace >= absl::ZeroDuration());
  KAIROS_CHECK_MSG(options_.output_bytes <= kMaxRunOutputSize,
                   "ProcessRunnerOptions::output_bytes must be at most kMaxRunOutputSize");
  // The shim runs in the job's working directory: relative paths would move.
  KAIROS_CHECK_MSG(options_.job_shim.empty() || options_.job_shim.starts_with('/'),
                   "ProcessRunnerOptions::job_shim must be an absolute path");
  KAIROS_CHECK_MSG(options_.record_dir.empty() || options_.record_dir.starts_with('/'),
                   "ProcessRunnerOptions::record_dir must be an absolute path");
}

ProcessRunner::~ProcessRunner() {
  *alive_ = false;
  for (auto& [handle, p] : procs_) {
    for (auto* t : {&p->term_timer, &p->kill_timer, &p->poll_timer, &p->eof_timer})
      if (*t) timers_.cancel(**t);
    if (!p->exited) {
      ::kill(-p->pid, SIGKILL);
      int status = 0;
      while (::waitpid(p->pid, &status, 0) < 0 && errno == EINTR) {
      }
      forget_group(*p);
    }
    if (p->status_fd >= 0) ::close(p->status_fd);
    boost::system::error_code ignored;
    p->out.close(ignored);
    if (p->pidfd) p->pidfd->close(ignored);
  }
  procs_.clear();
}

void ProcessRunner::fail_to_start(RunRequest request, std::function<void(RunOutcome)> done,
                                  RunStatus status, std::string detail) {
  timers_.post([this, alive = alive_, request = std::move(request), done = std::move(done), status,
                detail = std::move(detail)] {
    if (!*alive) return;
    RunOutcome outcome{status, 0, detail, /*started=*/false};
    if (options_.on_exit) {
      ProcessExit e;
      e.request = &request;
      e.outcome = outcome;
      options_.on_exit(e);
    }
    done(std::move(outcome));
  });
}

RunHandle ProcessRunner::start(RunRequest request, std::function<void(RunOutcome)> done) {
  const RunHandle handle = ++next_handle_;
  const auto* cmd = std::get_if<CommandPayload>(&request.payload);
  if (cmd == nullptr) {
    fail_to_start(std::move(request), std::move(done), RunStatus::kFailedPermanent,
                  "http runner not available in this build");
    return handle;
  }
  if (cmd->argv.empty() || cmd->argv[0].empty()) {
    fail_to_start(std::move(request), std::move(done), RunStatus::kFailedPermanent,
                  "payload.command.argv: must not be empty");
    return handle;
  }
  const std::string& wd = cmd->working_dir.empty() ? options_.working_dir : cmd->working_dir;
  if (!wd.empty()) {
    struct stat st {};
    const bool found = ::stat(wd.c_str(), &st) == 0;
    const int err = errno;
    if (!found || !S_ISDIR(st.st_mode)) {
      // Built before `request` (which `wd` may point into) is moved from.
      std::string detail = absl::StrCat("working directory '", wd,
                                        "': ", found ? "not a directory" : std::strerror(err));
      fail_to_start(std::move(request), std::move(done), RunStatus::kFailedPermanent,
                    std::move(detail));
      return handle;
    }
  }

  const bool shimmed = !options_.job_shim.empty();
  std::vector<std::string> argv_storage =
      shimmed ? job_shim_argv(options_.job_shim, ::getpid(), options_.record_dir,
                              server_search_path(), cmd->argv)
              : cmd->argv;
  std::vector<std::string> env_storage = child_environment(request, *cmd);
  std::vector<char*> argv = c_strings(argv_storage);
  std::vector<char*> envp = c_strings(env_storage);

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    const int err = errno;
    fail_to_start(std::move(request), std::move(done), RunStatus::kFailed,
                  absl::StrCat("cannot create output pipe: ", std::strerror(err)));
    return handle;
  }
  const int read_fd = fds[0];
  const int write_fd = fds[1];
  KAIROS_CHECK(::fcntl(read_fd, F_SETFL, ::fcntl(read_fd, F_GETFL) | O_NONBLOCK) == 0);
  int status_fds[2] = {-1, -1};
  if (shimmed && ::pipe2(status_fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    const int err = errno;
    ::close(read_fd);
    ::close(write_fd);
    fail_to_start(std::move(request), std::move(done), RunStatus::kFailed,
                  absl::StrCat("cannot create status pipe: ", std::strerror(err)));
    return handle;
  }

  pid_t pid = 0;
  int rc = 0;
  {
    SpawnSetup s;
    KAIROS_CHECK(posix_spawn_file_actions_addopen(&s.actions, 0, "/dev/null", O_RDONLY, 0) == 0);
    KAIROS_CHECK(posix_spawn_file_actions_adddup2(&s.actions, write_fd, 1) == 0);
    KAIROS_CHECK(posix_spawn_file_actions_adddup2(&s.actions, write_fd, 2) == 0);
    if (shimmed)
      KAIROS_CHECK(posix_spawn_file_actions_adddup2(&s.actions, status_fds[1], kJobShimStatusFd) ==
                   0);
    if (!wd.empty())
      KAIROS_CHECK(posix_spawn_file_actions_addchdir_np(&s.actions, wd.c_str()) == 0);
    // Own process group (so the whole job can be signalled), an empty signal
    // mask and default dispositions for what the server may have changed.
    sigset_t empty, defaults;
    sigemptyset(&empty);
    sigemptyset(&defaults);
    for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2})
      sigaddset(&defaults, sig);
    KAIROS_CHECK(posix_spawnattr_setpgroup(&s.attr, 0) == 0);
    KAIROS_CHECK(posix_spawnattr_setsigmask(&s.attr, &empty) == 0);
    KAIROS_CHECK(posix_spawnattr_setsigdefault(&s.attr, &defaults) == 0);
    KAIROS_CHECK(posix_spawnattr_setflags(&s.attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                                       POSIX_SPAWN_SETSIGDEF) == 0);
    const bool has_slash = shimmed || cmd->argv[0].find('/') != std::string::npos;
    rc = has_slash ? ::posix_spawn(&pid, argv[0], &s.actions, &s.attr, argv.data(), envp.data())
                   : ::posix_spawnp(&pid, argv[0], &s.actions, &s.attr, argv.data(), envp.data());
  }
  ::close(write_fd);
  if (shimmed) ::close(status_fds[1]);
  if (rc != 0) {
    ::close(read_fd);
    if (shimmed) {
      ::close(status_fds[0]);
      // The server's own binary: not the job's fault, another worker may do.
      fail_to_start(std::move(request), std::move(done), RunStatus::kFailed,
                    absl::StrCat("cannot execute the job shim '", options_.job_shim,
                                 "': ", std::strerror(rc)));
      return handle;
    }
    std::string detail = absl::StrCat("cannot execute '", cmd->argv[0], "': ", std::strerror(rc));
    fail_to_start(std::move(request), std::move(done),
                  permanent_spawn_error(rc) ? RunStatus::kFailedPermanent : RunStatus::kFailed,
                  std::move(detail));
    return handle;
  }

  auto p = std::make_shared<Proc>(io_, read_fd,
                                  std::max(options_.output_bytes, options_.output_tail_bytes));
  p->handle = handle;
  p->request = std::move(request);
  p->done = std::move(done);
  p->pid = pid;
  p->status_fd = status_fds[0];
  p->started = clock_.now();
  procs_.emplace(handle, p);
  if (options_.on_start) options_.on_start(p->request, pid);

  watch_output(p);
  watch_exit(p);

  // The deadline: SIGTERM kill_grace before it (or halfway there when less
  // is left), SIGKILL at it.
  const absl::Duration left = p->request.deadline - clock_.now();
  absl::Duration grace = options_.kill_grace;
  if (left < 2 * grace) grace = left > absl::ZeroDuration() ? left / 2 : absl::ZeroDuration();
  p->term_timer = timers_.after(left - grace, [this, alive = alive_, p, grace] {
    if (!*alive || p->exited) return;
    p->term_timer.reset();
    begin_kill(p, Kill::kDeadline, grace);
  });
  return handle;
}

void ProcessRunner::watch_output(const ProcPtr& p) {
  p->out.async_read_some(
      asio::buffer(p->buf),
      [this, alive = alive_, p](const boost::system::error_code& ec, std::size_t n) {
        if (!*alive || p->finished) return;
        if (n > 0) append_output(*p, p->buf.data(), n);
        if (!ec) {
          watch_output(p);
          return;
        }
        // EOF (every writer closed) or cancelled after
        // the exit: the outcome can be reported once the
        // main process has been reaped too.
        p->output_done = true;
        if (p->exited) finish(p);
      });
}

void ProcessRunner::watch_exit(const ProcPtr& p) {
  const long fd = ::syscall(SYS_pidfd_open, p->pid, 0);
  if (fd < 0) {
    poll_exit(p);
    return;
  }
  p->pidfd.emplace(io_, static_cast<int>(fd));
  p->pidfd->async_wait(asio::posix::stream_descriptor::wait_read,
                       [this, alive = alive_, p](const boost::system::error_code& ec) {
                         if (!*alive || p->exited || ec) return;
                         on_exited(p);
                       });
}

void ProcessRunner::poll_exit(const ProcPtr& p) {
  p->poll_timer = timers_.after(kPollPeriod, [this, alive = alive_, p] {
    if (!*alive || p->exited) return;
    p->poll_timer.reset();
    siginfo_t info{};
    // WNOWAIT: leave it a zombie, so its process group id stays ours until
    // on_exited() has signalled the group.
    if (::waitid(P_PID, static_cast<id_t>(p->pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        info.si_pid == p->pid) {
      on_exited(p);
    } else {
      poll_exit(p);
    }
  });
}

void ProcessRunner::append_output(Proc& p, const char* data, std::size_t n) {
  p.output.append(data, n);
}

void ProcessRunner::drain_output(Proc& p) {
  const int fd = p.out.native_handle();
  while (true) {
    const ssize_t n = ::read(fd, p.buf.data(), p.buf.size());
    if (n > 0) {
      append_output(p, p.buf.data(), static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;  // EOF, or nothing more right now (EAGAIN)
  }
}

void ProcessRunner::on_exited(const ProcPtr& p) {
  KAIROS_CHECK(!p->exited);
  p->exited = true;
  // The main process is a zombie, so its group id cannot have been reused:
  // end whatever it left behind in its group, then reap it.
  ::kill(-p->pid, SIGKILL);
  int status = 0;
  pid_t waited;
  do {
    waited = ::waitpid(p->pid, &status, 0);
  } while (waited < 0 && errno == EINTR);
  p->waited = waited;
  p->wait_status = status;
  p->wait_errno = waited < 0 ? errno : 0;
  forget_group(*p);
  for (auto* t : {&p->term_timer, &p->kill_timer, &p->poll_timer}) {
    if (*t) timers_.cancel(**t);
    t->reset();
  }
  boost::system::error_code ignored;
  if (p->pidfd) p->pidfd->close(ignored);
  // The output reader may still hold data it read but has not delivered;
  // the outcome is reported from the reader once it reaches EOF, so no byte
  // is lost or reordered. A writer that escaped the group is cut off after
  // kOutputEofWait.
  if (p->output_done) {
    finish(p);
    return;
  }
  p->eof_timer = timers_.after(kOutputEofWait, [alive = alive_, p] {
    if (!*alive || p->finished) return;
    p->eof_timer.reset();
    boost::system::error_code ignored_ec;
    p->out.cancel(ignored_ec);
  });
}

void ProcessRunner::finish(const ProcPtr& p) {
  KAIROS_CHECK(p->exited && p->output_done && !p->finished);
  p->finished = true;
  if (p->eof_timer) timers_.cancel(*p->eof_timer);
  p->eof_timer.reset();
  drain_output(*p);  // no read is pending any more: what is left is ours
  boost::system::error_code ignored;
  p->out.close(ignored);
  const pid_t waited = p->waited;
  const int status = p->wait_status;

  RunOutcome outcome;
  std::string what;
  const ShimStatus shim = read_shim_status(*p);
  if (shim.exec_errno != 0) {
    outcome.status =
        permanent_spawn_error(shim.exec_errno) ? RunStatus::kFailedPermanent : RunStatus::kFailed;
    what = absl::StrCat("cannot execute '", std::get<CommandPayload>(p->request.payload).argv[0],
                        "': ", std::strerror(shim.exec_errno));
  } else if (!shim.refused.empty()) {
    outcome.status = RunStatus::kFailed;
    what = absl::StrCat("job shim refused to run the job: ", shim.refused);
  } else if (waited != p->pid) {
    outcome.status = RunStatus::kFailed;
    what = absl::StrCat("exit status unavailable: ", std::strerror(p->wait_errno));
  } else if (WIFEXITED(status)) {
    outcome.exit_code = WEXITSTATUS(status);
    outcome.status = outcome.exit_code == 0 ? RunStatus::kSucceeded : RunStatus::kFailed;
    what = absl::StrCat("exited with code ", outcome.exit_code);
  } else if (WIFSIGNALED(status)) {
    outcome.exit_code = 128 + WTERMSIG(status);
    outcome.status = RunStatus::kFailed;
    what = absl::StrCat("killed by ", signal_name(WTERMSIG(status)));
  } else {
    outcome.status = RunStatus::kFailed;
    what = absl::StrCat("ended with wait status ", status);
  }
  if (p->kill == Kill::kDeadline) {
    outcome.status = RunStatus::kTimedOut;
    what = absl::StrCat("timed out (deadline ", rfc3339(p->request.deadline), "); ", what);
  } else if (p->kill == Kill::kStop) {
    outcome.status = RunStatus::kStopped;
    what = absl::StrCat("stopped; ", what);
  }
  std::string tail = p->output.last(options_.output_tail_bytes);
  outcome.detail = what;
  if (!tail.empty())
    absl::StrAppend(&outcome.detail, "; output: ", p->output.total() > tail.size() ? "..." : "",
                    tail);
  outcome.output = p->output.last(options_.output_bytes);

  auto done = std::move(p->done);
  procs_.erase(p->handle);
  if (options_.on_exit) {
    ProcessExit e;
    e.request = &p->request;
    e.pid = shim.exec_errno != 0 ? 0 : p->pid;  // the job itself never started
    e.outcome = outcome;
    e.output_tail = std::move(tail);
    e.elapsed = clock_.now() - p->started;
    options_.on_exit(e);
  }
  done(std::move(outcome));  // last: it may destroy this runner
}

ProcessRunner::ShimStatus ProcessRunner::read_shim_status(Proc& p) {
  ShimStatus out;
  if (p.status_fd < 0) return out;
  // The shim has been reaped: whatever it wrote is in the pipe.
  char buf[256];
  ssize_t n;
  while ((n = ::read(p.status_fd, buf, sizeof buf - 1)) < 0 && errno == EINTR) {
  }
  ::close(p.status_fd);
  p.status_fd = -1;
  if (n <= 0) return out;
  std::string_view line(buf, static_cast<std::size_t>(n));
  if (const auto nl = line.find('\n'); nl != std::string_view::npos) line = line.substr(0, nl);
  if (line.starts_with("exec-error ")) {
    int err = 0;
    const std::string_view num = line.substr(11);
    const auto [ptr, ec] = std::from_chars(num.data(), num.data() + num.size(), err);
    out.exec_errno = ec == std::errc() && ptr == num.data() + num.size() && err > 0 ? err : EIO;
  } else if (line.starts_with("shim-error ")) {
    out.refused = std::string(line.substr(11));
  }
  return out;
}

void ProcessRunner::forget_group(const Proc& p) {
  if (!options_.job_shim.empty() && !options_.record_dir.empty())
    remove_job_group_record(options_.record_dir, p.pid);
}

void ProcessRunner::begin_kill(const ProcPtr& p, Kill why, absl::Duration grace) {
  if (p->exited || p->kill != Kill::kNone) return;
  p->kill = why;
  ::kill(-p->pid, SIGTERM);
  p->kill_timer = timers_.after(grace, [alive = alive_, p] {
    if (!*alive || p->exited) return;
    p->kill_timer.reset();
    ::kill(-p->pid, SIGKILL);
  });
}

void ProcessRunner::stop(RunHandle handle) {
  auto it = procs_.find(handle);
  if (it == procs_.end()) return;
  begin_kill(it->second, Kill::kStop, options_.kill_grace);
}

void ProcessRunner::terminate_all() {
  std::vector<ProcPtr> all;
  for (auto& [h, p] : procs_) all.push_back(p);
  for (auto& p : all) begin_kill(p, Kill::kStop, options_.kill_grace);
}

}  // namespace kairos
