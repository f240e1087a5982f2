// Determinism tooling: prove that one seed gives one history, and when it
// does not, name the first trace record where two runs part.
//
// check_determinism() runs a cluster built by `make` twice with rolling-hash
// checkpoints every kCheckpointEvery records; if the final hashes differ it
// finds the first differing checkpoint window, runs both again writing the
// trace lines of that window only, and reports the first differing line.
// compare_trace_files() does the same for two --trace files (for example a
// release and a sanitizer build's).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "sim/world/cluster.h"

namespace kairos::sim {

struct Divergence {
  bool diverged = false;
  std::uint64_t hash_a = 0, hash_b = 0;
  std::uint64_t record = 0;  // 1-based number of the first differing record
  std::string line_a, line_b;
};

inline constexpr std::uint64_t kCheckpointEvery = 4096;

Divergence check_determinism(const std::function<std::unique_ptr<Cluster>()>& make);
absl::StatusOr<Divergence> compare_trace_files(const std::string& a, const std::string& b);

}  // namespace kairos::sim
