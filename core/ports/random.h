// Random: Kairos's own seeded pseudo-random number generator.
//
// Purpose. Every random choice in core/ and sim/ (retry jitter, simulated
// faults, workload generation) goes through this class, so that one seed
// reproduces one history exactly. Standard-library distributions and
// absl::BitGen are not used: their output differs between library versions,
// builds and runs.
//
// Algorithm. xoshiro256** (Blackman & Vigna), seeded by expanding a 64-bit
// seed with SplitMix64. Integer distributions only; below() uses Lemire's
// multiply-shift with rejection, so it is unbiased. No floating point.
//
// Guarantees. The sequence is a pure function of the seed, identical across
// compilers, platforms and sanitizer builds. Not cryptographically secure.
//
// Threading. Not thread-safe; one instance per node or per simulation.
#pragma once

#include <cstdint>

#include "absl/time/time.h"
#include "core/base/check.h"

namespace kairos {

__extension__ using uint128_t = unsigned __int128;

class Random {
 public:
  explicit Random(std::uint64_t seed) { reseed(seed); }

  void reseed(std::uint64_t seed) {
    std::uint64_t x = seed;
    for (auto& s : s_) s = splitmix64(x);
  }

  // A uniformly distributed 64-bit value.
  std::uint64_t next_u64() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, n). Requires n > 0.
  std::uint64_t below(std::uint64_t n) {
    KAIROS_CHECK(n > 0);
    uint128_t m = static_cast<uint128_t>(next_u64()) * n;
    auto low = static_cast<std::uint64_t>(m);
    if (low < n) {
      const std::uint64_t threshold = (0 - n) % n;
      while (low < threshold) {
        m = static_cast<uint128_t>(next_u64()) * n;
        low = static_cast<std::uint64_t>(m);
      }
    }
    return static_cast<std::uint64_t>(m >> 64);
  }

  // Uniform in [lo, hi] (inclusive). Requires lo <= hi.
  std::int64_t between(std::int64_t lo, std::int64_t hi) {
    KAIROS_CHECK(lo <= hi);
    const auto span = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo);
    if (span == UINT64_MAX) return static_cast<std::int64_t>(next_u64());
    return static_cast<std::int64_t>(static_cast<std::uint64_t>(lo) + below(span + 1));
  }

  // True with probability numerator/denominator. Requires denominator > 0.
  bool chance(std::uint64_t numerator, std::uint64_t denominator) {
    KAIROS_CHECK(denominator > 0);
    return below(denominator) < numerator;
  }

  // Uniform duration in [lo, hi], at microsecond resolution.
  absl::Duration duration_between(absl::Duration lo, absl::Duration hi) {
    return absl::Microseconds(
        between(absl::ToInt64Microseconds(lo), absl::ToInt64Microseconds(hi)));
  }

  // A child generator whose sequence is independent of this one's future
  // draws (it consumes exactly one draw from this generator).
  Random fork() { return Random(next_u64()); }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static std::uint64_t splitmix64(std::uint64_t& x) {
    std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  std::uint64_t s_[4];
};

}  // namespace kairos
