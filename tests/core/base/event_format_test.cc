// The hand-written RFC 3339 and event-line formatters against the formatters
// they replaced (absl::StrFormat / absl::StrAppend, kept here verbatim as the
// reference): byte-identical text on edge cases (epoch, negative times, year
// and leap-day boundaries, fractions with and without trailing zeros,
// quarter nanoseconds, the years outside 0000..9999, the infinite instants)
// and on many seeded random instants and events; durations against
// absl::FormatDuration, which format_event printed them with.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "core/base/rfc3339.h"
#include "core/ports/event_log.h"

namespace kairos {
namespace {

// The formatter before the hand-written one.
std::string reference_rfc3339(absl::Time t, const absl::TimeZone& zone, bool utc) {
  if (t == absl::InfiniteFuture()) return "infinite-future";
  if (t == absl::InfinitePast()) return "infinite-past";
  const absl::TimeZone::CivilInfo ci = zone.At(t);
  const absl::CivilSecond& cs = ci.cs;
  std::string out = absl::StrFormat("%04d-%02d-%02dT%02d:%02d:%02d", cs.year(), cs.month(),
                                    cs.day(), cs.hour(), cs.minute(), cs.second());
  if (ci.subsecond > absl::ZeroDuration()) {
    std::int64_t nanos = absl::ToInt64Nanoseconds(ci.subsecond);
    int digits = 9;
    while (digits > 1 && nanos % 10 == 0) {
      nanos /= 10;
      --digits;
    }
    if (nanos > 0) absl::StrAppend(&out, ".", absl::StrFormat("%0*d", digits, nanos));
  }
  if (utc) {
    out.push_back('Z');
  } else {
    const int off = ci.offset;
    const int mag = std::abs(off);
    absl::StrAppend(&out, off < 0 ? "-" : "+",
                    absl::StrFormat("%02d:%02d", mag / 3600, mag / 60 % 60));
  }
  return out;
}

std::string reference_utc(absl::Time t) { return reference_rfc3339(t, absl::UTCTimeZone(), true); }

// The event formatter before the hand-written one.
bool reference_needs_quotes(const std::string& s) {
  if (s.empty()) return true;
  for (char c : s)
    if (c == ' ' || c == '"' || c == '=' || c == '\\' || static_cast<unsigned char>(c) < 0x20)
      return true;
  return false;
}

void reference_quoted(std::string& out, const std::string& s) {
  out.push_back('"');
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      absl::StrAppend(&out, "\\x", absl::Hex(static_cast<unsigned char>(c), absl::kZeroPad2));
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
}

struct ReferenceValue {
  std::string& out;
  void operator()(std::int64_t v) const { absl::StrAppend(&out, v); }
  void operator()(std::uint64_t v) const { absl::StrAppend(&out, v); }
  void operator()(const std::string& v) const {
    if (reference_needs_quotes(v))
      reference_quoted(out, v);
    else
      out += v;
  }
  void operator()(absl::Time v) const { out += reference_utc(v); }
  void operator()(absl::Duration v) const { out += absl::FormatDuration(v); }
};

std::string reference_event(const Event& event) {
  std::string out;
  ReferenceValue{out}(event.at);
  absl::StrAppend(&out, " ", std::string(event.kind));
  for (const auto& f : event.fields) {
    absl::StrAppend(&out, " ", std::string(f.name), "=");
    std::visit(ReferenceValue{out}, f.value);
  }
  return out;
}

void expect_same(absl::Time t) {
  ASSERT_EQ(format_rfc3339_utc(t), reference_utc(t)) << absl::FormatTime(t);
  std::string appended = "x";
  append_rfc3339_utc(appended, t);
  ASSERT_EQ(appended, "x" + reference_utc(t));
}

constexpr std::int64_t kYear0 = -62167219200;      // 0000-01-01T00:00:00Z
constexpr std::int64_t kYear10000 = 253402300800;  // 10000-01-01T00:00:00Z

std::vector<absl::Time> edge_instants() {
  std::vector<absl::Time> out;
  const absl::Duration quarter = absl::Nanoseconds(1) / 4;
  const std::int64_t seconds[] = {0,
                                  -1,
                                  1,
                                  -86400,
                                  86399,
                                  86400,
                                  951782400,     // 2000-02-29
                                  951868800,     // 2000-03-01
                                  -2203891200,   // 1900-03-01
                                  4107456000,    // 2100-02-28
                                  4107542400,    // 2100-03-01
                                  1767225600,    // 2026-01-01
                                  1767225599,    // 2025-12-31T23:59:59
                                  -62135596800,  // 0001-01-01
                                  kYear0,
                                  kYear0 - 1,
                                  kYear0 + 1,
                                  kYear10000,
                                  kYear10000 - 1,
                                  kYear10000 + 1,
                                  -62198755200,  // year -1
                                  std::numeric_limits<std::int64_t>::max() / 2,
                                  std::numeric_limits<std::int64_t>::min() / 2,
                                  std::numeric_limits<std::int64_t>::max(),
                                  std::numeric_limits<std::int64_t>::min()};
  const absl::Duration fractions[] = {absl::ZeroDuration(),
                                      quarter,
                                      3 * quarter,
                                      absl::Nanoseconds(1),
                                      absl::Nanoseconds(1) + quarter,
                                      absl::Nanoseconds(10),
                                      absl::Microseconds(1),
                                      absl::Microseconds(10),
                                      absl::Milliseconds(100),
                                      absl::Milliseconds(500),
                                      absl::Microseconds(123456),
                                      absl::Microseconds(100000),
                                      absl::Nanoseconds(120000000),
                                      absl::Nanoseconds(999999999),
                                      absl::Nanoseconds(999999999) + 3 * quarter};
  for (std::int64_t s : seconds)
    for (absl::Duration f : fractions) out.push_back(absl::FromUnixSeconds(s) + f);
  out.push_back(absl::InfiniteFuture());
  out.push_back(absl::InfinitePast());
  out.push_back(absl::UnixEpoch() - quarter);
  out.push_back(absl::FromUnixSeconds(kYear0) - quarter);
  out.push_back(absl::FromUnixSeconds(kYear10000) - quarter);
  return out;
}

TEST(Rfc3339Format, EdgeCasesMatchTheReference) {
  for (absl::Time t : edge_instants()) expect_same(t);
  EXPECT_EQ(format_rfc3339_utc(absl::UnixEpoch()), "1970-01-01T00:00:00Z");
  EXPECT_EQ(format_rfc3339_utc(absl::UnixEpoch() - absl::Milliseconds(500)),
            "1969-12-31T23:59:59.5Z");
  EXPECT_EQ(format_rfc3339_utc(absl::FromUnixSeconds(kYear0)), "0000-01-01T00:00:00Z");
  EXPECT_EQ(format_rfc3339_utc(absl::FromUnixSeconds(kYear10000)), "10000-01-01T00:00:00Z");
  EXPECT_EQ(format_rfc3339_utc(absl::FromUnixSeconds(951782400) + absl::Microseconds(10)),
            "2000-02-29T00:00:00.00001Z");
}

TEST(Rfc3339Format, RandomInstantsMatchTheReference) {
  std::mt19937_64 rng(20261202);
  std::uniform_int_distribution<std::int64_t> four_digit_years(kYear0 - 86400, kYear10000 + 86400);
  std::uniform_int_distribution<std::int64_t> recent(1'600'000'000, 2'000'000'000);
  std::uniform_int_distribution<std::int64_t> any_second(std::numeric_limits<std::int64_t>::min(),
                                                         std::numeric_limits<std::int64_t>::max());
  std::uniform_int_distribution<std::int64_t> nanos(0, 999'999'999);
  std::uniform_int_distribution<int> shape(0, 5);
  std::uniform_int_distribution<std::int64_t> quarters(0, 3);
  for (int i = 0; i < 200'000; ++i) {
    std::int64_t s = i % 10 == 0  ? any_second(rng)
                     : i % 2 == 0 ? recent(rng)
                                  : four_digit_years(rng);
    std::int64_t n = nanos(rng);
    switch (shape(rng)) {
      case 0:
        n = 0;
        break;
      case 1:
        n -= n % 1000;
        break;  // whole microseconds
      case 2:
        n -= n % 1'000'000;
        break;  // whole milliseconds
      default:
        break;
    }
    absl::Time t = absl::FromUnixSeconds(s) + absl::Nanoseconds(n);
    if (i % 7 == 0) t += quarters(rng) * (absl::Nanoseconds(1) / 4);
    expect_same(t);
  }
}

TEST(Rfc3339Format, LocalTimesMatchTheReference) {
  std::vector<absl::TimeZone> zones = {absl::UTCTimeZone(), absl::FixedTimeZone(2 * 3600),
                                       absl::FixedTimeZone(-(9 * 3600 + 30 * 60)),
                                       absl::FixedTimeZone(5 * 3600 + 45 * 60)};
  absl::TimeZone berlin;
  if (absl::LoadTimeZone("Europe/Berlin", &berlin)) zones.push_back(berlin);
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<std::int64_t> seconds(kYear0 - 86400, kYear10000 + 86400);
  for (const absl::TimeZone& zone : zones) {
    for (absl::Time t : edge_instants())
      ASSERT_EQ(format_rfc3339_local(t, zone), reference_rfc3339(t, zone, false));
    for (int i = 0; i < 20'000; ++i) {
      const absl::Time t = absl::FromUnixSeconds(seconds(rng)) + absl::Microseconds(i % 3 * 250);
      ASSERT_EQ(format_rfc3339_local(t, zone), reference_rfc3339(t, zone, false));
    }
  }
  EXPECT_EQ(format_rfc3339_local(absl::FromUnixSeconds(1767225600), absl::FixedTimeZone(-34200)),
            "2025-12-31T14:30:00-09:30");
}

Event random_event(std::mt19937_64& rng) {
  static constexpr std::string_view kKinds[] = {"run.completed", "run.claimed", "job.created", "x"};
  static constexpr std::string_view kNames[] = {"job", "token", "at", "lateness", "worker", "n"};
  std::uniform_int_distribution<int> pick(0, 1 << 20);
  Event e;
  e.at =
      absl::FromUnixSeconds(1'767'225'600 + pick(rng)) + absl::Microseconds(pick(rng) % 7 * 1000);
  e.kind = kKinds[pick(rng) % 4];
  const int fields = pick(rng) % 8;
  for (int i = 0; i < fields; ++i) {
    const std::string_view name = kNames[pick(rng) % 6];
    switch (pick(rng) % 9) {
      case 0:
        e.with(name, static_cast<std::int64_t>(rng()));
        break;
      case 1:
        e.with(name, static_cast<std::uint64_t>(rng()));
        break;
      case 2:
        e.with(name, pick(rng) % 2 ? std::numeric_limits<std::int64_t>::min()
                                   : std::numeric_limits<std::int64_t>::max());
        break;
      case 3:
        e.with(name, std::numeric_limits<std::uint64_t>::max());
        break;
      case 4:
        e.with(name, absl::FromUnixSeconds(pick(rng) * 4096LL - (1LL << 31)) +
                         absl::Nanoseconds(pick(rng)));
        break;
      case 5:
        e.with(name, absl::Microseconds(pick(rng) - (1 << 19)));
        break;
      default: {
        // Text, sometimes with what forces quoting and escapes.
        static constexpr char kAlphabet[] = "ab-/_.Z09 \"=\\\x01\x1f\t\n\x7f\xc3\xa4";
        std::string s;
        const int len = pick(rng) % 12;
        for (int c = 0; c < len; ++c) s.push_back(kAlphabet[pick(rng) % (sizeof kAlphabet - 1)]);
        e.with(name, std::move(s));
      }
    }
  }
  return e;
}

TEST(EventFormat, RandomEventsMatchTheReference) {
  std::mt19937_64 rng(42);
  std::string batch;
  std::string expected;
  for (int i = 0; i < 50'000; ++i) {
    const Event e = random_event(rng);
    const std::string want = reference_event(e);
    ASSERT_EQ(format_event(e), want);
    append_event_line(batch, e);
    batch.push_back('\n');
    expected += want + "\n";
  }
  EXPECT_EQ(batch, expected);
}

std::string formatted_duration(absl::Duration d) {
  Event e;
  e.kind = "k";
  e.with("d", d);
  const std::string line = format_event(e);
  return line.substr(line.find(" d=") + 3);
}

TEST(EventFormat, DurationsMatchAbslFormatDuration) {
  const absl::Duration quarter = absl::Nanoseconds(1) / 4;
  std::vector<absl::Duration> edges = {absl::ZeroDuration(),
                                       absl::Nanoseconds(1),
                                       absl::Nanoseconds(999),
                                       absl::Microseconds(1),
                                       absl::Nanoseconds(1001),
                                       absl::Nanoseconds(999'999),
                                       absl::Milliseconds(1),
                                       absl::Nanoseconds(1'000'001),
                                       absl::Nanoseconds(999'999'999),
                                       absl::Seconds(1),
                                       absl::Nanoseconds(1'000'000'001),
                                       absl::Seconds(59) + absl::Nanoseconds(999'999'999),
                                       absl::Minutes(1),
                                       absl::Hours(1),
                                       absl::Hours(1) + absl::Seconds(5),
                                       absl::Hours(1) + absl::Milliseconds(500),
                                       absl::Hours(25) + absl::Minutes(61),
                                       absl::Hours(24 * 365 * 292),
                                       absl::Nanoseconds(std::numeric_limits<std::int64_t>::max()),
                                       absl::Nanoseconds(std::numeric_limits<std::int64_t>::min()),
                                       absl::Hours(24 * 365 * 300),
                                       absl::Seconds(std::numeric_limits<std::int64_t>::max()),
                                       absl::Seconds(std::numeric_limits<std::int64_t>::min()),
                                       quarter,
                                       absl::Microseconds(1) + quarter,
                                       absl::Seconds(1) + 3 * quarter,
                                       absl::InfiniteDuration()};
  for (absl::Duration d : std::vector<absl::Duration>(edges)) edges.push_back(-d);
  for (absl::Duration d : edges) ASSERT_EQ(formatted_duration(d), absl::FormatDuration(d)) << d;
  std::mt19937_64 rng(99);
  std::uniform_int_distribution<int> digits(0, 18);
  std::uniform_int_distribution<int> shape(0, 4);
  for (int i = 0; i < 300'000; ++i) {
    // Magnitudes spread over every unit: up to 10^18 ns (about 31 years).
    std::int64_t bound = 1;
    for (int k = digits(rng); k > 0; --k) bound *= 10;
    std::int64_t n = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(bound)) + 1;
    switch (shape(rng)) {
      case 0:
        n -= n % 1000;
        break;
      case 1:
        n -= n % 1'000'000'000;
        break;
      case 2:
        n = -n;
        break;
      default:
        break;
    }
    absl::Duration d = absl::Nanoseconds(n);
    if (i % 11 == 0) d += quarter;
    ASSERT_EQ(formatted_duration(d), absl::FormatDuration(d)) << n;
  }
}

TEST(EventFormat, KnownLines) {
  Event e;
  e.at = absl::FromUnixSeconds(1'767'225'600) + absl::Microseconds(123456);
  e.kind = "run.completed";
  e.with("job", std::string("demo hello"))
      .with("token", std::uint64_t{7})
      .with("delta", std::int64_t{-3})
      .with("due", absl::FromUnixSeconds(1'767'225'600))
      .with("late", absl::Milliseconds(1500))
      .with("empty", std::string())
      .with("ctl", std::string("a\x01\"b"));
  EXPECT_EQ(format_event(e),
            "2026-01-01T00:00:00.123456Z run.completed job=\"demo hello\" token=7 delta=-3 "
            "due=2026-01-01T00:00:00Z late=1.5s empty=\"\" ctl=\"a\\x01\\\"b\"");
}

}  // namespace
}  // namespace kairos
