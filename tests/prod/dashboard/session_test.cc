// Dashboard sessions: ids and CSRF tokens, expiry by lifetime and idleness,
// the bound on live sessions, the CSRF rule for state-changing methods, and
// the cookie's text. Time is passed in: no clock, no sleeps.
#include "prod/dashboard/session.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace kairos::dashboard {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1'800'000'000);

std::string cookie_of(const Session& s) { return std::string(kSessionCookie) + "=" + s.id; }

TEST(RandomToken, IsLongHexAndDoesNotRepeat) {
  std::set<std::string> seen;
  for (int i = 0; i < 200; ++i) {
    const std::string t = random_token();
    ASSERT_EQ(t.size(), 64u);
    for (char c : t) EXPECT_TRUE((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) << t;
    EXPECT_TRUE(seen.insert(t).second);
  }
}

TEST(Cookies, ValueByNameAndTheSessionCookiesFlags) {
  EXPECT_EQ(cookie_value("a=1; kairos_session=abc; b=2", "kairos_session"), "abc");
  EXPECT_EQ(cookie_value("kairos_session=\"q\"", "kairos_session"), "q");
  EXPECT_EQ(cookie_value("xkairos_session=abc", "kairos_session"), std::nullopt);
  EXPECT_EQ(cookie_value("", "kairos_session"), std::nullopt);
  EXPECT_EQ(cookie_value(";;=;kairos_session", "kairos_session"), std::nullopt);
  const std::string plain = session_cookie("id1", false, absl::Hours(1));
  EXPECT_EQ(plain, "kairos_session=id1; Path=/; Max-Age=3600; HttpOnly; SameSite=Strict");
  EXPECT_TRUE(session_cookie("id1", true, absl::Hours(1)).ends_with("; Secure"));
  EXPECT_NE(session_cookie("", false, absl::Hours(1)).find("Max-Age=0"), std::string::npos);
}

TEST(SessionStore, FindsLiveSessionsAndForgetsExpiredOnes) {
  SessionStore store({.lifetime = absl::Hours(10), .idle = absl::Hours(1), .max_sessions = 10});
  const Session s = store.create(kT0);
  EXPECT_NE(s.id, s.csrf);
  ASSERT_NE(store.find(s.id, kT0 + absl::Minutes(50)), nullptr);
  // Use moves the idle deadline on.
  ASSERT_NE(store.find(s.id, kT0 + absl::Minutes(100)), nullptr);
  EXPECT_EQ(store.find(s.id, kT0 + absl::Minutes(161)), nullptr);  // idle for 61 minutes
  EXPECT_EQ(store.size(), 0u);
  EXPECT_EQ(store.find("", kT0), nullptr);
  EXPECT_EQ(store.find("not-a-session", kT0), nullptr);

  // The absolute lifetime holds however busy the session is.
  const Session busy = store.create(kT0);
  for (int m = 30; m < 600; m += 30)
    ASSERT_NE(store.find(busy.id, kT0 + absl::Minutes(m)), nullptr);
  EXPECT_EQ(store.find(busy.id, kT0 + absl::Hours(10)), nullptr);
}

TEST(SessionStore, BoundedEvictingTheOneClosestToExpiry) {
  SessionStore store({.lifetime = absl::Hours(10), .idle = absl::Hours(1), .max_sessions = 3});
  const Session a = store.create(kT0);
  const Session b = store.create(kT0 + absl::Minutes(1));
  const Session c = store.create(kT0 + absl::Minutes(2));
  ASSERT_NE(store.find(a.id, kT0 + absl::Minutes(3)), nullptr);  // a is now the freshest
  const Session d = store.create(kT0 + absl::Minutes(4));
  EXPECT_EQ(store.size(), 3u);
  EXPECT_EQ(store.find(b.id, kT0 + absl::Minutes(4)), nullptr);
  EXPECT_NE(store.find(a.id, kT0 + absl::Minutes(4)), nullptr);
  EXPECT_NE(store.find(c.id, kT0 + absl::Minutes(4)), nullptr);
  EXPECT_NE(store.find(d.id, kT0 + absl::Minutes(4)), nullptr);
  store.remove(d.id);
  EXPECT_EQ(store.find(d.id, kT0 + absl::Minutes(4)), nullptr);
}

TEST(SessionStore, StateChangingRequestsNeedTheSessionsCsrfToken) {
  SessionStore store;
  const Session s = store.create(kT0);
  const Session other = store.create(kT0);
  using V = SessionStore::Verdict;
  EXPECT_EQ(store.check("GET", "", "", kT0), V::kNoSession);
  EXPECT_EQ(store.check("POST", "kairos_session=forged", s.csrf, kT0), V::kNoSession);
  EXPECT_EQ(store.check("GET", cookie_of(s), "", kT0), V::kAccepted);
  EXPECT_EQ(store.check("HEAD", cookie_of(s), "", kT0), V::kAccepted);
  for (const char* m : {"POST", "PUT", "PATCH", "DELETE"}) {
    EXPECT_EQ(store.check(m, cookie_of(s), "", kT0), V::kCsrfRefused) << m;
    EXPECT_EQ(store.check(m, cookie_of(s), other.csrf, kT0), V::kCsrfRefused) << m;
    EXPECT_EQ(store.check(m, cookie_of(s), s.id, kT0), V::kCsrfRefused) << m;
    EXPECT_EQ(store.check(m, cookie_of(s), s.csrf, kT0), V::kAccepted) << m;
  }
  EXPECT_EQ(store.check("GET", "a=b; " + cookie_of(s) + "; c=d", "", kT0), V::kAccepted);
}

TEST(SessionStore, ThrottlesWrongTokensPerMinute) {
  SessionStore store({.max_failed_logins_per_minute = 3});
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(store.login_blocked_for(kT0 + absl::Seconds(i)), absl::ZeroDuration());
    store.login_failed(kT0 + absl::Seconds(i));
  }
  EXPECT_EQ(store.login_blocked_for(kT0 + absl::Seconds(10)), absl::Seconds(50));
  EXPECT_EQ(store.login_blocked_for(kT0 + absl::Seconds(60)), absl::ZeroDuration());
  store.login_failed(kT0 + absl::Seconds(60));
  EXPECT_EQ(store.login_blocked_for(kT0 + absl::Seconds(60)), absl::Seconds(1));
  EXPECT_EQ(store.login_blocked_for(kT0 + absl::Seconds(62)), absl::ZeroDuration());
}

TEST(SessionStore, UsesTheGivenRandomSourceAndNeverReusesALiveId) {
  const std::vector<std::string> draws = {"x", "c1", "x", "y", "c2"};
  std::size_t n = 0;
  SessionStore store({}, [&] { return draws.at(n++); });
  const Session a = store.create(kT0);
  const Session b = store.create(kT0);
  EXPECT_EQ(a.id, "x");
  EXPECT_EQ(a.csrf, "c1");
  EXPECT_EQ(b.id, "y");  // "x" is live: drawn again
  EXPECT_EQ(b.csrf, "c2");
}

}  // namespace
}  // namespace kairos::dashboard
