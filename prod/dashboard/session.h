// Dashboard sessions: a browser logs in once with a bearer token and then
// authenticates with a session cookie; cookie requests that change state
// carry a CSRF token.
//
// Purpose. A browser cannot attach "Authorization: Bearer" to every page
// and asset it loads, and a token kept in JavaScript-readable storage leaks
// to any injected script. So the dashboard's login form posts the token once
// (POST /ui/login); the server answers with a session cookie that JavaScript
// cannot read (HttpOnly), that the browser never sends on a cross-site
// request (SameSite=Strict), and that is Secure when served over TLS. The
// API accepts that cookie in place of the bearer header.
//
// Guarantees.
// - Session ids and CSRF tokens are 256 random bits from the OS CSPRNG
//   (OpenSSL RAND_bytes), hex-encoded; ids are compared in constant time.
// - A session ends at its absolute lifetime or after `idle` without use,
//   whichever comes first; at most max_sessions live at once (creating one
//   more evicts the one closest to expiry). Memory only: a restart logs
//   everybody out.
// - check(): a request whose Cookie header names no live session is
//   kNoSession (the caller falls back to the bearer header); a live session
//   on a safe method (GET, HEAD, OPTIONS) is kAccepted; on any other method
//   it is kAccepted only when the X-CSRF-Token header equals the session's
//   CSRF token (per session, handed to the page by GET /ui/session), else
//   kCsrfRefused. A cross-site page can neither read that token nor set the
//   header without a CORS preflight the server never grants.
// - Guessing is throttled: after max_failed_logins_per_minute wrong tokens
//   within a minute, logins are refused (not even checked) until the oldest
//   of them is a minute old. Bearer requests are not affected.
// - Pure in time: every call takes `now`.
//
// Threading: one thread (the server's loop).
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "absl/time/time.h"

namespace kairos::dashboard {

inline constexpr std::string_view kSessionCookie = "kairos_session";
inline constexpr std::string_view kCsrfHeader = "X-CSRF-Token";

// 32 bytes from the OS CSPRNG as 64 hex digits. Aborts (KAIROS_CHECK) when
// the CSPRNG fails: a predictable session id would be worse than no server.
std::string random_token();

// The value of cookie `name` in a Cookie header ("a=1; b=2"), nullopt when absent.
std::optional<std::string> cookie_value(std::string_view header, std::string_view name);

// Set-Cookie for a session (or, with an empty id, one that deletes it).
std::string session_cookie(std::string_view id, bool secure, absl::Duration max_age);

struct SessionOptions {
  absl::Duration lifetime = absl::Hours(12);
  absl::Duration idle = absl::Hours(2);
  std::size_t max_sessions = 1024;
  // Wrong tokens tolerated per minute (all clients together) before the
  // login refuses to check more until the minute has passed.
  std::size_t max_failed_logins_per_minute = 10;
};

struct Session {
  std::string id;
  std::string csrf;
  absl::Time expires;    // absolute end
  absl::Time idle_ends;  // moves on with every use
};

class SessionStore {
 public:
  explicit SessionStore(SessionOptions options = {},
                        std::function<std::string()> random = random_token);

  Session create(absl::Time now);
  // The live session of `id` (its idle deadline moved on), or null.
  const Session* find(std::string_view id, absl::Time now);
  void remove(std::string_view id);
  std::size_t size() const { return sessions_.size(); }

  // Failed-login throttle: login_blocked_for() is how long a login must
  // wait (zero: it may try now); login_failed() counts a wrong token.
  absl::Duration login_blocked_for(absl::Time now);
  void login_failed(absl::Time now);

  enum class Verdict { kNoSession, kAccepted, kCsrfRefused };
  Verdict check(std::string_view method, std::string_view cookie_header,
                std::string_view csrf_header, absl::Time now);

 private:
  void expire(absl::Time now);

  SessionOptions options_;
  std::function<std::string()> random_;
  std::map<std::string, Session, std::less<>> sessions_;
  std::deque<absl::Time> failed_logins_;  // the last minute's, oldest first
};

}  // namespace kairos::dashboard
