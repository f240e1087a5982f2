#include "prod/dashboard/session.h"

#include <openssl/rand.h>

#include <array>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "core/base/check.h"
#include "prod/http/http_server.h"

namespace kairos::dashboard {

std::string random_token() {
  std::array<unsigned char, 32> bytes{};
  KAIROS_CHECK_MSG(RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) == 1,
                   "the OS random generator failed");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

std::optional<std::string> cookie_value(std::string_view header, std::string_view name) {
  while (!header.empty()) {
    const std::size_t semi = header.find(';');
    std::string_view pair = header.substr(0, semi);
    header = semi == std::string_view::npos ? std::string_view() : header.substr(semi + 1);
    while (!pair.empty() && (pair.front() == ' ' || pair.front() == '\t')) pair.remove_prefix(1);
    while (!pair.empty() && (pair.back() == ' ' || pair.back() == '\t')) pair.remove_suffix(1);
    const std::size_t eq = pair.find('=');
    if (eq == std::string_view::npos || pair.substr(0, eq) != name) continue;
    std::string_view value = pair.substr(eq + 1);
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
      value = value.substr(1, value.size() - 2);
    return std::string(value);
  }
  return std::nullopt;
}

std::string session_cookie(std::string_view id, bool secure, absl::Duration max_age) {
  return absl::StrCat(absl_sv(kSessionCookie), "=", absl_sv(id),
                      "; Path=/; Max-Age=", id.empty() ? 0 : absl::ToInt64Seconds(max_age),
                      "; HttpOnly; SameSite=Strict", secure ? "; Secure" : "");
}

SessionStore::SessionStore(SessionOptions options, std::function<std::string()> random)
    : options_(options), random_(std::move(random)) {
  KAIROS_CHECK(options_.max_sessions > 0);
}

void SessionStore::expire(absl::Time now) {
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    if (it->second.expires <= now || it->second.idle_ends <= now)
      it = sessions_.erase(it);
    else
      ++it;
  }
}

Session SessionStore::create(absl::Time now) {
  expire(now);
  while (sessions_.size() >= options_.max_sessions) {
    auto soonest = sessions_.begin();
    for (auto it = sessions_.begin(); it != sessions_.end(); ++it)
      if (std::min(it->second.expires, it->second.idle_ends) <
          std::min(soonest->second.expires, soonest->second.idle_ends))
        soonest = it;
    sessions_.erase(soonest);
  }
  Session s;
  do {
    s.id = random_();
  } while (sessions_.count(s.id));
  s.csrf = random_();
  s.expires = now + options_.lifetime;
  s.idle_ends = now + options_.idle;
  sessions_[s.id] = s;
  return s;
}

const Session* SessionStore::find(std::string_view id, absl::Time now) {
  if (id.empty()) return nullptr;
  // Constant time in where the id differs: compare against every live id.
  Session* found = nullptr;
  for (auto& [key, session] : sessions_)
    if (http::constant_time_equal(key, id)) found = &session;
  if (found == nullptr) return nullptr;
  if (found->expires <= now || found->idle_ends <= now) {
    sessions_.erase(found->id);
    return nullptr;
  }
  found->idle_ends = std::min(found->expires, now + options_.idle);
  return found;
}

void SessionStore::remove(std::string_view id) {
  auto it = sessions_.find(id);
  if (it != sessions_.end()) sessions_.erase(it);
}

absl::Duration SessionStore::login_blocked_for(absl::Time now) {
  while (!failed_logins_.empty() && failed_logins_.front() + absl::Minutes(1) <= now)
    failed_logins_.pop_front();
  if (failed_logins_.size() < options_.max_failed_logins_per_minute) return absl::ZeroDuration();
  return failed_logins_.front() + absl::Minutes(1) - now;
}

void SessionStore::login_failed(absl::Time now) {
  failed_logins_.push_back(now);
  while (failed_logins_.size() > options_.max_failed_logins_per_minute) failed_logins_.pop_front();
}

SessionStore::Verdict SessionStore::check(std::string_view method, std::string_view cookie_header,
                                          std::string_view csrf_header, absl::Time now) {
  const auto id = cookie_value(cookie_header, kSessionCookie);
  if (!id) return Verdict::kNoSession;
  const Session* s = find(*id, now);
  if (s == nullptr) return Verdict::kNoSession;
  if (method == "GET" || method == "HEAD" || method == "OPTIONS") return Verdict::kAccepted;
  if (csrf_header.empty() || !http::constant_time_equal(s->csrf, csrf_header))
    return Verdict::kCsrfRefused;
  return Verdict::kAccepted;
}

}  // namespace kairos::dashboard
