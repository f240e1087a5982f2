// libFuzzer target for the TCP transport's handshake (prod/net/handshake.h):
// any byte string must be judged by net_frame_size() and decode to a
// handshake message or to an error, never crash, hang or over-read (ASan
// checks the reads); a decoded message must re-encode to the same bytes.
// Both state machines are then fed the input as their first frame: a
// refusal they produce must itself decode.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "prod/net/handshake.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kairos::net;
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  (void)net_frame_size(in);
  auto decoded = decode_handshake(in);
  if (decoded.ok() && encode_handshake(*decoded) != in) std::abort();
  const std::string nonce(kNonceSize, 'n');
  ServerHandshake server("fuzz-server", std::string("fuzz-secret-0123456789"), nonce);
  const HandshakeStep s = server.on_frame(in);
  for (const std::string& f : s.send)
    if (!decode_handshake(f).ok()) std::abort();
  ClientHandshake client("fuzz-worker", std::string("fuzz-secret-0123456789"), nonce);
  (void)client.on_frame(in);
  return 0;
}
