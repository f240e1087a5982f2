// Transport: best-effort messages between nodes.
//
// Purpose. Workers and scheduler nodes exchange wire messages
// (core/kernel/wire.h) through this interface. Production will use TCP
// connections (a worker connects to a server; each connection is a peer); a
// `kairos server` with local workers uses the in-process hub
// (core/twins/loopback_transport.h); the simulator delivers messages through
// a network that can lose, duplicate, delay, reorder and replay them
// (sim/world/sim_network.h).
//
// Peers. A PeerId names the other end of a conversation: a connection, a hub
// endpoint, a simulated node. There are no connect or disconnect
// notifications. A sender learns a peer's id from configuration (a worker's
// list of scheduler nodes) or from a message it received (a reply goes to
// `from`); a receiver sees a peer for the first time when its first message
// arrives. A peer that goes away does so silently: messages to it are
// dropped and nothing tells either side, so core notices a lost peer only
// through its own timeouts (request deadlines, lease expiry). Whether a peer
// that comes back gets a new id is the adapter's business (a new TCP
// connection is a new id; a restarted simulated node keeps its NodeId), so
// core never assumes that one id means one incarnation of the peer.
//
// Delivery. Deliberately weak, so core logic is correct on the weakest
// adapter: a message sent may arrive zero, one or more times, late, and out
// of order relative to other messages, even between the same two peers. What
// the current adapters give:
//   LoopbackHub   exactly once and in send order between any two endpoints,
//                 unless the receiver is gone or has no handler (dropped)
//   SimNetwork    no ordering; loss, duplication, replay of old messages and
//                 partitions as the fault plan says; nothing reaches a
//                 crashed node
//   TCP (planned) in order, at most once, per connection; whatever is queued
//                 when the connection breaks is lost
// A message that arrives is intact: the bytes the sender passed, never a
// prefix, a merge or a corruption (framing is the adapter's business).
//
// Messages. send() takes the bytes by value: from the call on they belong to
// the adapter, which keeps them as long as it needs (queued, in flight, kept
// for a simulated replay). The handler gets a view that is valid only until
// the handler returns; a handler that needs the bytes later copies them. A message is
// 0..kMaxMessageSize bytes (one wire frame at most); sending a larger one is a programming error
// (KAIROS_CHECK, like the wire encoder's own frame limit), never a silent truncation.
//
// Handler. Each incoming message is given to the handler installed when it
// arrives, not the one installed when it was sent; a message that arrives
// while no handler is installed is dropped, never buffered. set_handler()
// replaces the handler (an empty one drops everything from then on).
//
// Re-entrancy. A handler may call send() (a reply to `from`, or anyone else),
// set_handler() (replacing itself: the running call finishes normally) and,
// where the adapter lets a single transport be destroyed (a hub endpoint),
// destroy the transport it runs on; it must touch nothing of that transport
// afterwards. send() never runs a handler inside itself: every delivery is a
// later event on the receiver's loop.
//
// Threading. send() and set_handler() are called from the node's event loop
// and never block; the handler runs on the same loop. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace kairos {

// Identifies a peer of this node: a connection in production, an endpoint of
// a hub, a node in the simulator. Ids handed out by one Transport instance
// (connections, hub endpoints) are never reused by it.
using PeerId = std::uint64_t;

// The largest message: one wire frame (an 8-byte header and a body of at most
// 16 MiB, core/kernel/wire.h's kFrameHeaderSize + kMaxFrameBody).
inline constexpr std::size_t kMaxMessageSize = (std::size_t{16} << 20) + 8;

class Transport {
 public:
  virtual ~Transport() = default;

  using Handler = std::function<void(PeerId from, std::string_view message)>;

  // Queues `message` for `to` and returns at once. Never fails synchronously:
  // a message to an unknown, disconnected or unreachable peer is dropped
  // silently. `message.size()` must be at most kMaxMessageSize.
  virtual void send(PeerId to, std::string message) = 0;

  // Installs the handler for incoming messages, replacing any earlier one.
  virtual void set_handler(Handler handler) = 0;
};

}  // namespace kairos
