// LogEventLog's queue of structured events: the writer formats them into
// exactly the lines formatting at once gives (text and JSON), wakes for a
// lone event without a flush, and keeps order across many batches.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "prod/log/log_event_log.h"

namespace kairos {
namespace {

Event event(int i) {
  Event e;
  e.at = absl::FromUnixSeconds(1'767'225'600) + absl::Microseconds(i * 1001);
  e.kind = "run.claimed";
  e.with("job", std::string("a \"quoted\" job"))
      .with("token", static_cast<std::uint64_t>(i))
      .with("delta", static_cast<std::int64_t>(-i))
      .with("lease", absl::Milliseconds(i))
      .with("expiry", e.at + absl::Seconds(30));
  return e;
}

// Reads until `lines` newlines arrived (blocking reads, no sleeps).
std::string read_lines(int fd, std::size_t lines) {
  std::string out;
  char buf[4096];
  std::size_t seen = 0;
  while (seen < lines) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) seen += buf[i] == '\n';
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

void expect_same_lines(LogFormat format, int count) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::string text;
  {
    LogEventLog log({fds[1], std::size_t{64} << 20, format});
    std::thread reader([&] { text = read_lines(fds[0], static_cast<std::size_t>(count)); });
    for (int i = 0; i < count; ++i) log.record(event(i));
    log.flush();
    reader.join();
    EXPECT_EQ(log.dropped(), 0u);
  }
  ::close(fds[1]);
  ::close(fds[0]);
  std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i)
    EXPECT_EQ(lines[i],
              format == LogFormat::kJson ? format_event_json(event(i)) : format_event(event(i)));
}

TEST(LogEventLogBatching, TextLinesAreTheLinesOfFormattingAtOnceInOrder) {
  expect_same_lines(LogFormat::kText, 5000);
}

TEST(LogEventLogBatching, JsonLinesAreTheLinesOfFormattingAtOnceInOrder) {
  expect_same_lines(LogFormat::kJson, 5000);
}

TEST(LogEventLogBatching, ALoneEventIsWrittenWithoutAFlush) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  {
    LogEventLog log({fds[1], 1 << 20});
    // Each event alone, after the writer went back to sleep: each must wake it.
    for (int i = 0; i < 3; ++i) {
      log.record(event(i));
      EXPECT_EQ(read_lines(fds[0], 1), format_event(event(i)) + "\n");
    }
  }
  ::close(fds[1]);
  ::close(fds[0]);
}

}  // namespace
}  // namespace kairos
