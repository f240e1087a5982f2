// Payload: what a job does when it runs.
//
// A job runs either a command (an argv vector, never a shell string, plus
// environment and working directory) or an HTTP request (a webhook). Both are
// plain values: validated at the API boundary (validate()), encoded into the
// store and the wire by the codecs, and executed by a Runner adapter.
#pragma once

#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"

namespace kairos {

struct CommandPayload {
  std::vector<std::string> argv;                         // argv[0] is the program; required
  std::vector<std::pair<std::string, std::string>> env;  // added to the runner's environment
  std::string working_dir;                               // empty: the runner's default
  friend bool operator==(const CommandPayload&, const CommandPayload&) = default;
};

struct HttpPayload {
  std::string method = "POST";
  std::string url;  // http:// or https://
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  friend bool operator==(const HttpPayload&, const HttpPayload&) = default;
};

using Payload = std::variant<CommandPayload, HttpPayload>;

// Checks a payload a user supplied. The error names the field and what was
// expected, e.g. "payload.command.argv: must not be empty".
absl::Status validate(const Payload& payload);

}  // namespace kairos
