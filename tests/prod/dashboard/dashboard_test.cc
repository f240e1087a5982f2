// Dashboard routes: the page and assets with their security and caching
// headers, the login that turns a bearer token into a session cookie, and
// (on a real socket) the HTTP server accepting that cookie in place of the
// bearer header, with the CSRF token on state-changing requests.
#include "prod/dashboard/dashboard.h"

#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/json/parse.hpp>
#include <chrono>
#include <thread>

#include "prod/dashboard/assets.h"

namespace kairos::dashboard {
namespace {

namespace bhttp = boost::beast::http;
using http::Request;
using http::Response;

const absl::Time kT0 = absl::FromUnixSeconds(1'800'000'000);

std::string header(const Response& r, std::string_view name) {
  for (const auto& [k, v] : r.headers)
    if (k == name) return v;
  return {};
}

class DashboardRoutes : public ::testing::Test {
 protected:
  void SetUp() override {
    tokens = *http::TokenSet::parse("s3cret\n");
    DashboardOptions o;
    o.tokens = &tokens;
    o.sessions = &sessions;
    o.now = [this] { return now; };
    add_dashboard_routes(router, o);
  }
  Response call(std::string method, std::string target, std::string body = {},
                std::vector<std::pair<std::string, std::string>> headers = {}) {
    Request r;
    r.method = std::move(method);
    r.target = std::move(target);
    r.body = std::move(body);
    r.headers = std::move(headers);
    std::optional<Response> got;
    http::route_request(router, r, [&](Response res) { got = std::move(res); });
    EXPECT_TRUE(got.has_value());
    return got.value_or(Response{});
  }
  http::TokenSet tokens;
  SessionStore sessions;
  absl::Time now = kT0;
  http::Router router;
};

TEST_F(DashboardRoutes, ThePageAndItsAssetsCarryStrictHeaders) {
  const Response page = call("GET", "/");
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(page.content_type, "text/html; charset=utf-8");
  const std::string csp = header(page, "Content-Security-Policy");
  EXPECT_NE(csp.find("script-src 'self'"), std::string::npos) << csp;
  EXPECT_NE(csp.find("style-src 'self'"), std::string::npos) << csp;
  EXPECT_NE(csp.find("frame-ancestors 'none'"), std::string::npos) << csp;
  EXPECT_EQ(csp.find("unsafe-inline"), std::string::npos) << csp;
  EXPECT_EQ(header(page, "X-Content-Type-Options"), "nosniff");
  EXPECT_NE(page.body.find("/ui/app.js"), std::string::npos);
  // No inline script or style in the page itself.
  EXPECT_EQ(page.body.find("<script>"), std::string::npos);
  EXPECT_EQ(page.body.find("style="), std::string::npos);

  const Response js = call("GET", "/ui/app.js");
  EXPECT_EQ(js.status, 200);
  EXPECT_EQ(js.content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(header(js, "Cache-Control"), "no-cache");
  const std::string etag = header(js, "ETag");
  ASSERT_FALSE(etag.empty());
  EXPECT_EQ(call("GET", "/ui/app.css").content_type, "text/css; charset=utf-8");
  const Response again = call("GET", "/ui/app.js", {}, {{"If-None-Match", etag}});
  EXPECT_EQ(again.status, 304);
  EXPECT_TRUE(again.body.empty());
  EXPECT_EQ(call("GET", "/ui/nope.js").status, 404);
  EXPECT_EQ(call("GET", "/ui/..%2Fapp.js").status, 404);
  // The script never writes markup from data.
  for (const Asset& a : embedded_assets()) {
    if (!a.name.ends_with(".js")) continue;
    for (std::string_view sink :
         {".innerHTML", ".outerHTML", "insertAdjacentHTML", "document.write"})
      EXPECT_EQ(a.data.find(sink), std::string::npos) << a.name << " uses " << sink;
  }
}

TEST_F(DashboardRoutes, LoginTurnsTheTokenIntoAnHttpOnlyStrictSessionCookie) {
  const Response before = call("GET", "/ui/session");
  auto b = boost::json::parse(before.body).as_object();
  EXPECT_TRUE(b.at("auth_required").as_bool());
  EXPECT_FALSE(b.at("authenticated").as_bool());

  const std::vector<std::pair<std::string, std::string>> json_type = {
      {"Content-Type", "application/json"}};
  EXPECT_EQ(call("POST", "/ui/login", R"({"token":"wrong"})", json_type).status, 401);
  EXPECT_EQ(call("POST", "/ui/login", R"({"token":"s3cret"})").status, 400);  // a form cannot
  EXPECT_EQ(call("POST", "/ui/login", R"([1,2])", json_type).status, 400);
  EXPECT_EQ(call("POST", "/ui/login", "{", json_type).status, 400);
  EXPECT_EQ(sessions.size(), 0u);

  const Response ok = call("POST", "/ui/login", R"({"token":"s3cret"})", json_type);
  ASSERT_EQ(ok.status, 200) << ok.body;
  const std::string set = header(ok, "Set-Cookie");
  EXPECT_TRUE(set.starts_with("kairos_session=")) << set;
  EXPECT_NE(set.find("HttpOnly"), std::string::npos);
  EXPECT_NE(set.find("SameSite=Strict"), std::string::npos);
  EXPECT_EQ(set.find("Secure"), std::string::npos);  // plain HTTP
  const std::string csrf(boost::json::parse(ok.body).at("csrf").as_string());
  const std::string cookie = set.substr(0, set.find(';'));

  const Response after = call("GET", "/ui/session", {}, {{"Cookie", cookie}});
  auto a = boost::json::parse(after.body).as_object();
  EXPECT_TRUE(a.at("authenticated").as_bool());
  EXPECT_EQ(a.at("csrf").as_string(), csrf);

  auto tls = json_type;
  tls.emplace_back("X-Forwarded-Proto", "https");
  EXPECT_NE(header(call("POST", "/ui/login", R"({"token":"s3cret"})", tls), "Set-Cookie")
                .find("; Secure"),
            std::string::npos);

  // Guessing is throttled: past ten wrong tokens a minute even the right one waits.
  for (int i = 0; i < 9; ++i)  // one wrong token above, nine more
    ASSERT_EQ(call("POST", "/ui/login", R"({"token":"guess"})", json_type).status, 401);
  const Response throttled = call("POST", "/ui/login", R"({"token":"s3cret"})", json_type);
  EXPECT_EQ(throttled.status, 503);
  EXPECT_NE(throttled.body.find("try again in 1m"), std::string::npos) << throttled.body;
  now += absl::Minutes(1);
  EXPECT_EQ(call("POST", "/ui/login", R"({"token":"s3cret"})", json_type).status, 200);

  // Logout needs the session's CSRF token, then ends the session.
  EXPECT_EQ(call("POST", "/ui/logout", {}, {{"Cookie", cookie}}).status, 401);
  EXPECT_EQ(call("POST", "/ui/logout", {}, {{"Cookie", cookie}, {"X-CSRF-Token", csrf}}).status,
            200);
  auto gone = boost::json::parse(call("GET", "/ui/session", {}, {{"Cookie", cookie}}).body);
  EXPECT_FALSE(gone.at("authenticated").as_bool());
}

TEST(DashboardWithoutTokens, NeedsNoLogin) {
  http::Router router;
  add_dashboard_routes(router, {});
  Request r;
  r.method = "GET";
  r.target = "/ui/session";
  std::optional<Response> got;
  http::route_request(router, r, [&](Response res) { got = std::move(res); });
  ASSERT_TRUE(got);
  auto b = boost::json::parse(got->body).as_object();
  EXPECT_FALSE(b.at("auth_required").as_bool());
  EXPECT_TRUE(b.at("authenticated").as_bool());
  EXPECT_TRUE(is_public_path("/"));
  EXPECT_TRUE(is_public_path("/ui/app.js"));
  EXPECT_FALSE(is_public_path("/v1/jobs"));
  EXPECT_FALSE(is_public_path("/metrics"));
}

// ---- Through the HTTP server -----------------------------------------------

struct Exchange {
  int status = 0;
  std::string body;
};

TEST(DashboardSessionsOnTheServer, TheCookieStandsInForTheBearerHeader) {
  boost::asio::io_context io;
  SessionStore sessions;
  const Session session = sessions.create(absl::Now());
  http::HttpServerOptions options;
  options.listen = {"127.0.0.1", 0};
  options.tokens = *http::TokenSet::parse("s3cret\n");
  options.public_path = is_public_path;
  options.session_auth = session_auth(sessions, [] { return absl::Now(); });
  http::Router router;
  auto answer = [](std::string text) {
    return [text](const Request&, http::Reply reply) {
      Response r;
      r.body = text;
      reply(std::move(r));
    };
  };
  router.add("GET", "/v1/jobs", answer("list"));
  router.add("POST", "/v1/jobs/{id}:pause", answer("paused"));
  add_dashboard_routes(router, {});
  http::HttpServer server(io, std::move(options), std::move(router));
  ASSERT_TRUE(server.start().ok());
  const std::uint16_t port = server.port();

  // One request from a client thread while the loop runs here.
  auto send = [&](bhttp::verb verb, std::string target,
                  std::vector<std::pair<std::string, std::string>> headers) {
    Exchange out;
    std::atomic<bool> done{false};
    std::thread client([&] {
      boost::asio::io_context cio;
      boost::asio::ip::tcp::socket socket(cio);
      boost::system::error_code ec;
      socket.connect({boost::asio::ip::make_address("127.0.0.1"), port}, ec);
      if (!ec) {
        bhttp::request<bhttp::string_body> req(verb, target, 11);
        req.set(bhttp::field::host, "x");
        for (const auto& [k, v] : headers) req.set(k, v);
        req.prepare_payload();
        bhttp::write(socket, req, ec);
        boost::beast::flat_buffer buffer;
        bhttp::response<bhttp::string_body> res;
        if (!ec) bhttp::read(socket, buffer, res, ec);
        if (!ec) {
          out.status = static_cast<int>(res.result_int());
          out.body = res.body();
        }
      }
      done = true;
    });
    const auto bound = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!done && std::chrono::steady_clock::now() < bound)
      io.run_for(std::chrono::milliseconds(5));
    client.join();
    return out;
  };
  const std::string cookie = std::string(kSessionCookie) + "=" + session.id;
  EXPECT_EQ(send(bhttp::verb::get, "/v1/jobs", {}).status, 401);
  EXPECT_EQ(send(bhttp::verb::get, "/", {}).status, 200);  // the page is public
  EXPECT_EQ(send(bhttp::verb::get, "/ui/app.js", {}).status, 200);
  EXPECT_EQ(send(bhttp::verb::get, "/v1/jobs", {{"Authorization", "Bearer s3cret"}}).body, "list");
  EXPECT_EQ(send(bhttp::verb::get, "/v1/jobs", {{"Cookie", cookie}}).body, "list");
  EXPECT_EQ(send(bhttp::verb::get, "/v1/jobs", {{"Cookie", "kairos_session=forged"}}).status, 401);
  const Exchange no_csrf = send(bhttp::verb::post, "/v1/jobs/a:pause", {{"Cookie", cookie}});
  EXPECT_EQ(no_csrf.status, 401);
  EXPECT_NE(no_csrf.body.find("X-CSRF-Token"), std::string::npos) << no_csrf.body;
  EXPECT_EQ(send(bhttp::verb::post, "/v1/jobs/a:pause",
                 {{"Cookie", cookie}, {"X-CSRF-Token", session.csrf}})
                .body,
            "paused");
  // Bearer requests need no CSRF token.
  EXPECT_EQ(send(bhttp::verb::post, "/v1/jobs/a:pause", {{"Authorization", "Bearer s3cret"}}).body,
            "paused");
  server.stop();
}

}  // namespace
}  // namespace kairos::dashboard
