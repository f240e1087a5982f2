// Wire bytes written out by hand: little-endian integers, length-prefixed
// strings and whole frames, from the framing in core/kernel/wire.h and the
// encodings in core/base/codec.h, for tests that pin a message's bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/kernel/wire.h"

namespace kairos::test_support {

// `v` as `bytes` little-endian bytes.
inline std::string le(std::uint64_t v, int bytes) {
  std::string s;
  for (int i = 0; i < bytes; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  return s;
}
// A string field: its u32 length, then its bytes.
inline std::string str(std::string_view s) { return le(s.size(), 4) + std::string(s); }
// A frame of this build's wire version around `body`.
inline std::string frame(std::uint8_t type, const std::string& body) {
  return le(wire::kMagic, 2) + le(wire::kWireVersion, 1) + le(type, 1) + le(body.size(), 4) + body;
}

}  // namespace kairos::test_support
