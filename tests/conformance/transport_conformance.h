// The transport conformance checks. Each check drives one TransportHarness
// and returns "" when the adapter behaved as core/ports/transport.h requires
// (plus what the harness says the adapter promises beyond it), or a
// description of the first violation. The suite
// (transport_conformance_test.cc) runs every check against every adapter:
// LoopbackHub and SimNetwork today; the TCP transport joins with one factory
// function.
//
// Harnesses run their adapter without injected faults: the checks then
// expect every message to a live peer to arrive exactly once, which both
// current adapters give on a clean network. Order between two peers is
// checked only where the harness says the adapter keeps it (ordered()).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "core/ports/transport.h"

namespace kairos::transport_test {

class TransportHarness {
 public:
  virtual ~TransportHarness() = default;
  virtual std::string name() const = 0;
  // A new peer: its id (what others pass to send()) and, through
  // transport(id), its own Transport.
  virtual PeerId add_peer() = 0;
  virtual Transport& transport(PeerId peer) = 0;
  // Makes `peer` go away (a hub endpoint destroyed, a simulated node
  // crashed): nothing is delivered to it from now on. May be called from
  // inside that peer's own handler. transport(peer) is not used afterwards.
  virtual void remove_peer(PeerId peer) = 0;
  // An id that names no peer.
  virtual PeerId unknown_peer() = 0;
  // Runs the loop until every message in flight was delivered or dropped.
  virtual void run() = 0;
  // True when messages between two peers arrive in the order they were sent.
  virtual bool ordered() const = 0;
};

using TransportHarnessFactory = std::function<std::unique_ptr<TransportHarness>()>;

// LoopbackHub on a ManualLoop.
std::unique_ptr<TransportHarness> make_loopback_harness();
// SimNetwork of a World with the default (fault-free) NetworkConfig.
std::unique_ptr<TransportHarness> make_sim_network_harness();
// TcpServerTransport/TcpClientTransport on loopback sockets
// (transport_tcp_harness.cc).
std::unique_ptr<TransportHarness> make_tcp_harness();
// `inner` with each peer's Transport replaced by `wrap(inner transport,
// peer id)` (broken adapters, for the suite's own test).
using TransportWrap = std::function<std::unique_ptr<Transport>(Transport&, PeerId)>;
std::unique_ptr<TransportHarness> make_wrapped_harness(std::unique_ptr<TransportHarness> inner,
                                                       std::string name, TransportWrap wrap);

// The checks.
// Each message reaches exactly the peer it was sent to, with the sender's id
// as `from`, and never inside send().
std::string check_delivery_to_the_right_peer(TransportHarness& h);
// A handler replies to `from` from inside the handler; the reply arrives.
std::string check_reply_from_a_handler(TransportHarness& h);
// Many messages between two peers: all arrive once; in send order where the
// adapter is ordered().
std::string check_per_peer_order(TransportHarness& h);
// Bytes arrive intact: NULs, 0xff, the empty message, kMaxMessageSize.
std::string check_messages_arrive_intact(TransportHarness& h);
// A send to an unknown id is dropped silently and disturbs nothing.
std::string check_send_to_unknown_peer(TransportHarness& h);
// A peer appears by its first message and disappears silently: messages in
// flight to a removed peer and sent to it later are dropped; the others are
// unaffected; a peer added later gets a new id.
std::string check_peer_appears_and_disappears(TransportHarness& h);
// A message is handed to the handler installed when it arrives; while none
// is installed messages are dropped, not buffered.
std::string check_handler_at_arrival(TransportHarness& h);
// A handler replaces itself; the running call finishes, later messages go to
// the new handler.
std::string check_handler_replaces_itself(TransportHarness& h);
// A handler removes its own peer; later messages to it are dropped.
std::string check_remove_from_a_handler(TransportHarness& h);

}  // namespace kairos::transport_test
