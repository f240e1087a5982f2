// API service: the HTTP API of one `kairos server`, as one object.
//
// Purpose. Owns the routes (api_routes.h) and the HTTP server
// (prod/http/http_server.h) that serves them on the server's io_context,
// and turns the two flags that configure them (--http ADDR:PORT and
// --auth-token-file FILE) into a running listener, so the server command
// needs one call to start it and one to stop it.
//
// Guarantees. start() fails, with a message naming the flag, when the
// address does not parse, the token file cannot be read or holds no token,
// the address is not loopback and no token file is given (the API is never
// exposed without authentication), or the port cannot be bound. On success
// it prints "kairos server: http api on ADDR:PORT" on stdout (the port
// actually bound, so --http 127.0.0.1:0 is usable by tests).
//
// The dashboard (prod/dashboard/dashboard.h) is served beside the API on
// the same listener; with tokens, its session cookie is accepted in place
// of the bearer header.
//
// Lifetime. stop() before the node stops: the routes call the node. After
// stop() no request reaches the node; answers still pending are dropped.
#pragma once

#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "core/kernel/scheduler_node.h"
#include "core/ports/metrics.h"
#include "prod/api/api_routes.h"
#include "prod/dashboard/session.h"
#include "prod/http/http_server.h"

namespace kairos::api {

struct ApiServiceFlags {
  std::string http = "127.0.0.1:8080";  // --http
  std::string auth_token_file;          // --auth-token-file; empty: none
};

class ApiService {
 public:
  static absl::StatusOr<std::unique_ptr<ApiService>> start(boost::asio::io_context& io,
                                                           SchedulerNode& node, Metrics& metrics,
                                                           const ApiServiceFlags& flags,
                                                           std::function<bool()> store_open,
                                                           const RunStats* stats = nullptr);
  ~ApiService();
  void stop();
  // From now on /readyz answers 503 "draining" (every other route serves on).
  void set_draining() { draining_ = true; }
  std::uint16_t port() const { return server_->port(); }

 private:
  ApiService() = default;
  bool draining_ = false;
  std::unique_ptr<ApiRoutes> routes_;
  std::unique_ptr<dashboard::SessionStore> sessions_;
  std::optional<http::TokenSet> tokens_;  // the login's copy of the server's
  std::unique_ptr<http::HttpServer> server_;
};

}  // namespace kairos::api
