// libFuzzer target for the wire decoder (core/kernel/wire.h): any byte string must
// decode to a message or to an error, never crash, hang or over-read (ASan
// checks the reads). A decoded message must re-encode to the same bytes
// (the encoding is canonical), which also exercises the encoder.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/kernel/wire.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  (void)kairos::wire::frame_size(in);
  auto decoded = kairos::wire::decode(in);
  if (decoded.ok()) {
    const std::string again = kairos::wire::encode(*decoded);
    if (again != in) std::abort();
  }
  return 0;
}
