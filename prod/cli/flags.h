// Flags: one table per `kairos` subcommand, read from argv and a config file.
//
// Purpose. Every flag of a subcommand is declared once, in a FlagTable:
// its name, the placeholder of its value, the default shown in --help, its
// help text and a setter that validates the value. From that one table come
// the parser of the command line, the reader of the `--config FILE` (a JSON
// object whose keys are the flag names without the dashes), and the --help
// text, so the three can never disagree.
//
// Grammar. `--name VALUE`, `--name=VALUE`, and for a switch (a flag without
// a value placeholder) `--name` alone; `--help`/`-h` print the usage. A
// non-flag argument, an unknown flag, a missing value, a value given to a
// switch and a flag given twice are usage errors naming the flag. With
// `allow_positional`, arguments that are not flags are collected in order
// (a lone `--` ends flag parsing: everything after it is positional).
//
// Config file. A table with a "config" entry (see config_flag()) reads the
// file named by --config before the command line is applied: each key must
// name a flag of the table (not "config" itself, not "help"), each value is
// a JSON string, an integer or, for a switch, a boolean. The command line
// overrides the file. The file is read only from the path the operator gave,
// at most kMaxConfigFileSize bytes; errors name the file and the key.
//
// Errors. parse() returns the exit code when the command must end: 0 after
// --help, 2 for bad usage or a bad value (the message, already printed to
// stderr, names the flag or key and what was expected).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace kairos::cli {

inline constexpr std::size_t kMaxConfigFileSize = std::size_t{1} << 20;

struct Flag {
  std::string name;        // without the leading "--"
  std::string value_name;  // "DIR", "N"; empty for a switch
  std::string default_text;
  std::string help;  // may hold several lines (split on '\n' in --help)
  // Validates and stores the value (for a switch the value is "true" or
  // "false"). The error message says what was expected, e.g. "expected an
  // integer in [1, 4096], got 'x'"; the parser prefixes the flag's name.
  std::function<absl::Status(std::string_view value)> set;
};

class FlagTable {
 public:
  // `command` is "kairos server"; `synopsis` the lines after "usage: ",
  // `description` a paragraph printed before the flags.
  FlagTable(std::string command, std::string synopsis, std::string description);

  FlagTable& add(Flag flag);
  // Adds `--config FILE` (read before the command line; see the file comment).
  FlagTable& config_flag();
  FlagTable& allow_positional() {
    positional_allowed_ = true;
    return *this;
  }

  // Parses argv[1..argc) (argv[0] is the subcommand's name).
  std::optional<int> parse(int argc, char** argv);
  // Positional arguments (allow_positional() only), in order.
  const std::vector<std::string>& positional() const { return positional_; }
  // True when the flag was given on the command line or in the config file.
  bool given(std::string_view name) const;

  std::string usage() const;
  // Prints "COMMAND: MESSAGE" to stderr and returns 2: for errors found after
  // parse() (a rule between two flags).
  int usage_error(std::string_view message) const;

 private:
  const Flag* find(std::string_view name) const;
  absl::Status apply(const Flag& flag, std::string_view value, std::string_view where);
  std::optional<int> read_config(const std::string& path, const std::vector<std::string>& on_argv);

  std::string command_;
  std::string synopsis_;
  std::string description_;
  std::vector<Flag> flags_;
  bool has_config_ = false;
  bool positional_allowed_ = false;
  std::vector<std::string> positional_;
  std::vector<std::string> given_;
};

// Setters for the common value kinds: each parses, range-checks and stores.
std::function<absl::Status(std::string_view)> set_string(std::string* out,
                                                         bool allow_empty = false);
std::function<absl::Status(std::string_view)> set_u32(std::uint32_t* out, std::uint32_t min,
                                                      std::uint32_t max);
std::function<absl::Status(std::string_view)> set_switch(bool* out);
// A duration in the Kairos grammar (core/base/duration.h) within [min, max].
std::function<absl::Status(std::string_view)> set_duration(absl::Duration* out, absl::Duration min,
                                                           absl::Duration max);
// One of `choices`.
std::function<absl::Status(std::string_view)> set_choice(std::string* out,
                                                         std::vector<std::string> choices);
// HOST:PORT with a numeric port in [1, 65535] (port 0 is allowed when
// `allow_port_zero`: "pick a free one", for tests); HOST is an IPv4 address,
// a bracketed IPv6 address or a host name.
std::function<absl::Status(std::string_view)> set_host_port(std::string* out,
                                                            bool allow_port_zero = true);

// Splits "HOST:PORT" (checked as set_host_port does) into its parts.
struct HostPort {
  std::string host;
  std::uint16_t port = 0;
};
absl::Status parse_host_port(std::string_view text, HostPort* out, bool allow_port_zero = true);
// True for 127.0.0.0/8, ::1 and "localhost": an address only this machine reaches.
bool is_loopback_host(std::string_view host);

}  // namespace kairos::cli
