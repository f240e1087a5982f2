#include "core/base/key_codec.h"

#include "absl/strings/str_cat.h"

namespace kairos {

KeyBuilder& KeyBuilder::tag(std::uint8_t t) {
  out_.push_back(static_cast<char>(t));
  return *this;
}

namespace {
void put_be(std::string& out, std::uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
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
  for (char c : s) {
    out_.push_back(c);
    if (c == '\0') out_.push_back(static_cast<char>(0xFF));
  }
  out_.push_back('\0');
  out_.push_back('\x01');
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
  std::string out;
  for (std::size_t i = 0; i < in_.size(); ++i) {
    const char c = in_[i];
    if (c != '\0') {
      out.push_back(c);
      continue;
    }
    if (i + 1 >= in_.size()) return absl::InvalidArgumentError("key: string without terminator");
    const auto next = static_cast<std::uint8_t>(in_[i + 1]);
    if (next == 0x01) {
      in_.remove_prefix(i + 2);
      return out;
    }
    if (next != 0xFF)
      return absl::InvalidArgumentError(
          absl::StrCat("key: bad string escape 0x00 0x", absl::Hex(next)));
    out.push_back('\0');
    ++i;
  }
  return absl::InvalidArgumentError("key: string without terminator");
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
