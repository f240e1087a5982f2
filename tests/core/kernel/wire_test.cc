#include "core/kernel/wire.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

namespace kairos::wire {
namespace {

// Generators. Times are whole microseconds (the wire's resolution).
rc::Gen<absl::Time> gen_time() {
  return rc::gen::map(rc::gen::inRange<std::int64_t>(-4'000'000'000'000'000, 4'000'000'000'000'000),
                      [](std::int64_t us) { return absl::FromUnixMicros(us); });
}
rc::Gen<absl::Duration> gen_duration() {
  return rc::gen::map(rc::gen::inRange<std::int64_t>(0, 1'000'000'000'000),
                      [](std::int64_t us) { return absl::Microseconds(us); });
}
rc::Gen<std::string> gen_str(std::size_t max = 40) {
  return rc::gen::resize(static_cast<int>(max), rc::gen::arbitrary<std::string>());
}
rc::Gen<RunId> gen_run() {
  return rc::gen::exec([] {
    return RunId{*gen_str(), *rc::gen::arbitrary<std::uint64_t>(), *gen_time()};
  });
}
rc::Gen<Payload> gen_payload() {
  return rc::gen::exec([]() -> Payload {
    if (*rc::gen::arbitrary<bool>()) {
      CommandPayload c;
      c.argv = *rc::gen::container<std::vector<std::string>>(gen_str());
      c.env = *rc::gen::container<std::vector<std::pair<std::string, std::string>>>(
          rc::gen::pair(gen_str(), gen_str()));
      c.working_dir = *gen_str();
      return c;
    }
    HttpPayload h;
    h.method = *gen_str(8);
    h.url = *gen_str();
    h.headers = *rc::gen::container<std::vector<std::pair<std::string, std::string>>>(
        rc::gen::pair(gen_str(), gen_str()));
    h.body = *gen_str(200);
    return h;
  });
}
rc::Gen<WireVerdict> gen_verdict() {
  return rc::gen::exec([] {
    WireVerdict v;
    v.verdict = static_cast<WriteVerdict>(*rc::gen::inRange(0, 5));
    v.lease_ttl = *gen_duration();
    v.reason = *gen_str();
    return v;
  });
}
template <typename T>
rc::Gen<std::vector<T>> small_vec(rc::Gen<T> g) {
  return rc::gen::resize(8, rc::gen::container<std::vector<T>>(std::move(g)));
}

rc::Gen<Message> gen_message() {
  return rc::gen::exec([]() -> Message {
    const auto id = *rc::gen::arbitrary<std::uint64_t>();
    switch (*rc::gen::inRange(0, 7)) {
      case 0:
        return ClaimRequest{id, *gen_str(), *rc::gen::inRange<std::uint32_t>(1, kMaxBatch + 1),
                            absl::Microseconds(*rc::gen::inRange<std::int64_t>(0, 3'600'000'000))};
      case 1: {
        ClaimResponse m{id, {}};
        m.grants = *small_vec(rc::gen::exec([] {
          return WireGrant{*gen_run(),
                           *rc::gen::arbitrary<std::uint32_t>(),
                           *rc::gen::arbitrary<std::uint64_t>(),
                           *gen_duration(),
                           *gen_payload(),
                           *gen_duration()};
        }));
        return m;
      }
      case 2: {
        RenewRequest m{id, *gen_str(), {}};
        m.items = *small_vec(rc::gen::exec([] {
          return RenewItem{*gen_run(), *rc::gen::arbitrary<std::uint64_t>()};
        }));
        return m;
      }
      case 3:
        return RenewResponse{id, *small_vec(gen_verdict())};
      case 4: {
        CompleteRequest m{id, *gen_str(), {}};
        m.items = *small_vec(rc::gen::exec([] {
          return CompleteItem{*gen_run(), *rc::gen::arbitrary<std::uint64_t>(),
                              static_cast<RunStatus>(*rc::gen::inRange(0, 5)),
                              *rc::gen::arbitrary<std::int32_t>(), *gen_str()};
        }));
        return m;
      }
      case 5:
        return CompleteResponse{id, *small_vec(gen_verdict())};
      default:
        return ErrorMessage{id, *rc::gen::inRange<std::uint32_t>(0, 17), *gen_str()};
    }
  });
}

RC_GTEST_PROP(Wire, RoundTrip, ()) {
  const Message m = *gen_message();
  const std::string bytes = encode(m);
  auto size = frame_size(bytes);
  RC_ASSERT(size.ok());
  RC_ASSERT(*size == bytes.size());
  auto back = decode(bytes);
  RC_ASSERT(back.ok());
  RC_ASSERT(*back == m);
  RC_ASSERT(request_id_of(*back) == request_id_of(m));
}

// Every proper prefix and every extension is rejected, never over-read.
RC_GTEST_PROP(Wire, TruncationAndTrailingBytesAreErrors, ()) {
  const std::string bytes = encode(*gen_message());
  const auto cut = *rc::gen::inRange<std::size_t>(0, bytes.size());
  RC_ASSERT(!decode(std::string_view(bytes).substr(0, cut)).ok());
  RC_ASSERT(!decode(bytes + "\x01").ok());
}

// Random byte flips decode to an error or to some message; never crash.
RC_GTEST_PROP(Wire, CorruptionNeverCrashes, ()) {
  std::string bytes = encode(*gen_message());
  const auto flips = *rc::gen::inRange(1, 8);
  for (int i = 0; i < flips; ++i) {
    const auto pos = *rc::gen::inRange<std::size_t>(0, bytes.size());
    bytes[pos] = static_cast<char>(*rc::gen::arbitrary<std::uint8_t>());
  }
  (void)decode(bytes);
}

std::string message_of(std::string_view bytes) {
  return std::string(decode(bytes).status().message());
}

TEST(Wire, MalformedFramesNameTheProblem) {
  std::string good = encode(ClaimRequest{7, "w", 4, absl::Seconds(5)});
  std::string bad = good;
  bad[0] = 'X';
  EXPECT_NE(message_of(bad).find("header.magic"), std::string::npos);
  bad = good;
  bad[2] = 9;
  EXPECT_NE(message_of(bad).find("unsupported version 9"), std::string::npos);
  bad = good;
  bad[3] = 42;
  EXPECT_NE(message_of(bad).find("unknown message type 42"), std::string::npos);
  bad = good;
  bad[7] = 0x7f;  // length far beyond the limit
  EXPECT_NE(message_of(bad).find("exceeds the limit"), std::string::npos);
  EXPECT_NE(message_of(good + "zz").find("header.length"), std::string::npos);
  EXPECT_NE(
      message_of(encode(ClaimRequest{7, "w", 0, absl::Seconds(5)})).find("claim_request.max_runs"),
      std::string::npos);
  // A batch count larger than the remaining bytes is rejected before allocating.
  std::string huge = encode(RenewResponse{1, {}});
  huge[16] = '\xff';
  huge[17] = '\xff';
  EXPECT_NE(message_of(huge).find("renew_response.results"), std::string::npos);
  EXPECT_NE(message_of("").find("truncated"), std::string::npos);
}

}  // namespace
}  // namespace kairos::wire
