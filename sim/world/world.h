// World: the simulator's single-threaded, seeded, discrete-event universe.
//
// Purpose. Every simulated thing (node timers, network deliveries, store
// executions, faults, the workload) is an event in one queue ordered by
// (virtual time, sequence number). Virtual time moves only when the queue
// pops an event; nothing reads a real clock. One seed and one scenario give
// one history, bit for bit, in every build (release and sanitizer alike).
//
// Nodes. The world keeps a tiny registry of simulated processes ("nodes"):
// a name, whether it is up, an incarnation counter, and a pause deadline. An
// event scheduled *on a node* carries the node's incarnation at scheduling
// time: it is dropped if the node crashed since (crash() bumps the
// incarnation), and it is deferred to the end of a pause if the node is paused
// (a GC-like stall: the node's clock keeps running, its events wait).
// Deferred events keep their relative order.
//
// Trace. Every executed or dropped event, and every note() (fault applied,
// node-level event log record), is one trace record. Each record updates a
// 64-bit trace hash from integers only (time, sequence, kind, node, payload
// summary); a note hashes its text. Optional: a trace writer receives one
// text line per record, and checkpoints of the rolling hash every N records
// let find_divergence() (determinism.h) name the first record where two runs
// of one seed differ.
//
// Threading. Single-threaded by design; not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "core/ports/random.h"

namespace kairos::sim {

using NodeId = std::uint32_t;
// Events that belong to no node (faults, workload, the world itself).
inline constexpr NodeId kWorldNode = 0xffffffffu;

enum class EventKind : std::uint8_t {
  kWorld,       // world-level callback
  kTimer,       // a node's Timers::after
  kPost,        // a node's Timers::post
  kDeliver,     // a Transport message arrives
  kStoreCall,   // a store request arrives / executes
  kStoreReply,  // a store reply arrives at a client
  kStoreSync,   // group commit
  kSinkCall,    // a sink write arrives
  kSinkReply,   // a sink reply arrives
  kRunner,      // a simulated job's progress
  kFault,       // a fault is applied or undone
  kWorkload,    // the workload acts
  kTimeout,     // a client-side timeout fires
  kNote,        // a trace note (not a queued event)
  kCount_,
};
std::string_view to_string(EventKind kind);

// Identifies a queued event for cancel(). Never reused within one world run.
using EventId = std::uint64_t;

// The 64-bit mixing step used for the trace hash and payload summaries.
// Time quantisation (the scenario's `timing quantum=`): `d` rounded up to
// a multiple of `quantum`; `d` itself when the quantum is zero (off), so a
// world without one draws and schedules exactly as before.
inline absl::Duration on_grid(absl::Duration d, absl::Duration quantum) {
  if (quantum <= absl::ZeroDuration() || d <= absl::ZeroDuration()) return d;
  const std::int64_t q = absl::ToInt64Microseconds(quantum);
  const std::int64_t us = absl::ToInt64Microseconds(d);
  return absl::Microseconds((us + q - 1) / q * q);
}

inline std::uint64_t hash_mix(std::uint64_t h, std::uint64_t x) {
  h ^= x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdULL;
  return h ^ (h >> 32);
}
// A 64-bit digest of bytes (word-wise, integer only), for payload summaries
// of messages and notes.
std::uint64_t hash_bytes(std::string_view bytes);

struct NodeInfo {
  std::string name;
  std::uint64_t incarnation = 1;
  bool up = true;
  std::int64_t paused_until_ns = 0;  // true time; 0: not paused
};

class World {
 public:
  using Fn = std::function<void()>;
  using TraceWriter = std::function<void(std::string_view line)>;

  // Virtual time starts at `start` (true time). `seed` seeds random().
  explicit World(std::uint64_t seed, absl::Time start = default_start());
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  static absl::Time default_start();  // 2026-01-01T00:00:00Z

  std::uint64_t seed() const { return seed_; }
  // True (virtual) time: the time of the event being run.
  absl::Time now() const { return absl::FromUnixNanos(now_ns_); }
  std::int64_t now_ns() const { return now_ns_; }
  absl::Time start() const { return start_; }
  absl::Duration elapsed() const { return now() - start_; }

  // The world's generator; components take fork()s of it at construction, in
  // a fixed order, so adding draws in one component does not shift another.
  Random& random() { return random_; }

  // --- nodes -------------------------------------------------------------
  NodeId add_node(std::string name);
  const NodeInfo& node(NodeId id) const;
  std::size_t node_count() const { return nodes_.size(); }
  // Lookup by name; kWorldNode when absent.
  NodeId find_node(std::string_view name) const;
  bool is_up(NodeId id) const { return id == kWorldNode || nodes_[id].up; }
  bool is_paused(NodeId id) const;
  // Crash: drops every pending event of the node (now and forever).
  void crash(NodeId id);
  // Restart a crashed node with a new incarnation (no pending events).
  void restart(NodeId id);
  // Stall the node until now + d (extends an existing pause).
  void pause(NodeId id, absl::Duration d);

  // --- events ------------------------------------------------------------
  // Schedules `fn` at true time `at` (clamped to now). `node` may be
  // kWorldNode. Returns 0 (and drops `fn`) when `node` is down.
  EventId schedule_at(absl::Time at, EventKind kind, NodeId node, std::uint64_t payload, Fn fn);
  EventId schedule_after(absl::Duration d, EventKind kind, NodeId node, std::uint64_t payload,
                         Fn fn) {
    return schedule_at(now() + d, kind, node, payload, std::move(fn));
  }
  // Prevents a pending event from running; a no-op for unknown/finished ids.
  void cancel(EventId id);

  // Runs the next event. False when the queue is empty or stop() was called.
  bool step();
  // Runs every event with time <= `end`, then sets now to `end`.
  void run_until(absl::Time end);
  void run_for(absl::Duration d) { run_until(now() + d); }
  // Makes step()/run_until() return after the current event.
  void stop() { stopped_ = true; }
  bool stopped() const { return stopped_; }
  std::size_t pending() const { return heap_.size(); }

  // --- trace -------------------------------------------------------------
  // Adds a record that is not a queued event (a fault, a node's log event).
  void note(NodeId node, std::string_view text);
  // The same with a precomputed digest (cheap); `text` only reaches the trace
  // writer. Use tracing() to skip formatting it when nobody reads it.
  void note_digest(NodeId node, std::uint64_t digest, std::string_view text);
  bool tracing() const { return static_cast<bool>(writer_); }
  std::uint64_t trace_hash() const { return hash_; }
  std::uint64_t records() const { return records_; }
  std::uint64_t events_run() const { return events_run_; }
  std::uint64_t events_dropped() const { return events_dropped_; }
  void set_trace_writer(TraceWriter writer) { writer_ = std::move(writer); }
  // Stores the rolling hash after every `every` records (0: off).
  void set_checkpoint_interval(std::uint64_t every) { checkpoint_every_ = every; }
  const std::vector<std::uint64_t>& checkpoints() const { return checkpoints_; }

  // --- coverage marks ("sometimes" probes) --------------------------------
  void mark(std::string_view name) { ++marks_[std::string(name)]; }
  const std::map<std::string, std::uint64_t, std::less<>>& marks() const { return marks_; }

 private:
  struct HeapEntry {
    std::int64_t at;
    std::uint64_t seq;
    std::uint32_t slot;
  };
  struct Slot {
    Fn fn;
    std::uint64_t payload = 0;
    std::uint64_t incarnation = 0;
    std::uint32_t generation = 0;
    NodeId node = kWorldNode;
    EventKind kind = EventKind::kWorld;
    bool live = false;
  };
  static bool later(const HeapEntry& a, const HeapEntry& b) {
    return a.at != b.at ? a.at > b.at : a.seq > b.seq;
  }
  void push(std::int64_t at, std::uint32_t slot);
  void free_slot(std::uint32_t slot);
  void record(std::uint64_t seq, EventKind kind, NodeId node, std::uint64_t payload, bool dropped);

  std::uint64_t seed_;
  absl::Time start_;
  std::int64_t now_ns_;
  Random random_;
  std::vector<NodeInfo> nodes_;
  std::vector<HeapEntry> heap_;
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_slots_;
  std::uint64_t next_seq_ = 0;
  bool stopped_ = false;

  std::uint64_t hash_ = 0xcbf29ce484222325ULL;
  std::uint64_t records_ = 0;
  std::uint64_t events_run_ = 0;
  std::uint64_t events_dropped_ = 0;
  TraceWriter writer_;
  std::uint64_t checkpoint_every_ = 0;
  std::vector<std::uint64_t> checkpoints_;
  std::map<std::string, std::uint64_t, std::less<>> marks_;
};

}  // namespace kairos::sim
