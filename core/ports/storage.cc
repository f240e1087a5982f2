#include "core/ports/storage.h"

namespace kairos {

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
