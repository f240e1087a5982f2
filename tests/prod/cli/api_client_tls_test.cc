// The API client over https:// against a real TLS server on loopback (one
// connection, its own thread, a self-signed certificate made at test time):
// the request arrives and the answer comes back when the certificate is
// trusted through the CA file; without it, or for a host the certificate
// does not name, the handshake fails with kUnavailable naming the reason
// and nothing reaches the server. Also the URL and flag rules (https
// defaults to port 443; --ca-file only with https; a CA file that does not
// load is a usage error naming the flag).
#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <fstream>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "prod/cli/api_client.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_cert.h"

namespace kairos::cli {
namespace {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

// Answers one connection: TLS handshake, one request, {"ok": true}.
class OneShotTlsServer {
 public:
  explicit OneShotTlsServer(const test_support::TestCert& cert)
      : tls_(ssl::context::tls_server),
        acceptor_(io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
    tls_.use_certificate_chain(asio::buffer(cert.cert_pem));
    tls_.use_private_key(asio::buffer(cert.key_pem), ssl::context::pem);
    thread_ = std::thread([this] { serve(); });
  }
  ~OneShotTlsServer() {
    boost::system::error_code ec;
    if (!accepted_) {  // wake the accept
      tcp::socket wake(io_);
      wake.connect(acceptor_.local_endpoint(), ec);
    }
    thread_.join();
  }
  std::uint16_t port() const { return acceptor_.local_endpoint().port(); }
  bool got_request() const { return got_request_; }
  std::string host_header() const { return host_; }

 private:
  void serve() {
    tcp::socket s(io_);
    boost::system::error_code ec;
    acceptor_.accept(s, ec);
    accepted_ = true;
    if (ec) return;
    ssl::stream<tcp::socket> stream(std::move(s), tls_);
    stream.handshake(ssl::stream_base::server, ec);
    if (ec) return;
    boost::beast::flat_buffer buf;
    http::request<http::string_body> req;
    http::read(stream, buf, req, ec);
    if (ec) return;
    host_ = std::string(req[http::field::host]);
    got_request_ = true;
    http::response<http::string_body> res{http::status::ok, 11};
    res.set(http::field::content_type, "application/json");
    res.body() = R"({"ok": true})";
    res.prepare_payload();
    http::write(stream, res, ec);
    stream.shutdown(ec);
  }

  asio::io_context io_;
  ssl::context tls_;
  tcp::acceptor acceptor_;
  std::thread thread_;
  std::atomic<bool> accepted_{false};
  std::atomic<bool> got_request_{false};
  std::string host_;
};

std::string write_file(const test_support::TempDir& dir, const std::string& name,
                       const std::string& text) {
  const std::string path = (dir.path() / name).string();
  std::ofstream(path) << text;
  return path;
}

absl::StatusOr<HttpResponse> get(const std::string& url, const std::string& ca_file) {
  auto server = parse_server_url(url);
  if (!server.ok()) return server.status();
  HttpRequest r;
  r.method = "GET";
  r.target = "/v1/jobs";
  return beast_transport(*server, absl::Seconds(20), kMaxResponseSize, ca_file)(r);
}

TEST(ApiClientTls, TrustedThroughTheCaFileTheRequestGoesThrough) {
  const test_support::TestCert cert = test_support::make_self_signed_cert();
  test_support::TempDir dir("kairos-cli-tls");
  const std::string ca = write_file(dir, "ca.pem", cert.cert_pem);
  for (const char* host : {"127.0.0.1", "localhost"}) {
    OneShotTlsServer server(cert);
    auto r = get(absl::StrCat("https://", host, ":", server.port()), ca);
    ASSERT_TRUE(r.ok()) << host << ": " << r.status();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, R"({"ok": true})");
    EXPECT_EQ(server.host_header(), absl::StrCat(host, ":", server.port()));
  }
}

TEST(ApiClientTls, AnUntrustedOrMisnamedCertificateFailsBeforeAnythingIsSent) {
  const test_support::TestCert cert = test_support::make_self_signed_cert();
  {
    OneShotTlsServer server(cert);
    auto r = get(absl::StrCat("https://127.0.0.1:", server.port()), "");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
    EXPECT_NE(r.status().message().find("certificate verification failed"), std::string::npos)
        << r.status();
    EXPECT_NE(r.status().message().find("--ca-file"), std::string::npos) << r.status();
    EXPECT_FALSE(server.got_request());
  }
  {
    // Trusted, but made for another name: the host check refuses it.
    const test_support::TestCert other = test_support::make_self_signed_cert("DNS:other.example");
    test_support::TempDir dir("kairos-cli-tls");
    const std::string ca = write_file(dir, "ca.pem", other.cert_pem);
    OneShotTlsServer server(other);
    auto r = get(absl::StrCat("https://127.0.0.1:", server.port()), ca);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
    EXPECT_FALSE(server.got_request());
  }
}

TEST(ApiClientTls, UrlAndFlagRules) {
  auto url = parse_server_url("https://kairos.example");
  ASSERT_TRUE(url.ok()) << url.status();
  EXPECT_TRUE(url->tls);
  EXPECT_EQ(url->port, 443);
  url = parse_server_url("HTTPS://[::1]:8443/base/");
  ASSERT_TRUE(url.ok()) << url.status();
  EXPECT_EQ(url->port, 8443);
  EXPECT_EQ(url->base_path, "/base");
  EXPECT_FALSE(parse_server_url("ftp://x").ok());

  ClientFlags flags;
  flags.server = "http://127.0.0.1:8080";
  flags.ca_file = "/nonexistent/ca.pem";
  auto client = make_client(flags);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(client.status().message().find("only for an https:// server"), std::string::npos);

  flags.server = "https://127.0.0.1:8443";
  client = make_client(flags);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(client.status().message().find("flag --ca-file: cannot load the CA file"),
            std::string::npos)
      << client.status();
  EXPECT_EQ(exit_code(client.status()), kExitUsage);
}

}  // namespace
}  // namespace kairos::cli
