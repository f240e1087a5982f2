#include "core/kernel/wire.h"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "core/base/check.h"
#include "core/base/codec.h"
#include "core/kernel/value_codec.h"

namespace kairos::wire {

namespace {

constexpr std::size_t kMaxIdSize = 256;
constexpr std::size_t kMaxReasonSize = 4096;

MessageType type_of(const Message& m) { return static_cast<MessageType>(m.index() + 1); }

// type_of() relies on the variant's order matching MessageType's values.
template <MessageType t>
using AlternativeOf = std::variant_alternative_t<static_cast<std::size_t>(t) - 1, Message>;
static_assert(std::is_same_v<AlternativeOf<MessageType::kClaimRequest>, ClaimRequest>);
static_assert(std::is_same_v<AlternativeOf<MessageType::kClaimResponse>, ClaimResponse>);
static_assert(std::is_same_v<AlternativeOf<MessageType::kRenewRequest>, RenewRequest>);
static_assert(std::is_same_v<AlternativeOf<MessageType::kRenewResponse>, RenewResponse>);
static_assert(std::is_same_v<AlternativeOf<MessageType::kCompleteRequest>, CompleteRequest>);
static_assert(std::is_same_v<AlternativeOf<MessageType::kCompleteResponse>, CompleteResponse>);
static_assert(std::is_same_v<AlternativeOf<MessageType::kError>, ErrorMessage>);
static_assert(std::variant_size_v<Message> == static_cast<std::size_t>(MessageType::kError));

// Sizes the encoders write at least (core/base/codec.h): fixed-width fields,
// and an empty string or list as its u32 length alone.
constexpr std::size_t kU8 = 1, kU16 = 2, kU32 = 4, kU64 = 8, kI32 = 4;
constexpr std::size_t kTimeSize = 8, kDurationSize = 8, kEmptyStr = kU32, kEmptyList = kU32;
static_assert(kFrameHeaderSize == kU16 + kU8 + kU8 + kU32, "magic, version, type, length");
constexpr std::size_t kMinRunId = kEmptyStr + kU64 + kTimeSize;  // job_id, incarnation, nominal
// A payload (value_codec.h): a command is kind, argv, env, working_dir; an
// HTTP request is kind, method, url, headers, body. The smaller of the two.
constexpr std::size_t kMinPayload = std::min(kU8 + kEmptyList + kEmptyList + kEmptyStr,
                                             kU8 + 2 * kEmptyStr + kEmptyList + kEmptyStr);
constexpr std::size_t kMinGrant =
    kMinRunId + kU32 + kU64 + kDurationSize + kMinPayload + kDurationSize + kDurationSize + kU32;
constexpr std::size_t kMinRenewItem = kMinRunId + kU64;
constexpr std::size_t kMinCompleteItem = kMinRunId + kU64 + kU8 + kI32 + kEmptyStr + kEmptyStr;
constexpr std::size_t kMinVerdict = kU8 + kDurationSize + kEmptyStr;

// What the decoder assumes per element when it bounds a count by the bytes
// left (ByteReader::count), before allocating. An assumption above the
// encoders' minimum would refuse valid messages; one below only loosens the
// bound. (The grant's is looser than it could be; kept, since it decides
// which error a malformed frame gets.)
constexpr std::size_t kGrantBound = 46;
constexpr std::size_t kRenewItemBound = 28;
constexpr std::size_t kCompleteItemBound = 41;
constexpr std::size_t kVerdictBound = 13;
static_assert(kGrantBound > 0 && kGrantBound <= kMinGrant);
static_assert(kRenewItemBound == kMinRenewItem);
static_assert(kCompleteItemBound == kMinCompleteItem);
static_assert(kVerdictBound == kMinVerdict);
// A full batch of minimal grants fits in one frame: the frame limit never
// refuses a batch that kMaxBatch allows unless its strings are large.
static_assert(std::uint64_t{kMaxBatch} * kMinGrant <= kMaxFrameBody);
static_assert(kMaxFrameBody <= std::numeric_limits<std::uint32_t>::max());

// Field names are built lazily only on error, so decoding stays cheap.
struct Ctx {
  std::string_view msg;
  std::string path(std::string_view field, std::int64_t index = -1) const {
    if (index < 0) return absl::StrCat("wire: ", absl_sv(msg), ".", absl_sv(field));
    return absl::StrCat("wire: ", absl_sv(msg), "[", index, "].", absl_sv(field));
  }
};

absl::Status prefix(absl::Status s, std::string_view where) {
  if (s.ok()) return s;
  return absl::InvalidArgumentError(absl::StrCat(absl_sv(where), ": ", s.message()));
}

#define WIRE_READ(lhs, expr, where)                              \
  do {                                                           \
    auto wire_r_ = (expr);                                       \
    if (!wire_r_.ok()) return prefix(wire_r_.status(), (where)); \
    lhs = std::move(wire_r_).value();                            \
  } while (0)

absl::StatusOr<std::string> bounded_str(ByteReader& r, std::size_t max, std::string_view where) {
  KAIROS_ASSIGN_OR_RETURN(auto s, r.str("string"));
  if (s.size() > max)
    return absl::InvalidArgumentError(
        absl::StrCat("string of ", s.size(), " bytes exceeds the limit ", max));
  (void)where;
  return s;
}

void put_run(ByteWriter& w, const RunId& id) {
  const std::size_t before = w.size();
  w.str(id.job_id).u64(id.incarnation).time(id.nominal);
  KAIROS_CHECK(w.size() - before >= kMinRunId);
}
absl::StatusOr<RunId> get_run(ByteReader& r) {
  RunId id;
  KAIROS_ASSIGN_OR_RETURN(id.job_id, bounded_str(r, kMaxIdSize, "job_id"));
  KAIROS_ASSIGN_OR_RETURN(id.incarnation, r.u64("incarnation"));
  KAIROS_ASSIGN_OR_RETURN(id.nominal, r.time("nominal"));
  return id;
}

void put_verdicts(ByteWriter& w, const std::vector<WireVerdict>& v) {
  w.u32(static_cast<std::uint32_t>(v.size()));
  for (const auto& x : v) {
    const std::size_t before = w.size();
    w.u8(static_cast<std::uint8_t>(x.verdict)).duration(x.lease_ttl).str(x.reason);
    KAIROS_CHECK(w.size() - before >= kMinVerdict);
  }
}
absl::StatusOr<std::vector<WireVerdict>> get_verdicts(ByteReader& r, std::string_view msg) {
  std::vector<WireVerdict> out;
  std::uint32_t n;
  WIRE_READ(n, r.count("count", kMaxBatch, kVerdictBound),
            absl::StrCat("wire: ", absl_sv(msg), ".results"));
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::string where = absl::StrCat("wire: ", absl_sv(msg), ".results[", i, "]");
    WireVerdict v;
    std::uint8_t verdict;
    WIRE_READ(verdict, r.u8("verdict"), where);
    if (verdict > static_cast<std::uint8_t>(WriteVerdict::kUnknownRun))
      return absl::InvalidArgumentError(absl::StrCat(where, ".verdict: unknown value ", verdict));
    v.verdict = static_cast<WriteVerdict>(verdict);
    WIRE_READ(v.lease_ttl, r.duration("lease_ttl"), where);
    WIRE_READ(v.reason, bounded_str(r, kMaxReasonSize, "reason"), absl::StrCat(where, ".reason"));
    out.push_back(std::move(v));
  }
  return out;
}

// Completion items, in a CompleteRequest and in a ClaimRequest's reports:
// the count, then each item.
void put_complete_items(ByteWriter& w, const std::vector<CompleteItem>& items) {
  w.u32(static_cast<std::uint32_t>(items.size()));
  for (const auto& i : items) {
    const std::size_t before = w.size();
    put_run(w, i.run);
    w.u64(i.token).u8(static_cast<std::uint8_t>(i.outcome)).i32(i.exit_code).str(i.detail);
    w.str(i.output);
    KAIROS_CHECK(w.size() - before >= kMinCompleteItem);
  }
}
absl::StatusOr<std::vector<CompleteItem>> get_complete_items(ByteReader& r, std::string_view list) {
  std::vector<CompleteItem> out;
  std::uint32_t n;
  WIRE_READ(n, r.count("count", kMaxBatch, kCompleteItemBound),
            absl::StrCat("wire: ", absl_sv(list)));
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::string where = absl::StrCat("wire: ", absl_sv(list), "[", i, "]");
    CompleteItem item;
    WIRE_READ(item.run, get_run(r), where);
    WIRE_READ(item.token, r.u64("token"), where);
    std::uint8_t outcome;
    WIRE_READ(outcome, r.u8("outcome"), where);
    if (outcome > static_cast<std::uint8_t>(RunStatus::kStopped))
      return absl::InvalidArgumentError(absl::StrCat(where, ".outcome: unknown value ", outcome));
    item.outcome = static_cast<RunStatus>(outcome);
    WIRE_READ(item.exit_code, r.i32("exit_code"), where);
    WIRE_READ(item.detail, bounded_str(r, kMaxReasonSize, ""), absl::StrCat(where, ".detail"));
    WIRE_READ(item.output, bounded_str(r, kMaxRunOutputSize, ""), absl::StrCat(where, ".output"));
    out.push_back(std::move(item));
  }
  return out;
}

struct BodyEncoder {
  ByteWriter& w;
  void operator()(const ClaimRequest& m) const {
    w.u64(m.request_id).str(m.worker_id).u32(m.max_runs).duration(m.wait).u8(m.accepts);
    put_complete_items(w, m.reports);
  }
  void operator()(const ClaimResponse& m) const {
    w.u64(m.request_id).u32(static_cast<std::uint32_t>(m.grants.size()));
    for (const auto& g : m.grants) {
      const std::size_t before = w.size();
      put_run(w, g.run);
      w.u32(g.attempt).u64(g.token).duration(g.lease_ttl);
      encode_payload(w, g.payload);
      w.duration(g.timeout).duration(g.late_by).u32(g.occurrences);
      KAIROS_CHECK(w.size() - before >= kMinGrant);
    }
    put_verdicts(w, m.results);
  }
  void operator()(const RenewRequest& m) const {
    w.u64(m.request_id).str(m.worker_id).u32(static_cast<std::uint32_t>(m.items.size()));
    for (const auto& i : m.items) {
      const std::size_t before = w.size();
      put_run(w, i.run);
      w.u64(i.token);
      KAIROS_CHECK(w.size() - before >= kMinRenewItem);
    }
  }
  void operator()(const RenewResponse& m) const {
    w.u64(m.request_id);
    put_verdicts(w, m.results);
  }
  void operator()(const CompleteRequest& m) const {
    w.u64(m.request_id).str(m.worker_id);
    put_complete_items(w, m.items);
  }
  void operator()(const CompleteResponse& m) const {
    w.u64(m.request_id);
    put_verdicts(w, m.results);
  }
  void operator()(const ErrorMessage& m) const { w.u64(m.request_id).u32(m.code).str(m.message); }
};

absl::StatusOr<Message> decode_claim_request(ByteReader& r) {
  ClaimRequest m;
  WIRE_READ(m.request_id, r.u64("request_id"), "wire: claim_request");
  WIRE_READ(m.worker_id, bounded_str(r, kMaxIdSize, ""), "wire: claim_request.worker_id");
  WIRE_READ(m.max_runs, r.u32("max_runs"), "wire: claim_request");
  if (m.max_runs == 0 || m.max_runs > kMaxBatch)
    return absl::InvalidArgumentError(absl::StrCat("wire: claim_request.max_runs: must be in [1, ",
                                                   kMaxBatch, "], got ", m.max_runs));
  WIRE_READ(m.wait, r.duration("wait"), "wire: claim_request");
  if (m.wait < absl::ZeroDuration() || m.wait > absl::Hours(1))
    return absl::InvalidArgumentError("wire: claim_request.wait: must be in [0, 1h]");
  WIRE_READ(m.accepts, r.u8("accepts"), "wire: claim_request");
  if (m.accepts == 0 || m.accepts > kAcceptAll)
    return absl::InvalidArgumentError(
        absl::StrCat("wire: claim_request.accepts: must name at least one payload kind (1 "
                     "command, 2 http, 3 both), got ",
                     m.accepts));
  KAIROS_ASSIGN_OR_RETURN(m.reports, get_complete_items(r, "claim_request.reports"));
  return Message(std::move(m));
}

absl::StatusOr<Message> decode_claim_response(ByteReader& r) {
  ClaimResponse m;
  WIRE_READ(m.request_id, r.u64("request_id"), "wire: claim_response");
  std::uint32_t n;
  WIRE_READ(n, r.count("count", kMaxBatch, kGrantBound), "wire: claim_response.grants");
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::string where = absl::StrCat("wire: claim_response.grants[", i, "]");
    WireGrant g;
    WIRE_READ(g.run, get_run(r), where);
    WIRE_READ(g.attempt, r.u32("attempt"), where);
    WIRE_READ(g.token, r.u64("token"), where);
    WIRE_READ(g.lease_ttl, r.duration("lease_ttl"), where);
    WIRE_READ(g.payload, decode_payload(r), where);
    WIRE_READ(g.timeout, r.duration("timeout"), where);
    WIRE_READ(g.late_by, r.duration("late_by"), where);
    if (g.late_by < absl::ZeroDuration() || g.late_by == absl::InfiniteDuration())
      return absl::InvalidArgumentError(absl::StrCat(where, ".late_by: must be >= 0 and finite"));
    WIRE_READ(g.occurrences, r.u32("occurrences"), where);
    m.grants.push_back(std::move(g));
  }
  KAIROS_ASSIGN_OR_RETURN(m.results, get_verdicts(r, "claim_response"));
  return Message(std::move(m));
}

absl::StatusOr<Message> decode_renew_request(ByteReader& r) {
  RenewRequest m;
  WIRE_READ(m.request_id, r.u64("request_id"), "wire: renew_request");
  WIRE_READ(m.worker_id, bounded_str(r, kMaxIdSize, ""), "wire: renew_request.worker_id");
  std::uint32_t n;
  WIRE_READ(n, r.count("count", kMaxBatch, kRenewItemBound), "wire: renew_request.items");
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::string where = absl::StrCat("wire: renew_request.items[", i, "]");
    RenewItem item;
    WIRE_READ(item.run, get_run(r), where);
    WIRE_READ(item.token, r.u64("token"), where);
    m.items.push_back(std::move(item));
  }
  return Message(std::move(m));
}

absl::StatusOr<Message> decode_complete_request(ByteReader& r) {
  CompleteRequest m;
  WIRE_READ(m.request_id, r.u64("request_id"), "wire: complete_request");
  WIRE_READ(m.worker_id, bounded_str(r, kMaxIdSize, ""), "wire: complete_request.worker_id");
  KAIROS_ASSIGN_OR_RETURN(m.items, get_complete_items(r, "complete_request.items"));
  return Message(std::move(m));
}

absl::StatusOr<Message> decode_error(ByteReader& r) {
  ErrorMessage m;
  WIRE_READ(m.request_id, r.u64("request_id"), "wire: error");
  WIRE_READ(m.code, r.u32("code"), "wire: error");
  if (m.code > 16)
    return absl::InvalidArgumentError(
        absl::StrCat("wire: error.code: unknown status code ", m.code));
  WIRE_READ(m.message, bounded_str(r, kMaxReasonSize, ""), "wire: error.message");
  return Message(std::move(m));
}

// RenewResponse and CompleteResponse share one shape: the request id, then
// one verdict per item of the request.
template <typename Response>
absl::StatusOr<Message> decode_verdict_response(ByteReader& r, std::string_view name) {
  Response x;
  WIRE_READ(x.request_id, r.u64("request_id"), absl::StrCat("wire: ", absl_sv(name)));
  KAIROS_ASSIGN_OR_RETURN(x.results, get_verdicts(r, name));
  return Message(std::move(x));
}

#undef WIRE_READ

}  // namespace

std::string encode(const Message& message) {
  ByteWriter w;
  w.u16(kMagic).u8(kWireVersion).u8(static_cast<std::uint8_t>(type_of(message))).u32(0);
  std::visit(BodyEncoder{w}, message);
  KAIROS_CHECK(w.size() >= kFrameHeaderSize);
  const std::size_t body = w.size() - kFrameHeaderSize;
  KAIROS_CHECK_MSG(body <= kMaxFrameBody, "wire message larger than kMaxFrameBody");
  w.patch_u32(4, static_cast<std::uint32_t>(body));
  return std::move(w).take();
}

absl::StatusOr<std::size_t> frame_size(std::string_view header) {
  if (header.size() < kFrameHeaderSize)
    return absl::InvalidArgumentError(absl::StrCat(
        "wire: header: truncated (need ", kFrameHeaderSize, " bytes, have ", header.size(), ")"));
  ByteReader r(header.substr(0, kFrameHeaderSize));
  const std::uint16_t magic = *r.u16("magic");
  const std::uint8_t version = *r.u8("version");
  const std::uint8_t type = *r.u8("type");
  const std::uint32_t length = *r.u32("length");
  if (magic != kMagic)
    return absl::InvalidArgumentError(absl::StrCat(
        "wire: header.magic: expected 0x", absl::Hex(kMagic), ", got 0x", absl::Hex(magic)));
  if (version != kWireVersion)
    return absl::InvalidArgumentError(absl::StrCat("wire: header.version: unsupported version ",
                                                   version, " (this build speaks ", kWireVersion,
                                                   ")"));
  if (type < 1 || type > static_cast<std::uint8_t>(MessageType::kError))
    return absl::InvalidArgumentError(
        absl::StrCat("wire: header.type: unknown message type ", type));
  if (length > kMaxFrameBody)
    return absl::InvalidArgumentError(
        absl::StrCat("wire: header.length: ", length, " exceeds the limit ", kMaxFrameBody));
  return kFrameHeaderSize + length;
}

absl::StatusOr<Message> decode(std::string_view frame) {
  KAIROS_ASSIGN_OR_RETURN(std::size_t size, frame_size(frame));
  if (frame.size() != size)
    return absl::InvalidArgumentError(
        absl::StrCat("wire: header.length: frame has ", frame.size() - kFrameHeaderSize,
                     " body bytes, header says ", size - kFrameHeaderSize));
  const auto type = static_cast<MessageType>(static_cast<std::uint8_t>(frame[3]));
  ByteReader r(frame.substr(kFrameHeaderSize), kMaxFrameBody);
  absl::StatusOr<Message> m;
  std::string_view name;
  switch (type) {
    case MessageType::kClaimRequest:
      m = decode_claim_request(r);
      name = "claim_request";
      break;
    case MessageType::kClaimResponse:
      m = decode_claim_response(r);
      name = "claim_response";
      break;
    case MessageType::kRenewRequest:
      m = decode_renew_request(r);
      name = "renew_request";
      break;
    case MessageType::kRenewResponse:
      m = decode_verdict_response<RenewResponse>(r, "renew_response");
      name = "renew_response";
      break;
    case MessageType::kCompleteRequest:
      m = decode_complete_request(r);
      name = "complete_request";
      break;
    case MessageType::kCompleteResponse:
      m = decode_verdict_response<CompleteResponse>(r, "complete_response");
      name = "complete_response";
      break;
    case MessageType::kError:
      m = decode_error(r);
      name = "error";
      break;
  }
  if (!m.ok()) return m.status();
  KAIROS_RETURN_IF_ERROR(r.expect_end(absl::StrCat("wire: ", absl_sv(name))));
  return m;
}

std::uint64_t request_id_of(const Message& message) {
  return std::visit([](const auto& m) { return m.request_id; }, message);
}

}  // namespace kairos::wire
