#include "core/ports/event_log.h"

#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
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

struct ValueFormatter {
  std::string& out;
  void operator()(std::int64_t v) const { absl::StrAppend(&out, v); }
  void operator()(std::uint64_t v) const { absl::StrAppend(&out, v); }
  void operator()(const std::string& v) const {
    if (needs_quotes(v))
      append_quoted(out, v);
    else
      out += v;
  }
  void operator()(absl::Time v) const { out += format_rfc3339_utc(v); }
  void operator()(absl::Duration v) const { out += absl::FormatDuration(v); }
};
}  // namespace

std::string format_event(const Event& event) {
  std::string out;
  ValueFormatter{out}(event.at);
  absl::StrAppend(&out, " ", absl_sv(event.kind));
  for (const auto& f : event.fields) {
    absl::StrAppend(&out, " ", absl_sv(f.name), "=");
    std::visit(ValueFormatter{out}, f.value);
  }
  return out;
}

}  // namespace kairos
