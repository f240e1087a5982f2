// The exact bytes of keys, spelled out by a reference encoder written here
// byte by byte from key_codec.h's rules: KeyBuilder and the keyspace's key
// functions (which size their builders up front) must produce exactly these,
// since the bytes are the on-disk layout of every store.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "core/base/key_codec.h"
#include "core/kernel/keyspace.h"
#include "core/kernel/records.h"

namespace kairos {
namespace {

// The reference: one byte at a time.
struct Ref {
  std::string out;
  Ref& byte(std::uint8_t b) {
    out.push_back(static_cast<char>(b));
    return *this;
  }
  Ref& be(std::uint64_t v, int bytes) {
    for (int i = bytes - 1; i >= 0; --i) byte(static_cast<std::uint8_t>(v >> (8 * i)));
    return *this;
  }
  Ref& time(absl::Time t) {
    return be(static_cast<std::uint64_t>(absl::ToUnixMicros(t)) ^ (1ULL << 63), 8);
  }
  Ref& str(const std::string& s) {
    for (char c : s) {
      out.push_back(c);
      if (c == '\0') byte(0xFF);
    }
    return byte(0x00).byte(0x01);
  }
};

const std::string kIds[] = {"",
                            "j",
                            "bench-1234",
                            "job-0123456789abcdef",
                            std::string("a\0b", 3),
                            std::string("\0\0", 2),
                            std::string(300, 'x') + std::string("\0", 1)};

TEST(KeyBytes, BuilderComponentsMatchTheReference) {
  const absl::Time t = absl::FromUnixMicros(-1'234'567);
  for (const std::string& id : kIds) {
    SCOPED_TRACE(id.size());
    const std::string got = KeyBuilder()
                                .tag(7)
                                .u16(0xBEEF)
                                .u32(0x01020304)
                                .u64(0x0102030405060708ULL)
                                .i64(-5)
                                .time(t)
                                .str(id)
                                .str(id)
                                .build();
    Ref r;
    r.byte(7).be(0xBEEF, 2).be(0x01020304, 4).be(0x0102030405060708ULL, 8);
    r.be(static_cast<std::uint64_t>(std::int64_t{-5}) ^ (1ULL << 63), 8).time(t).str(id).str(id);
    EXPECT_EQ(got, r.out);
    KeyReader reader(got);
    ASSERT_TRUE(reader.tag().ok() && reader.u16().ok() && reader.u32().ok() && reader.u64().ok());
    ASSERT_TRUE(reader.i64().ok() && reader.time().ok());
    EXPECT_EQ(reader.str().value(), id);
    EXPECT_EQ(reader.str().value(), id);
    EXPECT_TRUE(reader.at_end());
  }
}

TEST(KeyBytes, KeyspaceKeysMatchTheReference) {
  const absl::Time t = absl::FromUnixMicros(1'700'000'000'123'456);
  for (const std::string& id : kIds) {
    SCOPED_TRACE(id.size());
    const RunId rid{id, 3, t};
    auto run_suffix = [&](Ref& r) { r.str(id).be(3, 8).time(t); };
    Ref ready;
    ready.byte(keys::kReady).be(5, 4).byte(keys::priority_band(2)).time(t + absl::Seconds(1));
    run_suffix(ready);
    EXPECT_EQ(keys::ready(5, 2, t + absl::Seconds(1), rid), ready.out);
    Ref run;
    run.byte(keys::kRun);
    run_suffix(run);
    EXPECT_EQ(keys::run(rid), run.out);
    Ref open;
    open.byte(keys::kOpen);
    run_suffix(open);
    EXPECT_EQ(keys::open_run(rid), open.out);
    Ref expiry;
    expiry.byte(keys::kExpiry).be(6, 4).time(t);
    run_suffix(expiry);
    EXPECT_EQ(keys::expiry(6, t, rid), expiry.out);
    EXPECT_EQ(keys::due(1, t, id), Ref().byte(keys::kDue).be(1, 4).time(t).str(id).out);
    EXPECT_EQ(keys::ledger(id, t, 9), Ref().byte(keys::kLedger).str(id).time(t).be(9, 8).out);
    EXPECT_EQ(keys::job(id), Ref().byte(keys::kJob).str(id).out);
    EXPECT_EQ(keys::counters(id), Ref().byte(keys::kCounters).str(id).out);
    EXPECT_EQ(keys::sweep(2, t, id), Ref().byte(keys::kSweep).be(2, 4).time(t).str(id).out);
  }
}

}  // namespace
}  // namespace kairos
