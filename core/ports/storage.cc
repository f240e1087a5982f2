#include "core/ports/storage.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"

namespace kairos {

namespace detail {

void key_size_out_of_range(std::size_t size) {
  const std::string msg =
      absl::StrCat("key size out of range: ", size, " bytes (keys are 1..", kMaxKeySize, " bytes)");
  check_failed("check_key_limits(key)", __FILE__, __LINE__, msg.c_str());
}

void value_too_large(std::size_t size) {
  const std::string msg = absl::StrCat("value larger than kMaxValueSize: ", size,
                                       " bytes (at most ", kMaxValueSize, ")");
  check_failed("check_key_limits(key, value)", __FILE__, __LINE__, msg.c_str());
}

}  // namespace detail

std::string_view to_string(CommitOutcome outcome) {
  switch (outcome) {
    case CommitOutcome::kCommitted:
      return "committed";
    case CommitOutcome::kConflict:
      return "conflict";
    case CommitOutcome::kUnavailable:
      return "unavailable";
    case CommitOutcome::kUnknown:
      return "unknown";
    case CommitOutcome::kAborted:
      return "aborted";
  }
  return "invalid";
}

}  // namespace kairos
