#include "prod/log/log_event_log.h"

#include <poll.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cerrno>
#include <utility>

#include "core/base/rfc3339.h"

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

std::string format_line(const Event& event, LogFormat format) {
  return format == LogFormat::kJson ? format_event_json(event) : format_event(event);
}

}  // namespace

std::string format_event_json(const Event& event) {
  boost::json::object o;
  o["at"] = format_rfc3339_utc(event.at);
  o["kind"] = std::string(event.kind);
  for (const EventField& f : event.fields) {
    std::string key(f.name);
    if (key == "at" || key == "kind") key = "field." + key;
    boost::json::value v;
    std::visit(
        [&v](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, absl::Time>) {
            v = format_rfc3339_utc(x);
          } else if constexpr (std::is_same_v<T, absl::Duration>) {
            v = absl::ToDoubleSeconds(x);
          } else {
            v = x;
          }
        },
        f.value);
    o[key] = std::move(v);
  }
  return boost::json::serialize(o);
}

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
  std::string line = format_line(event, options_.format);
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
      pending_ += format_line(notice, options_.format);
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
