// HTTP server: a small Boost.Beast HTTP/1.1 server on the node's event loop.
//
// Purpose. Serves the API (prod/api/api_routes.h) on the io_context the
// server process already runs: one loop thread, every socket operation
// asynchronous, so a request waiting for a store transaction never blocks
// another. A route handler answers through a callback, possibly much later
// (after a transaction); an answer for a connection that has meanwhile
// closed is dropped.
//
// Guarantees (the input is hostile):
// - At most max_connections connections at once; a further one gets
//   503 unavailable and is closed.
// - The request head must arrive within header_timeout (also the idle
//   bound of a keep-alive connection between requests), the body within
//   body_timeout, and the response must drain within body_timeout: a slow
//   client cannot pin a connection forever.
// - A head larger than max_header_bytes gets 431, a body larger than
//   max_body_bytes 413 (payload_too_large) without the body being read whole
//   (a declared Content-Length over the limit is refused as soon as the head
//   is read); the connection is then closed.
// - Keep-alive as HTTP/1.1 says; one request at a time per connection.
// - Routing by method and path pattern; an unknown path is 404, a known path
//   with another method 405 (with Allow); both in the API's error shape.
// - Bearer tokens (TokenSet): when tokens are configured, every route but
//   /healthz needs "Authorization: Bearer <token>" (401 otherwise); a server
//   bound to a non-loopback address refuses to start without tokens.
//   HttpServerOptions may name further public paths and a session
//   credential accepted in place of the bearer header.
// - The browser guard (below): Host names loopback when there are no
//   tokens; no cross-origin writes.
//
// Threading: everything runs on the io_context's one thread.
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
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace kairos::http {

// ---- Requests, responses, routes -------------------------------------------

struct Request {
  std::string method;                         // "GET", "POST", ...
  std::string target;                         // as sent: path and query
  std::string path;                           // the raw (still percent-encoded) path
  std::map<std::string, std::string> query;   // decoded; the last of a repeated key wins
  std::map<std::string, std::string> params;  // decoded path parameters ({id})
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // The value of a header (case-insensitive name), empty when absent.
  std::string header(std::string_view name) const;
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};
// {"error": {"code", "message"}} with its status (the API's error shape).
Response error_response(int status, std::string_view code, std::string_view message);

// A handler answers through Reply exactly once, now or later (on the loop).
// The Request lives only during the handler's call: copy what a later
// answer needs.
using Reply = std::function<void(Response)>;
using Handler = std::function<void(const Request&, Reply)>;

// "%41b%2Fc" -> "Ab/c"; std::nullopt for a malformed escape. With
// `plus_is_space` (query strings) '+' decodes to ' '.
std::optional<std::string> percent_decode(std::string_view text, bool plus_is_space = false);
// "a=1&b=x%20y" -> {a: 1, b: "x y"}; std::nullopt for a malformed escape.
std::optional<std::map<std::string, std::string>> parse_query(std::string_view query);

// Routes by method and pattern. A pattern's segments are literals or a
// parameter "{name}", which may carry a literal suffix: "/v1/jobs/{id}:pause"
// matches "/v1/jobs/a%2Fb:pause" with id "a/b" (a ':' that belongs to an id
// is sent as %3A before such a suffix). Routes are tried in the order added.
class Router {
 public:
  struct Route {
    std::string method;
    std::string pattern;
    std::string name;  // for metrics: the pattern unless given
    Handler handler;
  };
  struct Match {
    const Route* route = nullptr;  // null: no route of this method
    std::map<std::string, std::string> params;
    std::vector<std::string> allowed;  // no route: methods the path has (405)
    bool bad_escape = false;           // the path has a malformed %-escape (400)
  };
  void add(std::string method, std::string pattern, Handler handler);
  Match match(std::string_view method, std::string_view raw_path) const;
  const std::vector<Route>& routes() const { return routes_; }

 private:
  std::vector<Route> routes_;
};

// Resolves one complete request: sets its path, query and params from
// request.target and returns its route, or null with `error` set to the
// 400 (bad query or escape), 404 or 405 (with Allow) to send.
const Router::Route* resolve_request(const Router& router, Request& request, Response* error);
// resolve_request, then the route's handler or the error (no socket; tests).
// Returns the route's name ("unmatched" when none).
std::string route_request(const Router& router, Request& request, Reply reply);

// ---- Authentication --------------------------------------------------------

// The bearer tokens of a token file: one per line; surrounding white space,
// empty lines and lines starting with '#' are ignored.
class TokenSet {
 public:
  static absl::StatusOr<TokenSet> load(const std::string& path);
  static absl::StatusOr<TokenSet> parse(std::string_view text);
  // True when `authorization` is "Bearer <t>" for a token t of the set.
  // Compares against every token in time independent of where they differ.
  bool accepts(std::string_view authorization) const;
  std::size_t size() const { return tokens_.size(); }

 private:
  std::vector<std::string> tokens_;
};

// Constant-time equality (time depends on the lengths only).
bool constant_time_equal(std::string_view a, std::string_view b);

// Whether `path` needs a token when the server has `tokens` (null: none).
bool needs_token(std::string_view path, const TokenSet* tokens);

// ---- The browser guard -----------------------------------------------------
// A browser on the operator's machine reaches a loopback server too, and a
// hostile page it shows can make it send requests there. Two rules keep such
// a page from using the API (both answered 403 permission_denied):
// - DNS rebinding: a server without tokens (so bound to loopback) serves only
//   requests whose Host header names localhost (or a name under .localhost)
//   or a loopback address literal, with or without a port; a page on a name
//   that was re-pointed at 127.0.0.1 sends its own name. A request without
//   a Host header (not a browser) passes. With tokens the page has none to
//   send, so the Host is not judged.
// - Cross-site writes (CSRF): a request that is not GET, HEAD or OPTIONS and
//   carries an Origin header other than http://<Host> or https://<Host>
//   (case-insensitive; "null" included), or Sec-Fetch-Site "cross-site" or
//   "same-site", is refused: a plain form or no-cors fetch from another
//   origin needs no preflight, so the server itself must say no.
// Whether `host` (a Host header: name or address, optional port) is a
// loopback name.
bool host_is_loopback(std::string_view host);
// The refusal's message, or nullopt when the request passes.
std::optional<std::string> browser_refusal(std::string_view method, std::string_view host,
                                           std::string_view origin, std::string_view sec_fetch_site,
                                           bool has_tokens);

// ---- Listening -------------------------------------------------------------

struct ListenAddress {
  std::string host;  // an IP address (v4 or v6, without brackets)
  std::uint16_t port = 0;
  bool loopback() const;
};
// "127.0.0.1:8080", "[::1]:8080", "localhost:8080" (-> 127.0.0.1); an error
// says what was expected.
absl::StatusOr<ListenAddress> parse_listen_address(std::string_view text);
// OK unless the address is not loopback and there are no tokens.
absl::Status check_exposure(const ListenAddress& address, const TokenSet* tokens);

struct HttpServerOptions {
  ListenAddress listen{"127.0.0.1", 8080};
  std::size_t max_connections = 256;
  absl::Duration header_timeout = absl::Seconds(10);
  absl::Duration body_timeout = absl::Seconds(30);
  std::size_t max_header_bytes = 16 * 1024;
  std::size_t max_body_bytes = 1024 * 1024;
  std::optional<TokenSet> tokens;
  // Paths served without a token although tokens are configured (the
  // dashboard's page, assets and login); null: only /healthz.
  std::function<bool(std::string_view path)> public_path;
  // A second credential, tried when the bearer header does not hold (the
  // dashboard's session cookie), with the request's head (no body): nullopt
  // when the request carries no such credential (the bearer 401 is sent),
  // "" when it is accepted, else the message of the 401 to send.
  std::function<std::optional<std::string>(const Request& head)> session_auth;
  // Called once per answered request with the route's name ("unmatched" for
  // 404/405) and the status sent.
  std::function<void(std::string_view route, int status)> on_response;
};

class HttpServer {
 public:
  HttpServer(boost::asio::io_context& io, HttpServerOptions options, Router router);
  ~HttpServer();  // stop()s
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and listens (port 0 picks a free one); refuses a non-loopback
  // address without tokens. The error says why.
  absl::Status start();
  // Closes the listener and every connection; answers still pending are dropped.
  void stop();
  std::uint16_t port() const;
  std::size_t connections() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace kairos::http
