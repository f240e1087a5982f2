// Job-group records name their run: the v2 format (job id, incarnation,
// nominal time, attempt next to the fencing token), its strict parsing, v1
// records still read, the shim writing the run from the runner's KAIROS_*
// variables, and the cleanup reporting the run of each record so that the
// restarted server can hand back exactly the runs whose group is proven over.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/kernel/job_store.h"
#include "core/kernel/records.h"
#include "prod/runners/job_records.h"
#include "prod/runners/process_runner.h"
#include "prod/runtime/asio_runtime.h"
#include "tests/support/shim_runner.h"

namespace kairos {
namespace {

constexpr auto kBound = std::chrono::seconds(30);

std::string temp_dir() { return test_support::temp_dir("kairos-records-test"); }

using test_support::entries;

const absl::Time kNominal = absl::FromUnixSeconds(1'767'225'600);  // 2026-01-01T00:00:00Z

JobGroupRecord v2_record() {
  JobGroupRecord r{1234, 5678, 99, 100, 42};
  r.run = RunId{"team/job-1", 3, kNominal + absl::Milliseconds(250)};
  r.attempt = 2;
  return r;
}

TEST(JobGroupRecordsV2, FormatNamesTheRunAndRoundTrips) {
  const std::string text = format_job_group_record(v2_record());
  EXPECT_EQ(text,
            "kairos-job-group v2\npgid=1234\nstart=5678\nowner=99\nowner_start=100\ntoken=42\n"
            "job=team/job-1\nincarnation=3\nnominal=2026-01-01T00:00:00.25Z\nattempt=2\n");
  const auto back = parse_job_group_record(text);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->token, 42u);
  ASSERT_TRUE(back->run.has_value());
  EXPECT_EQ(*back->run, *v2_record().run);
  EXPECT_EQ(back->attempt, 2u);
  // A v1 record (older servers) still reads; it names no run.
  JobGroupRecord v1{1234, 5678, 99, 100, 42};
  const auto old = parse_job_group_record(format_job_group_record(v1));
  ASSERT_TRUE(old.has_value());
  EXPECT_FALSE(old->run.has_value());
  // The longest valid record fits the bound.
  JobGroupRecord big = v2_record();
  big.pgid = big.owner = INT32_MAX;
  big.start = big.owner_start = big.token = UINT64_MAX;
  big.run->job_id = std::string(kMaxJobIdSize, 'j');
  big.run->incarnation = UINT64_MAX;
  // 9999-12-31T23:59:59.999999999Z: nine fractional digits.
  big.run->nominal = absl::FromUnixSeconds(253'402'300'799) + absl::Nanoseconds(999'999'999);
  big.attempt = UINT32_MAX;
  const std::string big_text = format_job_group_record(big);
  EXPECT_LE(big_text.size(), kMaxRecordBytes);
  EXPECT_TRUE(parse_job_group_record(big_text).has_value()) << big_text;
}

TEST(JobGroupRecordsV2, StrictParsing) {
  const std::string text = format_job_group_record(v2_record());
  auto with = [&](const std::string& from, const std::string& to) {
    std::string out = text;
    const auto at = out.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) out.replace(at, from.size(), to);
    return out;
  };
  for (const std::string& bad : std::vector<std::string>{
           text.substr(0, text.size() - 1),                     // no final newline
           text + "extra=1\n",                                  // extra line
           with("kairos-job-group v2", "kairos-job-group v1"),  // v1 magic, v2 body
           with("job=team/job-1", "job="),                      // empty id
           with("job=team/job-1", "job=team job"),              // not a valid id
           with("job=team/job-1", "job=a\rb"),                  // control character
           with("job=team/job-1", absl::StrCat("job=", std::string(kMaxJobIdSize + 1, 'j'))),
           with("incarnation=3", "incarnation=0"),   // incarnations start at 1
           with("incarnation=3", "incarnation=03"),  // not canonical
           with("attempt=2", "attempt=0"),           // attempts start at 1
           with("attempt=2", "attempt=4294967296"),  // beyond 32 bits
           with("nominal=2026-01-01T00:00:00.25Z", "nominal=2026-01-01T00:00:00.250Z"),
           with("nominal=2026-01-01T00:00:00.25Z", "nominal=2026-01-01T00:00:00.25+00:00"),
           with("nominal=2026-01-01T00:00:00.25Z", "nominal=2026-01-01 00:00:00.25Z"),
           with("nominal=2026-01-01T00:00:00.25Z", "nominal=yesterday"),
           with("nominal=2026-01-01T00:00:00.25Z", "nominal="),
           with("job=team/job-1\nincarnation=3", "incarnation=3\njob=team/job-1"),  // order
           with("attempt=2\n", ""),                          // a line missing
           text + std::string(kMaxRecordBytes, '#') + "\n",  // oversize
       })
    EXPECT_FALSE(parse_job_group_record(bad).has_value()) << bad;
  EXPECT_FALSE(parse_nominal_time("2026-01-01T00:00:00.000Z").has_value());
  EXPECT_EQ(parse_nominal_time("2026-01-01T00:00:00Z"), kNominal);
}

RunRequest request(const Clock& clock, std::vector<std::string> argv) {
  return test_support::shim_request(clock, std::move(argv), kNominal + absl::Microseconds(1500), 3);
}
using test_support::shim_options;

TEST(JobGroupRecordsV2, TheShimRecordsTheRunFromTheRunnersVariables) {
  const std::string records = temp_dir();
  boost::asio::io_context io;
  auto work = boost::asio::make_work_guard(io);
  SystemClock clock;
  AsioTimers timers(io);
  std::optional<RunOutcome> out;
  {
    ProcessRunner runner(io, timers, clock, shim_options(records));
    runner.start(request(clock, {"/bin/sh", "-c", absl::StrCat("cat ", records, "/*")}),
                 [&](RunOutcome o) { out = std::move(o); });
    const auto end = std::chrono::steady_clock::now() + kBound;
    while (!out && std::chrono::steady_clock::now() < end)
      io.run_one_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->status, RunStatus::kSucceeded) << out->detail;
  EXPECT_TRUE(absl::StrContains(out->detail, "kairos-job-group v2\n")) << out->detail;
  EXPECT_TRUE(absl::StrContains(out->detail,
                                "token=42\njob=job-1\nincarnation=2\n"
                                "nominal=2026-01-01T00:00:00.0015Z\nattempt=3\n"))
      << out->detail;
  std::filesystem::remove_all(records);
}

// A worker process whose ProcessRunner runs `sleep 300` and never returns.
pid_t fork_worker(const std::string& records) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  {
    boost::asio::io_context io;
    auto work = boost::asio::make_work_guard(io);
    SystemClock clock;
    AsioTimers timers(io);
    ProcessRunner runner(io, timers, clock, shim_options(records));
    runner.start(request(clock, {"/bin/sleep", "300"}), [](RunOutcome) { ::_exit(3); });
    io.run();
  }
  ::_exit(4);
}

TEST(JobGroupRecordsV2, CleanupReportsTheRunOfAGroupProvenOver) {
  const std::string records = temp_dir();
  const pid_t worker = fork_worker(records);
  const auto end = std::chrono::steady_clock::now() + kBound;
  while (entries(records).empty() && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(entries(records).size(), 1u);

  // While the worker lives the record is its own: left alone, not over.
  std::vector<JobGroupCleanup> alive = clean_up_job_groups(records, absl::ZeroDuration());
  ASSERT_EQ(alive.size(), 1u);
  EXPECT_EQ(alive[0].action, "owner_alive");
  EXPECT_FALSE(group_proven_over(alive[0]));
  ASSERT_TRUE(alive[0].run.has_value());
  EXPECT_EQ(alive[0].token, 42u);

  ASSERT_EQ(::kill(worker, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(worker, &status, 0), worker);
  const std::vector<JobGroupCleanup> done = clean_up_job_groups(records);
  ASSERT_EQ(done.size(), 1u);
  const JobGroupCleanup& c = done[0];
  EXPECT_TRUE(c.action == "gone" || c.action == "killed") << c.action << ": " << c.detail;
  EXPECT_TRUE(group_proven_over(c));
  ASSERT_TRUE(c.run.has_value());
  EXPECT_EQ(*c.run, (RunId{"job-1", 2, kNominal + absl::Microseconds(1500)}));
  EXPECT_EQ(c.attempt, 3u);
  EXPECT_EQ(c.token, 42u);
  EXPECT_TRUE(entries(records).empty());
  std::filesystem::remove_all(records);
}

TEST(JobGroupRecordsV2, OnlyKilledGoneAndRecycledAreProvenOver) {
  for (const char* action : {"killed", "gone", "recycled"}) {
    JobGroupCleanup c;
    c.action = action;
    EXPECT_TRUE(group_proven_over(c)) << action;
  }
  for (const char* action : {"owner_alive", "survivors", "invalid", ""}) {
    JobGroupCleanup c;
    c.action = action;
    EXPECT_FALSE(group_proven_over(c)) << action;
  }
}

}  // namespace
}  // namespace kairos
