#include "core/base/codec.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "core/base/check.h"

namespace kairos {

namespace {
// Little-endian, built in a local buffer and appended once (one capacity
// check per field instead of one per byte).
void put_le(std::string& out, std::uint64_t v, int bytes) {
  char buf[8];
  for (int i = 0; i < bytes; ++i) buf[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
  out.append(buf, static_cast<std::size_t>(bytes));
}
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
}  // namespace

ByteWriter& ByteWriter::u8(std::uint8_t v) {
  put_le(out_, v, 1);
  return *this;
}
ByteWriter& ByteWriter::u16(std::uint16_t v) {
  put_le(out_, v, 2);
  return *this;
}
ByteWriter& ByteWriter::u32(std::uint32_t v) {
  put_le(out_, v, 4);
  return *this;
}
ByteWriter& ByteWriter::u64(std::uint64_t v) {
  put_le(out_, v, 8);
  return *this;
}
ByteWriter& ByteWriter::str(std::string_view s) {
  KAIROS_CHECK(s.size() <= std::numeric_limits<std::uint32_t>::max());
  u32(static_cast<std::uint32_t>(s.size()));
  out_.append(s.data(), s.size());
  return *this;
}
ByteWriter& ByteWriter::raw(std::string_view s) {
  out_.append(s.data(), s.size());
  return *this;
}
ByteWriter& ByteWriter::time(absl::Time t) { return i64(encode_time_us(t)); }
ByteWriter& ByteWriter::duration(absl::Duration d) { return i64(encode_duration_us(d)); }
void ByteWriter::patch_u32(std::size_t pos, std::uint32_t v) {
  KAIROS_CHECK(pos + 4 <= out_.size());
  for (int i = 0; i < 4; ++i) out_[pos + i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}

absl::StatusOr<std::uint64_t> ByteReader::fixed(std::size_t bytes, std::string_view field) {
  if (in_.size() < bytes)
    return absl::InvalidArgumentError(absl::StrCat(absl_sv(field), ": truncated (need ", bytes,
                                                   " bytes, have ", in_.size(), ")"));
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < bytes; ++i)
    v |= static_cast<std::uint64_t>(static_cast<std::uint8_t>(in_[i])) << (8 * i);
  in_.remove_prefix(bytes);
  return v;
}

absl::StatusOr<std::uint8_t> ByteReader::u8(std::string_view field) {
  KAIROS_ASSIGN_OR_RETURN(auto v, fixed(1, field));
  return static_cast<std::uint8_t>(v);
}
absl::StatusOr<std::uint16_t> ByteReader::u16(std::string_view field) {
  KAIROS_ASSIGN_OR_RETURN(auto v, fixed(2, field));
  return static_cast<std::uint16_t>(v);
}
absl::StatusOr<std::uint32_t> ByteReader::u32(std::string_view field) {
  KAIROS_ASSIGN_OR_RETURN(auto v, fixed(4, field));
  return static_cast<std::uint32_t>(v);
}
absl::StatusOr<std::uint64_t> ByteReader::u64(std::string_view field) { return fixed(8, field); }
absl::StatusOr<std::int32_t> ByteReader::i32(std::string_view field) {
  KAIROS_ASSIGN_OR_RETURN(auto v, fixed(4, field));
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(v));
}
absl::StatusOr<std::int64_t> ByteReader::i64(std::string_view field) {
  KAIROS_ASSIGN_OR_RETURN(auto v, fixed(8, field));
  return static_cast<std::int64_t>(v);
}
absl::StatusOr<bool> ByteReader::boolean(std::string_view field) {
  KAIROS_ASSIGN_OR_RETURN(auto v, fixed(1, field));
  if (v > 1)
    return absl::InvalidArgumentError(
        absl::StrCat(absl_sv(field), ": boolean byte must be 0 or 1, got ", v));
  return v == 1;
}
absl::StatusOr<std::string> ByteReader::str(std::string_view field) {
  KAIROS_ASSIGN_OR_RETURN(auto n, u32(field));
  if (n > max_string_)
    return absl::InvalidArgumentError(
        absl::StrCat(absl_sv(field), ": length ", n, " exceeds the limit ", max_string_));
  if (n > in_.size())
    return absl::InvalidArgumentError(absl::StrCat(
        absl_sv(field), ": length ", n, " exceeds the remaining ", in_.size(), " bytes"));
  std::string out(in_.substr(0, n));
  in_.remove_prefix(n);
  return out;
}
absl::StatusOr<absl::Time> ByteReader::time(std::string_view field) {
  KAIROS_ASSIGN_OR_RETURN(auto v, i64(field));
  return decode_time_us(v);
}
absl::StatusOr<absl::Duration> ByteReader::duration(std::string_view field) {
  KAIROS_ASSIGN_OR_RETURN(auto v, i64(field));
  return decode_duration_us(v);
}
absl::StatusOr<std::uint32_t> ByteReader::count(std::string_view field, std::uint32_t max,
                                                std::size_t min_element_size) {
  KAIROS_ASSIGN_OR_RETURN(auto n, u32(field));
  if (n > max)
    return absl::InvalidArgumentError(
        absl::StrCat(absl_sv(field), ": count ", n, " exceeds the limit ", max));
  if (min_element_size > 0 && n > in_.size() / min_element_size)
    return absl::InvalidArgumentError(absl::StrCat(
        absl_sv(field), ": count ", n, " cannot fit in the remaining ", in_.size(), " bytes"));
  return n;
}
absl::Status ByteReader::expect_end(std::string_view what) const {
  if (in_.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(absl_sv(what), ": ", in_.size(), " trailing bytes"));
}

std::int64_t encode_time_us(absl::Time t) {
  if (t == absl::InfinitePast()) return kMin;
  if (t == absl::InfiniteFuture()) return kMax;
  return absl::ToUnixMicros(t);
}
absl::Time decode_time_us(std::int64_t us) {
  if (us == kMin) return absl::InfinitePast();
  if (us == kMax) return absl::InfiniteFuture();
  return absl::FromUnixMicros(us);
}
std::int64_t encode_duration_us(absl::Duration d) {
  if (d == absl::InfiniteDuration()) return kMax;
  if (d == -absl::InfiniteDuration()) return kMin;
  return absl::ToInt64Microseconds(d);
}
absl::Duration decode_duration_us(std::int64_t us) {
  if (us == kMax) return absl::InfiniteDuration();
  if (us == kMin) return -absl::InfiniteDuration();
  return absl::Microseconds(us);
}

}  // namespace kairos
