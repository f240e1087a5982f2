// The TCP transport: core/ports/transport.h between `kairos worker`
// processes and a `kairos server`, over Boost.Asio sockets.
//
// Purpose. A remote worker runs core's Worker over TcpClientTransport; the
// server's node reaches every remote worker through TcpServerTransport
// (combined with its local workers' hub by prod/net/transport_mux.h). Both
// run on the event loop the process already runs (one io_context, one
// thread, never blocking): every socket operation is asynchronous and every
// callback (the Transport handler included) runs on that loop.
//
// Connections. Each connection opens with the handshake of
// prod/net/handshake.h (wire version, worker id, and with a secret a mutual
// HMAC challenge-response); only then do data frames flow, one transport
// message per frame, carried unchanged. A connection that does not finish
// its handshake within options.handshake_timeout is closed; so is one on
// which no frame arrived for options.idle_timeout (the read deadline: a
// worker sends a claim or a renewal at least every claim wait + rpc timeout
// or heartbeat period, and the server answers each, so the caller derives it
// from the lease configuration: idle_timeout_for()). A frame with a bad
// header, an oversized length, a handshake frame after the handshake or a
// data frame before it closes that connection, with the reason logged,
// never anything more.
//
// Writes. Each connection has one write in flight at a time; every frame
// queued meanwhile goes out in the next single gather write. The queue is
// bounded: a peer that does not read, whose queue passes
// options.max_queued_bytes, is disconnected. Whatever is queued when a
// connection breaks is lost, as the contract allows.
//
// Peers (delivery: in order, at most once, per connection).
// - Server: every accepted connection is a new PeerId (1, 2, 3, ... never
//   reused by one transport), known to the handler from its first message
//   after the handshake. A message to a closed or unknown connection is
//   dropped. At most options.max_connections connections at a time; one
//   beyond that is closed at once (logged).
// - Client: one PeerId, node(), stands for "the scheduler nodes" (the
//   worker's WorkerConfig::nodes = {node()}) while connections come and go:
//   the transport keeps one connection at a time, to the listed addresses in
//   turn, and after a failed attempt, a refusal or a broken connection it
//   waits a jittered exponential backoff (options.backoff_base doubling to
//   options.backoff_max, reset by a completed handshake) before trying the
//   next address. Messages sent while no connection is open are queued
//   (bounded by max_queued_bytes) for the connection being set up and lost
//   if that attempt fails.
//
// Events (EventLog, one line each): net.listening, net.connected,
// net.closed, net.refused, net.connect_failed, with the peer, the worker or
// server id, the remote address and the reason.
// Metrics (server, when Options::metrics is set): the gauge
// kairos_workers_connected{kind="remote"}, the connections past their
// handshake, from Listen() on.
//
// Lifetime. close() ends every connection and the acceptor; it may be called
// from inside the handler (the handler's message view stays valid until the
// handler returns). After close() nothing more is delivered and sends are
// dropped. The destructor closes. Destroy the transport on the loop thread
// (or after the loop stopped), before the io_context.
#pragma once

#include <boost/asio/io_context.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/kernel/lease_config.h"
#include "core/ports/clock.h"
#include "core/ports/event_log.h"
#include "core/ports/metrics.h"
#include "core/ports/random.h"
#include "core/ports/transport.h"

namespace kairos::net {

// Where to connect or listen: a host name or IP address and a port (the
// command line parses them: prod/cli/flags.h, parse_host_port).
struct NetAddress {
  std::string host;
  std::uint16_t port = 0;
  std::string to_string() const;  // HOST:PORT, [IPV6]:PORT
};

// The read deadline for a lease configuration and long-poll wait: twice the
// longest gap between two frames of a healthy worker (a claim answered at
// the end of its wait plus an rpc timeout, or a heartbeat period), plus the
// rpc timeout.
absl::Duration idle_timeout_for(const LeaseConfig& lease, absl::Duration claim_wait);

// The gauge of remote workers connected (past the handshake, so
// authenticated when the server has a secret); embedded workers are the same
// family with kind="embedded" (prod/cli/server_command.cc).
inline constexpr std::string_view kConnectedWorkersSeries =
    "kairos_workers_connected{kind=\"remote\"}";
inline constexpr std::string_view kConnectedWorkersHelp =
    "Workers connected to this server: kind=remote are TCP connections past the handshake "
    "(authenticated when a worker secret is set), kind=embedded the server's own workers";

struct TcpOptions {
  absl::Duration idle_timeout = absl::Seconds(60);
  absl::Duration handshake_timeout = absl::Seconds(10);
  std::size_t max_queued_bytes = std::size_t{64} << 20;
};

class TcpServerTransport final : public Transport {
 public:
  struct Options : TcpOptions {
    std::string server_id;              // sent in the handshake (the node id)
    std::optional<std::string> secret;  // set: every worker must prove it
    std::size_t max_connections = 1024;
    // Called when a connection finished its handshake (tests, diagnostics).
    std::function<void(PeerId, const std::string& worker_id)> on_ready;
    // Called when a connection that finished its handshake has closed (its
    // peer id is never used again): the node forgets that worker's claims.
    std::function<void(PeerId)> on_closed;
    // Set: the gauge kConnectedWorkersSeries follows ready_connections()
    // (the registry outlives the transport).
    Metrics* metrics = nullptr;
  };

  // Binds and listens on `address` (a numeric IP or "localhost"; port 0
  // picks a free port, see local_port()). Errors name the address.
  static absl::StatusOr<std::unique_ptr<TcpServerTransport>> Listen(boost::asio::io_context& io,
                                                                    const NetAddress& address,
                                                                    Options options,
                                                                    const Clock& clock,
                                                                    EventLog& events);
  ~TcpServerTransport() override;
  TcpServerTransport(const TcpServerTransport&) = delete;
  TcpServerTransport& operator=(const TcpServerTransport&) = delete;

  void send(PeerId to, std::string message) override;
  void set_handler(Handler handler) override;
  void close();

  std::uint16_t local_port() const;
  std::size_t connections() const;        // open or handshaking
  std::size_t ready_connections() const;  // past the handshake (authenticated)
  // Data frames read (delivered, or dropped for want of a handler).
  std::uint64_t received() const;

 private:
  struct Impl;
  explicit TcpServerTransport(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class TcpClientTransport final : public Transport {
 public:
  struct Options : TcpOptions {
    std::string worker_id;              // sent in the handshake
    std::optional<std::string> secret;  // set: prove it, and require the server to
    std::vector<NetAddress> nodes;      // tried in turn
    absl::Duration backoff_base = absl::Milliseconds(100);
    absl::Duration backoff_max = absl::Seconds(5);
    std::uint64_t seed = 1;  // of the backoff jitter
    // Called when a connection finished its handshake (tests, diagnostics).
    std::function<void(const std::string& server_id)> on_ready;
  };
  static constexpr PeerId kNode = 1;

  TcpClientTransport(boost::asio::io_context& io, Options options, const Clock& clock,
                     EventLog& events);
  ~TcpClientTransport() override;
  TcpClientTransport(const TcpClientTransport&) = delete;
  TcpClientTransport& operator=(const TcpClientTransport&) = delete;

  // Starts connecting (to options.nodes[0] first).
  void start();
  PeerId node() const { return kNode; }
  void send(PeerId to, std::string message) override;
  void set_handler(Handler handler) override;
  void close();

  bool connected() const;  // a connection finished its handshake and is open
  // Data frames read (delivered, or dropped for want of a handler).
  std::uint64_t received() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kairos::net
