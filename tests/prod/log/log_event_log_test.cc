// LogEventLog: one format_event line per event, in order; flush() waits for
// the writer; a full buffer drops and says so; a descriptor nobody reads
// never blocks record().
#include "prod/log/log_event_log.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/time/time.h"

namespace kairos {
namespace {

Event event(int i) {
  Event e;
  e.at = absl::FromUnixSeconds(1'767'225'600) + absl::Seconds(i);
  e.kind = "run.completed";
  e.with("job", std::string("demo hello")).with("token", static_cast<std::uint64_t>(i));
  return e;
}

std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  return out;
}

TEST(LogEventLog, WritesOneLinePerEventInOrder) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  {
    LogEventLog log({fds[1], 1 << 20});
    for (int i = 0; i < 100; ++i) log.record(event(i));
    log.flush();
    EXPECT_EQ(log.dropped(), 0u);
  }
  ::close(fds[1]);
  const std::string text = read_all(fds[0]);
  ::close(fds[0]);
  std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(lines[i], format_event(event(i)));
  EXPECT_EQ(lines[0], "2026-01-01T00:00:00Z run.completed job=\"demo hello\" token=0");
}

TEST(LogEventLog, AStuckReaderNeverBlocksRecordAndDropsAreReported) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  // Nobody reads the pipe: its 64 KiB fill up, the writer thread blocks, the
  // 4 KiB buffer fills, and further events are dropped, not waited for.
  auto log = std::make_unique<LogEventLog>(LogEventLogOptions{fds[1], 4096});
  for (int i = 0; i < 20000; ++i) log->record(event(i));
  EXPECT_GT(log->dropped(), 0u);
  // Unblock: read everything while the log drains and shuts down.
  ASSERT_EQ(::fcntl(fds[0], F_SETFL, O_NONBLOCK), 0);
  std::string text;
  std::thread reader([&] {
    ::fcntl(fds[0], F_SETFL, 0);
    text = read_all(fds[0]);
  });
  log->flush();               // the reader drains the pipe: room again
  log->record(event(99999));  // after the drops: preceded by a notice
  log->flush();
  log.reset();
  ::close(fds[1]);
  reader.join();
  ::close(fds[0]);
  EXPECT_NE(text.find("log.dropped count="), std::string::npos);
  EXPECT_NE(text.find("token=99999"), std::string::npos);
}

}  // namespace
}  // namespace kairos
