#include "core/base/stable_hash.h"

namespace kairos {
namespace {

constexpr std::uint64_t kFnvOffset = 0xcbf29ce484222325ULL;
constexpr std::uint64_t kFnvPrime = 0x100000001b3ULL;

std::uint64_t fnv1a(std::uint64_t h, std::string_view bytes) {
  for (const char c : bytes) {
    h ^= static_cast<std::uint8_t>(c);
    h *= kFnvPrime;
  }
  return h;
}

std::uint64_t fmix64(std::uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

}  // namespace

std::uint64_t stable_hash(std::string_view bytes) { return fmix64(fnv1a(kFnvOffset, bytes)); }

std::uint64_t stable_hash(std::string_view bytes, std::uint64_t salt) {
  std::uint64_t h = fnv1a(kFnvOffset, bytes);
  for (int i = 0; i < 8; ++i) {
    h ^= (salt >> (8 * i)) & 0xff;
    h *= kFnvPrime;
  }
  return fmix64(h);
}

}  // namespace kairos
