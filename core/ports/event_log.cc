#include "core/ports/event_log.h"

#include <charconv>
#include <cstdint>
#include <limits>

#include "core/base/rfc3339.h"

namespace kairos {

namespace {
bool needs_quotes(std::string_view s) {
  if (s.empty()) return true;
  for (char c : s)
    if (c == ' ' || c == '"' || c == '=' || c == '\\' || static_cast<unsigned char>(c) < 0x20)
      return true;
  return false;
}

void append_quoted(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (u < 0x20) {
      const char escape[4] = {'\\', 'x', kHex[u >> 4], kHex[u & 0xf]};
      out.append(escape, sizeof escape);
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
}

// Decimal, '-' for a negative value: the text absl::StrAppend gives.
template <typename Int>
void append_int(std::string& out, Int v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, static_cast<std::size_t>(r.ptr - buf));
}

// Appends `v` (< 10^width, not 0) as a fraction: a point, then `width`
// digits zero-padded, trailing zeros dropped.
void append_fraction(std::string& out, std::uint64_t v, int width) {
  char buf[10];
  buf[0] = '.';
  for (int i = width; i >= 1; --i) {
    buf[i] = static_cast<char>('0' + v % 10);
    v /= 10;
  }
  int end = width + 1;
  while (buf[end - 1] == '0') --end;
  out.append(buf, static_cast<std::size_t>(end));
}

// The text of absl::FormatDuration ("1h2m3.5s", "250ms", "1.5us", "0"),
// computed exactly in integers for a whole number of nanoseconds (what every
// duration the kernel records is); anything else (a quarter nanosecond,
// beyond +-292 years, infinite) goes to absl::FormatDuration itself.
void append_duration(std::string& out, absl::Duration d) {
  const std::int64_t n = absl::ToInt64Nanoseconds(d);
  if (n == std::numeric_limits<std::int64_t>::min() ||
      n == std::numeric_limits<std::int64_t>::max() || absl::Nanoseconds(n) != d) {
    out += absl::FormatDuration(d);
    return;
  }
  if (n == 0) {
    out.push_back('0');
    return;
  }
  if (n < 0) out.push_back('-');
  const std::uint64_t v = n < 0 ? static_cast<std::uint64_t>(-n) : static_cast<std::uint64_t>(n);
  constexpr std::uint64_t kUs = 1'000, kMs = 1'000'000, kS = 1'000'000'000;
  if (v < kUs) {
    append_int(out, v);
    out += "ns";
  } else if (v < kMs) {
    append_int(out, v / kUs);
    if (v % kUs != 0) append_fraction(out, v % kUs, 3);
    out += "us";
  } else if (v < kS) {
    append_int(out, v / kMs);
    if (v % kMs != 0) append_fraction(out, v % kMs, 6);
    out += "ms";
  } else {
    const std::uint64_t hours = v / (3600 * kS);
    const std::uint64_t minutes = v / (60 * kS) % 60;
    const std::uint64_t seconds = v / kS % 60;
    const std::uint64_t nanos = v % kS;
    if (hours != 0) {
      append_int(out, hours);
      out.push_back('h');
    }
    if (minutes != 0) {
      append_int(out, minutes);
      out.push_back('m');
    }
    if (seconds != 0 || nanos != 0) {
      append_int(out, seconds);
      if (nanos != 0) append_fraction(out, nanos, 9);
      out.push_back('s');
    }
  }
}

struct ValueFormatter {
  std::string& out;
  void operator()(std::int64_t v) const { append_int(out, v); }
  void operator()(std::uint64_t v) const { append_int(out, v); }
  void operator()(const std::string& v) const {
    if (needs_quotes(v))
      append_quoted(out, v);
    else
      out += v;
  }
  void operator()(absl::Time v) const { append_rfc3339_utc(out, v); }
  void operator()(absl::Duration v) const { append_duration(out, v); }
};
}  // namespace

void append_event_line(std::string& out, const Event& event) {
  append_rfc3339_utc(out, event.at);
  out.push_back(' ');
  out += event.kind;
  for (const auto& f : event.fields) {
    out.push_back(' ');
    out += f.name;
    out.push_back('=');
    std::visit(ValueFormatter{out}, f.value);
  }
}

std::string format_event(const Event& event) {
  std::string out;
  out.reserve(64 + 24 * event.fields.size());
  append_event_line(out, event);
  return out;
}

}  // namespace kairos
