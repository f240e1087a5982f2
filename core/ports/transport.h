// Transport: best-effort messages between nodes.
//
// Purpose. Workers and scheduler nodes exchange wire messages (core/kernel/wire.h)
// through this interface. Production uses TCP connections (a worker connects
// to a server; each connection is a peer); the simulator delivers messages
// through a network that can lose, duplicate, delay, reorder and replay them.
//
// Guarantees. Deliberately few, so core logic is correct on the weakest one:
// a message sent may arrive zero, one or more times, late, and out of order
// relative to other messages. A message that arrives is intact (framing and
// corruption are the adapter's business). Every request/response exchange in
// core carries its own ids, deadlines and retries.
//
// Threading. send() is called from the node's event loop and never blocks; the
// handler runs on the same loop, never re-entrantly inside send().
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace kairos {

// Identifies a peer of this node: a connection in production, a node in the
// simulator. Ids are never reused by one Transport instance.
using PeerId = std::uint64_t;

class Transport {
 public:
  virtual ~Transport() = default;

  using Handler = std::function<void(PeerId from, std::string_view message)>;

  // Queues `message` for `to`. Never fails synchronously: a message to an
  // unknown, disconnected or unreachable peer is dropped silently.
  virtual void send(PeerId to, std::string message) = 0;

  // Installs the handler for incoming messages, replacing any earlier one.
  virtual void set_handler(Handler handler) = 0;
};

}  // namespace kairos
