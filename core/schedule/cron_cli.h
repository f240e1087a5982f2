// The logic of `kairos cron next` and `kairos cron explain`, free of I/O:
// prod/cli/cron_command.cc passes argv and the current time and prints the
// result. Kept in core/ so tests run it without the production binary.
//
//   kairos cron next [--tz ZONE] [--from RFC3339] [-n N] [--id JOB_ID]
//                    [--dst-gap shift|skip] [--dst-fold first|last|both] EXPR
//   kairos cron explain [--tz ZONE] [--from RFC3339] [--id JOB_ID]
//                       [--dst-gap ...] [--dst-fold ...] EXPR
//
// `next` prints one line per fire, strictly after --from (default: now):
//   <instant, RFC 3339 UTC with Z> TAB <local time with offset> [TAB <DST note>]
// Exit codes: 0 success; 2 bad usage (unknown flag, missing value, bad
// number, bad zone, bad time) or bad expression, with a message on stderr
// naming the flag or the field ("field 2 (hour): 25 is out of range 0-23").
#pragma once

#include <string>
#include <vector>

#include "absl/time/time.h"

namespace kairos::cron {

struct CliResult {
  int exit_code = 0;
  std::string out;  // for stdout
  std::string err;  // for stderr
};

// `args` are the words after `kairos cron` (args[0] is "next", "explain" or
// "--help").
CliResult run_cron_cli(const std::vector<std::string>& args, absl::Time now);

}  // namespace kairos::cron
