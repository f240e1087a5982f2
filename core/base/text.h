// Text helpers for error messages that quote what a user typed.
//
// An error names the offending input, but the input is hostile: it may be
// ten kilobytes long or hold control bytes that rewrite a terminal. Every
// error that echoes user input passes it through excerpt(), which keeps
// printable ASCII as it is, escapes everything else (\xNN, and \\ for a
// backslash), and keeps at most `max_bytes` bytes of the input, saying how
// long the whole input was when it cut.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace kairos {

inline constexpr std::size_t kExcerptBytes = 64;

// excerpt("ab\x1b") == "ab\\x1b"; excerpt(10 KB of 'a') == 64 x 'a' + "... (10240 bytes)".
std::string excerpt(std::string_view input, std::size_t max_bytes = kExcerptBytes);

// True when every byte of `s` is printable ASCII (0x20-0x7e).
bool is_printable_ascii(std::string_view s);

}  // namespace kairos
