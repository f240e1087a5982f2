#include "prod/net/tcp_transport.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <charconv>
#include <chrono>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "core/base/check.h"
#include "core/base/text.h"
#include "core/kernel/node_support.h"
#include "prod/net/handshake.h"

namespace kairos::net {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using SteadyTime = std::chrono::steady_clock::time_point;

namespace {

constexpr std::size_t kReadChunk = 64 << 10;

std::chrono::nanoseconds chrono_of(absl::Duration d) {
  return std::chrono::nanoseconds(absl::ToInt64Nanoseconds(d));
}

void note(EventLog& events, const Clock& clock, std::string_view kind,
          std::vector<EventField> fields) {
  Event e;
  e.at = clock.now();
  e.kind = kind;
  e.fields = std::move(fields);
  events.record(std::move(e));
}

std::string remote_of(const tcp::socket& socket) {
  boost::system::error_code ec;
  const tcp::endpoint ep = socket.remote_endpoint(ec);
  if (ec) return "?";
  const auto a = ep.address();
  return a.is_v6() ? absl::StrCat("[", a.to_string(), "]:", ep.port())
                   : absl::StrCat(a.to_string(), ":", ep.port());
}

}  // namespace

// ---------------------------------------------------------------------------
// Addresses.

std::string NetAddress::to_string() const {
  return host.find(':') != std::string::npos ? absl::StrCat("[", host, "]:", port)
                                             : absl::StrCat(host, ":", port);
}

absl::Duration idle_timeout_for(const LeaseConfig& lease, absl::Duration claim_wait) {
  const absl::Duration gap = std::max(claim_wait + lease.rpc_timeout, lease.heartbeat_period);
  return gap * 2 + lease.rpc_timeout;
}

// ---------------------------------------------------------------------------
// One connection: framing, the coalescing write queue and the deadlines.

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  struct Hooks {
    std::function<void(std::string_view frame)> on_frame;
    std::function<void(const std::string& reason)> on_closed;
  };

  Connection(tcp::socket socket, const TcpOptions& options)
      : socket_(std::move(socket)),
        deadline_(socket_.get_executor()),
        options_(options),
        remote_(remote_of(socket_)) {
    boost::system::error_code ec;
    socket_.set_option(tcp::no_delay(true), ec);
  }

  // Starts reading; the handshake must finish within options.handshake_timeout.
  void start(Hooks hooks) {
    hooks_ = std::move(hooks);
    buf_.resize(kReadChunk);
    arm(std::chrono::steady_clock::now() + chrono_of(options_.handshake_timeout));
    read();
  }

  // After the handshake: data frames allowed, the read deadline is the idle
  // timeout since the last frame.
  void set_open() {
    handshaking_ = false;
    last_frame_ = std::chrono::steady_clock::now();
    arm(last_frame_ + chrono_of(options_.idle_timeout));
  }

  void write(std::string bytes) {
    if (closed_) return;
    queued_bytes_ += bytes.size();
    queue_.push_back(std::move(bytes));
    if (queued_bytes_ > options_.max_queued_bytes) {
      close(absl::StrCat("write queue above ", options_.max_queued_bytes,
                         " bytes: the peer does not read"));
      return;
    }
    if (!writing_) flush();
  }

  void write_message(std::string message) {
    write(data_frame_header(message.size()));
    if (!message.empty()) write(std::move(message));
  }

  // Closes at once: queued frames are lost. `on_closed` runs once, inside.
  void close(std::string reason) {
    if (closed_) return;
    const auto self = shared_from_this();
    closed_ = true;
    boost::system::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_both, ec);
    socket_.close(ec);
    deadline_.cancel();
    queue_.clear();
    if (hooks_.on_closed) hooks_.on_closed(reason);
  }

  // Closes once everything queued is written (a refusal), or at the deadline.
  void close_after_flush(std::string reason) {
    if (closed_) return;
    if (!writing_) {
      close(std::move(reason));
      return;
    }
    closing_reason_ = std::move(reason);
    reading_stopped_ = true;
  }

  bool closed() const { return closed_; }
  const std::string& remote() const { return remote_; }

 private:
  void arm(SteadyTime at) {
    deadline_.expires_at(at);
    deadline_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (ec || self->closed_) return;
      self->on_deadline();
    });
  }

  void on_deadline() {
    if (closing_reason_) {
      close(*closing_reason_);
      return;
    }
    if (handshaking_) {
      close(absl::StrCat("handshake not finished within ",
                         absl::FormatDuration(options_.handshake_timeout)));
      return;
    }
    const SteadyTime due = last_frame_ + chrono_of(options_.idle_timeout);
    if (std::chrono::steady_clock::now() >= due) {
      close(absl::StrCat("read deadline: no frame for ",
                         absl::FormatDuration(options_.idle_timeout)));
      return;
    }
    arm(due);
  }

  void read() {
    socket_.async_read_some(
        asio::buffer(buf_.data() + end_, buf_.size() - end_),
        [self = shared_from_this()](const boost::system::error_code& ec, std::size_t n) {
          if (self->closed_) return;
          if (ec) {
            self->close(ec == asio::error::eof ? std::string("closed by the peer")
                                               : absl::StrCat("read: ", ec.message()));
            return;
          }
          self->on_read(n);
        });
  }

  void on_read(std::size_t n) {
    end_ += n;
    std::size_t need = 0;
    while (!closed_ && !reading_stopped_) {
      const std::size_t avail = end_ - begin_;
      if (avail < kNetHeaderSize) break;
      const std::string_view header(buf_.data() + begin_, kNetHeaderSize);
      auto size = net_frame_size(header);
      if (!size.ok()) {
        close(absl::StrCat("garbage frame: ", size.status().message()));
        return;
      }
      if (handshaking_ && net_frame_type(header) == FrameType::kData) {
        close("protocol: a data frame before the handshake finished");
        return;
      }
      if (!handshaking_ && net_frame_type(header) != FrameType::kData) {
        close("protocol: a handshake frame after the handshake");
        return;
      }
      if (avail < *size) {
        need = *size;
        break;
      }
      const std::string_view frame(buf_.data() + begin_, *size);
      begin_ += *size;
      last_frame_ = std::chrono::steady_clock::now();
      hooks_.on_frame(frame);  // may close this connection or the transport
    }
    if (closed_ || reading_stopped_) return;
    if (begin_ == end_) {
      begin_ = end_ = 0;
      if (buf_.size() > (std::size_t{1} << 20)) buf_.resize(kReadChunk);  // give memory back
    } else if (begin_ > 0 && (need > buf_.size() - begin_ || buf_.size() - end_ < 4096)) {
      std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
      end_ -= begin_;
      begin_ = 0;
    }
    // Grow only as bytes arrive (doubling up to the frame's size), so a
    // header claiming a large body costs nothing until the body comes.
    if (end_ == buf_.size())
      buf_.resize(std::max(buf_.size() + 1, std::min(buf_.size() * 2, need)));
    read();
  }

  void flush() {
    writing_ = true;
    inflight_.swap(queue_);
    queue_.clear();
    buffers_.clear();
    for (const std::string& s : inflight_) buffers_.push_back(asio::buffer(s));
    asio::async_write(
        socket_, buffers_,
        [self = shared_from_this()](const boost::system::error_code& ec, std::size_t) {
          if (self->closed_) return;
          if (ec) {
            self->close(self->closing_reason_ ? *self->closing_reason_
                                              : absl::StrCat("write: ", ec.message()));
            return;
          }
          self->on_written();
        });
  }

  void on_written() {
    for (const std::string& s : inflight_) queued_bytes_ -= s.size();
    inflight_.clear();
    writing_ = false;
    if (!queue_.empty()) {
      flush();
    } else if (closing_reason_) {
      close(*closing_reason_);
    }
  }

  tcp::socket socket_;
  asio::steady_timer deadline_;
  const TcpOptions options_;  // a copy: pending handlers may outlive the transport
  const std::string remote_;
  Hooks hooks_;
  bool closed_ = false;
  bool handshaking_ = true;
  bool reading_stopped_ = false;
  std::optional<std::string> closing_reason_;
  SteadyTime last_frame_{};
  std::vector<char> buf_;
  std::size_t begin_ = 0, end_ = 0;
  std::vector<std::string> queue_, inflight_;
  std::vector<asio::const_buffer> buffers_;
  std::size_t queued_bytes_ = 0;
  bool writing_ = false;
};

// ---------------------------------------------------------------------------
// Server.

struct TcpServerTransport::Impl {
  Impl(asio::io_context& io, Options o, const Clock& c, EventLog& e)
      : io(io), acceptor(io), retry(io), options(std::move(o)), clock(c), events(e) {}

  struct Peer {
    std::shared_ptr<Connection> conn;
    std::unique_ptr<ServerHandshake> handshake;  // until it is done
    std::string worker_id;
  };

  asio::io_context& io;
  tcp::acceptor acceptor;
  asio::steady_timer retry;
  Options options;
  const Clock& clock;
  EventLog& events;
  Handler handler;
  std::map<PeerId, Peer> peers;
  PeerId next_id = 1;
  std::uint16_t port = 0;
  std::uint64_t received = 0;
  std::size_t ready = 0;  // peers past their handshake
  bool closed = false;
  std::shared_ptr<bool> alive = std::make_shared<bool>(true);

  void set_ready(std::size_t n) {
    ready = n;
    if (options.metrics != nullptr)
      options.metrics->gauge(kConnectedWorkersSeries, kConnectedWorkersHelp)
          .set(static_cast<std::int64_t>(n));
  }

  void accept() {
    acceptor.async_accept(
        [this, alive = alive](const boost::system::error_code& ec, tcp::socket socket) {
          if (!*alive || closed) return;
          if (ec) {
            // Out of descriptors or similar: try again shortly rather than spin.
            note(events, clock, "net.accept_failed", {{"error", ec.message()}});
            retry.expires_after(std::chrono::milliseconds(100));
            retry.async_wait([this, alive](const boost::system::error_code& e) {
              if (!e && *alive && !closed) accept();
            });
            return;
          }
          on_accepted(std::move(socket));
          accept();
        });
  }

  void on_accepted(tcp::socket socket) {
    auto conn = std::make_shared<Connection>(std::move(socket), options);
    const PeerId id = next_id++;
    if (peers.size() >= options.max_connections) {
      note(events, clock, "net.refused",
           {{"peer", id},
            {"remote", conn->remote()},
            {"reason", absl::StrCat("more than ", options.max_connections, " connections")}});
      conn->close("connection limit");
      return;
    }
    Peer& p = peers[id];
    p.conn = conn;
    p.handshake =
        std::make_unique<ServerHandshake>(options.server_id, options.secret, random_nonce());
    Connection::Hooks hooks;
    hooks.on_frame = [this, alive = alive, id](std::string_view frame) {
      if (*alive) on_frame(id, frame);
    };
    hooks.on_closed = [this, alive = alive, id](const std::string& reason) {
      if (*alive) on_closed(id, reason);
    };
    conn->start(std::move(hooks));
  }

  void on_frame(PeerId id, std::string_view frame) {
    auto it = peers.find(id);
    if (it == peers.end()) return;
    Peer& p = it->second;
    if (p.handshake) {
      const std::shared_ptr<Connection> c = p.conn;
      HandshakeStep step = p.handshake->on_frame(frame);
      for (std::string& f : step.send) c->write(std::move(f));
      if (c->closed()) return;  // `p` is gone with it
      if (step.state == HandshakeStep::State::kFailed) {
        c->close_after_flush(step.error);
      } else if (step.state == HandshakeStep::State::kDone) {
        p.worker_id = p.handshake->worker_id();
        p.handshake.reset();
        p.conn->set_open();
        set_ready(ready + 1);
        note(events, clock, "net.connected",
             {{"peer", id}, {"worker", p.worker_id}, {"remote", p.conn->remote()}});
        if (options.on_ready) options.on_ready(id, p.worker_id);
      }
      return;
    }
    ++received;
    const Handler h = handler;  // the handler may replace itself
    if (h) h(id, frame.substr(kNetHeaderSize));
  }

  void on_closed(PeerId id, const std::string& reason) {
    auto it = peers.find(id);
    if (it == peers.end()) return;
    const bool open = !it->second.handshake;
    std::vector<EventField> f{{"peer", id}, {"remote", it->second.conn->remote()}};
    if (open) f.push_back({"worker", it->second.worker_id});
    f.push_back({"reason", reason});
    note(events, clock, open ? "net.closed" : "net.refused", std::move(f));
    peers.erase(it);
    if (open) set_ready(ready - 1);
    if (open && options.on_closed) options.on_closed(id);
  }
};

absl::StatusOr<std::unique_ptr<TcpServerTransport>> TcpServerTransport::Listen(
    asio::io_context& io, const NetAddress& address, Options options, const Clock& clock,
    EventLog& events) {
  KAIROS_CHECK(valid_peer_name(options.server_id));
  boost::system::error_code ec;
  const std::string host = address.host == "localhost" ? "127.0.0.1" : address.host;
  const asio::ip::address ip = asio::ip::make_address(host, ec);
  if (ec)
    return absl::InvalidArgumentError(absl::StrCat(
        "listen address '", address.to_string(), "': expected a numeric IP address or localhost"));
  auto impl = std::make_unique<Impl>(io, std::move(options), clock, events);
  impl->set_ready(0);  // exported from the start
  const tcp::endpoint ep(ip, address.port);
  auto fail = [&](std::string_view what) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", address.to_string(), ": ",
                                               absl_sv(what), ": ", ec.message()));
  };
  impl->acceptor.open(ep.protocol(), ec);
  if (ec) return fail("socket");
  impl->acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  impl->acceptor.bind(ep, ec);
  if (ec) return fail("bind");
  impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return fail("listen");
  impl->port = impl->acceptor.local_endpoint(ec).port();
  note(events, clock, "net.listening",
       {{"address", NetAddress{address.host, impl->port}.to_string()},
        {"secret", std::string(impl->options.secret ? "required" : "none")}});
  impl->accept();
  return std::unique_ptr<TcpServerTransport>(new TcpServerTransport(std::move(impl)));
}

TcpServerTransport::TcpServerTransport(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

TcpServerTransport::~TcpServerTransport() {
  close();
  *impl_->alive = false;
}

void TcpServerTransport::send(PeerId to, std::string message) {
  KAIROS_CHECK_MSG(message.size() <= kMaxMessageSize, "message larger than kMaxMessageSize");
  if (impl_->closed) return;
  auto it = impl_->peers.find(to);
  if (it == impl_->peers.end() || it->second.handshake) return;
  it->second.conn->write_message(std::move(message));
}

void TcpServerTransport::set_handler(Handler handler) { impl_->handler = std::move(handler); }

void TcpServerTransport::close() {
  if (impl_->closed) return;
  impl_->closed = true;
  impl_->handler = nullptr;
  boost::system::error_code ec;
  impl_->acceptor.close(ec);
  impl_->retry.cancel();
  auto peers = std::move(impl_->peers);
  impl_->peers.clear();
  impl_->set_ready(0);
  for (auto& [id, p] : peers) p.conn->close("transport closed");
}

std::uint16_t TcpServerTransport::local_port() const { return impl_->port; }
std::size_t TcpServerTransport::connections() const { return impl_->peers.size(); }
std::size_t TcpServerTransport::ready_connections() const { return impl_->ready; }
std::uint64_t TcpServerTransport::received() const { return impl_->received; }

// ---------------------------------------------------------------------------
// Client.

struct TcpClientTransport::Impl {
  Impl(asio::io_context& io, Options o, const Clock& c, EventLog& e)
      : io(io),
        resolver(io),
        attempt_timer(io),
        backoff_timer(io),
        options(std::move(o)),
        clock(c),
        events(e),
        random(options.seed) {}

  asio::io_context& io;
  tcp::resolver resolver;
  std::optional<tcp::socket> connecting;
  asio::steady_timer attempt_timer;
  asio::steady_timer backoff_timer;
  Options options;
  const Clock& clock;
  EventLog& events;
  Random random;
  Handler handler;
  std::shared_ptr<Connection> conn;
  std::unique_ptr<ClientHandshake> handshake;  // while the connection handshakes
  bool open = false;
  std::vector<std::string> pending;  // sent while no connection is open
  std::size_t pending_bytes = 0;
  std::size_t next_node = 0;
  std::uint32_t failures = 0;
  std::uint64_t attempt = 0;
  std::uint64_t received = 0;
  bool started = false;
  bool closed = false;
  std::shared_ptr<bool> alive = std::make_shared<bool>(true);

  const NetAddress& node() const { return options.nodes[next_node]; }

  void connect_next() {
    if (closed) return;
    const std::uint64_t my = ++attempt;
    attempt_timer.expires_after(chrono_of(options.handshake_timeout));
    attempt_timer.async_wait([this, alive = alive, my](const boost::system::error_code& ec) {
      if (ec || !*alive || closed || my != attempt || conn) return;
      resolver.cancel();
      if (connecting) {
        boost::system::error_code ignored;
        connecting->close(ignored);
      }
      failed_attempt("connect: timed out", false);
    });
    resolver.async_resolve(
        node().host, std::to_string(node().port),
        [this, alive = alive, my](const boost::system::error_code& ec,
                                  tcp::resolver::results_type results) {
          if (!*alive || closed || my != attempt) return;
          if (ec) {
            failed_attempt(absl::StrCat("resolve: ", ec.message()), false);
            return;
          }
          connecting.emplace(io);
          asio::async_connect(
              *connecting, results,
              [this, alive, my](const boost::system::error_code& e, const tcp::endpoint&) {
                if (!*alive || closed || my != attempt) return;
                if (e) {
                  failed_attempt(absl::StrCat("connect: ", e.message()), false);
                  return;
                }
                on_connected();
              });
        });
  }

  void on_connected() {
    conn = std::make_shared<Connection>(std::move(*connecting), options);
    connecting.reset();
    handshake =
        std::make_unique<ClientHandshake>(options.worker_id, options.secret, random_nonce());
    Connection::Hooks hooks;
    const std::uint64_t my = attempt;
    hooks.on_frame = [this, alive = alive, my](std::string_view frame) {
      if (*alive && my == attempt) on_frame(frame);
    };
    hooks.on_closed = [this, alive = alive, my](const std::string& reason) {
      if (*alive && my == attempt) on_broken(reason);
    };
    conn->start(std::move(hooks));
    conn->write(handshake->hello());
  }

  void on_frame(std::string_view frame) {
    if (handshake) {
      // A local reference: a write or close below may end the connection
      // (on_broken resets `conn`); writes to a closed one are ignored.
      const std::shared_ptr<Connection> c = conn;
      HandshakeStep step = handshake->on_frame(frame);
      for (std::string& f : step.send) c->write(std::move(f));
      if (step.state == HandshakeStep::State::kFailed) {
        refused = true;
        c->close(step.error);
      } else if (step.state == HandshakeStep::State::kDone) {
        const std::string server = handshake->server_id();
        handshake.reset();
        open = true;
        failures = 0;
        attempt_timer.cancel();
        c->set_open();
        note(events, clock, "net.connected",
             {{"node", node().to_string()}, {"server", server}, {"remote", c->remote()}});
        auto queued = std::move(pending);
        pending.clear();
        pending_bytes = 0;
        for (std::string& m : queued) c->write_message(std::move(m));
        if (options.on_ready) options.on_ready(server);
      }
      return;
    }
    ++received;
    const Handler h = handler;
    if (h) h(kNode, frame.substr(kNetHeaderSize));
  }

  // A connection (open or handshaking) ended.
  void on_broken(const std::string& reason) {
    const bool was_open = open;
    conn.reset();  // the connection keeps itself alive until its close() returns
    handshake.reset();
    open = false;
    if (was_open) {
      note(events, clock, "net.closed", {{"node", node().to_string()}, {"reason", reason}});
      failures = 0;
    }
    failed_attempt(reason, was_open);
  }

  bool refused = false;

  void failed_attempt(std::string reason, bool was_open) {
    if (closed) return;
    attempt_timer.cancel();
    pending.clear();
    pending_bytes = 0;
    ++failures;
    const absl::Duration wait =
        retry_backoff(random, options.backoff_base, options.backoff_max, failures);
    if (!was_open)
      note(events, clock, refused ? "net.refused" : "net.connect_failed",
           {{"node", node().to_string()}, {"reason", reason}, {"retry_in", wait}});
    refused = false;
    next_node = (next_node + 1) % options.nodes.size();
    ++attempt;  // late callbacks of this attempt are ignored
    backoff_timer.expires_after(chrono_of(wait));
    backoff_timer.async_wait([this, alive = alive](const boost::system::error_code& ec) {
      if (!ec && *alive && !closed) connect_next();
    });
  }
};

TcpClientTransport::TcpClientTransport(asio::io_context& io, Options options, const Clock& clock,
                                       EventLog& events)
    : impl_(std::make_unique<Impl>(io, std::move(options), clock, events)) {
  KAIROS_CHECK(!impl_->options.nodes.empty());
  KAIROS_CHECK(valid_peer_name(impl_->options.worker_id));
}

TcpClientTransport::~TcpClientTransport() {
  close();
  *impl_->alive = false;
}

void TcpClientTransport::start() {
  KAIROS_CHECK(!impl_->started);
  impl_->started = true;
  impl_->connect_next();
}

void TcpClientTransport::send(PeerId to, std::string message) {
  KAIROS_CHECK_MSG(message.size() <= kMaxMessageSize, "message larger than kMaxMessageSize");
  Impl& m = *impl_;
  if (m.closed || to != kNode) return;
  if (m.open) {
    m.conn->write_message(std::move(message));
    return;
  }
  if (!m.started || m.pending_bytes + message.size() > m.options.max_queued_bytes) return;
  m.pending_bytes += message.size();
  m.pending.push_back(std::move(message));
}

void TcpClientTransport::set_handler(Handler handler) { impl_->handler = std::move(handler); }

void TcpClientTransport::close() {
  Impl& m = *impl_;
  if (m.closed) return;
  m.closed = true;
  m.handler = nullptr;
  m.resolver.cancel();
  m.attempt_timer.cancel();
  m.backoff_timer.cancel();
  boost::system::error_code ec;
  if (m.connecting) m.connecting->close(ec);
  if (auto conn = std::move(m.conn)) conn->close("transport closed");
  m.pending.clear();
}

bool TcpClientTransport::connected() const { return impl_->open; }
std::uint64_t TcpClientTransport::received() const { return impl_->received; }

}  // namespace kairos::net
