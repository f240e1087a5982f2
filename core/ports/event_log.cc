#include "core/ports/event_log.h"

#include <charconv>

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
  void operator()(absl::Duration v) const { out += absl::FormatDuration(v); }
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
