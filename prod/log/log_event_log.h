// LogEventLog: the production EventLog, one text line per event.
//
// Purpose. `kairos server` writes every event its scheduler node, workers and
// runners record as one line (core/ports/event_log.h's format_event, the same
// text the simulator hashes; or, with LogFormat::kJson, one JSON object) to a
// file descriptor, normally stderr:
//
//   2026-01-01T10:00:00.123456Z run.completed job=demo-hello ...
//   outcome=succeeded
//
// Never blocks the loop, and costs the loop little. record() only moves the
// structured Event into a queue under a mutex; a writer thread of this
// object formats the queued events (the same bytes as formatting them at
// once, in the same order) and does the write(2) calls, a batch at a time.
// The loop wakes the writer only when it was asleep with nothing queued, or
// when the queue passes a batch size or half its byte bound; otherwise the
// writer collects for up to a short linger interval (about a millisecond)
// before writing, so a busy loop pays about one wake-up per batch, not one
// per event. A slow or stuck reader of the descriptor (a full pipe, a slow
// terminal) therefore stalls only the writer thread. Formatting later
// relies on what core/ports/event_log.h requires of every Event: its kind and
// field names have static storage (the values are owned by the Event).
// The queue is bounded (options.max_buffered_bytes, counted in the estimated
// length of the queued lines): when it is full, events are dropped and
// counted, and once there is room again the log says so in a line of its
// own: `... log.dropped count=N`. Write errors other than EINTR (a closed
// pipe, a full disk) drop the lines they affect and are counted the same
// way; the process carries on, because the log must never stop the
// scheduler.
//
// Threading. record() and flush() may be called from any thread (in practice
// the event loop). The destructor writes everything still buffered, then
// joins the writer thread; it does not close the descriptor.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "core/ports/event_log.h"

namespace kairos {

enum class LogFormat : std::uint8_t {
  kText,  // format_event's line
  kJson,  // one JSON object per line (format_event_json)
};

struct LogEventLogOptions {
  int fd = 2;  // stderr
  std::size_t max_buffered_bytes = std::size_t{8} << 20;
  LogFormat format = LogFormat::kText;
};

// One event as one JSON object, without a newline:
//   {"at":"2026-01-01T10:00:00.123456Z","kind":"run.completed","job":"demo-hello",...}
// Fields keep their order; integers are JSON numbers, times RFC 3339 strings
// (UTC), durations numbers of seconds (1.5), text escaped by Boost.JSON. A
// field named "at" or "kind" is written as "field.at" / "field.kind" so it
// cannot shadow the event's own.
std::string format_event_json(const Event &event);

class LogEventLog final : public EventLog {
 public:
  explicit LogEventLog(LogEventLogOptions options = {});
  ~LogEventLog() override;
  LogEventLog(const LogEventLog &) = delete;
  LogEventLog &operator=(const LogEventLog &) = delete;

  void record(Event event) override;

  // Blocks until every line recorded before the call was written (or
  // dropped). For shutdown and tests; never called on a hot path.
  void flush();

  // Events dropped so far because the buffer was full or a write failed.
  std::uint64_t dropped() const;

 private:
  void writer_main();
  bool hurry() const;  // mu_ held: write now instead of lingering

  const LogEventLogOptions options_;
  mutable std::mutex mu_;
  std::condition_variable wake_;        // writer: there is work, or stop
  std::condition_variable written_;     // flush(): progress
  std::vector<Event> queue_;            // guarded by mu_; drop notices included
  std::size_t queued_bytes_ = 0;        // estimated line bytes of queue_ (guarded)
  std::uint64_t queued_lines_ = 0;      // recorded events in queue_ (guarded)
  std::uint64_t appended_ = 0;          // events recorded or dropped (guarded)
  std::uint64_t finished_ = 0;          // events written or dropped (guarded)
  std::uint64_t dropped_ = 0;           // guarded
  std::uint64_t unreported_drops_ = 0;  // guarded
  std::uint32_t flush_waiters_ = 0;     // guarded
  bool writer_asleep_ = false;          // guarded: waiting with nothing queued
  bool stopping_ = false;               // guarded
  std::thread writer_;
};

}  // namespace kairos
