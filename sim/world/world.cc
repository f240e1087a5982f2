#include "sim/world/world.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "core/base/check.h"

namespace kairos::sim {

std::string_view to_string(EventKind kind) {
  switch (kind) {
    case EventKind::kWorld:
      return "world";
    case EventKind::kTimer:
      return "timer";
    case EventKind::kPost:
      return "post";
    case EventKind::kDeliver:
      return "deliver";
    case EventKind::kStoreCall:
      return "store-call";
    case EventKind::kStoreReply:
      return "store-reply";
    case EventKind::kStoreSync:
      return "store-sync";
    case EventKind::kSinkCall:
      return "sink-call";
    case EventKind::kSinkReply:
      return "sink-reply";
    case EventKind::kRunner:
      return "runner";
    case EventKind::kFault:
      return "fault";
    case EventKind::kWorkload:
      return "workload";
    case EventKind::kTimeout:
      return "timeout";
    case EventKind::kNote:
      return "note";
    case EventKind::kCount_:
      break;
  }
  return "?";
}

std::uint64_t hash_bytes(std::string_view bytes) {
  // Eight bytes at a time (little-endian loads, as on every supported
  // target), then the tail byte by byte; mixed with hash_mix.
  std::uint64_t h = 0xcbf29ce484222325ULL ^ bytes.size();
  std::size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, bytes.data() + i, 8);
    h = hash_mix(h, w);
  }
  std::uint64_t tail = 0;
  for (std::size_t k = 0; i < bytes.size(); ++i, ++k)
    tail |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * k);
  return hash_mix(h, tail);
}

absl::Time World::default_start() { return absl::FromUnixSeconds(1767225600); }  // 2026-01-01Z

World::World(std::uint64_t seed, absl::Time start)
    : seed_(seed), start_(start), now_ns_(absl::ToUnixNanos(start)), random_(seed) {
  heap_.reserve(1024);
  slots_.reserve(1024);
}

NodeId World::add_node(std::string name) {
  KAIROS_CHECK_MSG(find_node(name) == kWorldNode, "duplicate node name");
  nodes_.push_back(NodeInfo{std::move(name)});
  return static_cast<NodeId>(nodes_.size() - 1);
}

const NodeInfo& World::node(NodeId id) const {
  KAIROS_CHECK(id < nodes_.size());
  return nodes_[id];
}

NodeId World::find_node(std::string_view name) const {
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].name == name) return static_cast<NodeId>(i);
  return kWorldNode;
}

bool World::is_paused(NodeId id) const {
  return id != kWorldNode && nodes_[id].paused_until_ns > now_ns_;
}

void World::crash(NodeId id) {
  KAIROS_CHECK(id < nodes_.size());
  NodeInfo& n = nodes_[id];
  n.up = false;
  ++n.incarnation;  // every pending event of the old incarnation is now stale
  n.paused_until_ns = 0;
  note(id, "crash");
}

void World::restart(NodeId id) {
  KAIROS_CHECK(id < nodes_.size());
  NodeInfo& n = nodes_[id];
  KAIROS_CHECK_MSG(!n.up, "restart of a node that is up");
  n.up = true;
  ++n.incarnation;
  note(id, "restart");
}

void World::pause(NodeId id, absl::Duration d) {
  KAIROS_CHECK(id < nodes_.size());
  NodeInfo& n = nodes_[id];
  const std::int64_t until = now_ns_ + absl::ToInt64Nanoseconds(d);
  n.paused_until_ns = std::max(n.paused_until_ns, until);
  note(id, absl::StrCat("pause ", absl::FormatDuration(d)));
}

void World::push(std::int64_t at, std::uint32_t slot) {
  heap_.push_back(HeapEntry{at, next_seq_++, slot});
  std::push_heap(heap_.begin(), heap_.end(), later);
}

void World::free_slot(std::uint32_t slot) {
  Slot& s = slots_[slot];
  s.fn = nullptr;
  s.live = false;
  ++s.generation;
  free_slots_.push_back(slot);
}

EventId World::schedule_at(absl::Time at, EventKind kind, NodeId node, std::uint64_t payload,
                           Fn fn) {
  std::uint64_t incarnation = 0;
  if (node != kWorldNode) {
    KAIROS_CHECK(node < nodes_.size());
    if (!nodes_[node].up) return 0;
    incarnation = nodes_[node].incarnation;
  }
  std::uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    KAIROS_CHECK(slots_.size() < 0xffffffffu);
    slot = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  Slot& s = slots_[slot];
  s.fn = std::move(fn);
  s.payload = payload;
  s.incarnation = incarnation;
  s.node = node;
  s.kind = kind;
  s.live = true;
  push(std::max(absl::ToUnixNanos(at), now_ns_), slot);
  // Generation starts at 0; +1 keeps id 0 meaning "not scheduled".
  return (static_cast<EventId>(s.generation) + 1) << 32 | slot;
}

void World::cancel(EventId id) {
  if (id == 0) return;
  const auto slot = static_cast<std::uint32_t>(id & 0xffffffffu);
  const auto generation = static_cast<std::uint32_t>((id >> 32) - 1);
  if (slot >= slots_.size()) return;
  Slot& s = slots_[slot];
  if (!s.live || s.generation != generation) return;
  s.live = false;  // popped later and freed without running
  s.fn = nullptr;
}

void World::record(std::uint64_t seq, EventKind kind, NodeId node, std::uint64_t payload,
                   bool dropped) {
  std::uint64_t h = hash_;
  h = hash_mix(h, static_cast<std::uint64_t>(now_ns_));
  h = hash_mix(h, seq);
  h = hash_mix(h, static_cast<std::uint64_t>(kind) | std::uint64_t{dropped} << 8 |
                      static_cast<std::uint64_t>(node) << 16);
  h = hash_mix(h, payload);
  hash_ = h;
  ++records_;
  if (writer_) {
    writer_(absl::StrCat(records_, " t=", now_ns_ - absl::ToUnixNanos(start_), " seq=", seq, " ",
                         absl_sv(to_string(kind)), dropped ? "(dropped)" : "",
                         " node=", node == kWorldNode ? std::string("world") : nodes_[node].name,
                         " payload=", absl::Hex(payload), " hash=", absl::Hex(hash_)));
  }
  if (checkpoint_every_ != 0 && records_ % checkpoint_every_ == 0) checkpoints_.push_back(hash_);
}

void World::note(NodeId node, std::string_view text) { note_digest(node, hash_bytes(text), text); }

void World::note_digest(NodeId node, std::uint64_t digest, std::string_view text) {
  std::uint64_t h = hash_;
  h = hash_mix(h, static_cast<std::uint64_t>(now_ns_));
  h = hash_mix(h, static_cast<std::uint64_t>(EventKind::kNote) | static_cast<std::uint64_t>(node)
                                                                     << 16);
  h = hash_mix(h, digest);
  hash_ = h;
  ++records_;
  if (writer_) {
    writer_(absl::StrCat(records_, " t=", now_ns_ - absl::ToUnixNanos(start_), " note node=",
                         node == kWorldNode ? std::string("world") : nodes_[node].name, " ",
                         absl_sv(text), " hash=", absl::Hex(hash_)));
  }
  if (checkpoint_every_ != 0 && records_ % checkpoint_every_ == 0) checkpoints_.push_back(hash_);
}

bool World::step() {
  while (!heap_.empty() && !stopped_) {
    std::pop_heap(heap_.begin(), heap_.end(), later);
    const HeapEntry e = heap_.back();
    heap_.pop_back();
    Slot& s = slots_[e.slot];
    if (!s.live) {  // cancelled
      free_slot(e.slot);
      continue;
    }
    KAIROS_CHECK(e.at >= now_ns_);
    now_ns_ = e.at;
    if (s.node != kWorldNode) {
      const NodeInfo& n = nodes_[s.node];
      if (!n.up || n.incarnation != s.incarnation) {
        ++events_dropped_;
        record(e.seq, s.kind, s.node, s.payload, /*dropped=*/true);
        free_slot(e.slot);
        return true;
      }
      if (n.paused_until_ns > now_ns_) {  // defer to the end of the pause, in order
        push(n.paused_until_ns, e.slot);
        continue;
      }
    }
    Fn fn = std::move(s.fn);
    const EventKind kind = s.kind;
    const NodeId node = s.node;
    const std::uint64_t payload = s.payload;
    free_slot(e.slot);
    ++events_run_;
    record(e.seq, kind, node, payload, /*dropped=*/false);
    fn();
    return true;
  }
  return false;
}

void World::run_until(absl::Time end) {
  const std::int64_t end_ns = absl::ToUnixNanos(end);
  while (!heap_.empty() && !stopped_) {
    if (heap_.front().at > end_ns) break;
    step();
  }
  if (!stopped_ && end_ns > now_ns_) now_ns_ = end_ns;
}

}  // namespace kairos::sim
