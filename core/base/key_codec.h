// Order-preserving key encoding.
//
// Purpose. Storage orders keys bytewise. KeyBuilder appends typed components
// so that the byte order of the encoded keys equals the tuple order of the
// components: (shard, due time, job id) sorts by shard, then time, then id.
// KeyReader decodes them again. core/kernel/keyspace.h uses these to define every key
// in the store; nothing else builds keys by hand.
//
// Encodings (all big-endian so bytewise order is numeric order):
//   u8/u16/u32/u64  fixed width, unsigned.
//   i64             fixed 8 bytes with the sign bit flipped.
//   time            i64 of microseconds since the Unix epoch.
//   str             bytes with 0x00 escaped as 0x00 0xFF, terminated by
//                   0x00 0x01; so "a" < "a\0" < "ab" and any string sorts
//                   before its extensions.
//   tag             one raw byte, used as a table prefix.
//
// Decoding is strict: a truncated component, a bad escape or trailing bytes
// where none are expected is an error naming the component.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace kairos {

class KeyBuilder {
 public:
  KeyBuilder() = default;
  explicit KeyBuilder(std::string prefix) : out_(std::move(prefix)) {}

  KeyBuilder& tag(std::uint8_t t);
  KeyBuilder& u8(std::uint8_t v) { return tag(v); }
  KeyBuilder& u16(std::uint16_t v);
  KeyBuilder& u32(std::uint32_t v);
  KeyBuilder& u64(std::uint64_t v);
  KeyBuilder& i64(std::int64_t v);
  KeyBuilder& time(absl::Time t);
  KeyBuilder& str(std::string_view s);

  const std::string& view() const { return out_; }
  std::string build() && { return std::move(out_); }
  std::string build() const& { return out_; }

 private:
  std::string out_;
};

class KeyReader {
 public:
  explicit KeyReader(std::string_view key) : in_(key) {}

  absl::StatusOr<std::uint8_t> tag();
  absl::StatusOr<std::uint8_t> u8() { return tag(); }
  absl::StatusOr<std::uint16_t> u16();
  absl::StatusOr<std::uint32_t> u32();
  absl::StatusOr<std::uint64_t> u64();
  absl::StatusOr<std::int64_t> i64();
  absl::StatusOr<absl::Time> time();
  absl::StatusOr<std::string> str();

  bool at_end() const { return in_.empty(); }
  std::string_view rest() const { return in_; }
  // OK when every byte was consumed; otherwise names the leftover length.
  absl::Status expect_end() const;

 private:
  absl::StatusOr<std::uint64_t> fixed(int bytes, const char* what);
  std::string_view in_;
};

// The smallest key greater than every key that starts with `prefix`, for use
// as an exclusive scan end. Empty (meaning "no upper bound") when no such key
// exists (prefix empty or all 0xFF).
std::string prefix_end(std::string_view prefix);

// The smallest key strictly greater than `key` (key + "\0").
std::string key_successor(std::string_view key);

// Microseconds since the epoch, the resolution of times in keys and records.
// Times outside the int64 microsecond range are clamped.
std::int64_t to_unix_micros(absl::Time t);
absl::Time from_unix_micros(std::int64_t us);

}  // namespace kairos
