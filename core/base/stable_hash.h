// stable_hash: the one stable hash of Kairos identifiers.
//
// Purpose. Some decisions must come out the same in every process, build and
// machine, forever: which minute an `H` cron field picks for a job, the jitter
// of an occurrence, and (later) which shard owns a job. std::hash and
// absl::Hash are unsuitable: they are allowed to (and do) change between
// builds and processes. This hash is a fixed function of the bytes.
//
// Definition (documented in docs/SCHEDULES.md; never change it, it would move
// every hashed schedule and every job's shard):
//   h = FNV-1a 64 over the bytes (offset basis 0xcbf29ce484222325,
//       prime 0x100000001b3), then
//   h = fmix64(h), the MurmurHash3 64-bit finalizer:
//       h ^= h >> 33; h *= 0xff51afd7ed558ccd; h ^= h >> 33;
//       h *= 0xc4ceb9fe1a85ec53; h ^= h >> 33.
// The finalizer makes every output bit depend on every input bit, so taking
// the value modulo a small number (60 minutes, 24 hours) is well spread
// (FNV-1a alone has a weak lowest bit).
//
// Not cryptographic: do not use it where an adversary chooses ids to collide.
#pragma once

#include <cstdint>
#include <string_view>

namespace kairos {

// FNV-1a 64 of `bytes` followed by fmix64 (see above).
std::uint64_t stable_hash(std::string_view bytes);

// stable_hash of `bytes` with a 64-bit salt appended as 8 little-endian bytes;
// used to derive independent values per cron field / per occurrence.
std::uint64_t stable_hash(std::string_view bytes, std::uint64_t salt);

}  // namespace kairos
