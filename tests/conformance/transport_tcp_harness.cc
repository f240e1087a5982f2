// The TCP transport (prod/net/tcp_transport.h) behind a TransportHarness.
//
// TCP peer ids are local to each transport (a connection id on the server,
// one node id on the client), while the harness names peers globally, so
// each harness peer is a small mesh: its own TcpServerTransport, plus one
// TcpClientTransport to the server of every peer added before it. Between
// an older peer `lo` and a newer `hi`, hi -> lo goes over hi's client and
// lo -> hi back over the same connection from lo's server, so both send
// paths of the real transport are exercised; the peer's Transport (Mesh)
// only translates ids and routes, and its set_handler() installs translating
// handlers on the real transports, so handler semantics are TCP's own.
//
// Real sockets on loopback and real time: add_peer() waits (at most 20 s)
// until the new peer's connections finished their handshakes; run() waits
// until every message sent to a live peer was read by it (delivered, or
// dropped for want of a handler). remove_peer() removes the peer's handlers
// at once (nothing more is delivered to it), drops later sends to it, and
// closes its sockets at the next run(), after what it sent has arrived.
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/ports/event_log.h"
#include "prod/net/tcp_transport.h"
#include "prod/runtime/asio_runtime.h"
#include "tests/conformance/transport_conformance.h"

namespace kairos::transport_test {
namespace {

using net::TcpClientTransport;
using net::TcpServerTransport;

class TcpHarness;

class Mesh final : public Transport {
 public:
  Mesh(TcpHarness& h, PeerId self) : h_(h), self_(self) {}
  void send(PeerId to, std::string message) override;
  void set_handler(Handler handler) override;

  TcpHarness& h_;
  PeerId self_;
  std::unique_ptr<TcpServerTransport> server;
  std::map<PeerId, std::unique_ptr<TcpClientTransport>> clients;  // to older peers
  std::map<PeerId, PeerId> conn_to_peer;                          // server side
  std::map<PeerId, PeerId> peer_to_conn;
  bool removed = false;

  std::uint64_t received() const {
    std::uint64_t n = server->received();
    for (const auto& [p, c] : clients) n += c->received();
    return n;
  }
  void close() {
    server->close();
    for (auto& [p, c] : clients) c->close();
  }
};

class TcpHarness final : public TransportHarness {
 public:
  ~TcpHarness() override {
    for (auto& [id, m] : peers_) m->close();
    peers_.clear();
  }
  std::string name() const override { return "Tcp"; }

  PeerId add_peer() override {
    const PeerId id = next_id_++;
    auto mesh = std::make_unique<Mesh>(*this, id);
    Mesh* m = mesh.get();
    TcpServerTransport::Options so;
    so.server_id = absl::StrCat("peer-", id);
    so.on_ready = [m](PeerId conn, const std::string& worker) {
      const PeerId other = std::stoull(worker.substr(5));
      m->conn_to_peer[conn] = other;
      m->peer_to_conn[other] = conn;
    };
    auto server = TcpServerTransport::Listen(io_, net::NetAddress{"127.0.0.1", 0}, std::move(so),
                                             clock_, log_);
    KAIROS_CHECK_MSG(server.ok(), std::string(server.status().message()).c_str());
    m->server = std::move(server).value();
    for (auto& [other_id, other] : peers_) {
      if (other->removed) continue;
      TcpClientTransport::Options co;
      co.worker_id = absl::StrCat("peer-", id);
      co.nodes = {net::NetAddress{"127.0.0.1", other->server->local_port()}};
      co.backoff_base = absl::Milliseconds(10);
      co.backoff_max = absl::Milliseconds(100);
      auto c = std::make_unique<TcpClientTransport>(io_, std::move(co), clock_, log_);
      c->start();
      m->clients[other_id] = std::move(c);
    }
    peers_[id] = std::move(mesh);
    wait_until([&] {
      for (auto& [other_id, c] : m->clients)
        if (!c->connected() || peers_[other_id]->peer_to_conn.count(id) == 0) return false;
      return true;
    });
    return id;
  }

  Transport& transport(PeerId peer) override {
    auto it = peers_.find(peer);
    KAIROS_CHECK(it != peers_.end() && !it->second->removed);
    return *it->second;
  }

  void remove_peer(PeerId peer) override {
    Mesh& m = *peers_.at(peer);
    m.removed = true;
    m.server->set_handler(nullptr);
    for (auto& [p, c] : m.clients) c->set_handler(nullptr);
  }

  PeerId unknown_peer() override { return 1'000'000; }

  void run() override {
    wait_until([&] {
      for (auto& [id, m] : peers_)
        if (!m->removed && m->received() < sent_to_[id]) return false;
      return true;
    });
    // Stray deliveries (there should be none) get a moment to show.
    poll_for(std::chrono::milliseconds(20));
    for (auto& [id, m] : peers_)
      if (m->removed) m->close();
  }

  bool ordered() const override { return true; }

  void count_send(PeerId to) { ++sent_to_[to]; }
  bool live(PeerId p) const {
    auto it = peers_.find(p);
    return it != peers_.end() && !it->second->removed;
  }
  Mesh* mesh(PeerId p) { return peers_.at(p).get(); }

 private:
  template <typename Done>
  void wait_until(Done done) {
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!done()) {
      KAIROS_CHECK_MSG(std::chrono::steady_clock::now() < limit,
                       "tcp harness: loopback sockets made no progress in 20 s");
      io_.restart();
      io_.run_one_for(std::chrono::milliseconds(10));
    }
  }
  void poll_for(std::chrono::milliseconds d) {
    const auto until = std::chrono::steady_clock::now() + d;
    while (std::chrono::steady_clock::now() < until) {
      io_.restart();
      io_.run_one_for(std::chrono::milliseconds(5));
    }
  }

  boost::asio::io_context io_;
  SystemClock clock_;
  NullEventLog log_;
  std::map<PeerId, std::unique_ptr<Mesh>> peers_;
  std::map<PeerId, std::uint64_t> sent_to_;
  PeerId next_id_ = 1;
};

void Mesh::send(PeerId to, std::string message) {
  KAIROS_CHECK_MSG(message.size() <= kMaxMessageSize, "message larger than kMaxMessageSize");
  if (removed || !h_.live(to)) return;
  if (auto it = clients.find(to); it != clients.end()) {
    h_.count_send(to);
    it->second->send(it->second->node(), std::move(message));
    return;
  }
  if (auto it = peer_to_conn.find(to); it != peer_to_conn.end()) {
    h_.count_send(to);
    server->send(it->second, std::move(message));
  }
}

void Mesh::set_handler(Handler handler) {
  if (!handler) {
    server->set_handler(nullptr);
    for (auto& [p, c] : clients) c->set_handler(nullptr);
    return;
  }
  server->set_handler([this, handler](PeerId conn, std::string_view m) {
    auto it = conn_to_peer.find(conn);
    KAIROS_CHECK(it != conn_to_peer.end());
    handler(it->second, m);
  });
  for (auto& [p, c] : clients) {
    const PeerId other = p;
    c->set_handler([other, handler](PeerId, std::string_view m) { handler(other, m); });
  }
}

}  // namespace

std::unique_ptr<TransportHarness> make_tcp_harness() { return std::make_unique<TcpHarness>(); }

}  // namespace kairos::transport_test
