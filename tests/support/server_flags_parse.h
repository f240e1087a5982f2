// Runs `kairos server`'s flag parser on a command line (without the program
// name) with stdout and stderr captured, for the flag tests: the exit code it
// asks for (none when the flags are good), the flags, and what it printed
// on stderr.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "prod/cli/server_flags.h"

namespace kairos::cli::flags_test_support {

struct Parsed {
  std::optional<int> code;
  ServerFlags flags;
  std::string err;
};

inline Parsed parse(std::vector<std::string> args) {
  args.insert(args.begin(), "server");
  std::vector<char*> argv;
  for (auto& s : args) argv.push_back(s.data());
  Parsed p;
  testing::internal::CaptureStderr();
  testing::internal::CaptureStdout();
  p.code = parse_server_flags(static_cast<int>(argv.size()), argv.data(), p.flags);
  testing::internal::GetCapturedStdout();
  p.err = testing::internal::GetCapturedStderr();
  return p;
}

}  // namespace kairos::cli::flags_test_support
