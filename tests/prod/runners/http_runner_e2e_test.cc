// HttpRunner against a real Beast server on loopback (its own thread, plain
// or TLS with a self-signed certificate made at test time with OpenSSL): the
// headers a target sees (and that a payload cannot forge), the outcome of
// each class of status, redirects not followed, the deadline and stop()
// (the connection is closed, the outcome comes after), the response capture
// bound, connection failures, strict URL parsing, and certificate
// verification (fails without the CA file, passes with it, SNI sent). Waits
// are event-driven with generous upper bounds.
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "core/base/absl_compat.h"
#include "prod/runners/http_runner.h"
#include "prod/runtime/asio_runtime.h"
#include "tests/support/loop_wait.h"
#include "tests/support/test_cert.h"

namespace kairos {
namespace {

using test_support::make_self_signed_cert;
using test_support::TestCert;

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

// ---- The target: a blocking Beast server on its own threads ----

struct Seen {
  std::string method;
  std::string target;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  std::string sni;
};

struct Reply {
  int status = 200;
  std::string body = "ok";
  std::vector<std::pair<std::string, std::string>> headers;
  bool hang = false;     // read the request, never answer
  bool interim = false;  // send "100 Continue" before the answer
};

class TestServer {
 public:
  explicit TestServer(std::function<Reply(const Seen&)> handler, const TestCert* cert = nullptr)
      : handler_(std::move(handler)),
        acceptor_(io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
    if (cert != nullptr) {
      tls_.emplace(ssl::context::tls_server);
      tls_->use_certificate_chain(asio::buffer(cert->cert_pem));
      tls_->use_private_key(asio::buffer(cert->key_pem), ssl::context::pem);
    }
    thread_ = std::thread([this] { accept_loop(); });
  }

  ~TestServer() {
    stopping_ = true;
    boost::system::error_code ec;
    tcp::socket wake(io_);
    wake.connect(acceptor_.local_endpoint(), ec);
    thread_.join();
    {
      std::lock_guard lock(mu_);
      for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
    }
    for (auto& t : conns_) t.join();
  }

  std::uint16_t port() const { return acceptor_.local_endpoint().port(); }

  std::vector<Seen> seen() {
    std::lock_guard lock(mu_);
    return seen_;
  }
  // Connections the client closed while the server held them (hang).
  int closed_by_client() const { return closed_by_client_; }
  int handshakes_failed() const { return handshakes_failed_; }

 private:
  void accept_loop() {
    while (true) {
      tcp::socket s(io_);
      boost::system::error_code ec;
      acceptor_.accept(s, ec);
      if (stopping_ || ec) return;
      {
        std::lock_guard lock(mu_);
        open_fds_.push_back(s.native_handle());
      }
      conns_.emplace_back([this, s = std::move(s)]() mutable { serve(std::move(s)); });
    }
  }

  template <typename Stream>
  void exchange(Stream& stream, const std::string& sni) {
    boost::beast::flat_buffer buf;
    http::request<http::string_body> req;
    boost::system::error_code ec;
    http::read(stream, buf, req, ec);
    if (ec) return;
    Seen s;
    s.method = std::string(req.method_string());
    s.target = std::string(req.target());
    for (const auto& f : req)
      s.headers[absl::AsciiStrToLower(absl_sv(std::string_view(f.name_string())))] =
          std::string(f.value());
    s.body = req.body();
    s.sni = sni;
    {
      std::lock_guard lock(mu_);
      seen_.push_back(s);
    }
    const Reply r = handler_(s);
    if (r.hang) {
      char c;
      while (!ec) asio::read(stream, asio::buffer(&c, 1), ec);  // until the client closes
      ++closed_by_client_;
      return;
    }
    if (r.interim) {
      const std::string_view cont = "HTTP/1.1 100 Continue\r\n\r\n";
      asio::write(stream, asio::buffer(cont.data(), cont.size()), ec);
    }
    http::response<http::string_body> res;
    res.version(11);
    res.result(static_cast<unsigned>(r.status));
    for (const auto& [k, v] : r.headers) res.set(k, v);
    res.body() = r.body;
    res.prepare_payload();
    http::write(stream, res, ec);
  }

  void serve(tcp::socket s) {
    boost::system::error_code ec;
    if (!tls_) {
      exchange(s, "");
      s.shutdown(tcp::socket::shutdown_both, ec);
      return;
    }
    ssl::stream<tcp::socket> stream(std::move(s), *tls_);
    stream.handshake(ssl::stream_base::server, ec);
    if (ec) {
      ++handshakes_failed_;
      return;
    }
    const char* sni = SSL_get_servername(stream.native_handle(), TLSEXT_NAMETYPE_host_name);
    exchange(stream, sni != nullptr ? sni : "");
    stream.next_layer().shutdown(tcp::socket::shutdown_both, ec);
  }

  std::function<Reply(const Seen&)> handler_;
  asio::io_context io_;
  tcp::acceptor acceptor_;
  std::optional<ssl::context> tls_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> closed_by_client_{0};
  std::atomic<int> handshakes_failed_{0};
  std::mutex mu_;
  std::vector<Seen> seen_;
  std::vector<int> open_fds_;
  std::thread thread_;
  std::vector<std::thread> conns_;
};

// ---- The runner under test ----

class HttpRunnerTest : public ::testing::Test {
 protected:
  HttpRunnerTest() { make_runner({}); }

  void make_runner(HttpRunnerOptions options) {
    runner_.reset();
    auto r = HttpRunner::create(io_, timers_, clock_, std::move(options));
    ASSERT_TRUE(r.ok()) << r.status();
    runner_ = *std::move(r);
  }

  RunRequest request(std::string url, absl::Duration timeout = absl::Minutes(1)) {
    RunRequest r;
    r.job_id = "job-1";
    r.incarnation = 2;
    r.nominal_time = absl::FromUnixSeconds(1'767'225'600);  // 2026-01-01T00:00:00Z
    r.attempt = 3;
    r.fencing_token = 42;
    r.idempotency_key = "job-1/2/1767225600000000";
    r.run_id = "job-1/2/2026-01-01T00:00:00Z";
    r.payload = HttpPayload{"POST", std::move(url), {}, "the-body"};
    r.deadline = clock_.now() + timeout;
    return r;
  }

  std::string url(const TestServer& s, std::string_view path = "/hook") {
    return "http://127.0.0.1:" + std::to_string(s.port()) + std::string(path);
  }

  template <typename Pred>
  bool wait_for(Pred pred) {
    return test_support::run_until(io_, pred);
  }

  RunOutcome run(RunRequest r) {
    std::optional<RunOutcome> out;
    runner_->start(std::move(r), [&](RunOutcome o) { out = std::move(o); });
    EXPECT_FALSE(out.has_value()) << "done must not run inside start()";
    wait_for([&] { return out.has_value(); });
    EXPECT_EQ(runner_->running(), 0u);
    return out.value_or(RunOutcome{RunStatus::kFailed, -1, "no outcome within the bound"});
  }

  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_ = asio::make_work_guard(io_);
  SystemClock clock_;
  AsioTimers timers_{io_};
  std::unique_ptr<HttpRunner> runner_;
};

Reply answer(int status, std::string body = "ok") {
  Reply r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

TEST_F(HttpRunnerTest, TheTargetSeesTheRunsIdentityAndThePayloadCannotForgeIt) {
  TestServer server([](const Seen&) { return answer(200, "accepted"); });
  RunRequest r = request(url(server, "/hook?x=1#frag"));
  r.late_by = absl::Milliseconds(1500);
  r.occurrences = 3;
  auto& p = std::get<HttpPayload>(r.payload);
  p.headers = {{"X-Custom", "custom value"},    {"Content-Type", "application/json"},
               {"kairos-fencing-token", "999"}, {"IDEMPOTENCY-KEY", "forged"},
               {"Host", "evil.example"},        {"Content-Length", "1"}};
  const RunOutcome o = run(std::move(r));
  EXPECT_EQ(o.status, RunStatus::kSucceeded) << o.detail;
  EXPECT_EQ(o.exit_code, 200);
  EXPECT_TRUE(o.started);
  EXPECT_EQ(o.output, "accepted");
  EXPECT_TRUE(absl::StrContains(o.detail, "HTTP 200")) << o.detail;
  const auto seen = server.seen();
  ASSERT_EQ(seen.size(), 1u);
  const Seen& s = seen[0];
  EXPECT_EQ(s.method, "POST");
  EXPECT_EQ(s.target, "/hook?x=1");
  EXPECT_EQ(s.body, "the-body");
  auto h = s.headers;
  EXPECT_EQ(h["idempotency-key"], "job-1/2/1767225600000000");
  EXPECT_EQ(h["kairos-fencing-token"], "42");
  EXPECT_EQ(h["kairos-job-id"], "job-1");
  EXPECT_EQ(h["kairos-run-id"], "job-1/2/2026-01-01T00:00:00Z");
  EXPECT_EQ(h["kairos-attempt"], "3");
  EXPECT_EQ(h["kairos-scheduled-at"], "2026-01-01T00:00:00Z");
  EXPECT_EQ(h["kairos-late-by"], "1.500000");
  EXPECT_EQ(h["kairos-occurrences"], "3");
  EXPECT_EQ(h["x-custom"], "custom value");
  EXPECT_EQ(h["content-type"], "application/json");
  EXPECT_EQ(h["host"], "127.0.0.1:" + std::to_string(server.port()));
  EXPECT_EQ(h["content-length"], "8");
  EXPECT_EQ(h["connection"], "close");
}

TEST_F(HttpRunnerTest, AnOnTimeRunHasNoLatenessHeaders) {
  TestServer server([](const Seen&) { return answer(204, ""); });
  RunRequest r = request(url(server));
  std::get<HttpPayload>(r.payload).method = "GET";
  std::get<HttpPayload>(r.payload).body.clear();
  const RunOutcome o = run(std::move(r));
  EXPECT_EQ(o.status, RunStatus::kSucceeded) << o.detail;
  EXPECT_EQ(o.exit_code, 204);
  const auto seen = server.seen();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].method, "GET");
  EXPECT_EQ(seen[0].headers.count("kairos-late-by"), 0u);
  EXPECT_EQ(seen[0].headers.count("kairos-occurrences"), 0u);
}

TEST_F(HttpRunnerTest, EachClassOfStatusHasItsOutcome) {
  HttpRunnerOptions options;
  options.retryable_statuses = {409};
  make_runner(options);
  const std::pair<int, RunStatus> cases[] = {
      {200, RunStatus::kSucceeded},       {201, RunStatus::kSucceeded},
      {503, RunStatus::kFailed},          {500, RunStatus::kFailed},
      {429, RunStatus::kFailed},          {409, RunStatus::kFailed},
      {404, RunStatus::kFailedPermanent}, {400, RunStatus::kFailedPermanent},
      {302, RunStatus::kFailedPermanent},
  };
  for (const auto& [status, want] : cases) {
    TestServer server([status = status](const Seen&) {
      Reply r = answer(status, "because");
      if (status == 302) r.headers = {{"Location", "https://elsewhere.example/"}};
      return r;
    });
    const RunOutcome o = run(request(url(server)));
    EXPECT_EQ(o.status, want) << status << ": " << o.detail;
    EXPECT_EQ(o.exit_code, status);
    EXPECT_TRUE(o.started);
    EXPECT_EQ(o.output, "because");
    if (status == 302) {
      EXPECT_TRUE(absl::StrContains(o.detail, "redirects are not followed")) << o.detail;
      EXPECT_TRUE(absl::StrContains(o.detail, "https://elsewhere.example/")) << o.detail;
      EXPECT_EQ(server.seen().size(), 1u) << "the redirect must not be followed";
    }
  }
}

TEST_F(HttpRunnerTest, AnInterimResponseIsSkipped) {
  TestServer server([](const Seen&) {
    Reply r = answer(201, "made");
    r.interim = true;
    return r;
  });
  const RunOutcome o = run(request(url(server)));
  EXPECT_EQ(o.status, RunStatus::kSucceeded) << o.detail;
  EXPECT_EQ(o.exit_code, 201);
  EXPECT_EQ(o.output, "made");
}

TEST_F(HttpRunnerTest, TheDeadlineAbandonsTheRequestAndClosesTheConnection) {
  TestServer server([](const Seen&) {
    Reply r;
    r.hang = true;
    return r;
  });
  const auto t0 = std::chrono::steady_clock::now();
  const RunOutcome o = run(request(url(server), absl::Seconds(1)));
  EXPECT_EQ(o.status, RunStatus::kTimedOut) << o.detail;
  EXPECT_TRUE(o.started);
  EXPECT_TRUE(absl::StrContains(o.detail, "while waiting for the response")) << o.detail;
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(900));
  EXPECT_TRUE(wait_for([&] { return server.closed_by_client() == 1; }));
}

TEST_F(HttpRunnerTest, ADeadlineAlreadyPastSendsNothing) {
  TestServer server([](const Seen&) { return answer(200); });
  const RunOutcome o = run(request(url(server), -absl::Seconds(1)));
  EXPECT_EQ(o.status, RunStatus::kTimedOut) << o.detail;
  EXPECT_FALSE(o.started);
  EXPECT_TRUE(absl::StrContains(o.detail, "nothing was sent")) << o.detail;
  EXPECT_TRUE(server.seen().empty());
}

TEST_F(HttpRunnerTest, StopAbandonsTheRequestAndReportsStoppedAfterwards) {
  TestServer server([](const Seen&) {
    Reply r;
    r.hang = true;
    return r;
  });
  std::optional<RunOutcome> out;
  const RunHandle h =
      runner_->start(request(url(server)), [&](RunOutcome o) { out = std::move(o); });
  ASSERT_TRUE(wait_for([&] { return server.seen().size() == 1; }));
  runner_->stop(h);
  EXPECT_FALSE(out.has_value()) << "done must not run inside stop()";
  EXPECT_EQ(runner_->running(), 0u);
  runner_->stop(h);  // a second stop: no-op
  ASSERT_TRUE(wait_for([&] { return out.has_value(); }));
  EXPECT_EQ(out->status, RunStatus::kStopped) << out->detail;
  EXPECT_TRUE(wait_for([&] { return server.closed_by_client() == 1; }));
  runner_->stop(h);      // reported: no-op
  runner_->stop(98765);  // unknown: no-op
}

TEST_F(HttpRunnerTest, TerminateAllStopsEveryRequest) {
  TestServer server([](const Seen&) {
    Reply r;
    r.hang = true;
    return r;
  });
  int stopped = 0;
  for (int i = 0; i < 3; ++i)
    runner_->start(request(url(server)),
                   [&](RunOutcome o) { stopped += o.status == RunStatus::kStopped; });
  ASSERT_TRUE(wait_for([&] { return server.seen().size() == 3; }));
  runner_->terminate_all();
  EXPECT_TRUE(wait_for([&] { return stopped == 3; }));
}

TEST_F(HttpRunnerTest, OnlyTheStartOfALargeBodyIsKept) {
  HttpRunnerOptions options;
  options.output_bytes = 1000;
  make_runner(options);
  std::string big(1 << 20, 'b');
  for (std::size_t i = 0; i < big.size(); i += 97) big[i] = static_cast<char>('a' + i % 26);
  TestServer server([&](const Seen&) { return answer(200, big); });
  const RunOutcome o = run(request(url(server)));
  EXPECT_EQ(o.status, RunStatus::kSucceeded) << o.detail;
  EXPECT_EQ(o.output, big.substr(0, 1000));
}

TEST_F(HttpRunnerTest, ARefusedConnectionIsARetryableFailureThatSentNothing) {
  std::uint16_t port = 0;
  {
    asio::io_context io;
    tcp::acceptor a(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    port = a.local_endpoint().port();
  }
  const RunOutcome o = run(request("http://127.0.0.1:" + std::to_string(port) + "/"));
  EXPECT_EQ(o.status, RunStatus::kFailed) << o.detail;
  EXPECT_FALSE(o.started);
  EXPECT_TRUE(absl::StrContains(o.detail, "cannot connect")) << o.detail;
}

TEST_F(HttpRunnerTest, BadRequestsFailToStartPermanentlyNamingTheProblem) {
  RunOutcome o = run(request("ftp://127.0.0.1/"));
  EXPECT_EQ(o.status, RunStatus::kFailedPermanent);
  EXPECT_FALSE(o.started);
  EXPECT_TRUE(absl::StrContains(o.detail, "scheme 'ftp' is not supported")) << o.detail;

  RunRequest r = request("http://127.0.0.1/");
  std::get<HttpPayload>(r.payload).method = "PO ST";
  o = run(std::move(r));
  EXPECT_EQ(o.status, RunStatus::kFailedPermanent);
  EXPECT_TRUE(absl::StrContains(o.detail, "payload.http.method")) << o.detail;

  r = request("http://127.0.0.1/");
  std::get<HttpPayload>(r.payload).headers = {{"X-Evil", "a\r\nInjected: yes"}};
  o = run(std::move(r));
  EXPECT_EQ(o.status, RunStatus::kFailedPermanent);
  EXPECT_TRUE(absl::StrContains(o.detail, "payload.http.headers.X-Evil")) << o.detail;

  r = request("http://127.0.0.1/");
  r.payload = CommandPayload{{"/bin/true"}, {}, {}};
  o = run(std::move(r));
  EXPECT_EQ(o.status, RunStatus::kFailedPermanent);
  EXPECT_TRUE(absl::StrContains(o.detail, "http payloads only")) << o.detail;
}

TEST(ParseHttpUrlTest, AcceptsWhatItCanRequest) {
  auto u = parse_http_url("http://example.com");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_FALSE(u->tls);
  EXPECT_EQ(u->host, "example.com");
  EXPECT_EQ(u->port, 80);
  EXPECT_EQ(u->target, "/");
  EXPECT_EQ(u->host_header, "example.com");
  EXPECT_FALSE(u->host_is_ip);

  u = parse_http_url("HTTPS://10.0.0.1:8443/a/b?c=d#frag");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_TRUE(u->tls);
  EXPECT_TRUE(u->host_is_ip);
  EXPECT_EQ(u->port, 8443);
  EXPECT_EQ(u->target, "/a/b?c=d");
  EXPECT_EQ(u->host_header, "10.0.0.1:8443");

  u = parse_http_url("https://[::1]/x");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->host, "::1");
  EXPECT_TRUE(u->host_is_ip);
  EXPECT_EQ(u->port, 443);
  EXPECT_EQ(u->host_header, "[::1]");

  u = parse_http_url("http://h?q=1");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->target, "/?q=1");
}

TEST(ParseHttpUrlTest, RejectionsNameTheProblem) {
  const std::pair<const char*, const char*> bad[] = {
      {"example.com/x", "must start with http:// or https://"},
      {"gopher://h/", "scheme 'gopher' is not supported"},
      {"http:///x", "has no host"},
      {"http://:80/", "has no host"},
      {"http://h:0/", "port must be 1..65535"},
      {"http://h:65536/", "port must be 1..65535"},
      {"http://h:8x/", "port '8x' is not a number"},
      {"http://h:/", "empty port"},
      {"http://user:pw@h/", "user info"},
      {"http://h o/", "spaces"},
      {"http://h%41/", "may contain only letters"},
      {"http://[::1/", "no closing ']'"},
      {"http://[zz]/", "is not an IPv6 address"},
      {"http://[::1]x/", "unexpected text after the IPv6 address"},
  };
  for (const auto& [url, why] : bad) {
    const auto u = parse_http_url(url);
    ASSERT_FALSE(u.ok()) << url;
    EXPECT_TRUE(absl::StrContains(u.status().message(), why)) << url << ": " << u.status();
    EXPECT_TRUE(absl::StrContains(u.status().message(), "payload.http.url")) << u.status();
  }
}

TEST_F(HttpRunnerTest, DestroyingTheRunnerClosesTheConnectionAndReportsNothing) {
  TestServer server([](const Seen&) {
    Reply r;
    r.hang = true;
    return r;
  });
  bool reported = false;
  runner_->start(request(url(server)), [&](RunOutcome) { reported = true; });
  ASSERT_TRUE(wait_for([&] { return server.seen().size() == 1; }));
  runner_.reset();
  io_.run_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(reported);
  EXPECT_TRUE(wait_for([&] { return server.closed_by_client() == 1; }));
}

class HttpsRunnerTest : public HttpRunnerTest {
 protected:
  HttpsRunnerTest() {
    ca_file_ = "/tmp/kairos-http-runner-ca-" + std::to_string(::getpid()) + ".pem";
    std::ofstream(ca_file_) << cert_.cert_pem;
  }
  ~HttpsRunnerTest() override { ::unlink(ca_file_.c_str()); }

  TestCert cert_ = make_self_signed_cert();
  std::string ca_file_;
};

TEST_F(HttpsRunnerTest, AnUntrustedCertificateFailsBeforeAnythingIsSent) {
  TestServer server([](const Seen&) { return answer(200); }, &cert_);
  const RunOutcome o =
      run(request("https://localhost:" + std::to_string(server.port()) + "/secure"));
  EXPECT_EQ(o.status, RunStatus::kFailed) << o.detail;
  EXPECT_FALSE(o.started);
  EXPECT_TRUE(absl::StrContains(o.detail, "TLS handshake")) << o.detail;
  EXPECT_TRUE(absl::StrContains(o.detail, "certificate")) << o.detail;
  EXPECT_TRUE(server.seen().empty());
}

TEST_F(HttpsRunnerTest, TheCaFileMakesItTrustedAndTheHostIsSentAsSni) {
  HttpRunnerOptions options;
  options.ca_file = ca_file_;
  make_runner(options);
  TestServer server([](const Seen&) { return answer(200, "secure ok"); }, &cert_);
  const RunOutcome o =
      run(request("https://localhost:" + std::to_string(server.port()) + "/secure"));
  EXPECT_EQ(o.status, RunStatus::kSucceeded) << o.detail;
  EXPECT_EQ(o.output, "secure ok");
  const auto seen = server.seen();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].sni, "localhost");
  EXPECT_EQ(seen[0].headers.at("kairos-fencing-token"), "42");

  // An IP address in the certificate is checked as an address (no SNI).
  const RunOutcome by_ip =
      run(request("https://127.0.0.1:" + std::to_string(server.port()) + "/secure"));
  EXPECT_EQ(by_ip.status, RunStatus::kSucceeded) << by_ip.detail;
  EXPECT_EQ(server.seen().at(1).sni, "");
}

TEST_F(HttpsRunnerTest, ATrustedCertificateForAnotherNameFails) {
  const TestCert other = make_self_signed_cert("DNS:other.invalid");
  std::ofstream(ca_file_) << other.cert_pem;
  HttpRunnerOptions options;
  options.ca_file = ca_file_;
  make_runner(options);
  TestServer server([](const Seen&) { return answer(200); }, &other);
  const RunOutcome o = run(request("https://localhost:" + std::to_string(server.port()) + "/"));
  EXPECT_EQ(o.status, RunStatus::kFailed) << o.detail;
  EXPECT_FALSE(o.started);
  EXPECT_TRUE(absl::StrContains(o.detail, "certificate")) << o.detail;
  EXPECT_TRUE(server.seen().empty());
}

TEST_F(HttpsRunnerTest, AMissingCaFileIsAConfigurationError) {
  HttpRunnerOptions options;
  options.ca_file = "/nonexistent/ca.pem";
  const auto r = HttpRunner::create(io_, timers_, clock_, options);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::StrContains(r.status().message(), "/nonexistent/ca.pem")) << r.status();
  HttpRunnerOptions big;
  big.output_bytes = kMaxRunOutputSize + 1;
  EXPECT_FALSE(HttpRunner::create(io_, timers_, clock_, big).ok());
}

}  // namespace
}  // namespace kairos
