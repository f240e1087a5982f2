// The TCP transport's handshake (prod/net/handshake.h) without sockets: both
// state machines driven against each other, every refusal naming its reason,
// and the strict decoder against truncated, mutated and hostile frames.
#include "prod/net/handshake.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/kernel/wire.h"

namespace kairos::net {
namespace {

using State = HandshakeStep::State;

const std::string kSecret = "0123456789abcdef-shared";
const std::string kWorkerNonce(kNonceSize, 'w');
const std::string kServerNonce(kNonceSize, 's');

struct Outcome {
  HandshakeStep server_last, client_last;
  std::vector<std::string> frames;  // every frame that crossed, both ways
};

// Runs the handshake to its end: hello, then frames back and forth.
Outcome run(ServerHandshake& server, ClientHandshake& client) {
  Outcome o;
  std::vector<std::string> to_server{client.hello()};
  std::vector<std::string> to_client;
  for (int round = 0; round < 4 && !to_server.empty(); ++round) {
    for (const std::string& f : to_server) {
      o.frames.push_back(f);
      o.server_last = server.on_frame(f);
      for (const std::string& g : o.server_last.send) to_client.push_back(g);
      if (o.server_last.state != State::kContinue) break;
    }
    to_server.clear();
    for (const std::string& f : to_client) {
      o.frames.push_back(f);
      o.client_last = client.on_frame(f);
      for (const std::string& g : o.client_last.send) to_server.push_back(g);
      if (o.client_last.state != State::kContinue) break;
    }
    to_client.clear();
  }
  return o;
}

TEST(Handshake, WithoutASecretTheHelloIsWelcomedAtOnce) {
  ServerHandshake server("node-a", std::nullopt, kServerNonce);
  ClientHandshake client("worker-1", std::nullopt, kWorkerNonce);
  Outcome o = run(server, client);
  EXPECT_EQ(o.server_last.state, State::kDone);
  EXPECT_EQ(o.client_last.state, State::kDone);
  EXPECT_EQ(server.worker_id(), "worker-1");
  EXPECT_EQ(client.server_id(), "node-a");
  EXPECT_EQ(o.frames.size(), 2u);  // hello, welcome
}

TEST(Handshake, WithTheSameSecretBothSidesProveItAndTheSecretNeverCrosses) {
  ServerHandshake server("node-a", kSecret, kServerNonce);
  ClientHandshake client("worker-1", kSecret, kWorkerNonce);
  Outcome o = run(server, client);
  EXPECT_EQ(o.server_last.state, State::kDone) << o.server_last.error;
  EXPECT_EQ(o.client_last.state, State::kDone) << o.client_last.error;
  ASSERT_EQ(o.frames.size(), 4u);  // hello, challenge, proof, welcome
  for (const std::string& f : o.frames)
    EXPECT_EQ(f.find("0123456789abcdef"), std::string::npos) << "the secret is on the wire";
}

TEST(Handshake, AWrongSecretIsRefusedNamingTheReason) {
  ServerHandshake server("node-a", kSecret, kServerNonce);
  ClientHandshake client("worker-1", std::string("another-secret-of-16+"), kWorkerNonce);
  Outcome o = run(server, client);
  EXPECT_EQ(o.server_last.state, State::kFailed);
  EXPECT_NE(o.server_last.error.find("bad worker secret"), std::string::npos);
  EXPECT_EQ(o.client_last.state, State::kFailed);
  EXPECT_NE(o.client_last.error.find("refused by the server: bad worker secret"), std::string::npos)
      << o.client_last.error;
}

TEST(Handshake, AWorkerWithoutASecretIsToldToConfigureOne) {
  ServerHandshake server("node-a", kSecret, kServerNonce);
  ClientHandshake client("worker-1", std::nullopt, kWorkerNonce);
  Outcome o = run(server, client);
  EXPECT_EQ(o.client_last.state, State::kFailed);
  EXPECT_NE(o.client_last.error.find("--worker-secret-file"), std::string::npos);
}

TEST(Handshake, AWorkerWithASecretRefusesAServerThatDoesNotProveIt) {
  // Otherwise any listener could hand the worker commands to run.
  ServerHandshake server("node-a", std::nullopt, kServerNonce);
  ClientHandshake client("worker-1", kSecret, kWorkerNonce);
  Outcome o = run(server, client);
  EXPECT_EQ(o.client_last.state, State::kFailed);
  EXPECT_NE(o.client_last.error.find("did not prove the worker secret"), std::string::npos);
}

TEST(Handshake, AForgedServerProofIsRefused) {
  ClientHandshake client("worker-1", kSecret, kWorkerNonce);
  (void)client.hello();
  HandshakeStep s = client.on_frame(encode_handshake(Challenge{"node-a", kServerNonce}));
  ASSERT_EQ(s.state, State::kContinue);
  s = client.on_frame(encode_handshake(Welcome{"node-a", std::string(kMacSize, 'x')}));
  EXPECT_EQ(s.state, State::kFailed);
  EXPECT_NE(s.error.find("bad server proof"), std::string::npos);
}

TEST(Handshake, AProofRecordedOnAnotherConnectionIsWorthless) {
  // The proof binds the server's fresh nonce: replaying one from an earlier
  // connection fails against a new nonce.
  const std::string old_proof =
      worker_proof(kSecret, "worker-1", "node-a", kWorkerNonce, kServerNonce);
  ServerHandshake server("node-a", kSecret, std::string(kNonceSize, 'n'));
  ASSERT_EQ(
      server.on_frame(encode_handshake(Hello{wire::kWireVersion, "worker-1", kWorkerNonce})).state,
      State::kContinue);
  HandshakeStep s = server.on_frame(encode_handshake(Proof{old_proof}));
  EXPECT_EQ(s.state, State::kFailed);
  EXPECT_NE(s.error.find("bad worker secret"), std::string::npos);
}

TEST(Handshake, TheTwoProofsDifferSoNeitherSideCanReflectTheOther) {
  EXPECT_NE(worker_proof(kSecret, "w", "s", kWorkerNonce, kServerNonce),
            server_proof(kSecret, "w", "s", kWorkerNonce, kServerNonce));
}

TEST(Handshake, AWireVersionMismatchIsRefusedNamingBothVersions) {
  ServerHandshake server("node-a", std::nullopt, kServerNonce);
  HandshakeStep s = server.on_frame(encode_handshake(
      Hello{static_cast<std::uint8_t>(wire::kWireVersion + 1), "worker-1", kWorkerNonce}));
  EXPECT_EQ(s.state, State::kFailed);
  EXPECT_NE(s.error.find("wire version mismatch"), std::string::npos);
  ASSERT_EQ(s.send.size(), 1u);
  auto refusal = decode_handshake(s.send[0]);
  ASSERT_TRUE(refusal.ok());
  EXPECT_NE(std::get<Refusal>(*refusal).reason.find("wire version mismatch"), std::string::npos);
}

TEST(Handshake, FramesOutOfOrderAreRefused) {
  ServerHandshake server("node-a", kSecret, kServerNonce);
  HandshakeStep s = server.on_frame(encode_handshake(Proof{std::string(kMacSize, 'p')}));
  EXPECT_EQ(s.state, State::kFailed);
  EXPECT_NE(s.error.find("expected hello"), std::string::npos);
  ClientHandshake client("worker-1", std::nullopt, kWorkerNonce);
  s = client.on_frame(encode_handshake(Hello{1, "x", kWorkerNonce}));
  EXPECT_EQ(s.state, State::kFailed);
}

TEST(HandshakeCodec, EveryMessageRoundTrips) {
  const std::vector<HandshakeMessage> all = {Hello{1, "worker-1", kWorkerNonce},
                                             Challenge{"node-a", kServerNonce},
                                             Proof{std::string(kMacSize, '\xff')},
                                             Welcome{"node-a", ""},
                                             Welcome{"node-a", std::string(kMacSize, '\0')},
                                             Refusal{"bad worker secret"}};
  for (const HandshakeMessage& m : all) {
    auto d = decode_handshake(encode_handshake(m));
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_EQ(*d, m);
  }
}

TEST(HandshakeCodec, HeadersAreJudgedBeforeTheBody) {
  std::string f = encode_handshake(Proof{std::string(kMacSize, 'p')});
  std::string bad_magic = f;
  bad_magic[0] = 'X';
  EXPECT_NE(net_frame_size(bad_magic).status().message().find("header.magic"), std::string::npos);
  std::string bad_version = f;
  bad_version[2] = 9;
  EXPECT_NE(net_frame_size(bad_version).status().message().find("header.version"),
            std::string::npos);
  std::string bad_type = f;
  bad_type[3] = 0;
  EXPECT_NE(net_frame_size(bad_type).status().message().find("header.type"), std::string::npos);
  std::string too_long = f;
  too_long[5] = 0x10;  // body length 4 KiB + ..., above kMaxHandshakeBody
  EXPECT_NE(net_frame_size(too_long).status().message().find("exceeds the limit"),
            std::string::npos);
  // A data frame may carry a whole transport message, no more.
  EXPECT_TRUE(net_frame_size(data_frame_header(kMaxMessageSize)).ok());
  std::string huge = data_frame_header(kMaxMessageSize);
  huge[7] = 0x7f;
  EXPECT_FALSE(net_frame_size(huge).ok());
  EXPECT_FALSE(net_frame_size(f.substr(0, 7)).ok());
}

TEST(HandshakeCodec, StrictAboutFields) {
  auto message_of = [](const HandshakeMessage& m) {
    return std::string(decode_handshake(encode_handshake(m)).status().message());
  };
  EXPECT_NE(message_of(Hello{1, "", kWorkerNonce}).find("hello.worker_id"), std::string::npos);
  EXPECT_NE(message_of(Hello{1, "a b", kWorkerNonce}).find("hello.worker_id"), std::string::npos);
  EXPECT_NE(message_of(Hello{1, "w\x1b", kWorkerNonce}).find("hello.worker_id"), std::string::npos);
  EXPECT_NE(message_of(Hello{1, "w", "short"}).find("hello.nonce"), std::string::npos);
  EXPECT_NE(message_of(Proof{"short"}).find("proof.mac"), std::string::npos);
  EXPECT_NE(message_of(Welcome{"s", "xx"}).find("welcome.mac"), std::string::npos);
  EXPECT_NE(message_of(Refusal{"bell\a"}).find("refusal.reason"), std::string::npos);
  // Trailing bytes, and a length that disagrees with the input.
  std::string f = encode_handshake(Proof{std::string(kMacSize, 'p')});
  std::string trailing = f + "x";
  trailing[4] = static_cast<char>(trailing[4] + 1);
  EXPECT_FALSE(decode_handshake(trailing).ok());
  EXPECT_FALSE(decode_handshake(f + "x").ok());
  EXPECT_FALSE(decode_handshake(data_frame_header(0)).ok());
}

TEST(HandshakeCodec, TruncatedAndMutatedFramesNeverCrashTheDecoderOrTheStateMachines) {
  const std::vector<std::string> frames = {
      encode_handshake(Hello{wire::kWireVersion, "worker-1", kWorkerNonce}),
      encode_handshake(Challenge{"node-a", kServerNonce}),
      encode_handshake(Proof{std::string(kMacSize, 'p')}),
      encode_handshake(Welcome{"node-a", std::string(kMacSize, 'm')}),
      encode_handshake(Refusal{"because"})};
  std::uint64_t x = 88172645463325252ull;  // xorshift: deterministic mutations
  auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  int decoded = 0;
  for (const std::string& f : frames) {
    for (std::size_t n = 0; n < f.size(); ++n) EXPECT_FALSE(decode_handshake(f.substr(0, n)).ok());
    for (int i = 0; i < 2000; ++i) {
      std::string m = f;
      const int flips = 1 + static_cast<int>(next() % 3);
      for (int k = 0; k < flips; ++k) m[next() % m.size()] = static_cast<char>(next() & 0xff);
      if (decode_handshake(m).ok()) ++decoded;
      ServerHandshake server("node-a", kSecret, kServerNonce);
      HandshakeStep s = server.on_frame(m);
      if (s.state == State::kFailed) {
        ASSERT_EQ(s.send.size(), 1u);  // a refusal that itself decodes
        EXPECT_TRUE(decode_handshake(s.send[0]).ok());
      }
      ClientHandshake client("worker-1", kSecret, kWorkerNonce);
      (void)client.on_frame(m);
    }
  }
  EXPECT_GT(decoded, 0);  // some mutations land in free bytes (nonces, macs)
}

class SecretFile : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kairos-secret-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text, mode_t mode) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    ::chmod(path.c_str(), mode);
    return path;
  }
  std::string dir_;
};

TEST_F(SecretFile, ATrailingNewlineIsDropped) {
  auto s = read_secret_file(write("s", "0123456789abcdef\n", 0600));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(*s, "0123456789abcdef");
}

TEST_F(SecretFile, RefusalsNameTheFileAndTheReason) {
  auto short_one = read_secret_file(write("short", "abc\n", 0600));
  EXPECT_NE(short_one.status().message().find("shorter than 16 bytes"), std::string::npos);
  auto readable = read_secret_file(write("open", "0123456789abcdef", 0644));
  EXPECT_NE(readable.status().message().find("readable by every user"), std::string::npos);
  auto missing = read_secret_file(dir_ + "/missing");
  EXPECT_NE(missing.status().message().find("missing"), std::string::npos);
  auto big = read_secret_file(write("big", std::string(kMaxSecretSize + 1, 'x'), 0600));
  EXPECT_NE(big.status().message().find("larger than"), std::string::npos);
  EXPECT_FALSE(read_secret_file(dir_).ok());  // a directory
}

}  // namespace
}  // namespace kairos::net
