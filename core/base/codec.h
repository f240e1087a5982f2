// Binary value encoding shared by the store records (core/kernel/records.h)
// and the wire protocol (core/kernel/wire.h).
//
// Purpose. Records and messages are sequences of typed fields. ByteWriter
// appends them; ByteReader reads them back strictly. Unlike key_codec.h these
// encodings are not order-preserving: they are compact and length-prefixed.
//
// Encodings (little-endian, fixed width unless stated):
//   u8/u16/u32/u64/i32/i64  fixed width; i* as two's complement.
//   bool                    one byte, 0 or 1 (anything else is an error).
//   bytes/str               u32 length, then the bytes.
//   time                    i64 microseconds since the Unix epoch; the
//                           infinite past/future are INT64_MIN/INT64_MAX.
//   duration                i64 microseconds; infinite is INT64_MAX.
//
// Strictness. Every read checks the remaining length before touching a byte
// (a reader never over-reads), a length prefix larger than the remaining input
// or than the reader's limit is an error, and every error names the field
// being read. A ByteReader views caller-owned bytes: the caller keeps them
// alive while reading (constructing one from a temporary std::string is
// deleted for that reason).
//
// The composite values that both the job record and the claim grant carry
// (ScheduleSpec, Payload) are encoded by core/kernel/value_codec.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace kairos {

class ByteWriter {
 public:
  ByteWriter& u8(std::uint8_t v);
  ByteWriter& u16(std::uint16_t v);
  ByteWriter& u32(std::uint32_t v);
  ByteWriter& u64(std::uint64_t v);
  ByteWriter& i32(std::int32_t v) { return u32(static_cast<std::uint32_t>(v)); }
  ByteWriter& i64(std::int64_t v) { return u64(static_cast<std::uint64_t>(v)); }
  ByteWriter& boolean(bool v) { return u8(v ? 1 : 0); }
  ByteWriter& str(std::string_view s);
  ByteWriter& time(absl::Time t);
  ByteWriter& duration(absl::Duration d);
  // Appends raw bytes with no length prefix.
  ByteWriter& raw(std::string_view s);
  // Room for `n` bytes in all: an encoder that knows about how long its
  // record is takes one allocation instead of one per doubling.
  void reserve(std::size_t n) { out_.reserve(n); }

  std::size_t size() const { return out_.size(); }
  const std::string& data() const { return out_; }
  std::string take() && { return std::move(out_); }
  // Overwrites 4 bytes at `pos` (for a length patched in after the fact).
  void patch_u32(std::size_t pos, std::uint32_t v);

 private:
  std::string out_;
};

class ByteReader {
 public:
  // `max_string` bounds every length-prefixed field.
  explicit ByteReader(std::string_view in, std::size_t max_string = 16u << 20)
      : in_(in), max_string_(max_string) {}
  explicit ByteReader(std::string&&, std::size_t = 0) = delete;

  // Each read names `field` in its error.
  absl::StatusOr<std::uint8_t> u8(std::string_view field);
  absl::StatusOr<std::uint16_t> u16(std::string_view field);
  absl::StatusOr<std::uint32_t> u32(std::string_view field);
  absl::StatusOr<std::uint64_t> u64(std::string_view field);
  absl::StatusOr<std::int32_t> i32(std::string_view field);
  absl::StatusOr<std::int64_t> i64(std::string_view field);
  absl::StatusOr<bool> boolean(std::string_view field);
  absl::StatusOr<std::string> str(std::string_view field);
  absl::StatusOr<absl::Time> time(std::string_view field);
  absl::StatusOr<absl::Duration> duration(std::string_view field);
  // A u32 element count, checked against `max` and against the remaining
  // bytes (each element needs at least `min_element_size` bytes).
  absl::StatusOr<std::uint32_t> count(std::string_view field, std::uint32_t max,
                                      std::size_t min_element_size);

  std::size_t remaining() const { return in_.size(); }
  // OK when every byte was consumed; otherwise names `what` and the leftover.
  absl::Status expect_end(std::string_view what) const;

 private:
  absl::StatusOr<std::uint64_t> fixed(std::size_t bytes, std::string_view field);
  std::string_view in_;
  std::size_t max_string_;
};

// Microsecond encodings with the infinities mapped to the int64 extremes.
std::int64_t encode_time_us(absl::Time t);
absl::Time decode_time_us(std::int64_t us);
std::int64_t encode_duration_us(absl::Duration d);
absl::Duration decode_duration_us(std::int64_t us);

}  // namespace kairos
