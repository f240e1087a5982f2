// MemoryEventLog: the in-memory twin of EventLog. Keeps every event, in the
// order recorded, for tests to inspect.
#pragma once

#include <cstddef>
#include <string_view>
#include <utility>
#include <vector>

#include "core/ports/event_log.h"

namespace kairos {

// Keeps every event in memory, for tests.
class MemoryEventLog final : public EventLog {
 public:
  void record(Event event) override { events_.push_back(std::move(event)); }
  const std::vector<Event>& events() const { return events_; }
  std::size_t count(std::string_view kind) const {
    std::size_t n = 0;
    for (const auto& e : events_) n += e.kind == kind;
    return n;
  }
  void clear() { events_.clear(); }

 private:
  std::vector<Event> events_;
};

}  // namespace kairos
