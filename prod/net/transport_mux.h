// TransportMux: several Transports seen as one.
//
// Purpose. A scheduler node has exactly one Transport, but a `kairos server`
// reaches its workers two ways: local workers through a LoopbackHub endpoint
// and remote workers through TcpServerTransport connections. The mux gives
// the node one Transport over both (any number of inner transports, in
// fact): a message from inner transport i and its peer p reaches the node's
// handler as from = p * n + i (n = the number of inner transports), and a
// send to that id goes to peer p through transport i. The node neither knows
// nor cares which way a worker came.
//
// Guarantees. Each inner transport's own delivery promises hold unchanged
// for its peers (the mux adds no queue and no reordering). Ids handed out
// are never reused while the inner transports never reuse theirs, and two
// inner transports' peers never share an id. A send to an id whose inner
// peer id would not fit (p * n + i overflows) cannot happen for an id the
// mux handed out; such a send is dropped like one to an unknown peer.
// set_handler() installs a translating handler on every inner transport; it
// runs each inner delivery with a copy of the handler, so a handler may
// replace itself. send() never delivers inside itself because no inner
// transport does.
//
// Threading and lifetime. The inner transports must outlive the mux and run
// on the same loop; on destruction the mux removes its handlers from them.
// Purity: no I/O of its own.
#pragma once

#include <memory>
#include <vector>

#include "core/ports/transport.h"

namespace kairos::net {

class TransportMux final : public Transport {
 public:
  explicit TransportMux(std::vector<Transport*> inner);
  ~TransportMux() override;
  TransportMux(const TransportMux&) = delete;
  TransportMux& operator=(const TransportMux&) = delete;

  void send(PeerId to, std::string message) override;
  void set_handler(Handler handler) override;

  // The mux id of `peer` of inner transport `index` (what the node sees).
  PeerId id_of(std::size_t index, PeerId peer) const;

 private:
  std::vector<Transport*> inner_;
};

}  // namespace kairos::net
