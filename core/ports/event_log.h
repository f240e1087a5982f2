// EventLog: the structured record of what a node decided and why.
//
// Purpose. Every state change of a run, every rejected stale write and every
// leadership change is recorded as an Event. The simulator's history and the
// production log (JSON lines) are built from the same events, so the checker
// and an operator read the same facts.
//
// Contract. record() is called on the node's event loop, never fails and
// never blocks on I/O (a production adapter buffers). Events from one node are
// recorded in the order they happened on that node. Field order is the order
// the caller gave; names are static strings.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "absl/time/time.h"

namespace kairos {

using EventValue =
    std::variant<std::int64_t, std::uint64_t, std::string, absl::Time, absl::Duration>;

struct EventField {
  std::string_view name;  // static storage
  EventValue value;
};

struct Event {
  absl::Time at;          // the recording node's clock
  std::string_view kind;  // static storage, dotted: "run.claimed"
  std::vector<EventField> fields;

  Event& with(std::string_view name, EventValue value) {
    fields.push_back({name, std::move(value)});
    return *this;
  }
  // The field named `name`, or nullptr.
  const EventValue* find(std::string_view name) const {
    for (const auto& f : fields)
      if (f.name == name) return &f.value;
    return nullptr;
  }
};

// One line of text: `kind name=value ...`, times in RFC 3339 UTC. Stable; used
// by logs and by the simulator's trace hash.
std::string format_event(const Event& event);
// The same line appended to `out` (no newline): a log formats many events
// into one buffer without a string per event.
void append_event_line(std::string& out, const Event& event);

class EventLog {
 public:
  virtual ~EventLog() = default;
  virtual void record(Event event) = 0;
};

// Discards everything.
class NullEventLog final : public EventLog {
 public:
  void record(Event) override {}
};

}  // namespace kairos
