#include "prod/log/log_event_log.h"

#include <poll.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cerrno>
#include <chrono>
#include <string>
#include <utility>
#include <variant>
#include <vector>

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

// Appends the event's line, without its newline.
void append_line(std::string &out, const Event &event, LogFormat format) {
  if (format == LogFormat::kJson)
    out += format_event_json(event);
  else
    append_event_line(out, event);
}

// Events the writer lets gather before it is woken at once, and how long it
// collects (with fewer queued) before writing what it has.
constexpr std::size_t kWakeBatch = 1024;
constexpr std::chrono::milliseconds kLinger{1};

// About the length of the event's text line: what the byte bound counts, so
// the queue's memory stays in proportion to it without formatting anything
// on the recording thread.
std::size_t estimated_line_size(const Event &event) {
  std::size_t n = 29 + event.kind.size();  // time, spaces, newline
  for (const EventField &f : event.fields) {
    n += 2 + f.name.size();
    if (const auto *text = std::get_if<std::string>(&f.value))
      n += text->size() + 2;
    else
      n += 20;
  }
  return n;
}

}  // namespace

std::string format_event_json(const Event &event) {
  boost::json::object o;
  o["at"] = format_rfc3339_utc(event.at);
  o["kind"] = std::string(event.kind);
  for (const EventField &f : event.fields) {
    std::string key(f.name);
    if (key == "at" || key == "kind") key = "field." + key;
    boost::json::value v;
    std::visit(
        [&v](const auto &x) {
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
  const std::size_t bytes = estimated_line_size(event);
  bool wake = false;
  {
    std::lock_guard<std::mutex> lk(mu_);
    ++appended_;
    if (queued_bytes_ + bytes > options_.max_buffered_bytes) {
      ++dropped_;
      ++unreported_drops_;
      ++finished_;
      if (flush_waiters_ > 0) written_.notify_all();
      return;
    }
    const std::size_t half = options_.max_buffered_bytes / 2;
    const bool below_half = queued_bytes_ < half;
    if (unreported_drops_ > 0) {
      Event notice;
      notice.at = event.at;
      notice.kind = "log.dropped";
      notice.with("count", unreported_drops_);
      queued_bytes_ += estimated_line_size(notice);
      queue_.push_back(std::move(notice));
      unreported_drops_ = 0;
    }
    queued_bytes_ += bytes;
    queue_.push_back(std::move(event));
    ++queued_lines_;
    wake = writer_asleep_ || queue_.size() == kWakeBatch || (below_half && queued_bytes_ >= half);
    if (wake) writer_asleep_ = false;
  }
  if (wake) wake_.notify_one();
}

void LogEventLog::flush() {
  std::unique_lock<std::mutex> lk(mu_);
  const std::uint64_t target = appended_;
  ++flush_waiters_;
  wake_.notify_one();  // a lingering writer writes at once
  written_.wait(lk, [&] { return finished_ >= target; });
  --flush_waiters_;
}

std::uint64_t LogEventLog::dropped() const {
  std::lock_guard<std::mutex> lk(mu_);
  return dropped_;
}

bool LogEventLog::hurry() const {
  return stopping_ || flush_waiters_ > 0 || queue_.size() >= kWakeBatch ||
         queued_bytes_ >= options_.max_buffered_bytes / 2;
}

void LogEventLog::writer_main() {
  std::vector<Event> batch;
  std::string chunk;
  std::unique_lock<std::mutex> lk(mu_);
  while (true) {
    if (queue_.empty()) {
      if (stopping_) break;  // everything is written
      writer_asleep_ = true;
      wake_.wait(lk, [&] { return stopping_ || !queue_.empty(); });
      writer_asleep_ = false;
      continue;
    }
    // Collect more before writing, unless someone waits or the queue is large.
    if (!hurry()) wake_.wait_for(lk, kLinger, [&] { return hurry(); });
    batch.swap(queue_);
    const std::uint64_t lines = queued_lines_;
    queued_lines_ = 0;
    queued_bytes_ = 0;
    lk.unlock();
    chunk.clear();
    for (const Event &e : batch) {
      append_line(chunk, e, options_.format);
      chunk.push_back('\n');
    }
    batch.clear();
    const bool ok = write_all(options_.fd, chunk);
    lk.lock();
    if (!ok) dropped_ += lines;
    finished_ += lines;
    written_.notify_all();
  }
}

}  // namespace kairos
