// Dashboard: the web UI of `kairos server`, served at / beside the API.
//
// Purpose. Serves the page, its stylesheet and its script (prod/dashboard/
// assets/, compiled into the binary) and the three session routes of the
// login (session.h). The page itself reads and changes everything through
// the /v1 API, exactly as any other client; this file adds no second path
// into the store.
//
// Routes (all public: they work without a bearer token):
//   GET  /                 the page (index.html)
//   GET  /ui/{file}        an asset (app.js, app.css, ...); 404 otherwise
//   GET  /ui/session       {"auth_required", "authenticated", "csrf"}
//   POST /ui/login         {"token": "..."} -> Set-Cookie session; 401 when wrong
//   POST /ui/logout        ends the session (needs its X-CSRF-Token)
//
// Guarantees.
// - Every dashboard response carries a strict Content-Security-Policy (only
//   this origin's script and style, no inline script or style, no framing:
//   frame-ancestors 'none'), X-Content-Type-Options: nosniff,
//   Referrer-Policy: no-referrer, and the content type of its file.
// - Assets carry an ETag (a hash of their bytes) and Cache-Control:
//   no-cache: the browser revalidates and gets 304 while unchanged.
// - /ui/login accepts only application/json (a cross-site HTML form cannot
//   send it), compares the token in constant time, and sets the cookie
//   HttpOnly, SameSite=Strict, and Secure when the request came over TLS
//   (DashboardOptions::secure_cookies or X-Forwarded-Proto: https).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "absl/time/time.h"
#include "prod/dashboard/session.h"
#include "prod/http/http_server.h"

namespace kairos::dashboard {

struct DashboardOptions {
  const http::TokenSet* tokens = nullptr;  // null or empty: the API needs no token
  SessionStore* sessions = nullptr;        // required when tokens are set
  bool secure_cookies = false;             // served over TLS
  std::function<absl::Time()> now = [] { return absl::Now(); };
};

// Adds the routes above; `options`' pointers outlive the router.
void add_dashboard_routes(http::Router& router, DashboardOptions options);

// True for the paths above (HttpServerOptions::public_path).
bool is_public_path(std::string_view path);

// HttpServerOptions::session_auth over `sessions`.
std::function<std::optional<std::string>(const http::Request&)> session_auth(
    SessionStore& sessions, std::function<absl::Time()> now);

// The content type served for a file name ("app.js" -> "text/javascript; charset=utf-8").
std::string_view content_type_of(std::string_view name);

}  // namespace kairos::dashboard
