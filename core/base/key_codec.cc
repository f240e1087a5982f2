#include "core/base/key_codec.h"

#include "absl/strings/str_cat.h"

namespace kairos {

KeyBuilder& KeyBuilder::tag(std::uint8_t t) {
  out_.push_back(static_cast<char>(t));
  return *this;
}

namespace {
// Big-endian, built in a local buffer and appended once (one capacity check
// per component instead of one per byte).
void put_be(std::string& out, std::uint64_t v, int bytes) {
  char buf[8];
  for (int i = 0; i < bytes; ++i) buf[i] = static_cast<char>((v >> (8 * (bytes - 1 - i))) & 0xFF);
  out.append(buf, static_cast<std::size_t>(bytes));
}
}  // namespace

KeyBuilder& KeyBuilder::u16(std::uint16_t v) {
  put_be(out_, v, 2);
  return *this;
}
KeyBuilder& KeyBuilder::u32(std::uint32_t v) {
  put_be(out_, v, 4);
  return *this;
}
KeyBuilder& KeyBuilder::u64(std::uint64_t v) {
  put_be(out_, v, 8);
  return *this;
}
KeyBuilder& KeyBuilder::i64(std::int64_t v) {
  put_be(out_, static_cast<std::uint64_t>(v) ^ (1ULL << 63), 8);
  return *this;
}
KeyBuilder& KeyBuilder::time(absl::Time t) { return i64(to_unix_micros(t)); }

KeyBuilder& KeyBuilder::str(std::string_view s) {
  // Each run of bytes up to and including a 0x00 is appended at once, the
  // 0x00's escape after it.
  for (std::size_t nul; (nul = s.find('\0')) != std::string_view::npos; s.remove_prefix(nul + 1)) {
    out_.append(s.data(), nul + 1);
    out_.push_back(static_cast<char>(0xFF));
  }
  out_.append(s.data(), s.size());
  out_.append("\0\x01", 2);
  return *this;
}

absl::StatusOr<std::uint64_t> KeyReader::fixed(int bytes, const char* what) {
  if (in_.size() < static_cast<std::size_t>(bytes))
    return absl::InvalidArgumentError(
        absl::StrCat("key: truncated ", what, " (need ", bytes, " bytes, have ", in_.size(), ")"));
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<std::uint8_t>(in_[i]);
  in_.remove_prefix(bytes);
  return v;
}

absl::StatusOr<std::uint8_t> KeyReader::tag() {
  auto v = fixed(1, "u8");
  if (!v.ok()) return v.status();
  return static_cast<std::uint8_t>(*v);
}
absl::StatusOr<std::uint16_t> KeyReader::u16() {
  auto v = fixed(2, "u16");
  if (!v.ok()) return v.status();
  return static_cast<std::uint16_t>(*v);
}
absl::StatusOr<std::uint32_t> KeyReader::u32() {
  auto v = fixed(4, "u32");
  if (!v.ok()) return v.status();
  return static_cast<std::uint32_t>(*v);
}
absl::StatusOr<std::uint64_t> KeyReader::u64() { return fixed(8, "u64"); }
absl::StatusOr<std::int64_t> KeyReader::i64() {
  auto v = fixed(8, "i64");
  if (!v.ok()) return v.status();
  return static_cast<std::int64_t>(*v ^ (1ULL << 63));
}
absl::StatusOr<absl::Time> KeyReader::time() {
  auto v = i64();
  if (!v.ok()) return v.status();
  return from_unix_micros(*v);
}

absl::StatusOr<std::string> KeyReader::str() {
  // Runs of plain bytes are copied at once; `in` is consumed into in_ only
  // when the whole string decoded.
  std::string out;
  for (std::string_view in = in_;;) {
    const std::size_t nul = in.find('\0');
    if (nul == std::string_view::npos || nul + 1 >= in.size())
      return absl::InvalidArgumentError("key: string without terminator");
    out.append(in.data(), nul);
    const auto next = static_cast<std::uint8_t>(in[nul + 1]);
    if (next == 0x01) {
      in_ = in.substr(nul + 2);
      return out;
    }
    if (next != 0xFF)
      return absl::InvalidArgumentError(
          absl::StrCat("key: bad string escape 0x00 0x", absl::Hex(next)));
    out.push_back('\0');
    in.remove_prefix(nul + 2);
  }
}

absl::Status KeyReader::expect_end() const {
  if (in_.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("key: ", in_.size(), " unexpected trailing bytes"));
}

std::string prefix_end(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    auto& last = reinterpret_cast<unsigned char&>(end.back());
    if (last != 0xFF) {
      ++last;
      return end;
    }
    end.pop_back();
  }
  return end;
}

std::string key_successor(std::string_view key) {
  std::string s(key);
  s.push_back('\0');
  return s;
}

std::int64_t to_unix_micros(absl::Time t) {
  if (t == absl::InfinitePast()) return INT64_MIN;
  if (t == absl::InfiniteFuture()) return INT64_MAX;
  return absl::ToUnixMicros(t);
}

absl::Time from_unix_micros(std::int64_t us) {
  if (us == INT64_MIN) return absl::InfinitePast();
  if (us == INT64_MAX) return absl::InfiniteFuture();
  return absl::FromUnixMicros(us);
}

}  // namespace kairos
