// libFuzzer target for the job JSON decoder (prod/api/job_json.h): any byte
// string must decode to a job or to an error naming what is wrong, never
// crash, hang or over-read. A decoded job must survive the round trip
// through the response shape unchanged (what a client GETs it can PUT back),
// and a merge patch of the body with itself must leave it as it is.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "prod/api/job_json.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  auto spec = kairos::api::decode_job_spec(in);
  if (!spec.ok()) {
    if (spec.status().code() != absl::StatusCode::kInvalidArgument) std::abort();
    (void)kairos::api::error_body(spec.status());
    return 0;
  }
  if (spec->id.empty()) spec->id = "fuzz";
  const boost::json::value body(kairos::api::job_spec_to_json(*spec));
  auto again = kairos::api::job_spec_from_json(body);
  if (!again.ok() || !(*again == *spec)) std::abort();
  if (kairos::api::merge_patch(body, body) != body) std::abort();
  return 0;
}
