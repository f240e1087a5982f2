#include "prod/log/log_event_log.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace kairos {

namespace {

// Writes all of `data`; false on an error other than EINTR (EAGAIN on a
// non-blocking descriptor waits for it to become writable).
bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n > 0) {
      data.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, 1000);
      continue;
    }
    return false;
  }
  return true;
}

}  // namespace

LogEventLog::LogEventLog(LogEventLogOptions options)
    : options_(options), writer_([this] { writer_main(); }) {}

LogEventLog::~LogEventLog() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  writer_.join();
}

void LogEventLog::record(Event event) {
  std::string line = format_event(event);
  line.push_back('\n');
  append(std::move(line), event.at);
}

void LogEventLog::append(std::string line, absl::Time at) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    ++appended_;
    if (pending_.size() + line.size() > options_.max_buffered_bytes) {
      ++dropped_;
      ++unreported_drops_;
      ++finished_;
      written_.notify_all();
      return;
    }
    if (unreported_drops_ > 0) {
      Event notice;
      notice.at = at;
      notice.kind = "log.dropped";
      notice.with("count", unreported_drops_);
      pending_ += format_event(notice);
      pending_.push_back('\n');
      unreported_drops_ = 0;
    }
    pending_ += line;
    ++pending_lines_;
  }
  wake_.notify_one();
}

void LogEventLog::flush() {
  std::unique_lock<std::mutex> lk(mu_);
  const std::uint64_t target = appended_;
  written_.wait(lk, [&] { return finished_ >= target; });
}

std::uint64_t LogEventLog::dropped() const {
  std::lock_guard<std::mutex> lk(mu_);
  return dropped_;
}

void LogEventLog::writer_main() {
  std::unique_lock<std::mutex> lk(mu_);
  while (true) {
    wake_.wait(lk, [&] { return stopping_ || !pending_.empty(); });
    if (pending_.empty()) break;  // stopping, and everything is written
    std::string chunk;
    chunk.swap(pending_);
    const std::uint64_t lines = pending_lines_;
    pending_lines_ = 0;
    lk.unlock();
    const bool ok = write_all(options_.fd, chunk);
    lk.lock();
    if (!ok) dropped_ += lines;
    finished_ += lines;
    written_.notify_all();
  }
}

}  // namespace kairos
