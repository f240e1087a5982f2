#include "prod/runners/job_shim.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "core/kernel/job_store.h"
#include "prod/runners/job_records.h"

extern char** environ;

namespace kairos {
namespace {

// Signals the shim takes synchronously (sigwaitinfo); the job gets them
// unblocked and with the dispositions it inherited.
sigset_t shim_signals() {
  sigset_t s;
  sigemptyset(&s);
  for (int sig : {SIGCHLD, SIGTERM, SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE, SIGALRM})
    sigaddset(&s, sig);
  return s;
}

void status_line(std::string_view line) {
  const std::string text = absl::StrCat(absl_sv(line), "\n");
  // Best effort: the runner may not have given a status pipe.
  while (::write(kJobShimStatusFd, text.data(), text.size()) < 0 && errno == EINTR) {
  }
}

int refuse(std::string_view why) {
  status_line(absl::StrCat("shim-error ", absl_sv(why)));
  std::fprintf(stderr, "kairos %s: %.*s\n", kJobShimCommand.data(), static_cast<int>(why.size()),
               why.data());
  return kJobShimRefused;
}

std::optional<pid_t> parse_pid(std::string_view s) {
  pid_t v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || s.empty() || v <= 0) return std::nullopt;
  return v;
}

// Candidate paths for the job's program, in the order execvp would try them.
std::vector<std::string> candidates(const std::string& file, const std::string& search_path) {
  if (file.find('/') != std::string::npos) return {file};
  std::vector<std::string> out;
  std::string_view rest = search_path;
  while (true) {
    const auto colon = rest.find(':');
    const std::string_view dir = rest.substr(0, colon);
    out.push_back(dir.empty() ? file : absl::StrCat(absl_sv(dir), "/", file));
    if (colon == std::string_view::npos) return out;
    rest.remove_prefix(colon + 1);
  }
}

// In the forked child: never returns.
[[noreturn]] void exec_job(pid_t shim, int err_fd, const std::vector<std::string>& paths,
                           std::vector<char*>& argv) {
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // The job's main process dies with the shim (kept across execve).
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != shim) ::_exit(kJobShimRefused);
  int err = ENOENT;
  bool denied = false;
  for (const std::string& path : paths) {
    ::execve(path.c_str(), argv.data(), environ);
    err = errno;
    if (err == EACCES) {
      denied = true;
      continue;
    }
    if (err == ENOENT || err == ENOTDIR || err == ESTALE || err == ELOOP || err == ENAMETOOLONG)
      continue;
    break;
  }
  if (denied && (err == ENOENT || err == ENOTDIR || err == ESTALE || err == ELOOP)) err = EACCES;
  while (::write(err_fd, &err, sizeof err) < 0 && errno == EINTR) {
  }
  ::_exit(127);
}

// Ends the shim the way the job ended.
[[noreturn]] void relay(int status) {
  if (WIFEXITED(status)) ::_exit(WEXITSTATUS(status));
  const int sig = WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL;
  const struct rlimit no_core { 0, 0 };
  ::setrlimit(RLIMIT_CORE, &no_core);  // the job dumped its own core, if any
  ::signal(sig, SIG_DFL);
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, sig);
  ::sigprocmask(SIG_UNBLOCK, &s, nullptr);
  ::raise(sig);
  ::_exit(128 + sig);
}

[[noreturn]] void kill_group() {
  ::kill(0, SIGKILL);  // the whole group, the shim included
  ::_exit(128 + SIGKILL);
}

std::optional<std::uint64_t> env_number(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  const std::string_view s = v;
  std::uint64_t out = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return out;
}

// The run and attempt from the runner's KAIROS_* variables, when all of them
// are there and valid (the runner always passes them); otherwise the record
// stays a v1 record: the group is still cleaned up, only the hand-back of
// its run is forgone.
void record_run_identity(JobGroupRecord& r) {
  const char* job = std::getenv("KAIROS_JOB_ID");
  const char* nominal = std::getenv("KAIROS_NOMINAL_TIME");
  const auto token = env_number("KAIROS_FENCING_TOKEN");
  const auto incarnation = env_number("KAIROS_INCARNATION");
  const auto attempt = env_number("KAIROS_ATTEMPT");
  if (job == nullptr || nominal == nullptr || !token || !incarnation || !attempt) return;
  const auto when = parse_nominal_time(nominal);
  if (!when || !validate_job_id(job).ok() || *incarnation == 0 || *attempt == 0 ||
      *attempt > UINT32_MAX || *token != r.token)
    return;
  r.run = RunId{job, *incarnation, *when};
  r.attempt = static_cast<std::uint32_t>(*attempt);
}

}  // namespace

std::vector<std::string> job_shim_argv(const std::string& program, pid_t parent,
                                       const std::string& record_dir,
                                       const std::string& search_path,
                                       const std::vector<std::string>& job_argv) {
  std::vector<std::string> out{program,     std::string(kJobShimCommand),
                               "--parent",  absl::StrCat(parent),
                               "--records", record_dir,
                               "--path",    search_path,
                               "--"};
  out.insert(out.end(), job_argv.begin(), job_argv.end());
  return out;
}

int job_shim_main(int argc, char** argv) {
  // Strict, fixed layout: the runner is the only caller.
  if (argc < 9 || std::string_view(argv[1]) != "--parent" ||
      std::string_view(argv[3]) != "--records" || std::string_view(argv[5]) != "--path" ||
      std::string_view(argv[7]) != "--" || argv[8][0] == '\0')
    return refuse("internal command of the job runner; not for direct use");
  const auto parent = parse_pid(argv[2]);
  if (!parent) return refuse("bad --parent");
  const std::string record_dir = argv[4];
  const std::string search_path = argv[6];

  const sigset_t waited = shim_signals();
  ::sigprocmask(SIG_BLOCK, &waited, nullptr);
  // SIGTERM, not SIGKILL: the shim must live long enough to kill the group.
  if (::prctl(PR_SET_PDEATHSIG, SIGTERM) != 0) return refuse("prctl(PR_SET_PDEATHSIG) failed");
  if (::getppid() != *parent) return refuse("the worker died before the job started");
  if (::getpgrp() != ::getpid() && ::setpgid(0, 0) != 0)
    return refuse(absl::StrCat("cannot create the job's process group: ", std::strerror(errno)));
  if (::fcntl(kJobShimStatusFd, F_GETFD) >= 0) ::fcntl(kJobShimStatusFd, F_SETFD, FD_CLOEXEC);

  const pid_t self = ::getpid();
  if (!record_dir.empty()) {
    const auto mine = read_proc_stat(self);
    const auto owner = read_proc_stat(*parent);
    if (!mine || !owner) return refuse("cannot read /proc for the job-group record");
    JobGroupRecord r;
    r.pgid = self;
    r.start = mine->start;
    r.owner = *parent;
    r.owner_start = owner->start;
    if (const char* token = std::getenv("KAIROS_FENCING_TOKEN")) {
      const std::string_view t = token;
      std::from_chars(t.data(), t.data() + t.size(), r.token);
    }
    record_run_identity(r);
    if (absl::Status s = write_job_group_record(record_dir, r); !s.ok())
      return refuse(std::string(s.message()));
    // The record was written while the parent was alive, or the pdeath
    // signal is pending: either way the loop below sees it.
  }

  std::vector<std::string> job_args(argv + 8, argv + argc);
  std::vector<char*> job_argv;
  for (auto& a : job_args) job_argv.push_back(a.data());
  job_argv.push_back(nullptr);
  const std::vector<std::string> paths = candidates(job_args[0], search_path);

  int err_pipe[2];
  if (::pipe2(err_pipe, O_CLOEXEC) != 0)
    return refuse(absl::StrCat("pipe: ", std::strerror(errno)));
  const pid_t child = ::fork();
  if (child < 0) {
    const int err = errno;
    status_line(absl::StrCat("exec-error ", err));
    return 127;
  }
  if (child == 0) {
    ::close(err_pipe[0]);
    exec_job(self, err_pipe[1], paths, job_argv);
  }
  ::close(err_pipe[1]);
  int exec_errno = 0;
  ssize_t n;
  while ((n = ::read(err_pipe[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR) {
  }
  ::close(err_pipe[0]);
  if (n == sizeof exec_errno) {
    int status = 0;
    while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    status_line(absl::StrCat("exec-error ", exec_errno));
    return 127;
  }

  while (true) {
    siginfo_t info{};
    const int sig = ::sigwaitinfo(&waited, &info);
    if (::getppid() != *parent) kill_group();
    if (sig != SIGCHLD) continue;  // the worker's stop, or a job signalling its group
    int status = 0;
    const pid_t w = ::waitpid(child, &status, WNOHANG);
    if (w == child) {
      if (::getppid() != *parent) kill_group();
      relay(status);
    }
  }
}

}  // namespace kairos
