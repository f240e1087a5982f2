// The HTTP server: routing, percent-decoding, tokens and listen addresses
// as plain logic; limits, deadlines, the connection cap, auth and keep-alive
// on a real loopback socket (a client thread; the loop runs on the test's
// thread; generous real-time bounds).
#include "prod/http/http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/post.hpp>
#include <chrono>
#include <string>
#include <thread>

namespace kairos::http {
namespace {

Handler answer(std::string body) {
  return [body](const Request& r, Reply reply) {
    Response res;
    res.body = body;
    for (const auto& [k, v] : r.params) res.body += "|" + k + "=" + v;
    reply(std::move(res));
  };
}

Router test_router() {
  Router r;
  r.add("GET", "/healthz", answer("ok"));
  r.add("POST", "/v1/jobs", answer("create"));
  r.add("GET", "/v1/jobs/{id}", answer("get"));
  r.add("DELETE", "/v1/jobs/{id}", answer("delete"));
  r.add("POST", "/v1/jobs/{id}:pause", answer("pause"));
  r.add("GET", "/v1/jobs/{id}/runs", answer("runs"));
  r.add("POST", "/v1/jobs:batch", answer("batch"));
  return r;
}

TEST(HttpRouter, MatchesByMethodAndPattern) {
  const Router r = test_router();
  auto m = r.match("GET", "/v1/jobs/a%2Fb%3Ac");
  ASSERT_NE(m.route, nullptr);
  EXPECT_EQ(m.route->pattern, "/v1/jobs/{id}");
  EXPECT_EQ(m.params.at("id"), "a/b:c");
  m = r.match("POST", "/v1/jobs/x%3Ay:pause");
  ASSERT_NE(m.route, nullptr);
  EXPECT_EQ(m.route->pattern, "/v1/jobs/{id}:pause");
  EXPECT_EQ(m.params.at("id"), "x:y");
  m = r.match("POST", "/v1/jobs:batch");
  ASSERT_NE(m.route, nullptr);
  EXPECT_EQ(m.route->pattern, "/v1/jobs:batch");
  m = r.match("GET", "/v1/jobs/j/runs");
  ASSERT_NE(m.route, nullptr);
  EXPECT_EQ(m.params.at("id"), "j");

  m = r.match("PUT", "/v1/jobs/j");
  EXPECT_EQ(m.route, nullptr);
  EXPECT_EQ(m.allowed, (std::vector<std::string>{"GET", "DELETE"}));
  m = r.match("GET", "/v1/nothing");
  EXPECT_EQ(m.route, nullptr);
  EXPECT_TRUE(m.allowed.empty());
  EXPECT_EQ(r.match("POST", "/v1/jobs/:pause").route, nullptr);  // empty id
  EXPECT_TRUE(r.match("GET", "/v1/jobs/a%zz").bad_escape);
}

TEST(HttpRouter, PercentDecodingAndQueries) {
  EXPECT_EQ(percent_decode("a%20b%2f"), "a b/");
  EXPECT_EQ(percent_decode("a+b"), "a+b");
  EXPECT_EQ(percent_decode("a+b", true), "a b");
  EXPECT_EQ(percent_decode("%"), std::nullopt);
  EXPECT_EQ(percent_decode("%4"), std::nullopt);
  EXPECT_EQ(percent_decode("%g1"), std::nullopt);
  auto q = parse_query("namespace=prod&selector=team%3Ddata%2Ck%3Dv&&paused&limit=5&limit=6");
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->at("namespace"), "prod");
  EXPECT_EQ(q->at("selector"), "team=data,k=v");
  EXPECT_EQ(q->at("paused"), "");
  EXPECT_EQ(q->at("limit"), "6");
  EXPECT_FALSE(parse_query("a=%").has_value());
}

TEST(HttpAuth, TokensAndDecisions) {
  EXPECT_TRUE(constant_time_equal("abc", "abc"));
  EXPECT_FALSE(constant_time_equal("abc", "abd"));
  EXPECT_FALSE(constant_time_equal("abc", "abcd"));
  EXPECT_FALSE(constant_time_equal("", "a"));
  auto set = TokenSet::parse("# operators\n  s3cret  \n\nother\r\n");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->size(), 2u);
  EXPECT_TRUE(set->accepts("Bearer s3cret"));
  EXPECT_TRUE(set->accepts("bearer other"));
  EXPECT_FALSE(set->accepts("Bearer s3cre"));
  EXPECT_FALSE(set->accepts("Bearer "));
  EXPECT_FALSE(set->accepts("s3cret"));
  EXPECT_FALSE(set->accepts("Basic s3cret"));
  EXPECT_FALSE(TokenSet::parse("# only a comment\n\n").ok());
  EXPECT_FALSE(TokenSet::parse("two words\n").ok());
  EXPECT_FALSE(TokenSet::load("/nonexistent/token-file").ok());

  EXPECT_FALSE(needs_token("/v1/jobs", nullptr));
  EXPECT_TRUE(needs_token("/v1/jobs", &*set));
  EXPECT_TRUE(needs_token("/metrics", &*set));
  EXPECT_FALSE(needs_token("/healthz", &*set));
}

TEST(HttpListen, AddressesAndExposure) {
  auto a = parse_listen_address("127.0.0.1:8080");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->port, 8080);
  EXPECT_TRUE(a->loopback());
  auto v6 = parse_listen_address("[::1]:9");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_TRUE(v6->loopback());
  EXPECT_EQ(parse_listen_address("localhost:1")->host, "127.0.0.1");
  auto any = parse_listen_address("0.0.0.0:8080");
  ASSERT_TRUE(any.ok());
  EXPECT_FALSE(any->loopback());
  for (const char* bad :
       {"8080", "127.0.0.1", "127.0.0.1:", "127.0.0.1:70000", "host:80", "127.0.0.1:8o", ":80"})
    EXPECT_FALSE(parse_listen_address(bad).ok()) << bad;

  EXPECT_TRUE(check_exposure(*a, nullptr).ok());
  const absl::Status refused = check_exposure(*any, nullptr);
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.message().find("--auth-token-file"), absl::string_view::npos);
  auto tokens = TokenSet::parse("t\n");
  EXPECT_TRUE(check_exposure(*any, &*tokens).ok());
}

// ---- On a real socket ------------------------------------------------------

// Connects to 127.0.0.1:port; -1 on failure.
int connect_to(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  timeval tv{20, 0};  // generous: a broken server fails the test, never hangs it
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

void send_all(int fd, const std::string& bytes) {
  std::size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return;
    off += static_cast<std::size_t>(n);
  }
}

// Reads until the server closes the connection (or the receive timeout).
std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  while (true) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return out;
    out.append(buf, static_cast<std::size_t>(n));
  }
}

class LiveServer : public ::testing::Test {
 protected:
  void start(HttpServerOptions options) {
    options.listen = {"127.0.0.1", 0};
    options.on_response = [this](std::string_view route, int status) {
      answered.push_back(std::string(route) + " " + std::to_string(status));
    };
    Router router = test_router();
    // Answers on a later turn of the loop, as a route waiting for the store does.
    router.add("GET", "/later", [this](const Request&, Reply reply) {
      boost::asio::post(io, [reply] {
        Response r;
        r.body = "later";
        reply(std::move(r));
      });
    });
    server = std::make_unique<HttpServer>(io, std::move(options), std::move(router));
    ASSERT_TRUE(server->start().ok());
    port = server->port();
    ASSERT_NE(port, 0);
  }
  // Runs the loop until `client` (on its own thread) returns.
  void with_client(std::function<void()> client) {
    std::atomic<bool> done{false};
    std::thread t([&] {
      client();
      done = true;
    });
    const auto bound = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!done && std::chrono::steady_clock::now() < bound)
      io.run_for(std::chrono::milliseconds(5));
    t.join();
  }
  std::string exchange(const std::string& request) {
    std::string reply;
    with_client([&] {
      const int fd = connect_to(port);
      if (fd < 0) return;
      send_all(fd, request);
      reply = read_all(fd);
      ::close(fd);
    });
    return reply;
  }

  boost::asio::io_context io;
  std::unique_ptr<HttpServer> server;
  std::uint16_t port = 0;
  std::vector<std::string> answered;
};

TEST_F(LiveServer, RoutesAnswersAndErrorShapes) {
  start({});
  std::string r = exchange("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  EXPECT_TRUE(r.starts_with("HTTP/1.1 200")) << r;
  EXPECT_TRUE(r.ends_with("ok")) << r;
  r = exchange("GET /v1/jobs/a%2Fb HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  EXPECT_TRUE(r.ends_with("get|id=a/b")) << r;
  r = exchange("GET /nope HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  EXPECT_TRUE(r.starts_with("HTTP/1.1 404")) << r;
  EXPECT_NE(r.find(R"({"error":{"code":"not_found")"), std::string::npos) << r;
  r = exchange("PUT /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  EXPECT_TRUE(r.starts_with("HTTP/1.1 405")) << r;
  EXPECT_NE(r.find("Allow: GET"), std::string::npos) << r;
  r = exchange("garbage\r\n\r\n");
  EXPECT_TRUE(r.starts_with("HTTP/1.1 400")) << r;
  EXPECT_EQ(answered.front(), "/healthz 200");
}

TEST_F(LiveServer, AnAnswerThatComesLaterStillReachesTheClient) {
  start({});
  const std::string r =
      exchange("GET /later HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  EXPECT_TRUE(r.starts_with("HTTP/1.1 200")) << r;
  EXPECT_TRUE(r.ends_with("later")) << r;
}

TEST_F(LiveServer, KeepAliveServesSeveralRequestsOnOneConnection) {
  start({});
  const std::string r = exchange(
      "POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}"
      "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  EXPECT_TRUE(r.starts_with("HTTP/1.1 200")) << r;
  EXPECT_NE(r.find("create"), std::string::npos) << r;
  EXPECT_TRUE(r.ends_with("ok")) << r;
}

TEST_F(LiveServer, ExpectContinueGetsA100BeforeTheBody) {
  start({});
  std::string interim, rest;
  with_client([&] {
    const int fd = connect_to(port);
    send_all(fd,
             "POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: 100-continue\r\nContent-Length: "
             "2\r\nConnection: close\r\n\r\n");
    char buf[256];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n > 0) interim.assign(buf, static_cast<std::size_t>(n));
    send_all(fd, "{}");
    rest = read_all(fd);
    ::close(fd);
  });
  EXPECT_TRUE(interim.starts_with("HTTP/1.1 100 Continue")) << interim;
  EXPECT_TRUE(rest.starts_with("HTTP/1.1 200")) << rest;
  EXPECT_TRUE(rest.ends_with("create")) << rest;
}

TEST_F(LiveServer, OversizedBodyIs413WithoutReadingIt) {
  HttpServerOptions o;
  o.max_body_bytes = 1024;
  start(std::move(o));
  // Declares 12 MB and sends none of it: the answer comes from the head alone.
  std::string r =
      exchange("POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 12000000\r\n\r\n");
  EXPECT_TRUE(r.starts_with("HTTP/1.1 413")) << r;
  EXPECT_NE(r.find("payload_too_large"), std::string::npos) << r;
  // Chunked, growing past the limit while being read.
  std::string chunked =
      "POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 4; ++i) chunked += "200\r\n" + std::string(512, 'a') + "\r\n";
  r = exchange(chunked);
  EXPECT_TRUE(r.starts_with("HTTP/1.1 413")) << r;
}

TEST_F(LiveServer, ASilentClientIsDisconnectedAfterTheHeaderDeadline) {
  HttpServerOptions o;
  o.header_timeout = absl::Milliseconds(200);
  start(std::move(o));
  std::string r = "unset";
  const auto t0 = std::chrono::steady_clock::now();
  with_client([&] {
    const int fd = connect_to(port);
    send_all(fd, "GET /healthz HTTP/1.1\r\nHo");  // and then nothing
    r = read_all(fd);
    ::close(fd);
  });
  EXPECT_EQ(r, "");  // closed, not answered
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(15));
}

TEST_F(LiveServer, ConnectionsBeyondTheCapGet503) {
  HttpServerOptions o;
  o.max_connections = 1;
  start(std::move(o));
  std::string second;
  with_client([&] {
    const int first = connect_to(port);
    send_all(first, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");  // keeps it open
    char buf[512];
    (void)::recv(first, buf, sizeof buf, 0);
    const int other = connect_to(port);
    second = read_all(other);
    ::close(other);
    ::close(first);
  });
  EXPECT_TRUE(second.starts_with("HTTP/1.1 503")) << second;
  EXPECT_NE(second.find("unavailable"), std::string::npos) << second;
}

TEST_F(LiveServer, TokensAreRequiredExceptForHealthz) {
  HttpServerOptions o;
  o.tokens = *TokenSet::parse("right\n");
  start(std::move(o));
  std::string r =
      exchange("GET /v1/jobs/x HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  EXPECT_TRUE(r.starts_with("HTTP/1.1 401")) << r;
  EXPECT_NE(r.find("unauthenticated"), std::string::npos) << r;
  r = exchange(
      "GET /v1/jobs/x HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer wrong\r\nConnection: "
      "close\r\n\r\n");
  EXPECT_TRUE(r.starts_with("HTTP/1.1 401")) << r;
  r = exchange(
      "GET /v1/jobs/x HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer right\r\nConnection: "
      "close\r\n\r\n");
  EXPECT_TRUE(r.starts_with("HTTP/1.1 200")) << r;
  r = exchange("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  EXPECT_TRUE(r.starts_with("HTTP/1.1 200")) << r;
}

TEST(HttpServerStart, RefusesAnExposedAddressWithoutTokens) {
  boost::asio::io_context io;
  HttpServerOptions o;
  o.listen = {"0.0.0.0", 0};
  HttpServer server(io, std::move(o), test_router());
  const absl::Status s = server.start();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
}

}  // namespace
}  // namespace kairos::http
