// The remote-workers gauge of the TCP server transport: it counts the
// connections past their handshake, and nothing else. Loopback sockets on one
// io_context; every wait is "until this happens, at most 20 s".
#include <gtest/gtest.h>

#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <functional>
#include <string>

#include "core/ports/metrics.h"
#include "core/twins/memory_event_log.h"
#include "prod/net/tcp_transport.h"
#include "prod/runtime/asio_runtime.h"

namespace kairos::net {
namespace {

namespace asio = boost::asio;

class WorkersGaugeTest : public ::testing::Test {
 protected:
  bool run_until(const std::function<bool()>& done) {
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!done()) {
      if (std::chrono::steady_clock::now() > limit) return false;
      io_.restart();
      io_.run_one_for(std::chrono::milliseconds(20));
    }
    return true;
  }
  std::unique_ptr<TcpClientTransport> client(std::uint16_t port, std::string id) {
    TcpClientTransport::Options o;
    o.worker_id = std::move(id);
    o.secret = kSecret;
    o.nodes = {{"127.0.0.1", port}};
    auto c = std::make_unique<TcpClientTransport>(io_, std::move(o), clock_, log_);
    c->start();
    return c;
  }
  std::int64_t gauge() const { return metrics_.gauge_value(kConnectedWorkersSeries); }

  const std::string kSecret = "a-secret-of-more-than-16-bytes";
  asio::io_context io_;
  SystemClock clock_;
  MemoryEventLog log_;
  Metrics metrics_;
};

TEST_F(WorkersGaugeTest, FollowsAuthenticatedConnectionsOnly) {
  TcpServerTransport::Options o;
  o.server_id = "node-a";
  o.secret = kSecret;
  o.metrics = &metrics_;
  auto s = TcpServerTransport::Listen(io_, NetAddress{"127.0.0.1", 0}, std::move(o), clock_, log_);
  ASSERT_TRUE(s.ok()) << s.status();
  auto server = std::move(s).value();
  EXPECT_NE(metrics_.to_prometheus().find("# TYPE kairos_workers_connected gauge\n"
                                          "kairos_workers_connected{kind=\"remote\"} 0\n"),
            std::string::npos);

  auto a = client(server->local_port(), "w-a");
  auto b = client(server->local_port(), "w-b");
  ASSERT_TRUE(run_until([&] { return gauge() == 2; }));
  EXPECT_EQ(server->ready_connections(), 2u);

  // A peer that never finishes the handshake is not a worker.
  asio::ip::tcp::socket raw(io_);
  raw.connect({asio::ip::make_address("127.0.0.1"), server->local_port()});
  ASSERT_TRUE(run_until([&] { return server->connections() == 3; }));
  EXPECT_EQ(gauge(), 2);

  a->close();
  ASSERT_TRUE(run_until([&] { return gauge() == 1; }));
  server->close();
  EXPECT_EQ(gauge(), 0);
}

}  // namespace
}  // namespace kairos::net
