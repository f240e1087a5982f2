// OutputRing: the tail it keeps is exactly the last bytes appended, whatever
// the chunking, in fixed memory; a cut UTF-8 sequence is dropped.
#include "prod/runners/output_ring.h"

#include <gtest/gtest.h>

#include <string>

namespace kairos {
namespace {

TEST(OutputRingTest, KeepsTheLastBytesAcrossWraps) {
  OutputRing ring(8);
  std::string all;
  for (int i = 0; i < 50; ++i) {
    const std::string chunk(static_cast<std::size_t>(i % 5 + 1), static_cast<char>('a' + i % 26));
    ring.append(chunk.data(), chunk.size());
    all += chunk;
    const std::size_t want = std::min<std::size_t>(8, all.size());
    EXPECT_EQ(ring.last(100, false), all.substr(all.size() - want)) << i;
    EXPECT_EQ(ring.total(), all.size());
    EXPECT_EQ(ring.size(), want);
    EXPECT_EQ(ring.dropped(), all.size() - want);
  }
  EXPECT_EQ(ring.last(3, false), all.substr(all.size() - 3));
}

TEST(OutputRingTest, AChunkLargerThanTheRingKeepsItsOwnTail) {
  OutputRing ring(4);
  ring.append("ab", 2);
  ring.append("0123456789", 10);
  EXPECT_EQ(ring.last(10), "6789");
  ring.append("x", 1);
  EXPECT_EQ(ring.last(10), "789x");
}

TEST(OutputRingTest, ACutUtf8SequenceIsDropped) {
  OutputRing ring(5);
  const std::string text =
      "ab\xE2\x82\xAC"
      "cd";  // "ab€cd": € is 3 bytes
  ring.append(text.data(), text.size());
  // Seven bytes in: the last five are the whole euro sign and "cd".
  EXPECT_EQ(ring.last(5),
            "\xE2\x82\xAC"
            "cd");
  EXPECT_EQ(ring.last(4), "cd");  // "\x82\xAC" "cd" loses the cut sequence
  EXPECT_EQ(ring.last(4, false),
            "\x82\xAC"
            "cd");
}

TEST(OutputRingTest, ZeroCapacityKeepsNothingButCounts) {
  OutputRing ring(0);
  ring.append("abc", 3);
  EXPECT_EQ(ring.last(10), "");
  EXPECT_EQ(ring.total(), 3u);
}

}  // namespace
}  // namespace kairos
