// The browser guard: a hostile page in the operator's browser must not use
// a loopback server's API, neither through a re-pointed DNS name (Host)
// nor through a cross-origin form or fetch (Origin, Sec-Fetch-Site); the
// clients that are no browser (CLI, curl, workers) pass unchanged.
#include <gtest/gtest.h>

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include "prod/http/http_server.h"
#include "prod/http/request_path.h"

namespace kairos::http {
namespace {

TEST(BrowserGuard, LoopbackHostNames) {
  for (const char* host :
       {"127.0.0.1", "127.0.0.1:8080", "127.9.8.7:1", "localhost", "LocalHost:8080",
        "localhost.:8080", "dash.localhost:8080", "[::1]", "[::1]:8080"})
    EXPECT_TRUE(host_is_loopback(host)) << host;
  for (const char* host : {"evil.example", "evil.example:8080", "localhost.evil.example",
                           "evillocalhost", "10.0.0.1:8080", "0.0.0.0:8080", "[::2]:8080", "[::1",
                           "[::1]x", "::1", "", "127.0.0.1:80:80"})
    EXPECT_FALSE(host_is_loopback(host)) << host;
}

TEST(BrowserGuard, ARebindingHostIsRefusedOnlyWithoutTokens) {
  auto r = browser_refusal("GET", "attacker.example:8080", "", "", /*has_tokens=*/false);
  ASSERT_TRUE(r.has_value());
  EXPECT_NE(r->find("attacker.example:8080"), std::string::npos) << *r;
  EXPECT_NE(r->find("--auth-token-file"), std::string::npos) << *r;
  // With tokens the page has none to send: the 401 answers it.
  EXPECT_FALSE(browser_refusal("GET", "attacker.example:8080", "", "", true));
  // No Host (not a browser) and loopback names pass.
  EXPECT_FALSE(browser_refusal("POST", "", "", "", false));
  EXPECT_FALSE(browser_refusal("POST", "127.0.0.1:8080", "", "", false));
}

TEST(BrowserGuard, CrossOriginWritesAreRefusedSameOriginOnesPass) {
  const std::string host = "127.0.0.1:8080";
  for (const char* method : {"POST", "PUT", "PATCH", "DELETE"}) {
    EXPECT_TRUE(browser_refusal(method, host, "http://evil.example", "", true)) << method;
    EXPECT_TRUE(browser_refusal(method, host, "null", "", false)) << method;
    EXPECT_TRUE(browser_refusal(method, host, "http://127.0.0.1:9090", "", false)) << method;
    EXPECT_TRUE(browser_refusal(method, host, "", "cross-site", false)) << method;
    EXPECT_TRUE(browser_refusal(method, host, "", "same-site", false)) << method;
    EXPECT_FALSE(browser_refusal(method, host, "http://127.0.0.1:8080", "same-origin", false))
        << method;
    EXPECT_FALSE(browser_refusal(method, host, "HTTPS://127.0.0.1:8080", "", false)) << method;
    EXPECT_FALSE(browser_refusal(method, host, "", "none", false)) << method;
  }
  // Reads are not refused for their Origin (the page cannot read the answer).
  for (const char* method : {"GET", "HEAD", "OPTIONS"})
    EXPECT_FALSE(browser_refusal(method, host, "http://evil.example", "cross-site", false))
        << method;
  // The refusal quotes the Origin safely.
  auto r = browser_refusal("POST", host, "http://e\x1b[2J", "", false);
  ASSERT_TRUE(r.has_value());
  EXPECT_NE(r->find("\\x1b"), std::string::npos) << *r;
}

// The production head check answers 403 permission_denied before any
// token question, and lets a CLI-style request through.
TEST(BrowserGuard, TheHeadCheckAnswers403) {
  namespace bhttp = boost::beast::http;
  HttpServerOptions options;
  RequestParser::value_type head{bhttp::verb::post, "/v1/jobs", 11};
  head.set(bhttp::field::host, "rebound.example:8080");
  auto answer = check_head(head, options);
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->status, 403);
  EXPECT_NE(answer->body.find("\"permission_denied\""), std::string::npos) << answer->body;

  head.set(bhttp::field::host, "127.0.0.1:8080");
  head.set(bhttp::field::origin, "http://evil.example");
  answer = check_head(head, options);
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->status, 403);

  head.erase(bhttp::field::origin);
  EXPECT_FALSE(check_head(head, options).has_value());
}

}  // namespace
}  // namespace kairos::http
