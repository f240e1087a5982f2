// The (run, token) items that a worker reports about a run it holds.
//
// Purpose. A renewal and a completion name one run and the fencing token the
// worker holds for it. The job store's transaction bodies (job_store.h) take
// them, the wire protocol (wire.h) carries them and the worker builds them:
// one type each, defined here, so the three can never disagree on a field.
//
// Guarantees. Plain values with defaulted equality. The wire encoding of
// each is fixed by wire.h (its field order is the order below); changing a
// field here changes the protocol.
#pragma once

#include <cstdint>
#include <string>

#include "core/kernel/records.h"
#include "core/ports/runner.h"

namespace kairos {

// A lease renewal: extend the lease of `run` held under `token`.
struct RenewItem {
  RunId run;
  std::uint64_t token = 0;
  friend bool operator==(const RenewItem&, const RenewItem&) = default;
};

// A completion: the attempt of `run` held under `token` ended with `outcome`.
struct CompleteItem {
  RunId run;
  std::uint64_t token = 0;
  RunStatus outcome = RunStatus::kSucceeded;
  std::int32_t exit_code = 0;
  std::string detail;
  // What the attempt printed (RunOutcome::output): at most kMaxRunOutputSize
  // bytes (the wire decoder refuses more); stored on the run's attempt.
  std::string output;
  friend bool operator==(const CompleteItem&, const CompleteItem&) = default;
};

}  // namespace kairos
