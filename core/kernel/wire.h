// Wire protocol between workers and scheduler nodes.
//
// Framing. Every message is one frame:
//   magic   u16  0x4B53 ("KS", little-endian on the wire)
//   version u8   kWireVersion
//   type    u8   MessageType
//   length  u32  bytes of body that follow (<= kMaxFrameBody)
//   body         the message's fields, core/base/codec.h encodings
// A stream adapter reads kFrameHeaderSize bytes, calls frame_size() to learn
// the whole frame's size, then decode() on exactly that many bytes.
//
// Strictness. decode() never reads past its input, and rejects a bad magic,
// an unknown version or type, a length that disagrees with the input, an
// oversized batch or string, an out-of-range enum and trailing bytes, with a
// Status naming what is wrong ("wire: claim_response.grants[2].token:
// truncated ..."). It is a libFuzzer target (tests/fuzz/wire_decoder_fuzz.cc).
//
// Semantics. Every request carries a request id chosen by the worker; the
// node echoes it. Transport may lose, duplicate and reorder frames, so:
// claims are answered at most once per node-side attempt and a worker ignores
// responses it is not waiting for; renew and complete are idempotent per
// (run, token) and the worker retries them with the same token.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/kernel/job_store.h"
#include "core/kernel/records.h"
#include "core/kernel/run_ref.h"
#include "core/ports/payload.h"
#include "core/ports/transport.h"

namespace kairos::wire {

inline constexpr std::uint16_t kMagic = 0x4B53;
// 2: grants carry late_by and occurrences, completions carry output.
// 3: a claim carries the worker's finished runs' reports and its answer their
//    verdicts (one message and one store transaction for both).
inline constexpr std::uint8_t kWireVersion = 3;
inline constexpr std::size_t kFrameHeaderSize = 8;
inline constexpr std::uint32_t kMaxFrameBody = 16u << 20;
// Every frame fits one transport message (core/ports/transport.h).
static_assert(kFrameHeaderSize + kMaxFrameBody <= kMaxMessageSize,
              "a wire frame must fit in one transport message");
inline constexpr std::uint32_t kMaxBatch = 1024;

enum class MessageType : std::uint8_t {
  kClaimRequest = 1,
  kClaimResponse = 2,
  kRenewRequest = 3,
  kRenewResponse = 4,
  kCompleteRequest = 5,
  kCompleteResponse = 6,
  kError = 7,
};

// A verdict on one renew or complete item.
struct WireVerdict {
  WriteVerdict verdict = WriteVerdict::kAccepted;
  absl::Duration lease_ttl = absl::ZeroDuration();  // renew accepted: the new lease length
  std::string reason;
  friend bool operator==(const WireVerdict&, const WireVerdict&) = default;
};

struct ClaimRequest {
  std::uint64_t request_id = 0;
  std::string worker_id;
  std::uint32_t max_runs = 1;                  // 1..kMaxBatch
  absl::Duration wait = absl::ZeroDuration();  // long-poll bound; 0: answer at once
  // Payload kinds the worker runs (kAcceptCommand | kAcceptHttp); decode
  // refuses 0 and unknown bits.
  std::uint8_t accepts = kAcceptAll;
  // Completion reports carried with the claim (at most kMaxBatch): the node
  // records them and takes the claim in one transaction, reports first, and
  // answers at once (a claim with reports is never parked, whatever `wait`
  // says), with one verdict per report in ClaimResponse::results. The same
  // idempotency as CompleteRequest: a report retried under its token is
  // accepted once.
  std::vector<CompleteItem> reports;
  friend bool operator==(const ClaimRequest&, const ClaimRequest&) = default;
};

struct WireGrant {
  RunId run;
  std::uint32_t attempt = 1;
  std::uint64_t token = 0;
  absl::Duration lease_ttl;  // store-clock length of the lease granted
  Payload payload;
  absl::Duration timeout;  // the job's own per-run timeout
  // The run's lateness (RunRecord::lateness: >= 0, zero for manual runs) and
  // the occurrences it stands for (RunRecord::stands_for: 0 for a manual
  // run, more than 1 when run-once folded a backlog into it); the worker
  // hands them to the runner as RunRequest::late_by / occurrences.
  absl::Duration late_by = absl::ZeroDuration();
  std::uint32_t occurrences = 1;
  friend bool operator==(const WireGrant&, const WireGrant&) = default;
};

struct ClaimResponse {
  std::uint64_t request_id = 0;
  std::vector<WireGrant> grants;
  // One verdict per ClaimRequest::reports item, same order (empty when the
  // claim carried none).
  std::vector<WireVerdict> results;
  friend bool operator==(const ClaimResponse&, const ClaimResponse&) = default;
};

// Renew and complete items are the job store's own (run, token) types
// (core/kernel/run_ref.h): the node hands them to the store as decoded.
struct RenewRequest {
  std::uint64_t request_id = 0;
  std::string worker_id;
  std::vector<RenewItem> items;
  friend bool operator==(const RenewRequest&, const RenewRequest&) = default;
};

struct RenewResponse {
  std::uint64_t request_id = 0;
  std::vector<WireVerdict> results;  // one per request item, same order
  friend bool operator==(const RenewResponse&, const RenewResponse&) = default;
};

struct CompleteRequest {
  std::uint64_t request_id = 0;
  std::string worker_id;
  std::vector<CompleteItem> items;
  friend bool operator==(const CompleteRequest&, const CompleteRequest&) = default;
};
struct CompleteResponse {
  std::uint64_t request_id = 0;
  std::vector<WireVerdict> results;
  friend bool operator==(const CompleteResponse&, const CompleteResponse&) = default;
};

// A request the node could not serve (malformed, store unavailable, outcome
// unknown after its retries). `code` is an absl::StatusCode.
struct ErrorMessage {
  std::uint64_t request_id = 0;
  std::uint32_t code = 0;
  std::string message;
  friend bool operator==(const ErrorMessage&, const ErrorMessage&) = default;
};

using Message = std::variant<ClaimRequest, ClaimResponse, RenewRequest, RenewResponse,
                             CompleteRequest, CompleteResponse, ErrorMessage>;

std::string encode(const Message& message);
absl::StatusOr<Message> decode(std::string_view frame);

// From at least kFrameHeaderSize bytes: the size of the whole frame, or an
// error for a bad magic/version/type/length.
absl::StatusOr<std::size_t> frame_size(std::string_view header);

std::uint64_t request_id_of(const Message& message);

}  // namespace kairos::wire
