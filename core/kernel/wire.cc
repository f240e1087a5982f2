#include "core/kernel/wire.h"

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
  w.str(id.job_id).u64(id.incarnation).time(id.nominal);
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
  for (const auto& x : v)
    w.u8(static_cast<std::uint8_t>(x.verdict)).duration(x.lease_ttl).str(x.reason);
}
absl::StatusOr<std::vector<WireVerdict>> get_verdicts(ByteReader& r, std::string_view msg) {
  std::vector<WireVerdict> out;
  std::uint32_t n;
  WIRE_READ(n, r.count("count", kMaxBatch, 13), absl::StrCat("wire: ", absl_sv(msg), ".results"));
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

struct BodyEncoder {
  ByteWriter& w;
  void operator()(const ClaimRequest& m) const {
    w.u64(m.request_id).str(m.worker_id).u32(m.max_runs).duration(m.wait);
  }
  void operator()(const ClaimResponse& m) const {
    w.u64(m.request_id).u32(static_cast<std::uint32_t>(m.grants.size()));
    for (const auto& g : m.grants) {
      put_run(w, g.run);
      w.u32(g.attempt).u64(g.token).duration(g.lease_ttl);
      encode_payload(w, g.payload);
      w.duration(g.timeout);
    }
  }
  void operator()(const RenewRequest& m) const {
    w.u64(m.request_id).str(m.worker_id).u32(static_cast<std::uint32_t>(m.items.size()));
    for (const auto& i : m.items) {
      put_run(w, i.run);
      w.u64(i.token);
    }
  }
  void operator()(const RenewResponse& m) const {
    w.u64(m.request_id);
    put_verdicts(w, m.results);
  }
  void operator()(const CompleteRequest& m) const {
    w.u64(m.request_id).str(m.worker_id).u32(static_cast<std::uint32_t>(m.items.size()));
    for (const auto& i : m.items) {
      put_run(w, i.run);
      w.u64(i.token).u8(static_cast<std::uint8_t>(i.outcome)).i32(i.exit_code).str(i.detail);
    }
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
  return Message(std::move(m));
}

absl::StatusOr<Message> decode_claim_response(ByteReader& r) {
  ClaimResponse m;
  WIRE_READ(m.request_id, r.u64("request_id"), "wire: claim_response");
  std::uint32_t n;
  WIRE_READ(n, r.count("count", kMaxBatch, 46), "wire: claim_response.grants");
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::string where = absl::StrCat("wire: claim_response.grants[", i, "]");
    WireGrant g;
    WIRE_READ(g.run, get_run(r), where);
    WIRE_READ(g.attempt, r.u32("attempt"), where);
    WIRE_READ(g.token, r.u64("token"), where);
    WIRE_READ(g.lease_ttl, r.duration("lease_ttl"), where);
    WIRE_READ(g.payload, decode_payload(r), where);
    WIRE_READ(g.timeout, r.duration("timeout"), where);
    m.grants.push_back(std::move(g));
  }
  return Message(std::move(m));
}

absl::StatusOr<Message> decode_renew_request(ByteReader& r) {
  RenewRequest m;
  WIRE_READ(m.request_id, r.u64("request_id"), "wire: renew_request");
  WIRE_READ(m.worker_id, bounded_str(r, kMaxIdSize, ""), "wire: renew_request.worker_id");
  std::uint32_t n;
  WIRE_READ(n, r.count("count", kMaxBatch, 28), "wire: renew_request.items");
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
  std::uint32_t n;
  WIRE_READ(n, r.count("count", kMaxBatch, 37), "wire: complete_request.items");
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::string where = absl::StrCat("wire: complete_request.items[", i, "]");
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
    m.items.push_back(std::move(item));
  }
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

#undef WIRE_READ

}  // namespace

std::string encode(const Message& message) {
  ByteWriter w;
  w.u16(kMagic).u8(kWireVersion).u8(static_cast<std::uint8_t>(type_of(message))).u32(0);
  std::visit(BodyEncoder{w}, message);
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
    case MessageType::kRenewResponse: {
      RenewResponse x;
      name = "renew_response";
      auto id = r.u64("request_id");
      if (!id.ok()) {
        m = prefix(id.status(), "wire: renew_response");
        break;
      }
      x.request_id = *id;
      auto v = get_verdicts(r, name);
      if (!v.ok()) {
        m = v.status();
        break;
      }
      x.results = std::move(*v);
      m = Message(std::move(x));
      break;
    }
    case MessageType::kCompleteRequest:
      m = decode_complete_request(r);
      name = "complete_request";
      break;
    case MessageType::kCompleteResponse: {
      CompleteResponse x;
      name = "complete_response";
      auto id = r.u64("request_id");
      if (!id.ok()) {
        m = prefix(id.status(), "wire: complete_response");
        break;
      }
      x.request_id = *id;
      auto v = get_verdicts(r, name);
      if (!v.ok()) {
        m = v.status();
        break;
      }
      x.results = std::move(*v);
      m = Message(std::move(x));
      break;
    }
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
