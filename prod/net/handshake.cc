#include "prod/net/handshake.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "core/base/check.h"
#include "core/base/codec.h"
#include "core/base/text.h"
#include "core/kernel/wire.h"

namespace kairos::net {
namespace {

constexpr std::string_view kWorkerLabel = "kairos worker proof v1";
constexpr std::string_view kServerLabel = "kairos server proof v1";

std::uint32_t body_limit(FrameType type) {
  return type == FrameType::kData ? static_cast<std::uint32_t>(kMaxMessageSize) : kMaxHandshakeBody;
}

std::string frame(FrameType type, std::string_view body) {
  ByteWriter w;
  w.u16(kNetMagic).u8(kNetVersion).u8(static_cast<std::uint8_t>(type));
  w.u32(static_cast<std::uint32_t>(body.size()));
  w.raw(body);
  return std::move(w).take();
}

absl::Status check_name(std::string_view field, std::string_view id) {
  if (!valid_peer_name(id))
    return absl::InvalidArgumentError(absl::StrCat(
        "handshake: ", absl_sv(field),
        ": expected 1..200 printable ASCII characters without spaces, quotes, '=' or '\\', got '",
        excerpt(id), "'"));
  return absl::OkStatus();
}

absl::Status check_size(std::string_view field, std::string_view bytes, std::size_t size) {
  if (bytes.size() != size)
    return absl::InvalidArgumentError(absl::StrCat("handshake: ", absl_sv(field), ": expected ",
                                                   size, " bytes, got ", bytes.size()));
  return absl::OkStatus();
}

std::string mac(std::string_view label, std::string_view secret, std::string_view worker_id,
                std::string_view server_id, std::string_view worker_nonce,
                std::string_view server_nonce) {
  ByteWriter w;
  w.raw(label).str(worker_id).str(server_id).raw(worker_nonce).raw(server_nonce);
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int out_len = 0;
  const unsigned char* ok =
      HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
           reinterpret_cast<const unsigned char*>(w.data().data()), w.data().size(), out, &out_len);
  KAIROS_CHECK_MSG(ok != nullptr && out_len == kMacSize, "HMAC-SHA256 failed");
  return std::string(reinterpret_cast<const char*>(out), out_len);
}

}  // namespace

absl::StatusOr<std::size_t> net_frame_size(std::string_view header) {
  if (header.size() < kNetHeaderSize)
    return absl::InvalidArgumentError(absl::StrCat("net: header: truncated (need ", kNetHeaderSize,
                                                   " bytes, have ", header.size(), ")"));
  ByteReader r(header.substr(0, kNetHeaderSize));
  const std::uint16_t magic = *r.u16("magic");
  const std::uint8_t version = *r.u8("version");
  const std::uint8_t type = *r.u8("type");
  const std::uint32_t length = *r.u32("length");
  if (magic != kNetMagic)
    return absl::InvalidArgumentError(absl::StrCat(
        "net: header.magic: expected 0x", absl::Hex(kNetMagic), ", got 0x", absl::Hex(magic)));
  if (version != kNetVersion)
    return absl::InvalidArgumentError(absl::StrCat("net: header.version: unsupported version ",
                                                   version, " (this build speaks ", kNetVersion,
                                                   ")"));
  if (type < 1 || type > static_cast<std::uint8_t>(FrameType::kData))
    return absl::InvalidArgumentError(absl::StrCat("net: header.type: unknown frame type ", type));
  const std::uint32_t limit = body_limit(static_cast<FrameType>(type));
  if (length > limit)
    return absl::InvalidArgumentError(
        absl::StrCat("net: header.length: ", length, " exceeds the limit ", limit));
  return kNetHeaderSize + length;
}

FrameType net_frame_type(std::string_view header) {
  KAIROS_CHECK(header.size() >= kNetHeaderSize);
  return static_cast<FrameType>(static_cast<std::uint8_t>(header[3]));
}

std::string data_frame_header(std::size_t message_size) {
  KAIROS_CHECK_MSG(message_size <= kMaxMessageSize, "message larger than kMaxMessageSize");
  ByteWriter w;
  w.u16(kNetMagic).u8(kNetVersion).u8(static_cast<std::uint8_t>(FrameType::kData));
  w.u32(static_cast<std::uint32_t>(message_size));
  return std::move(w).take();
}

bool valid_peer_name(std::string_view id) {
  return !id.empty() && id.size() <= kMaxPeerIdSize && is_printable_ascii(id) &&
         id.find_first_of(" \"=\\") == std::string_view::npos;
}

std::string encode_handshake(const HandshakeMessage& message) {
  ByteWriter w;
  FrameType type = FrameType::kHello;
  if (const auto* h = std::get_if<Hello>(&message)) {
    w.u8(h->wire_version).str(h->worker_id).str(h->nonce);
  } else if (const auto* c = std::get_if<Challenge>(&message)) {
    type = FrameType::kChallenge;
    w.str(c->server_id).str(c->nonce);
  } else if (const auto* p = std::get_if<Proof>(&message)) {
    type = FrameType::kProof;
    w.str(p->mac);
  } else if (const auto* wl = std::get_if<Welcome>(&message)) {
    type = FrameType::kWelcome;
    w.str(wl->server_id).str(wl->mac);
  } else {
    type = FrameType::kRefusal;
    w.str(std::get<Refusal>(message).reason);
  }
  KAIROS_CHECK_MSG(w.size() <= kMaxHandshakeBody, "handshake frame above kMaxHandshakeBody");
  return frame(type, w.data());
}

absl::StatusOr<HandshakeMessage> decode_handshake(std::string_view bytes) {
  KAIROS_ASSIGN_OR_RETURN(std::size_t size, net_frame_size(bytes));
  if (bytes.size() != size)
    return absl::InvalidArgumentError(
        absl::StrCat("handshake: header.length: frame has ", bytes.size() - kNetHeaderSize,
                     " body bytes, header says ", size - kNetHeaderSize));
  const FrameType type = net_frame_type(bytes);
  ByteReader r(bytes.substr(kNetHeaderSize), kMaxHandshakeBody);
  HandshakeMessage m;
  std::string_view name;
  switch (type) {
    case FrameType::kHello: {
      name = "hello";
      Hello h;
      KAIROS_ASSIGN_OR_RETURN(h.wire_version, r.u8("hello.wire_version"));
      KAIROS_ASSIGN_OR_RETURN(h.worker_id, r.str("hello.worker_id"));
      KAIROS_RETURN_IF_ERROR(check_name("hello.worker_id", h.worker_id));
      KAIROS_ASSIGN_OR_RETURN(h.nonce, r.str("hello.nonce"));
      KAIROS_RETURN_IF_ERROR(check_size("hello.nonce", h.nonce, kNonceSize));
      m = std::move(h);
      break;
    }
    case FrameType::kChallenge: {
      name = "challenge";
      Challenge c;
      KAIROS_ASSIGN_OR_RETURN(c.server_id, r.str("challenge.server_id"));
      KAIROS_RETURN_IF_ERROR(check_name("challenge.server_id", c.server_id));
      KAIROS_ASSIGN_OR_RETURN(c.nonce, r.str("challenge.nonce"));
      KAIROS_RETURN_IF_ERROR(check_size("challenge.nonce", c.nonce, kNonceSize));
      m = std::move(c);
      break;
    }
    case FrameType::kProof: {
      name = "proof";
      Proof p;
      KAIROS_ASSIGN_OR_RETURN(p.mac, r.str("proof.mac"));
      KAIROS_RETURN_IF_ERROR(check_size("proof.mac", p.mac, kMacSize));
      m = std::move(p);
      break;
    }
    case FrameType::kWelcome: {
      name = "welcome";
      Welcome w;
      KAIROS_ASSIGN_OR_RETURN(w.server_id, r.str("welcome.server_id"));
      KAIROS_RETURN_IF_ERROR(check_name("welcome.server_id", w.server_id));
      KAIROS_ASSIGN_OR_RETURN(w.mac, r.str("welcome.mac"));
      if (!w.mac.empty()) KAIROS_RETURN_IF_ERROR(check_size("welcome.mac", w.mac, kMacSize));
      m = std::move(w);
      break;
    }
    case FrameType::kRefusal: {
      name = "refusal";
      Refusal f;
      KAIROS_ASSIGN_OR_RETURN(f.reason, r.str("refusal.reason"));
      if (f.reason.size() > kMaxReasonSize || !is_printable_ascii(f.reason))
        return absl::InvalidArgumentError(
            absl::StrCat("handshake: refusal.reason: expected at most ", kMaxReasonSize,
                         " printable ASCII characters, got '", excerpt(f.reason), "'"));
      m = std::move(f);
      break;
    }
    case FrameType::kData:
      return absl::InvalidArgumentError(
          "handshake: header.type: a data frame before the handshake finished");
  }
  KAIROS_RETURN_IF_ERROR(r.expect_end(absl::StrCat("handshake: ", absl_sv(name))));
  return m;
}

std::string worker_proof(std::string_view secret, std::string_view worker_id,
                         std::string_view server_id, std::string_view worker_nonce,
                         std::string_view server_nonce) {
  return mac(kWorkerLabel, secret, worker_id, server_id, worker_nonce, server_nonce);
}

std::string server_proof(std::string_view secret, std::string_view worker_id,
                         std::string_view server_id, std::string_view worker_nonce,
                         std::string_view server_nonce) {
  return mac(kServerLabel, secret, worker_id, server_id, worker_nonce, server_nonce);
}

bool same_mac(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string random_nonce() {
  std::string nonce(kNonceSize, '\0');
  KAIROS_CHECK_MSG(RAND_bytes(reinterpret_cast<unsigned char*>(nonce.data()),
                              static_cast<int>(nonce.size())) == 1,
                   "RAND_bytes failed: no randomness for a handshake nonce");
  return nonce;
}

absl::StatusOr<std::string> read_secret_file(const std::string& path) {
  auto fail = [&path](std::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("secret file '", excerpt(path), "': ", absl_sv(why)));
  };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return fail(std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail("not a regular file");
  }
  if ((st.st_mode & S_IROTH) != 0) {
    ::close(fd);
    return fail("readable by every user (chmod o-r, e.g. chmod 600)");
  }
  std::string secret(kMaxSecretSize + 1, '\0');
  std::size_t have = 0;
  while (have < secret.size()) {
    const ssize_t n = ::read(fd, secret.data() + have, secret.size() - have);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      return fail(why);
    }
    if (n == 0) break;
    have += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (have > kMaxSecretSize) return fail(absl::StrCat("larger than ", kMaxSecretSize, " bytes"));
  secret.resize(have);
  if (secret.ends_with("\n")) secret.pop_back();
  if (secret.ends_with("\r")) secret.pop_back();
  if (secret.size() < kMinSecretSize)
    return fail(
        absl::StrCat("shorter than ", kMinSecretSize, " bytes (use e.g. `openssl rand -hex 32`)"));
  return secret;
}

absl::StatusOr<std::optional<std::string>> secret_from_flag(const std::string& path) {
  if (path.empty()) return std::optional<std::string>();
  auto secret = read_secret_file(path);
  if (!secret.ok())
    return absl::InvalidArgumentError(
        absl::StrCat("flag --worker-secret-file: ", secret.status().message()));
  return std::optional<std::string>(std::move(secret).value());
}

// ---------------------------------------------------------------------------
// Server side.

ServerHandshake::ServerHandshake(std::string server_id, std::optional<std::string> secret,
                                 std::string nonce)
    : server_id_(std::move(server_id)), secret_(std::move(secret)), nonce_(std::move(nonce)) {
  KAIROS_CHECK(valid_peer_name(server_id_));
  KAIROS_CHECK(nonce_.size() == kNonceSize);
}

HandshakeStep ServerHandshake::refuse(std::string reason) {
  phase_ = Phase::kDone;
  HandshakeStep step;
  step.state = HandshakeStep::State::kFailed;
  Refusal r;
  r.reason = excerpt(reason, kMaxReasonSize / 2);
  step.send.push_back(encode_handshake(r));
  step.error = std::move(reason);
  return step;
}

HandshakeStep ServerHandshake::on_frame(std::string_view bytes) {
  KAIROS_CHECK_MSG(phase_ != Phase::kDone, "a frame after the handshake ended");
  auto decoded = decode_handshake(bytes);
  if (!decoded.ok())
    return refuse(absl::StrCat("malformed handshake: ", decoded.status().message()));
  HandshakeStep step;
  if (phase_ == Phase::kHello) {
    const auto* hello = std::get_if<Hello>(&*decoded);
    if (hello == nullptr) return refuse("protocol: expected hello first");
    if (hello->wire_version != wire::kWireVersion)
      return refuse(absl::StrCat("wire version mismatch: the server speaks ",
                                 static_cast<int>(wire::kWireVersion), ", the worker ",
                                 static_cast<int>(hello->wire_version)));
    worker_id_ = hello->worker_id;
    worker_nonce_ = hello->nonce;
    if (secret_) {
      step.send.push_back(encode_handshake(Challenge{server_id_, nonce_}));
      phase_ = Phase::kProof;
      return step;
    }
    step.send.push_back(encode_handshake(Welcome{server_id_, ""}));
    step.state = HandshakeStep::State::kDone;
    phase_ = Phase::kDone;
    return step;
  }
  const auto* proof = std::get_if<Proof>(&*decoded);
  if (proof == nullptr) return refuse("protocol: expected proof after the challenge");
  const std::string want = worker_proof(*secret_, worker_id_, server_id_, worker_nonce_, nonce_);
  if (!same_mac(proof->mac, want))
    return refuse("bad worker secret: the proof does not match the server's secret");
  step.send.push_back(encode_handshake(
      Welcome{server_id_, server_proof(*secret_, worker_id_, server_id_, worker_nonce_, nonce_)}));
  step.state = HandshakeStep::State::kDone;
  phase_ = Phase::kDone;
  return step;
}

// ---------------------------------------------------------------------------
// Worker side.

ClientHandshake::ClientHandshake(std::string worker_id, std::optional<std::string> secret,
                                 std::string nonce)
    : worker_id_(std::move(worker_id)), secret_(std::move(secret)), nonce_(std::move(nonce)) {
  KAIROS_CHECK(valid_peer_name(worker_id_));
  KAIROS_CHECK(nonce_.size() == kNonceSize);
}

std::string ClientHandshake::hello() const {
  return encode_handshake(Hello{wire::kWireVersion, worker_id_, nonce_});
}

HandshakeStep ClientHandshake::fail(std::string error) {
  phase_ = Phase::kDone;
  HandshakeStep step;
  step.state = HandshakeStep::State::kFailed;
  step.error = std::move(error);
  return step;
}

HandshakeStep ClientHandshake::on_frame(std::string_view bytes) {
  KAIROS_CHECK_MSG(phase_ != Phase::kDone, "a frame after the handshake ended");
  auto decoded = decode_handshake(bytes);
  if (!decoded.ok())
    return fail(absl::StrCat("malformed handshake from the server: ", decoded.status().message()));
  if (const auto* r = std::get_if<Refusal>(&*decoded))
    return fail(absl::StrCat("refused by the server: ", r->reason));
  HandshakeStep step;
  if (phase_ == Phase::kReply) {
    if (const auto* c = std::get_if<Challenge>(&*decoded)) {
      if (!secret_)
        return fail(absl::StrCat("server '", c->server_id,
                                 "' requires a worker secret: start the worker with "
                                 "--worker-secret-file"));
      server_id_ = c->server_id;
      server_nonce_ = c->nonce;
      step.send.push_back(encode_handshake(
          Proof{worker_proof(*secret_, worker_id_, server_id_, nonce_, server_nonce_)}));
      phase_ = Phase::kWelcome;
      return step;
    }
    const auto* w = std::get_if<Welcome>(&*decoded);
    if (w == nullptr) return fail("protocol: expected a challenge or a welcome");
    if (secret_)
      return fail(absl::StrCat("server '", w->server_id,
                               "' did not prove the worker secret (it runs without one): a worker "
                               "with a secret talks only to a server with the same secret"));
    server_id_ = w->server_id;
    step.state = HandshakeStep::State::kDone;
    phase_ = Phase::kDone;
    return step;
  }
  const auto* w = std::get_if<Welcome>(&*decoded);
  if (w == nullptr) return fail("protocol: expected a welcome after the proof");
  if (w->server_id != server_id_) return fail("protocol: the welcome names another server");
  if (!same_mac(w->mac, server_proof(*secret_, worker_id_, server_id_, nonce_, server_nonce_)))
    return fail("bad server proof: the server holds a different secret");
  step.state = HandshakeStep::State::kDone;
  phase_ = Phase::kDone;
  return step;
}

}  // namespace kairos::net
