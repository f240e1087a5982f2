// LogEventLog: the production EventLog, one text line per event.
//
// Purpose. `kairos server` writes every event its scheduler node, workers and
// runners record as one line (core/ports/event_log.h's format_event, the same text
// the simulator hashes; or, with LogFormat::kJson, one JSON object) to a file
// descriptor, normally stderr:
//
//   2026-01-01T10:00:00.123456Z run.completed job=demo-hello ... outcome=succeeded
//
// Never blocks the loop. record() formats the line on the caller's thread and
// appends it to an in-memory buffer under a mutex; a writer thread of this
// object does the write(2) calls. A slow or stuck reader of the descriptor
// (a full pipe, a slow terminal) therefore stalls only the writer thread.
// The buffer is bounded (options.max_buffered_bytes): when it is full, events
// are dropped and counted, and once there is room again the log says so in a
// line of its own: `... log.dropped count=N`. Write errors other than EINTR
// (a closed pipe, a full disk) drop the lines they affect and are counted the
// same way; the process carries on, because the log must never stop the
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
// (UTC), durations numbers of seconds (1.5), text escaped by Boost.JSON. A field named "at" or
// "kind" is written as "field.at" / "field.kind" so it cannot shadow the event's own.
std::string format_event_json(const Event& event);

class LogEventLog final : public EventLog {
 public:
  explicit LogEventLog(LogEventLogOptions options = {});
  ~LogEventLog() override;
  LogEventLog(const LogEventLog&) = delete;
  LogEventLog& operator=(const LogEventLog&) = delete;

  void record(Event event) override;

  // Blocks until every line recorded before the call was written (or
  // dropped). For shutdown and tests; never called on a hot path.
  void flush();

  // Events dropped so far because the buffer was full or a write failed.
  std::uint64_t dropped() const;

 private:
  void writer_main();
  void append(std::string line, absl::Time at);

  const LogEventLogOptions options_;
  mutable std::mutex mu_;
  std::condition_variable wake_;        // writer: there is work, or stop
  std::condition_variable written_;     // flush(): progress
  std::string pending_;                 // guarded by mu_
  std::uint64_t appended_ = 0;          // lines appended or dropped (guarded)
  std::uint64_t finished_ = 0;          // lines written or dropped (guarded)
  std::uint64_t pending_lines_ = 0;     // lines in pending_ (guarded)
  std::uint64_t dropped_ = 0;           // guarded
  std::uint64_t unreported_drops_ = 0;  // guarded
  bool stopping_ = false;               // guarded
  std::thread writer_;
};

}  // namespace kairos
