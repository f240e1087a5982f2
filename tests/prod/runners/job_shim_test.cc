// Jobs die with their worker: the ProcessRunner started through the job shim
// (the real `kairos` binary) against real processes, and the job-group
// records a restarted server cleans up.
//  - Outcomes through the shim are those of the job (exit codes, signals,
//    programs that cannot be executed), and the record exists exactly while
//    the job runs.
//  - stop() and a killed shim still end the whole group, grandchildren too.
//  - A worker killed with SIGKILL (a helper process driving a ProcessRunner)
//    takes its job and the job's grandchild with it.
//  - A worker and its shim killed together leave a leaderless group that the
//    records let the next start kill; records of live owners, recycled pids
//    and malformed records are never acted on.
// Waits are event-driven (pidfds, pipes, the loop) with generous bounds.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/kernel/records.h"
#include "prod/runners/job_records.h"
#include "prod/runners/process_runner.h"
#include "prod/runtime/asio_runtime.h"
#include "tests/support/shim_runner.h"

extern char** environ;

namespace kairos {
namespace {

constexpr auto kBound = std::chrono::seconds(30);
constexpr int kBoundMs = 30'000;
constexpr int kReportFd = 9;  // where test jobs write the pids they start

std::string temp_dir() { return test_support::temp_dir("kairos-shim-test"); }

using test_support::entries;

// Blocks until `pid` has exited (zombie or reaped), at most the bound.
bool exits_within_bound(pid_t pid) {
  const int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) return errno == ESRCH;
  pollfd p{fd, POLLIN, 0};
  const int rc = ::poll(&p, 1, kBoundMs);
  ::close(fd);
  return rc == 1;
}

bool running(pid_t pid) {
  const auto st = read_proc_stat(pid);
  return st && st->state != 'Z' && st->state != 'X';
}

// Reads one line from `fd` (the write ends closed elsewhere), within the bound.
std::string read_line(int fd) {
  std::string line;
  const auto end = std::chrono::steady_clock::now() + kBound;
  while (line.find('\n') == std::string::npos && std::chrono::steady_clock::now() < end) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, kBoundMs) != 1) break;
    char buf[128];
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    line.append(buf, static_cast<std::size_t>(n));
  }
  return line;
}

std::vector<pid_t> pids_in(const std::string& line) {
  std::vector<pid_t> out;
  std::istringstream in(line);
  pid_t p;
  while (in >> p) out.push_back(p);
  return out;
}

RunRequest request(const Clock& clock, std::vector<std::string> argv) {
  return test_support::shim_request(clock, std::move(argv), absl::FromUnixSeconds(1'767'225'600),
                                    1);
}
using test_support::shim_options;

// A pipe whose write end sits at kReportFd (inherited by jobs); returns the
// read end.
int report_pipe() {
  int fds[2];
  EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  EXPECT_EQ(::fcntl(kReportFd, F_GETFD), -1) << "fd " << kReportFd << " is taken";
  EXPECT_EQ(::dup2(fds[1], kReportFd), kReportFd);  // without O_CLOEXEC
  ::close(fds[1]);
  return fds[0];
}

class JobShimTest : public ::testing::Test {
 protected:
  JobShimTest() : records_(temp_dir()) {
    ProcessRunnerOptions o = shim_options(records_);
    o.on_start = [this](const RunRequest&, pid_t pid) { started_.push_back(pid); };
    runner_ = std::make_unique<ProcessRunner>(io_, timers_, clock_, std::move(o));
  }
  ~JobShimTest() override {
    runner_.reset();
    if (reported_) ::close(kReportFd);
    std::filesystem::remove_all(records_);
  }

  RunHandle start(RunRequest r) {
    out_.reset();
    return runner_->start(std::move(r), [this](RunOutcome o) { out_ = std::move(o); });
  }
  RunOutcome wait() {
    const auto end = std::chrono::steady_clock::now() + kBound;
    while (!out_ && std::chrono::steady_clock::now() < end)
      io_.run_one_for(std::chrono::milliseconds(50));
    return out_.value_or(RunOutcome{RunStatus::kFailed, -1, "no outcome within the bound"});
  }
  RunOutcome run(std::vector<std::string> argv) {
    start(request(clock_, std::move(argv)));
    return wait();
  }

  std::string records_;
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_ =
      boost::asio::make_work_guard(io_);
  SystemClock clock_;
  AsioTimers timers_{io_};
  std::vector<pid_t> started_;
  bool reported_ = false;  // report_pipe() was used
  std::optional<RunOutcome> out_;
  std::unique_ptr<ProcessRunner> runner_;
};

TEST_F(JobShimTest, OutcomesAreTheJobsOwn) {
  RunOutcome o = run({"/bin/sh", "-c", "echo out; echo err >&2"});
  EXPECT_EQ(o.status, RunStatus::kSucceeded) << o.detail;
  EXPECT_TRUE(absl::StrContains(o.detail, "exited with code 0; output: out\nerr")) << o.detail;
  o = run({"/bin/sh", "-c", "exit 3"});
  EXPECT_EQ(o.status, RunStatus::kFailed);
  EXPECT_EQ(o.exit_code, 3) << o.detail;
  o = run({"/bin/sh", "-c", "kill -KILL $$"});
  EXPECT_EQ(o.exit_code, 128 + SIGKILL) << o.detail;
  o = run({"/bin/sh", "-c", "kill -TERM $$"});
  EXPECT_EQ(o.exit_code, 128 + SIGTERM) << o.detail;
  EXPECT_TRUE(absl::StrContains(o.detail, "killed by SIGTERM")) << o.detail;
  o = run({"true"});  // found on the server's PATH
  EXPECT_EQ(o.status, RunStatus::kSucceeded) << o.detail;
  o = run({"/bin/sh", "-c", "echo token=$KAIROS_FENCING_TOKEN"});
  EXPECT_TRUE(absl::StrContains(o.detail, "token=42")) << o.detail;
  EXPECT_EQ(runner_->running(), 0u);
}

TEST_F(JobShimTest, AProgramThatCannotRunIsStillAPermanentFailure) {
  RunOutcome o = run({"/nonexistent/kairos-no-such-program"});
  EXPECT_EQ(o.status, RunStatus::kFailedPermanent) << o.detail;
  EXPECT_TRUE(absl::StrContains(o.detail, "cannot execute '/nonexistent/kairos-no-such-program'"))
      << o.detail;
  EXPECT_TRUE(absl::StrContains(o.detail, "No such file")) << o.detail;
  o = run({"kairos-no-such-program-on-path"});
  EXPECT_EQ(o.status, RunStatus::kFailedPermanent) << o.detail;
  o = run({"/etc/hostname"});
  EXPECT_EQ(o.status, RunStatus::kFailedPermanent) << o.detail;
  EXPECT_TRUE(entries(records_).empty());
}

TEST_F(JobShimTest, TheRecordExistsWhileTheJobRuns) {
  const RunOutcome o = run({"/bin/sh", "-c", absl::StrCat("cat ", records_, "/*")});
  ASSERT_EQ(o.status, RunStatus::kSucceeded) << o.detail;
  ASSERT_EQ(started_.size(), 1u);
  EXPECT_TRUE(
      absl::StrContains(o.detail, absl::StrCat("kairos-job-group v2\npgid=", started_[0], "\n")))
      << o.detail;
  EXPECT_TRUE(absl::StrContains(o.detail, absl::StrCat("owner=", ::getpid(), "\n"))) << o.detail;
  EXPECT_TRUE(absl::StrContains(o.detail, "token=42")) << o.detail;
  EXPECT_TRUE(entries(records_).empty()) << "the record outlived the reaped job";
}

TEST_F(JobShimTest, StopEndsTheWholeGroupGrandchildrenToo) {
  const int report = report_pipe();
  reported_ = true;
  const RunHandle h = start(request(
      clock_, {"/bin/sh", "-c", "trap '' TERM; sleep 300 & echo $$ $! >&9; wait; sleep 300"}));
  const std::vector<pid_t> pids = pids_in(read_line(report));
  ::close(report);
  ASSERT_EQ(pids.size(), 2u);
  runner_->stop(h);
  const RunOutcome o = wait();
  EXPECT_EQ(o.status, RunStatus::kStopped) << o.detail;
  for (pid_t p : pids) EXPECT_TRUE(exits_within_bound(p)) << p;
  EXPECT_TRUE(entries(records_).empty());
}

TEST_F(JobShimTest, AKilledShimStillEndsTheGroup) {
  const int report = report_pipe();
  reported_ = true;
  start(request(clock_, {"/bin/sh", "-c", "sleep 300 & echo $$ $! >&9; wait"}));
  const std::vector<pid_t> pids = pids_in(read_line(report));
  ::close(report);
  ASSERT_EQ(pids.size(), 2u);
  ASSERT_EQ(started_.size(), 1u);
  ASSERT_EQ(::kill(started_[0], SIGKILL), 0);
  const RunOutcome o = wait();
  EXPECT_EQ(o.exit_code, 128 + SIGKILL) << o.detail;
  for (pid_t p : pids) EXPECT_TRUE(exits_within_bound(p)) << p;
  EXPECT_TRUE(entries(records_).empty());
}

TEST_F(JobShimTest, WhatTheJobLeavesInItsGroupIsKilledWhenItExits) {
  const int report = report_pipe();
  reported_ = true;
  const RunOutcome o = run({"/bin/sh", "-c", "sleep 300 >/dev/null 2>&1 & echo $! >&9"});
  const std::vector<pid_t> pids = pids_in(read_line(report));
  ::close(report);
  EXPECT_EQ(o.status, RunStatus::kSucceeded) << o.detail;
  ASSERT_EQ(pids.size(), 1u);
  EXPECT_TRUE(exits_within_bound(pids[0]));
}

TEST_F(JobShimTest, TheDeadlineStillTimesTheJobOut) {
  RunRequest r = request(clock_, {"/bin/sh", "-c", "trap '' TERM; sleep 60; sleep 60"});
  r.deadline = clock_.now() + absl::Seconds(1);
  start(std::move(r));
  const RunOutcome o = wait();
  EXPECT_EQ(o.status, RunStatus::kTimedOut) << o.detail;
  EXPECT_TRUE(absl::StrContains(o.detail, "SIGKILL")) << o.detail;
  EXPECT_TRUE(entries(records_).empty());
}

// A helper process standing in for a worker: it drives a ProcessRunner that
// runs `script` and never returns. Returns its pid.
pid_t fork_worker(const std::string& records, const std::string& script) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  {
    boost::asio::io_context io;
    auto work = boost::asio::make_work_guard(io);
    SystemClock clock;
    AsioTimers timers(io);
    ProcessRunner runner(io, timers, clock, shim_options(records));
    runner.start(request(clock, {"/bin/sh", "-c", script}), [](RunOutcome) { ::_exit(3); });
    io.run();
  }
  ::_exit(4);
}

// The job, its grandchild and the shim (its group leader).
struct JobPids {
  pid_t main = 0, grandchild = 0, shim = 0;
};
JobPids started_job(int report) {
  JobPids j;
  const std::vector<pid_t> pids = pids_in(read_line(report));
  if (pids.size() != 2) return j;
  j.main = pids[0];
  j.grandchild = pids[1];
  if (const auto st = read_proc_stat(j.main)) j.shim = st->pgrp;
  return j;
}

TEST(JobShimWorkerDeath, AKilledWorkerTakesItsJobAndGrandchildrenAlong) {
  const std::string records = temp_dir();
  const int report = report_pipe();
  const pid_t worker = fork_worker(records, "sleep 300 & echo $$ $! >&9; wait");
  ::close(kReportFd);
  const JobPids job = started_job(report);
  ::close(report);
  ASSERT_NE(job.grandchild, 0);
  ASSERT_TRUE(running(job.shim));
  EXPECT_EQ(entries(records), std::vector<std::string>{absl::StrCat(job.shim)});

  ASSERT_EQ(::kill(worker, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(worker, &status, 0), worker);
  EXPECT_TRUE(exits_within_bound(job.shim));
  EXPECT_TRUE(exits_within_bound(job.main));
  EXPECT_TRUE(exits_within_bound(job.grandchild));

  // The dead worker could not remove the record; the next start finds the
  // group already gone and removes it.
  const std::vector<JobGroupCleanup> report_entries = clean_up_job_groups(records);
  ASSERT_EQ(report_entries.size(), 1u);
  EXPECT_EQ(report_entries[0].action, "gone") << report_entries[0].detail;
  EXPECT_EQ(report_entries[0].pgid, job.shim);
  EXPECT_TRUE(entries(records).empty());
  std::filesystem::remove_all(records);
}

TEST(JobShimWorkerDeath, ALeaderlessOrphanGroupIsKilledAtTheNextStart) {
  const std::string records = temp_dir();
  const int report = report_pipe();
  const pid_t worker = fork_worker(records, "sleep 300 & echo $$ $! >&9; wait");
  ::close(kReportFd);
  const JobPids job = started_job(report);
  ::close(report);
  ASSERT_NE(job.grandchild, 0);
  // Worker and shim die together, the shim first, so neither can act: the
  // job's main process dies with the shim, its grandchild is left over.
  ASSERT_EQ(::kill(worker, SIGSTOP), 0);
  ASSERT_EQ(::kill(job.shim, SIGKILL), 0);
  EXPECT_TRUE(exits_within_bound(job.main));
  ASSERT_EQ(::kill(worker, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(worker, &status, 0), worker);
  ASSERT_TRUE(running(job.grandchild)) << "the scenario needs a surviving grandchild";

  const std::vector<JobGroupCleanup> done = clean_up_job_groups(records);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].action, "killed") << done[0].detail;
  EXPECT_EQ(done[0].killed, 1u) << done[0].detail;
  EXPECT_TRUE(exits_within_bound(job.grandchild));
  EXPECT_TRUE(entries(records).empty());
  std::filesystem::remove_all(records);
}

// A process of our own in its own process group, for records to point at.
pid_t spawn_group(const std::vector<std::string>& argv) {
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  EXPECT_EQ(::posix_spawn(&pid, args[0], nullptr, &attr, args.data(), environ), 0);
  posix_spawnattr_destroy(&attr);
  return pid;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

JobGroupRecord record_for(pid_t pgid, std::uint64_t start) {
  JobGroupRecord r;
  r.pgid = pgid;
  r.start = start;
  r.owner = ::getpid();
  r.owner_start = 1;  // not ours: the owner counts as dead
  r.token = 7;
  return r;
}

TEST(JobGroupRecords, FormatAndStrictParsing) {
  const JobGroupRecord r{1234, 5678, 99, 100, 42};
  const std::string text = format_job_group_record(r);
  EXPECT_EQ(text,
            "kairos-job-group v1\npgid=1234\nstart=5678\nowner=99\nowner_start=100\ntoken=42\n");
  const auto back = parse_job_group_record(text);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->pgid, 1234);
  EXPECT_EQ(back->start, 5678u);
  EXPECT_EQ(back->owner, 99);
  EXPECT_EQ(back->owner_start, 100u);
  EXPECT_EQ(back->token, 42u);
  for (const std::string& bad : std::vector<std::string>{
           std::string(""), text.substr(0, text.size() - 1),                  // no final newline
           text + "extra=1\n",                                                // extra line
           "kairos-job-group v2" + text.substr(19),                           // other version
           absl::StrCat("kairos-job-group v1\npgid=01234", text.substr(29)),  // leading zero
           absl::StrCat("kairos-job-group v1\npgid=1", text.substr(29)),      // pid 1
           absl::StrCat("kairos-job-group v1\npgid= 1234", text.substr(29)),
           absl::StrCat("kairos-job-group v1\npgid=-5", text.substr(29)),
           absl::StrCat("kairos-job-group v1\npgid=99999999999", text.substr(29)),
           absl::StrCat("kairos-job-group v1\nstart=5678\npgid=1234\nowner=99\nowner_start=100\n"
                        "token=42\n"),    // order
           text + std::string(300, '#'),  // oversize
       })
    EXPECT_FALSE(parse_job_group_record(bad).has_value()) << bad;
}

TEST(JobGroupRecords, MalformedRecordsAreReportedAndNothingIsKilled) {
  const std::string dir = temp_dir();
  const pid_t victim = spawn_group({"/bin/sleep", "300"});
  const std::string v = absl::StrCat(victim);
  write_file(dir + "/" + v, "garbage " + v + "\n");  // malformed content
  write_file(dir + "/not-a-pid", format_job_group_record(record_for(victim, 0)));
  write_file(dir + "/1", format_job_group_record(record_for(1, 0)));  // pid 1
  write_file(dir + "/.5.tmp", "kairos-job-group v1\n");               // half-written
  write_file(dir + "/big", std::string(1 << 20, 'x'));
  std::filesystem::create_directory(dir + "/4242");
  write_file(dir + "/target", format_job_group_record(record_for(victim, 0)));
  std::filesystem::create_symlink(dir + "/target", dir + "/4343");
  // Names and content disagree.
  write_file(dir + "/4444", format_job_group_record(record_for(victim, 0)));

  const std::vector<JobGroupCleanup> done = clean_up_job_groups(dir);
  std::size_t invalid = 0;
  for (const auto& c : done) {
    EXPECT_EQ(c.killed, 0u) << c.entry;
    if (c.action == "invalid") ++invalid;
  }
  EXPECT_EQ(invalid, done.size());
  EXPECT_EQ(invalid, 9u);
  EXPECT_TRUE(running(victim));
  EXPECT_EQ(entries(dir), std::vector<std::string>{"4242"}) << "only the directory stays";
  ::kill(victim, SIGKILL);
  ::waitpid(victim, nullptr, 0);
  std::filesystem::remove_all(dir);
}

TEST(JobGroupRecords, ARecycledPidIsNeverKilledAndALiveOwnerIsLeftAlone) {
  const std::string dir = temp_dir();
  const pid_t victim = spawn_group({"/bin/sleep", "300"});
  const auto st = read_proc_stat(victim);
  ASSERT_TRUE(st.has_value());
  // The recorded leader started at another time: the pid was reused.
  write_file(absl::StrCat(dir, "/", victim),
             format_job_group_record(record_for(victim, st->start + 1)));
  std::vector<JobGroupCleanup> done = clean_up_job_groups(dir);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].action, "recycled") << done[0].detail;
  EXPECT_TRUE(running(victim));
  EXPECT_TRUE(entries(dir).empty());

  // Right leader, but its owner (this process) still runs.
  JobGroupRecord r = record_for(victim, st->start);
  r.owner_start = read_proc_stat(::getpid())->start;
  write_file(absl::StrCat(dir, "/", victim), format_job_group_record(r));
  done = clean_up_job_groups(dir);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].action, "owner_alive") << done[0].detail;
  EXPECT_TRUE(running(victim));
  EXPECT_EQ(entries(dir).size(), 1u);

  // Owner dead, leader verified: the whole group goes.
  write_file(absl::StrCat(dir, "/", victim),
             format_job_group_record(record_for(victim, st->start)));
  done = clean_up_job_groups(dir);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].action, "killed") << done[0].detail;
  int status = 0;
  ASSERT_EQ(::waitpid(victim, &status, 0), victim);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  EXPECT_TRUE(entries(dir).empty());
  std::filesystem::remove_all(dir);
}

TEST(JobGroupRecords, ALeaderlessMemberWithoutTheTokenIsNotKilled) {
  const std::string dir = temp_dir();
  const int report = report_pipe();
  const pid_t leader = spawn_group({"/bin/sh", "-c", "sleep 300 & echo $! >&9; wait"});
  ::close(kReportFd);
  const std::vector<pid_t> pids = pids_in(read_line(report));
  ::close(report);
  ASSERT_EQ(pids.size(), 1u);
  const auto st = read_proc_stat(leader);
  ASSERT_TRUE(st.has_value());
  ASSERT_EQ(::kill(leader, SIGKILL), 0);
  ASSERT_EQ(::waitpid(leader, nullptr, 0), leader);
  // The group lives on without its leader; its member never had the token.
  write_file(absl::StrCat(dir, "/", leader),
             format_job_group_record(record_for(leader, st->start)));
  const std::vector<JobGroupCleanup> done = clean_up_job_groups(dir, absl::Milliseconds(200));
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].action, "survivors") << done[0].detail;
  EXPECT_EQ(done[0].killed, 0u);
  EXPECT_TRUE(running(pids[0]));
  ::kill(pids[0], SIGKILL);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kairos
