#include "prod/api/api_service.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "prod/dashboard/dashboard.h"

namespace kairos::api {

absl::StatusOr<std::unique_ptr<ApiService>> ApiService::start(boost::asio::io_context& io,
                                                              SchedulerNode& node, Metrics& metrics,
                                                              const ApiServiceFlags& flags,
                                                              std::function<bool()> store_open,
                                                              const RunStats* stats) {
  auto listen = http::parse_listen_address(flags.http);
  if (!listen.ok())
    return absl::InvalidArgumentError(absl::StrCat("flag --http: ", listen.status().message()));
  http::HttpServerOptions options;
  options.listen = *listen;
  if (!flags.auth_token_file.empty()) {
    auto tokens = http::TokenSet::load(flags.auth_token_file);
    if (!tokens.ok())
      return absl::InvalidArgumentError(
          absl::StrCat("flag --auth-token-file: ", tokens.status().message()));
    options.tokens = std::move(*tokens);
  }
  if (absl::Status s = http::check_exposure(*listen, options.tokens ? &*options.tokens : nullptr);
      !s.ok())
    return absl::InvalidArgumentError(absl::StrCat("flag --http: ", s.message()));

  std::unique_ptr<ApiService> service(new ApiService());
  ApiOptions api_options;
  if (store_open) api_options.store_open = std::move(store_open);
  api_options.stats = stats;
  ApiService* self = service.get();
  api_options.draining = [self] { return self->draining_; };
  service->routes_ = std::make_unique<ApiRoutes>(node, metrics, std::move(api_options));
  ApiRoutes* routes = service->routes_.get();
  options.on_response = [routes](std::string_view route, int status) {
    routes->count(route, status);
  };
  http::Router router = service->routes_->router();
  service->sessions_ = std::make_unique<dashboard::SessionStore>();
  auto now = [] { return absl::Now(); };
  options.public_path = dashboard::is_public_path;
  options.session_auth = dashboard::session_auth(*service->sessions_, now);
  dashboard::DashboardOptions dash;
  service->tokens_ = options.tokens;
  dash.tokens = service->tokens_ ? &*service->tokens_ : nullptr;
  dash.sessions = service->sessions_.get();
  dash.now = now;
  dashboard::add_dashboard_routes(router, std::move(dash));
  service->server_ = std::make_unique<http::HttpServer>(io, std::move(options), std::move(router));
  if (absl::Status s = service->server_->start(); !s.ok())
    return absl::UnavailableError(absl::StrCat("flag --http: ", s.message()));
  const bool v6 = listen->host.find(':') != std::string::npos;
  std::printf("kairos server: http api on %s%s%s:%u\n", v6 ? "[" : "", listen->host.c_str(),
              v6 ? "]" : "", static_cast<unsigned>(service->server_->port()));
  std::printf("kairos server: dashboard at http://%s%s%s:%u/\n", v6 ? "[" : "",
              listen->host.c_str(), v6 ? "]" : "", static_cast<unsigned>(service->server_->port()));
  std::fflush(stdout);
  return service;
}

ApiService::~ApiService() { stop(); }

void ApiService::stop() {
  if (server_) server_->stop();
}

}  // namespace kairos::api
