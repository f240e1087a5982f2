#include "prod/runners/job_records.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "core/base/rfc3339.h"
#include "core/base/text.h"
#include "core/kernel/job_store.h"

namespace kairos {
namespace {

constexpr std::string_view kMagicV1 = "kairos-job-group v1";
constexpr std::string_view kMagicV2 = "kairos-job-group v2";
constexpr char kNominalFormat[] = "%Y-%m-%dT%H:%M:%E*SZ";
constexpr std::size_t kMaxStatBytes = 4096;
constexpr std::size_t kMaxEnvironBytes = std::size_t{4} << 20;

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  while (true) {
    const auto at = s.find(sep);
    out.push_back(s.substr(0, at));
    if (at == std::string_view::npos) return out;
    s.remove_prefix(at + 1);
  }
}

// Canonical decimal: digits only, no leading zero (except "0"), fits u64.
std::optional<std::uint64_t> parse_canonical(std::string_view s) {
  if (s.empty() || s.size() > 20 || (s.size() > 1 && s[0] == '0')) return std::nullopt;
  for (char c : s)
    if (c < '0' || c > '9') return std::nullopt;
  std::uint64_t v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<pid_t> parse_pid(std::string_view s) {
  const auto v = parse_canonical(s);
  if (!v || *v <= 1 || *v > static_cast<std::uint64_t>(INT32_MAX)) return std::nullopt;
  return static_cast<pid_t>(*v);
}

// Reads at most `cap` bytes of an open descriptor; nullopt on an error or
// when there is more.
std::optional<std::string> read_bounded(int fd, std::size_t cap) {
  std::string out;
  char buf[4096];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) return out;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > cap) return std::nullopt;
  }
}

std::optional<std::string> read_proc_file(pid_t pid, std::string_view what, std::size_t cap) {
  const std::string path = absl::StrCat("/proc/", pid, "/", absl_sv(what));
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  auto text = read_bounded(fd, cap);
  ::close(fd);
  return text;
}

int pidfd_open(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

// The process behind `pidfd` has not exited yet (a zombie counts as exited).
bool pidfd_alive(int pidfd) {
  pollfd p{pidfd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 0;
}

bool pidfd_kill(int pidfd) {
  return ::syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0) == 0;
}

bool environ_has_token(pid_t pid, std::uint64_t token) {
  const auto env = read_proc_file(pid, "environ", kMaxEnvironBytes);
  if (!env) return false;
  const std::string want = absl::StrCat("KAIROS_FENCING_TOKEN=", token);
  for (std::string_view var : split(*env, '\0'))
    if (var == want) return true;
  return false;
}

// Live (not zombie) processes whose process group is `pgid`.
std::vector<pid_t> live_members(pid_t pgid) {
  std::vector<pid_t> out;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return out;
  while (const dirent* e = ::readdir(proc)) {
    const auto pid = parse_pid(e->d_name);
    if (!pid) continue;
    const auto st = read_proc_stat(*pid);
    if (st && st->pgrp == pgid && st->state != 'Z' && st->state != 'X') out.push_back(*pid);
  }
  ::closedir(proc);
  return out;
}

bool leader_is(const JobGroupRecord& r) {
  const auto st = read_proc_stat(r.pgid);
  return st && st->start == r.start;
}

// One pass: kills each live member of the recorded group that is proven ours.
// Returns {killed, unproven}.
std::pair<std::size_t, std::size_t> kill_members(const JobGroupRecord& r) {
  std::size_t killed = 0, unproven = 0;
  for (pid_t m : live_members(r.pgid)) {
    const int pidfd = pidfd_open(m);
    if (pidfd < 0) continue;  // already gone
    const auto st = read_proc_stat(m);
    // Alive after the read: the stat was this pidfd's process.
    bool ours = st && pidfd_alive(pidfd) && st->pgrp == r.pgid;
    if (ours) {
      // The leader still holds the recorded start time now, so the group id
      // was never free since it started: the member belongs to it.
      if (!leader_is(r))
        ours = st->start >= r.start && environ_has_token(m, r.token) && pidfd_alive(pidfd);
    }
    if (ours && pidfd_kill(pidfd)) {
      ++killed;
    } else if (st && pidfd_alive(pidfd)) {
      ++unproven;
    }
    ::close(pidfd);
  }
  return {killed, unproven};
}

using Deadline = std::chrono::steady_clock::time_point;

JobGroupCleanup clean_up_one(const JobGroupRecord& r, std::string entry, Deadline end) {
  JobGroupCleanup c;
  c.entry = std::move(entry);
  c.pgid = r.pgid;
  const auto leader = read_proc_stat(r.pgid);
  if (leader && leader->start != r.start) {
    c.action = "recycled";
    c.detail = absl::StrCat("pid ", r.pgid, " now belongs to another process; nothing killed");
    return c;
  }
  std::size_t unproven = 0;
  while (true) {
    const auto [killed, left] = kill_members(r);
    c.killed += killed;
    unproven = left;
    if (live_members(r.pgid).empty()) break;
    if (std::chrono::steady_clock::now() >= end) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const std::size_t alive = live_members(r.pgid).size();
  if (alive > 0) {
    c.action = "survivors";
    c.detail = absl::StrCat(alive, " process(es) still in group ", r.pgid, " (", unproven,
                            " not proven ours)");
  } else if (c.killed > 0) {
    c.action = "killed";
    c.detail = absl::StrCat("killed ", c.killed, " process(es) of group ", r.pgid);
  } else {
    c.action = "gone";
    c.detail = absl::StrCat("group ", r.pgid, " had already ended");
  }
  return c;
}

JobGroupCleanup invalid(std::string_view entry, std::string detail) {
  JobGroupCleanup c;
  c.entry = excerpt(entry);
  c.action = "invalid";
  c.detail = std::move(detail);
  return c;
}

}  // namespace

std::string format_nominal_time(absl::Time t) { return format_rfc3339_utc(t); }

std::optional<absl::Time> parse_nominal_time(std::string_view text) {
  if (text.empty() || text.size() > 64) return std::nullopt;
  absl::Time t;
  std::string err;
  if (!absl::ParseTime(kNominalFormat, std::string(text), absl::UTCTimeZone(), &t, &err))
    return std::nullopt;
  if (format_nominal_time(t) != text) return std::nullopt;  // canonical text only
  return t;
}

std::string format_job_group_record(const JobGroupRecord& r) {
  std::string out =
      absl::StrCat(absl_sv(r.run ? kMagicV2 : kMagicV1), "\npgid=", r.pgid, "\nstart=", r.start,
                   "\nowner=", r.owner, "\nowner_start=", r.owner_start, "\ntoken=", r.token, "\n");
  if (r.run)
    absl::StrAppend(&out, "job=", r.run->job_id, "\nincarnation=", r.run->incarnation,
                    "\nnominal=", format_nominal_time(r.run->nominal), "\nattempt=", r.attempt,
                    "\n");
  return out;
}

std::optional<JobGroupRecord> parse_job_group_record(std::string_view text) {
  if (text.size() > kMaxRecordBytes || text.empty() || text.back() != '\n') return std::nullopt;
  text.remove_suffix(1);
  const std::vector<std::string_view> lines = split(text, '\n');
  const bool v1 = lines.size() == 6 && lines[0] == kMagicV1;
  const bool v2 = lines.size() == 10 && lines[0] == kMagicV2;
  if (!v1 && !v2) return std::nullopt;
  auto field = [&](std::size_t i, std::string_view name) -> std::optional<std::string_view> {
    const std::string_view line = lines[i];
    if (!line.starts_with(name) || line.size() <= name.size() || line[name.size()] != '=')
      return std::nullopt;
    return line.substr(name.size() + 1);
  };
  JobGroupRecord r;
  const auto pgid = field(1, "pgid");
  const auto start = field(2, "start");
  const auto owner = field(3, "owner");
  const auto owner_start = field(4, "owner_start");
  const auto token = field(5, "token");
  if (!pgid || !start || !owner || !owner_start || !token) return std::nullopt;
  const auto pgid_v = parse_pid(*pgid);
  const auto start_v = parse_canonical(*start);
  const auto owner_v = parse_pid(*owner);
  const auto owner_start_v = parse_canonical(*owner_start);
  const auto token_v = parse_canonical(*token);
  if (!pgid_v || !start_v || !owner_v || !owner_start_v || !token_v) return std::nullopt;
  r.pgid = *pgid_v;
  r.start = *start_v;
  r.owner = *owner_v;
  r.owner_start = *owner_start_v;
  r.token = *token_v;
  if (v2) {
    const auto job = field(6, "job");
    const auto incarnation = field(7, "incarnation");
    const auto nominal = field(8, "nominal");
    const auto attempt = field(9, "attempt");
    if (!job || !incarnation || !nominal || !attempt || !validate_job_id(*job).ok())
      return std::nullopt;
    const auto incarnation_v = parse_canonical(*incarnation);
    const auto nominal_v = parse_nominal_time(*nominal);
    const auto attempt_v = parse_canonical(*attempt);
    if (!incarnation_v || *incarnation_v == 0 || !nominal_v || !attempt_v || *attempt_v == 0 ||
        *attempt_v > UINT32_MAX)
      return std::nullopt;
    r.run = RunId{std::string(*job), *incarnation_v, *nominal_v};
    r.attempt = static_cast<std::uint32_t>(*attempt_v);
  }
  return r;
}

bool group_proven_over(const JobGroupCleanup& c) {
  return c.action == "killed" || c.action == "gone" || c.action == "recycled";
}

std::optional<ProcStat> read_proc_stat(pid_t pid) {
  if (pid <= 0) return std::nullopt;
  const auto text = read_proc_file(pid, "stat", kMaxStatBytes);
  if (!text) return std::nullopt;
  // "pid (comm) state ppid pgrp ..."; comm may hold anything, so the fields
  // start after the last ')'.
  const auto close = text->rfind(')');
  if (close == std::string::npos || close + 2 >= text->size()) return std::nullopt;
  const std::vector<std::string_view> f = split(std::string_view(*text).substr(close + 2), ' ');
  // f[0] = state (field 3), f[1] = ppid, f[2] = pgrp, f[19] = starttime (22).
  if (f.size() < 20 || f[0].size() != 1) return std::nullopt;
  ProcStat st;
  st.state = f[0][0];
  std::int64_t ppid = 0, pgrp = 0;
  std::uint64_t start = 0;
  auto num = [](std::string_view s, auto& v) {
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc() && ptr == s.data() + s.size() && !s.empty();
  };
  if (!num(f[1], ppid) || !num(f[2], pgrp) || !num(f[19], start)) return std::nullopt;
  st.ppid = static_cast<pid_t>(ppid);
  st.pgrp = static_cast<pid_t>(pgrp);
  st.start = start;
  return st;
}

absl::Status write_job_group_record(const std::string& dir, const JobGroupRecord& r) {
  const std::string text = format_job_group_record(r);
  const std::string tmp = absl::StrCat(dir, "/.", r.pgid, ".tmp");
  const std::string final_path = absl::StrCat(dir, "/", r.pgid);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return absl::UnavailableError(absl::StrCat("cannot create ", tmp, ": ", std::strerror(errno)));
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return absl::UnavailableError(absl::StrCat("cannot write ", tmp, ": ", std::strerror(err)));
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0 || ::rename(tmp.c_str(), final_path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return absl::UnavailableError(
        absl::StrCat("cannot write ", final_path, ": ", std::strerror(err)));
  }
  return absl::OkStatus();
}

void remove_job_group_record(const std::string& dir, pid_t pgid) {
  const std::string path = absl::StrCat(dir, "/", pgid);
  ::unlink(path.c_str());
}

absl::Status prepare_job_group_records(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) == 0) return absl::OkStatus();
  const int err = errno;
  struct stat st {};
  if (err == EEXIST && ::lstat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("job records directory ", dir, ": ",
                   err == EEXIST ? "exists and is not a directory" : std::strerror(err)));
}

std::vector<JobGroupCleanup> clean_up_job_groups(const std::string& dir, absl::Duration wait) {
  std::vector<JobGroupCleanup> out;
  // One budget for the whole directory: startup is delayed by at most `wait`.
  const Deadline end =
      std::chrono::steady_clock::now() + std::chrono::microseconds(absl::ToInt64Microseconds(wait));
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0) {
    if (errno != ENOENT)
      out.push_back(invalid(dir, absl::StrCat("cannot open: ", std::strerror(errno))));
    return out;
  }
  std::vector<std::string> names;
  bool too_many = false;
  if (DIR* d = ::fdopendir(::dup(dfd))) {
    while (const dirent* e = ::readdir(d)) {
      const std::string_view name = e->d_name;
      if (name == "." || name == "..") continue;
      if (names.size() == kMaxRecords) {
        too_many = true;
        break;
      }
      names.emplace_back(name);
    }
    ::closedir(d);
  }
  if (too_many)
    out.push_back(invalid(dir, absl::StrCat("more than ", kMaxRecords,
                                            " entries; the rest are left for the next start")));
  for (const std::string& name : names) {
    struct stat st {};
    if (::fstatat(dfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    const bool removable = S_ISREG(st.st_mode) || S_ISLNK(st.st_mode);
    auto reject = [&](std::string why) {
      out.push_back(invalid(
          name, removable ? absl::StrCat(why, "; removed") : absl::StrCat(why, "; left in place")));
      if (removable) ::unlinkat(dfd, name.c_str(), 0);
    };
    if (!S_ISREG(st.st_mode)) {
      reject("not a regular file");
      continue;
    }
    const auto pgid = parse_pid(name);
    if (!pgid) {
      reject("name is not a process group id");
      continue;
    }
    const int fd = ::openat(dfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
      reject(absl::StrCat("cannot open: ", std::strerror(errno)));
      continue;
    }
    struct stat fst {};
    std::optional<std::string> text;
    if (::fstat(fd, &fst) == 0 && S_ISREG(fst.st_mode)) text = read_bounded(fd, kMaxRecordBytes);
    ::close(fd);
    const auto record = text ? parse_job_group_record(*text) : std::nullopt;
    if (!record || record->pgid != *pgid) {
      reject("malformed record");
      continue;
    }
    const auto owner = read_proc_stat(record->owner);
    if (owner && owner->start == record->owner_start && owner->state != 'Z') {
      JobGroupCleanup c;
      c.entry = name;
      c.pgid = record->pgid;
      c.action = "owner_alive";
      c.detail = absl::StrCat("owner pid ", record->owner, " still runs; left alone");
      c.token = record->token;
      c.run = record->run;
      c.attempt = record->attempt;
      out.push_back(std::move(c));
      continue;
    }
    JobGroupCleanup c = clean_up_one(*record, name, end);
    c.token = record->token;
    c.run = record->run;
    c.attempt = record->attempt;
    out.push_back(std::move(c));
    ::unlinkat(dfd, name.c_str(), 0);
  }
  ::close(dfd);
  return out;
}

}  // namespace kairos
