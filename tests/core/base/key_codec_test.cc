#include "core/base/key_codec.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <tuple>

namespace kairos {
namespace {

std::string enc(std::uint64_t shard, std::int64_t t, const std::string& id) {
  return KeyBuilder().tag('d').u64(shard).i64(t).str(id).build();
}

RC_GTEST_PROP(KeyCodec, TupleOrderEqualsByteOrder,
              (std::uint64_t s1, std::int64_t t1, std::string id1, std::uint64_t s2,
               std::int64_t t2, std::string id2)) {
  const auto a = std::make_tuple(s1, t1, id1);
  const auto b = std::make_tuple(s2, t2, id2);
  const std::string ka = enc(s1, t1, id1), kb = enc(s2, t2, id2);
  RC_ASSERT((a < b) == (ka < kb));
  RC_ASSERT((a == b) == (ka == kb));
}

RC_GTEST_PROP(KeyCodec, StringsSortLikeTheirBytes, (std::string a, std::string b)) {
  RC_ASSERT((a < b) == (KeyBuilder().str(a).build() < KeyBuilder().str(b).build()));
}

RC_GTEST_PROP(KeyCodec, RoundTrip,
              (std::uint16_t a, std::uint32_t b, std::int64_t c, std::string s)) {
  const std::string key = KeyBuilder().tag(7).u16(a).u32(b).i64(c).str(s).u64(42).build();
  KeyReader r(key);
  RC_ASSERT(*r.tag() == 7);
  RC_ASSERT(*r.u16() == a);
  RC_ASSERT(*r.u32() == b);
  RC_ASSERT(*r.i64() == c);
  RC_ASSERT(*r.str() == s);
  RC_ASSERT(*r.u64() == 42u);
  RC_ASSERT(r.expect_end().ok());
}

TEST(KeyCodec, StringWithNulSortsBetween) {
  EXPECT_LT(KeyBuilder().str("a").build(), KeyBuilder().str(std::string("a\0", 2)).build());
  EXPECT_LT(KeyBuilder().str(std::string("a\0", 2)).build(), KeyBuilder().str("ab").build());
}

TEST(KeyCodec, TimeOrderIncludingBeforeEpoch) {
  const absl::Time before = absl::FromUnixSeconds(-5), after = absl::FromUnixSeconds(5);
  EXPECT_LT(KeyBuilder().time(before).build(), KeyBuilder().time(after).build());
  const std::string key = KeyBuilder().time(before).build();
  KeyReader r(key);
  EXPECT_EQ(*r.time(), before);
}

TEST(KeyCodec, DecodeErrorsNameTheProblem) {
  const std::string short_key("\x01\x02", 2);
  KeyReader truncated(short_key);
  auto v = truncated.u64();
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("truncated u64"), std::string::npos);

  const std::string escaped("ab\0\x05", 4);
  KeyReader bad_escape(escaped);
  auto s = bad_escape.str();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("bad string escape"), std::string::npos);

  KeyReader unterminated("abc");
  EXPECT_FALSE(unterminated.str().ok());

  const std::string two = KeyBuilder().u32(1).tag(9).build();
  KeyReader trailing(two);
  ASSERT_TRUE(trailing.u32().ok());
  EXPECT_FALSE(trailing.expect_end().ok());
}

TEST(KeyCodec, PrefixEnd) {
  EXPECT_EQ(prefix_end("ab"), "ac");
  EXPECT_EQ(prefix_end(std::string("a\xff", 2)), "b");
  EXPECT_EQ(prefix_end(std::string("\xff\xff", 2)), "");
  EXPECT_EQ(prefix_end(""), "");
  EXPECT_LT(std::string("ab\xff\xff"), prefix_end("ab"));
  EXPECT_EQ(key_successor("ab"), std::string("ab\0", 3));
}

}  // namespace
}  // namespace kairos
