#include "core/base/text.h"

#include "absl/strings/str_cat.h"

namespace kairos {

std::string excerpt(std::string_view input, std::size_t max_bytes) {
  const std::string_view kept = input.substr(0, max_bytes);
  std::string out;
  out.reserve(kept.size() + 16);
  for (const char ch : kept) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\\') {
      out += "\\\\";
    } else if (c < 0x20 || c >= 0x7f) {
      absl::StrAppend(&out, "\\x", absl::Hex(c, absl::kZeroPad2));
    } else {
      out.push_back(ch);
    }
  }
  if (kept.size() < input.size()) absl::StrAppend(&out, "... (", input.size(), " bytes)");
  return out;
}

bool is_printable_ascii(std::string_view s) {
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c >= 0x7f) return false;
  }
  return true;
}

}  // namespace kairos
