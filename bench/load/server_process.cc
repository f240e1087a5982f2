#include "bench/load/server_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/base/absl_compat.h"
#include "core/base/duration.h"

namespace kairos::load {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The text after `prefix` on the first line of `text` that contains it, up
// to the next space or the line's end.
std::string value_after(const std::string& text, std::string_view prefix) {
  const auto at = text.find(prefix);
  if (at == std::string::npos) return {};
  const auto start = text.find_first_not_of(" \t", at + prefix.size());
  if (start == std::string::npos) return {};
  const auto end = text.find_first_of(" \t\n", start);
  return text.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return absl::StrCat("exit ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return absl::StrCat("killed by signal ", WTERMSIG(status));
  return "ended";
}

}  // namespace

absl::StatusOr<ProcessFigures> process_figures(pid_t pid) {
  const std::string stat = read_file(absl::StrCat("/proc/", pid, "/stat"));
  // The command name (field 2) is in parentheses and may hold spaces: the
  // fields that follow start after the last ')'.
  const auto close = stat.rfind(')');
  if (stat.empty() || close == std::string::npos)
    return absl::NotFoundError(absl::StrCat("cannot read /proc/", pid, "/stat"));
  const std::vector<std::string> f =
      absl::StrSplit(absl_sv(std::string_view(stat).substr(close + 2)), ' ');
  // f[0] is field 3 (state): field N is f[N - 3].
  std::uint64_t utime = 0, stime = 0, rss_pages = 0;
  if (f.size() < 22 || !absl::SimpleAtoi(f[11], &utime) || !absl::SimpleAtoi(f[12], &stime) ||
      !absl::SimpleAtoi(f[21], &rss_pages))
    return absl::InternalError(absl::StrCat("unexpected /proc/", pid, "/stat"));
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  ProcessFigures out;
  out.cpu_seconds = static_cast<double>(utime + stime) / ticks;
  out.rss_bytes = rss_pages * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  const std::string status = read_file(absl::StrCat("/proc/", pid, "/status"));
  std::uint64_t anon_kb = 0;
  if (absl::SimpleAtoi(value_after(status, "RssAnon:"), &anon_kb))
    out.rss_anon_bytes = anon_kb << 10;
  return out;
}

std::uint64_t directory_bytes(const std::string& dir) {
  std::error_code ec;
  std::uint64_t total = 0;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code e2;
    if (it->is_regular_file(e2)) total += it->file_size(e2);
  }
  return total;
}

std::string load_average() {
  const std::string text = read_file("/proc/loadavg");
  const std::vector<std::string> f = absl::StrSplit(absl_sv(text), ' ');
  if (f.size() < 3) return {};
  return absl::StrCat(f[0], " ", f[1], " ", f[2]);
}

ServerProcess::ServerProcess(SpawnOptions options) : options_(std::move(options)) {}

ServerProcess::~ServerProcess() {
  stop();
  if (!dir_.empty() && !options_.keep) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

std::string temp_base() {
  const char* base = std::getenv("TMPDIR");
  return base != nullptr && *base != '\0' ? base : "/tmp";
}

std::optional<std::uint64_t> free_bytes(const std::string& dir) {
  struct statvfs st {};
  if (::statvfs(dir.c_str(), &st) != 0) return std::nullopt;
  return static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize;
}

absl::Status ServerProcess::start() {
  std::string tmpl = temp_base() + "/kairos-load-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr)
    return absl::UnavailableError(
        absl::StrCat("cannot make a temporary directory: ", std::strerror(errno)));
  dir_ = tmpl;
  return launch();
}

absl::StatusOr<absl::Duration> ServerProcess::restart() {
  if (dir_.empty()) return absl::FailedPreconditionError("the server was never started");
  const std::string how = stop();
  if (how != "exit 0")
    return absl::UnavailableError(absl::StrCat("the server did not stop cleanly (", how,
                                               ") before its restart:\n", log_tail()));
  for (const char* name : {"/server.out", "/server.log"}) {
    std::error_code ec;
    std::filesystem::rename(dir_ + name, dir_ + name + ".1", ec);
  }
  const absl::Time from = absl::Now();
  if (absl::Status s = launch(); !s.ok()) return s;
  return ready_at_ - from;
}

absl::Status ServerProcess::launch() {
  std::vector<std::string> args = {options_.binary, "server",     "--data-dir", data_dir(),
                                   "--workers",     "0",          "--http",     "127.0.0.1:0",
                                   "--listen",      "127.0.0.1:0"};
  if (!options_.token_file.empty()) {
    args.push_back("--auth-token-file");
    args.push_back(options_.token_file);
  }
  if (!options_.secret_file.empty()) {
    args.push_back("--worker-secret-file");
    args.push_back(options_.secret_file);
  }
  if (options_.lease_ttl) {
    args.push_back("--lease-ttl");
    args.push_back(format_duration(*options_.lease_ttl));
  }
  for (const std::string& f : options_.extra_flags) args.push_back(f);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string out_path = dir_ + "/server.out";
  const std::string log_path = dir_ + "/server.log";
  const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (out < 0 || log < 0) return absl::UnavailableError("cannot create the server's log files");
  const pid_t pid = ::fork();
  if (pid < 0) return absl::UnavailableError(absl::StrCat("fork: ", std::strerror(errno)));
  if (pid == 0) {
    ::dup2(out, STDOUT_FILENO);
    ::dup2(log, STDERR_FILENO);
    const int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, STDIN_FILENO);
    ::execv(argv[0], argv.data());
    std::fprintf(stderr, "kairos-load: cannot execute '%s': %s\n", argv[0], std::strerror(errno));
    ::_exit(127);
  }
  ::close(out);
  ::close(log);
  pid_ = pid;
  const absl::Time started_at = absl::Now();
  ready_at_ = absl::InfinitePast();

  const absl::Time deadline = started_at + options_.ready_timeout;
  while (absl::Now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return absl::UnavailableError(absl::StrCat("flag --spawn: the server ended (",
                                                 describe_wait_status(status),
                                                 ") before it was ready:\n", log_tail()));
    }
    // The ready line is on stdout; the net.listening event goes through
    // the server's log thread to stderr and may land a little later.
    const std::string stdout_text = read_file(out_path);
    if (stdout_text.find("kairos server: ready") != std::string::npos) {
      if (ready_at_ < started_at) ready_at_ = absl::Now();
      const std::string http = value_after(stdout_text, "kairos server: http api on ");
      const std::string listen = value_after(read_file(log_path), " net.listening address=");
      if (!http.empty() && !listen.empty()) {
        http_url_ = absl::StrCat("http://", http);
        listen_ = listen;
        return absl::OkStatus();
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return absl::DeadlineExceededError(
      absl::StrCat("flag --spawn: the server was not ready (its "
                   "ready line, http api and listen address) within ",
                   format_duration(options_.ready_timeout), ":\n", log_tail()));
}

std::string ServerProcess::stop(absl::Duration grace) {
  if (pid_ <= 0) return "not running";
  ::kill(pid_, SIGTERM);
  const absl::Time deadline = absl::Now() + grace;
  int status = 0;
  while (true) {
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_ || r < 0) break;
    if (absl::Now() >= deadline) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      pid_ = -1;
      return absl::StrCat("did not stop within ", format_duration(grace), "; killed");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  pid_ = -1;
  return describe_wait_status(status);
}

std::string ServerProcess::log_tail(std::size_t lines) const {
  std::ifstream in(dir_ + "/server.log");
  std::deque<std::string> tail;
  for (std::string line; std::getline(in, line);) {
    if (line.size() > 300) line.resize(300);
    tail.push_back("  | " + line);
    if (tail.size() > lines) tail.pop_front();
  }
  std::string out;
  for (const std::string& l : tail) absl::StrAppend(&out, l, "\n");
  return out;
}

}  // namespace kairos::load
