// ScriptedAnswers: programmed status sequences for the fencing sink's
// scripted paths, so an e2e test decides what a webhook target answers.
//
// Purpose. A retry test needs a target that fails a known number of times
// and then succeeds (or always fails, or fails permanently). A script is
// "PATH=S1,S2,...,Sn": the k-th request to PATH (the request target without
// its query) is answered with S_min(k, n): the last status repeats. Paths
// without a script are not scripted (the sink's fencing ledger answers them).
// Guarantees: parse() accepts only an absolute path without '?' and 1 to 64
// statuses in 200..599, and names what is wrong otherwise; a path scripted
// twice is refused.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kairos::fencing_sink {

class ScriptedAnswers {
 public:
  // Adds one "PATH=S1,S2,..." script; on a malformed one returns false and
  // sets `error` to a message naming the part at fault.
  bool add(std::string_view script, std::string* error);

  // The status for the next request to `target` (its query ignored), or
  // nullopt when the path has no script. Advances that path's sequence.
  std::optional<int> next(std::string_view target);

  bool empty() const { return scripts_.empty(); }

 private:
  struct Script {
    std::vector<int> statuses;
    std::size_t served = 0;
  };
  std::map<std::string, Script, std::less<>> scripts_;
};

}  // namespace kairos::fencing_sink
