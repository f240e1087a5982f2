#include "prod/dashboard/dashboard.h"

#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <cstdint>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/base/absl_compat.h"
#include "core/base/duration.h"
#include "prod/api/job_json.h"
#include "prod/dashboard/assets.h"

namespace kairos::dashboard {
namespace json = boost::json;

namespace {

constexpr std::string_view kCsp =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

void secure(http::Response& r) {
  r.headers.emplace_back("Content-Security-Policy", std::string(kCsp));
  r.headers.emplace_back("X-Content-Type-Options", "nosniff");
  r.headers.emplace_back("X-Frame-Options", "DENY");
  r.headers.emplace_back("Referrer-Policy", "no-referrer");
}

http::Response json_answer(int status, const json::value& body) {
  http::Response r;
  r.status = status;
  r.body = api::serialize(body);
  r.headers.emplace_back("Cache-Control", "no-store");
  secure(r);
  return r;
}

http::Response error_answer(int status, std::string_view code, std::string_view message) {
  return json_answer(status, api::error_body(code, message));
}

std::string etag_of(std::string_view data) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return absl::StrFormat("\"%016x\"", h);
}

const Asset* find_asset(std::string_view name) {
  for (const Asset& a : embedded_assets())
    if (a.name == name) return &a;
  return nullptr;
}

http::Response asset_answer(const http::Request& r, std::string_view name) {
  const Asset* a = find_asset(name);
  if (a == nullptr) {
    http::Response res = error_answer(404, "not_found", "no such dashboard file");
    return res;
  }
  http::Response res;
  const std::string etag = etag_of(a->data);
  res.content_type = std::string(content_type_of(name));
  res.headers.emplace_back("ETag", etag);
  res.headers.emplace_back("Cache-Control", "no-cache");
  secure(res);
  if (r.header("If-None-Match") == etag) {
    res.status = 304;
    return res;
  }
  res.body = std::string(a->data);
  return res;
}

bool auth_required(const DashboardOptions& o) {
  return o.tokens != nullptr && o.tokens->size() > 0;
}

bool over_tls(const DashboardOptions& o, const http::Request& r) {
  return o.secure_cookies || r.header("X-Forwarded-Proto") == "https";
}

}  // namespace

std::string_view content_type_of(std::string_view name) {
  auto ends = [&](std::string_view ext) { return name.ends_with(ext); };
  if (ends(".html")) return "text/html; charset=utf-8";
  if (ends(".js")) return "text/javascript; charset=utf-8";
  if (ends(".css")) return "text/css; charset=utf-8";
  if (ends(".svg")) return "image/svg+xml";
  if (ends(".png")) return "image/png";
  if (ends(".ico")) return "image/x-icon";
  if (ends(".json")) return "application/json";
  return "application/octet-stream";
}

bool is_public_path(std::string_view path) { return path == "/" || path.starts_with("/ui/"); }

std::function<std::optional<std::string>(const http::Request&)> session_auth(
    SessionStore& sessions, std::function<absl::Time()> now) {
  return [&sessions, now = std::move(now)](const http::Request& r) -> std::optional<std::string> {
    switch (sessions.check(r.method, r.header("Cookie"), r.header(kCsrfHeader), now())) {
      case SessionStore::Verdict::kNoSession:
        return std::nullopt;
      case SessionStore::Verdict::kAccepted:
        return std::string();
      case SessionStore::Verdict::kCsrfRefused:
        return absl::StrCat(
            "a request that changes state with a session cookie needs the "
            "session's ",
            absl_sv(kCsrfHeader), " header");
    }
    return std::nullopt;
  };
}

void add_dashboard_routes(http::Router& router, DashboardOptions options) {
  auto o = std::make_shared<DashboardOptions>(std::move(options));
  router.add("GET", "/", [](const http::Request& r, http::Reply reply) {
    reply(asset_answer(r, "index.html"));
  });
  router.add("GET", "/ui/session", [o](const http::Request& r, http::Reply reply) {
    json::object body;
    const bool required = auth_required(*o);
    body["auth_required"] = required;
    const Session* s = nullptr;
    if (o->sessions != nullptr)
      if (auto id = cookie_value(r.header("Cookie"), kSessionCookie))
        s = o->sessions->find(*id, o->now());
    body["authenticated"] = !required || s != nullptr;
    body["csrf"] = s ? s->csrf : std::string();
    reply(json_answer(200, body));
  });
  router.add("POST", "/ui/login", [o](const http::Request& r, http::Reply reply) {
    if (!auth_required(*o) || o->sessions == nullptr)
      return reply(error_answer(409, "conflict", "this server needs no login"));
    if (!r.header("Content-Type").starts_with("application/json"))
      return reply(
          error_answer(400, "invalid_argument", "expected Content-Type: application/json"));
    boost::system::error_code ec;
    const json::value body = json::parse(r.body, ec);
    const json::value* token =
        !ec && body.is_object() ? body.as_object().if_contains("token") : nullptr;
    if (token == nullptr || !token->is_string())
      return reply(json_answer(
          400, api::error_body("invalid_argument", "expected {\"token\": \"...\"}", "token")));
    const std::string_view t(token->as_string().data(), token->as_string().size());
    if (const absl::Duration wait = o->sessions->login_blocked_for(o->now());
        wait > absl::ZeroDuration())
      return reply(
          error_answer(503, "unavailable",
                       absl::StrCat("too many wrong tokens in the last minute; try again in ",
                                    format_duration(absl::Ceil(wait, absl::Seconds(1))))));
    if (!o->tokens->accepts(absl::StrCat("Bearer ", absl_sv(t)))) {
      o->sessions->login_failed(o->now());
      return reply(error_answer(401, "unauthenticated", "wrong token"));
    }
    const Session s = o->sessions->create(o->now());
    json::object out;
    out["authenticated"] = true;
    out["csrf"] = s.csrf;
    http::Response res = json_answer(200, out);
    res.headers.emplace_back("Set-Cookie",
                             session_cookie(s.id, over_tls(*o, r), s.expires - o->now()));
    reply(std::move(res));
  });
  router.add("POST", "/ui/logout", [o](const http::Request& r, http::Reply reply) {
    if (o->sessions == nullptr) return reply(json_answer(200, json::object{}));
    const std::string cookie = r.header("Cookie");
    if (o->sessions->check(r.method, cookie, r.header(kCsrfHeader), o->now()) !=
        SessionStore::Verdict::kAccepted)
      return reply(error_answer(401, "unauthenticated", "no session, or a wrong X-CSRF-Token"));
    o->sessions->remove(cookie_value(cookie, kSessionCookie).value_or(""));
    http::Response res = json_answer(200, json::object{});
    res.headers.emplace_back("Set-Cookie",
                             session_cookie("", over_tls(*o, r), absl::ZeroDuration()));
    reply(std::move(res));
  });
  router.add("GET", "/ui/{file}", [](const http::Request& r, http::Reply reply) {
    reply(asset_answer(r, r.params.at("file")));
  });
}

}  // namespace kairos::dashboard
