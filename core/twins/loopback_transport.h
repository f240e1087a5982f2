// LoopbackHub: an in-process Transport between objects on one event loop.
//
// Purpose. A `kairos server` with local workers runs a SchedulerNode and
// several Workers in one process, on one event loop. They talk through the
// real wire protocol (core/kernel/wire.h), exactly as a remote worker will over TCP,
// but the bytes go through this hub instead of a socket: nothing in the node
// or the worker knows whether its peer is local. Tests use it the same way.
//
// Model. A hub owns a set of endpoints; each endpoint is a Transport with its
// own PeerId (1, 2, 3, ... in order of creation, never reused by one hub). A
// message sent to a PeerId is delivered to that endpoint's handler with the
// sender's PeerId as `from`, so a node answers a worker exactly as it would
// answer a TCP connection.
//
// Guarantees (stronger than core/ports/transport.h requires, weaker is allowed):
// - Delivery is always deferred through Timers::post: a handler never runs
//   inside send() (never re-entrant), and messages between any two endpoints
//   arrive in the order they were sent, each exactly once.
// - A message to an unknown PeerId, to an endpoint destroyed before delivery,
//   or to an endpoint with no handler yet is dropped silently (as a message to
//   a closed connection would be).
// - Destroying the hub drops every message still queued; endpoints must not
//   outlive their hub.
// - A handler may send (to itself too), replace its handler and destroy its
//   own endpoint: each delivery runs a copy of the handler. A message larger
//   than kMaxMessageSize is a programming error (KAIROS_CHECK in send()).
//
// Threading. A hub and all its endpoints belong to one event loop: send(),
// set_handler() and the destructors run on the loop thread of the Timers the
// hub was given, and every handler runs there too. Not thread-safe.
//
// Purity. No I/O, no clocks, no threads: this is core logic over Timers.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "core/ports/timers.h"
#include "core/ports/transport.h"

namespace kairos {

class LoopbackHub {
 public:
  class Endpoint;

  explicit LoopbackHub(Timers& loop);
  ~LoopbackHub();
  LoopbackHub(const LoopbackHub&) = delete;
  LoopbackHub& operator=(const LoopbackHub&) = delete;

  // A new endpoint with the next PeerId. It deregisters itself when destroyed.
  std::unique_ptr<Endpoint> connect();

  // Counters, for tests and diagnostics.
  std::uint64_t sent() const { return state_->sent; }
  std::uint64_t delivered() const { return state_->delivered; }
  std::uint64_t dropped() const { return state_->dropped; }

 private:
  // Shared with queued deliveries so they can tell, after the hub or an
  // endpoint is gone, that they must drop the message.
  struct State {
    bool closed = false;
    std::map<PeerId, Endpoint*> endpoints;
    std::uint64_t sent = 0;
    std::uint64_t delivered = 0;
    std::uint64_t dropped = 0;
  };

  void deliver(PeerId from, PeerId to, std::string message);

  Timers& loop_;
  std::shared_ptr<State> state_ = std::make_shared<State>();
  PeerId next_id_ = 1;
};

class LoopbackHub::Endpoint final : public Transport {
 public:
  ~Endpoint() override;
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  // This endpoint's address: what its peers pass to send() to reach it.
  PeerId id() const { return id_; }

  void send(PeerId to, std::string message) override;
  void set_handler(Handler handler) override;

 private:
  friend class LoopbackHub;
  Endpoint(LoopbackHub& hub, PeerId id) : hub_(hub), id_(id) {}

  LoopbackHub& hub_;
  PeerId id_;
  Handler handler_;
};

}  // namespace kairos
