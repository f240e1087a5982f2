// The connection protocol of the TCP transport: its frames and the
// handshake that opens every connection.
//
// Purpose. A worker connects to a server over TCP; before any wire message
// (core/kernel/wire.h) flows, the two ends agree on the wire version, the
// server learns the worker's id and, when the server requires it, each end
// proves it knows the shared worker secret, without the secret ever crossing
// the wire. This header is the whole protocol as pure functions and two
// state machines (no sockets), so it is unit-tested and fuzzed alone; the
// transport (prod/net/tcp_transport.h) only moves their frames.
//
// Frames. Every frame on a connection, handshake or data, is
//   magic   u16  0x544B ("KT", little-endian on the wire)
//   version u8   kNetVersion
//   type    u8   FrameType
//   length  u32  bytes of body that follow
//   body
// A data frame's body is one transport message, carried unchanged: any
// 0..kMaxMessageSize bytes the Transport contract allows (in practice one
// wire frame), so a message arrives exactly as it was sent. Handshake bodies
// are at most kMaxHandshakeBody bytes. net_frame_size() judges a header
// before its body is read: a bad magic, version or type, or a length above
// the type's limit, is an error and the reader closes the connection.
//
// Handshake (W = worker, S = server):
//   W -> S  hello      wire version, worker id, 32-byte worker nonce
//   S -> W  challenge  server id, 32-byte server nonce       (secret required)
//   W -> S  proof      HMAC-SHA256(secret, "kairos worker proof v1" | transcript)
//   S -> W  welcome    server id, and with a secret
//                      HMAC-SHA256(secret, "kairos server proof v1" | transcript)
//   or S -> W refusal  a reason, after which the server closes
// where transcript = str(worker id) | str(server id) | worker nonce | server
// nonce (str = u32 length + bytes). Without a secret the server answers the
// hello with a welcome at once. Both nonces are fresh random bytes per
// connection, so a recorded proof is worthless on another connection, and
// the two labels differ, so neither side can reflect the other's proof. A
// worker that holds a secret accepts only a welcome that proves the same
// secret (otherwise any listener could hand it commands to run); a worker
// without one cannot answer a challenge and says so. MACs are compared in
// constant time (CRYPTO_memcmp).
//
// Strictness. decode_handshake() never reads past its input and rejects a
// bad header, a data frame, a length mismatch, a bad nonce or MAC size, an
// id that is not 1..200 printable ASCII characters without spaces, quotes,
// '=' or '\', a reason that is not printable ASCII, and trailing bytes, with
// a Status naming the field. It is fuzzed (tests/prod/net/handshake_test.cc
// feeds it random and mutated frames).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "core/ports/transport.h"

namespace kairos::net {

inline constexpr std::uint16_t kNetMagic = 0x544B;
inline constexpr std::uint8_t kNetVersion = 1;
inline constexpr std::size_t kNetHeaderSize = 8;
inline constexpr std::uint32_t kMaxHandshakeBody = 1024;
inline constexpr std::size_t kNonceSize = 32;
inline constexpr std::size_t kMacSize = 32;
inline constexpr std::size_t kMaxReasonSize = 400;
inline constexpr std::size_t kMaxPeerIdSize = 200;  // as core's kMaxWorkerIdSize
// A secret file holds at least this many bytes (after a trailing newline is
// dropped) and at most kMaxSecretSize.
inline constexpr std::size_t kMinSecretSize = 16;
inline constexpr std::size_t kMaxSecretSize = 4096;

enum class FrameType : std::uint8_t {
  kHello = 1,
  kChallenge = 2,
  kProof = 3,
  kWelcome = 4,
  kRefusal = 5,
  kData = 6,
};

// From at least kNetHeaderSize bytes: the whole frame's size, or an error
// naming what is wrong with the header.
absl::StatusOr<std::size_t> net_frame_size(std::string_view header);
FrameType net_frame_type(std::string_view header);  // header already judged
// The header of a data frame carrying `message_size` bytes (<= kMaxMessageSize).
std::string data_frame_header(std::size_t message_size);

struct Hello {
  std::uint8_t wire_version = 0;
  std::string worker_id;
  std::string nonce;  // kNonceSize bytes
  friend bool operator==(const Hello&, const Hello&) = default;
};
struct Challenge {
  std::string server_id;
  std::string nonce;  // kNonceSize bytes
  friend bool operator==(const Challenge&, const Challenge&) = default;
};
struct Proof {
  std::string mac;  // kMacSize bytes
  friend bool operator==(const Proof&, const Proof&) = default;
};
struct Welcome {
  std::string server_id;
  std::string mac;  // empty (no secret) or kMacSize bytes
  friend bool operator==(const Welcome&, const Welcome&) = default;
};
struct Refusal {
  std::string reason;  // printable ASCII, at most kMaxReasonSize
  friend bool operator==(const Refusal&, const Refusal&) = default;
};
using HandshakeMessage = std::variant<Hello, Challenge, Proof, Welcome, Refusal>;

std::string encode_handshake(const HandshakeMessage& message);
absl::StatusOr<HandshakeMessage> decode_handshake(std::string_view frame);

// True for 1..kMaxPeerIdSize printable ASCII bytes without ' ', '"', '=', '\'.
bool valid_peer_name(std::string_view id);

// The two proofs (see the header comment).
std::string worker_proof(std::string_view secret, std::string_view worker_id,
                         std::string_view server_id, std::string_view worker_nonce,
                         std::string_view server_nonce);
std::string server_proof(std::string_view secret, std::string_view worker_id,
                         std::string_view server_id, std::string_view worker_nonce,
                         std::string_view server_nonce);
// Constant-time equality of two byte strings of the same length (false when
// the lengths differ; the length is not secret).
bool same_mac(std::string_view a, std::string_view b);
// kNonceSize bytes from OpenSSL's CSPRNG; aborts if it fails (no entropy is a
// machine fault, not an input error).
std::string random_nonce();

// Reads a worker secret file: at most kMaxSecretSize bytes, a single trailing
// "\n" (or "\r\n") dropped, at least kMinSecretSize bytes left, and not
// readable by others (mode o+r refused). Errors name the file and the reason.
absl::StatusOr<std::string> read_secret_file(const std::string& path);
// The --worker-secret-file flag of `kairos server` and `kairos worker`:
// std::nullopt when `path` is empty, else the secret read_secret_file()
// gives, its error prefixed with the flag's name.
absl::StatusOr<std::optional<std::string>> secret_from_flag(const std::string& path);

// What one handshake step produced.
struct HandshakeStep {
  enum class State { kContinue, kDone, kFailed };
  State state = State::kContinue;
  std::vector<std::string> send;  // frames to write, in order, before any close
  std::string error;              // kFailed: why (for the log)
};

// The server's side: feed it each frame the worker sends.
class ServerHandshake {
 public:
  // `nonce`: kNonceSize fresh random bytes (random_nonce(); fixed in tests).
  ServerHandshake(std::string server_id, std::optional<std::string> secret, std::string nonce);
  HandshakeStep on_frame(std::string_view frame);
  // The worker's id, once its hello was accepted.
  const std::string& worker_id() const { return worker_id_; }

 private:
  HandshakeStep refuse(std::string reason);
  enum class Phase { kHello, kProof, kDone } phase_ = Phase::kHello;
  std::string server_id_;
  std::optional<std::string> secret_;
  std::string nonce_;
  std::string worker_id_;
  std::string worker_nonce_;
};

// The worker's side: send hello() first, then feed it each frame the server
// sends.
class ClientHandshake {
 public:
  ClientHandshake(std::string worker_id, std::optional<std::string> secret, std::string nonce);
  std::string hello() const;
  HandshakeStep on_frame(std::string_view frame);
  const std::string& server_id() const { return server_id_; }

 private:
  HandshakeStep fail(std::string error);
  enum class Phase { kReply, kWelcome, kDone } phase_ = Phase::kReply;
  std::string worker_id_;
  std::optional<std::string> secret_;
  std::string nonce_;
  std::string server_id_;
  std::string server_nonce_;
};

}  // namespace kairos::net
