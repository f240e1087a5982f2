#include "prod/cli/flags.h"

#include <algorithm>
#include <boost/json.hpp>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/base/absl_compat.h"
#include "core/base/duration.h"
#include "core/base/text.h"

namespace kairos::cli {
namespace {

std::string quoted(std::string_view v) { return absl::StrCat("'", excerpt(v), "'"); }

constexpr std::size_t kHelpColumn = 28;  // where a flag's help text starts

}  // namespace

FlagTable::FlagTable(std::string command, std::string synopsis, std::string description)
    : command_(std::move(command)),
      synopsis_(std::move(synopsis)),
      description_(std::move(description)) {}

FlagTable& FlagTable::add(Flag flag) {
  flags_.push_back(std::move(flag));
  return *this;
}

FlagTable& FlagTable::config_flag() {
  has_config_ = true;
  // Read by parse() itself; the setter only accepts the value.
  return add({"config", "FILE", "none",
              "read flags from this JSON file first: an object whose keys\n"
              "are flag names without '--' (the command line wins)",
              [](std::string_view v) {
                if (v.empty()) return absl::InvalidArgumentError("expected a file name, got ''");
                return absl::OkStatus();
              }});
}

const Flag* FlagTable::find(std::string_view name) const {
  for (const Flag& f : flags_)
    if (f.name == name) return &f;
  return nullptr;
}

bool FlagTable::given(std::string_view name) const {
  return std::find(given_.begin(), given_.end(), name) != given_.end();
}

int FlagTable::usage_error(std::string_view message) const {
  std::fprintf(stderr, "%s: %.*s\n", command_.c_str(), static_cast<int>(message.size()),
               message.data());
  return 2;
}

absl::Status FlagTable::apply(const Flag& flag, std::string_view value, std::string_view where) {
  absl::Status s = flag.set(value);
  if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat(absl_sv(where), ": ", s.message()));
  given_.push_back(flag.name);
  return absl::OkStatus();
}

std::optional<int> FlagTable::read_config(const std::string& path,
                                          const std::vector<std::string>& on_argv) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return usage_error(absl::StrCat("flag --config: cannot read ", quoted(path)));
  std::string text(kMaxConfigFileSize + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxConfigFileSize)
    return usage_error(
        absl::StrCat("config ", quoted(path), ": larger than ", kMaxConfigFileSize, " bytes"));
  boost::system::error_code ec;
  boost::json::value doc = boost::json::parse(text, ec);
  if (ec)
    return usage_error(absl::StrCat("config ", quoted(path), ": not valid JSON: ", ec.message()));
  if (!doc.is_object())
    return usage_error(
        absl::StrCat("config ", quoted(path), ": expected a JSON object of flag names"));
  for (const auto& [key_sv, value] : doc.as_object()) {
    const std::string key(key_sv);
    const std::string where = absl::StrCat("config ", quoted(path), ": key \"", excerpt(key), "\"");
    const Flag* flag = key == "config" || key == "help" ? nullptr : find(key);
    if (!flag) return usage_error(absl::StrCat(where, ": not a flag of ", command_));
    std::string v;
    if (value.is_string()) {
      v = std::string(value.as_string());
    } else if (value.is_int64()) {
      v = std::to_string(value.as_int64());
    } else if (value.is_uint64()) {
      v = std::to_string(value.as_uint64());
    } else if (value.is_bool() && flag->value_name.empty()) {
      v = value.as_bool() ? "true" : "false";
    } else {
      return usage_error(
          absl::StrCat(where, ": expected ",
                       flag->value_name.empty() ? "true or false" : "a string or integer"));
    }
    if (flag->value_name.empty() && value.is_string())
      return usage_error(absl::StrCat(where, ": expected true or false"));
    if (std::find(on_argv.begin(), on_argv.end(), key) != on_argv.end()) continue;  // argv wins
    if (absl::Status s = apply(*flag, v, where); !s.ok()) return usage_error(std_sv(s.message()));
  }
  return std::nullopt;
}

std::optional<int> FlagTable::parse(int argc, char** argv) {
  struct Given {
    const Flag* flag;
    std::string value;
  };
  std::vector<Given> seen;
  std::vector<std::string> names;
  std::optional<std::string> config_path;
  bool flags_done = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (flags_done || !arg.starts_with("-") || arg == "-") {
      if (!positional_allowed_)
        return usage_error(absl::StrCat("unexpected argument ", quoted(arg), " (see --help)"));
      positional_.emplace_back(arg);
      continue;
    }
    if (arg == "--" && positional_allowed_) {
      flags_done = true;
      continue;
    }
    if (arg == "--help" || arg == "-h") {
      std::fputs(usage().c_str(), stdout);
      return 0;
    }
    std::optional<std::string_view> inline_value;
    if (!arg.starts_with("--"))
      return usage_error(absl::StrCat("unknown flag ", quoted(arg), " (see --help)"));
    std::string_view name = arg.substr(2);
    if (const auto eq = name.find('='); eq != std::string_view::npos) {
      inline_value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    const Flag* flag = find(name);
    if (!flag) return usage_error(absl::StrCat("unknown flag ", quoted(arg), " (see --help)"));
    if (std::find(names.begin(), names.end(), flag->name) != names.end())
      return usage_error(absl::StrCat("flag --", flag->name, " given twice"));
    std::string value;
    if (flag->value_name.empty()) {
      if (inline_value)
        return usage_error(
            absl::StrCat("flag --", flag->name, ": takes no value, got ", quoted(*inline_value)));
      value = "true";
    } else if (inline_value) {
      value = std::string(*inline_value);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return usage_error(
          absl::StrCat("flag --", flag->name, " needs a value (", flag->value_name, ")"));
    }
    names.push_back(flag->name);
    if (has_config_ && flag->name == "config") config_path = value;
    seen.push_back({flag, std::move(value)});
  }
  if (config_path) {
    if (config_path->empty()) return usage_error("flag --config: expected a file name, got ''");
    if (auto code = read_config(*config_path, names)) return code;
  }
  for (const Given& g : seen)
    if (absl::Status s = apply(*g.flag, g.value, absl::StrCat("flag --", g.flag->name)); !s.ok())
      return usage_error(std_sv(s.message()));
  return std::nullopt;
}

std::string FlagTable::usage() const {
  std::string out = absl::StrCat("usage: ", synopsis_, "\n\n", description_, "\n\noptions:\n");
  for (const Flag& f : flags_) {
    std::string head = absl::StrCat("  --", f.name);
    if (!f.value_name.empty()) absl::StrAppend(&head, " ", f.value_name);
    std::vector<std::string> lines = absl::StrSplit(f.help, '\n');
    if (!f.default_text.empty()) absl::StrAppend(&lines.back(), " (default: ", f.default_text, ")");
    for (std::size_t i = 0; i < lines.size(); ++i) {
      std::string left = i == 0 ? head : "";
      if (left.size() + 2 > kHelpColumn) {
        absl::StrAppend(&out, left, "\n");
        left.clear();
      }
      left.resize(kHelpColumn, ' ');
      absl::StrAppend(&out, left, lines[i], "\n");
    }
  }
  std::string help = "  --help";
  help.resize(kHelpColumn, ' ');
  absl::StrAppend(&out, help, "show this text\n");
  return out;
}

std::function<absl::Status(std::string_view)> set_string(std::string* out, bool allow_empty) {
  return [out, allow_empty](std::string_view v) {
    if (v.empty() && !allow_empty) return absl::InvalidArgumentError("expected a value, got ''");
    *out = std::string(v);
    return absl::OkStatus();
  };
}

std::function<absl::Status(std::string_view)> set_u32(std::uint32_t* out, std::uint32_t min,
                                                      std::uint32_t max) {
  return [out, min, max](std::string_view v) {
    std::uint32_t n = 0;
    const auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (v.empty() || ec != std::errc() || ptr != v.data() + v.size() || n < min || n > max)
      return absl::InvalidArgumentError(
          absl::StrCat("expected an integer in [", min, ", ", max, "], got ", quoted(v)));
    *out = n;
    return absl::OkStatus();
  };
}

std::function<absl::Status(std::string_view)> set_switch(bool* out) {
  return [out](std::string_view v) {
    if (v != "true" && v != "false")
      return absl::InvalidArgumentError(absl::StrCat("expected true or false, got ", quoted(v)));
    *out = v == "true";
    return absl::OkStatus();
  };
}

std::function<absl::Status(std::string_view)> set_duration(absl::Duration* out, absl::Duration min,
                                                           absl::Duration max) {
  return [out, min, max](std::string_view v) {
    auto d = parse_duration(v);
    if (!d.ok()) return absl::InvalidArgumentError(d.status().message());
    if (*d < min || *d > max)
      return absl::InvalidArgumentError(absl::StrCat("expected a duration in [",
                                                     format_duration(min), ", ",
                                                     format_duration(max), "], got ", quoted(v)));
    *out = *d;
    return absl::OkStatus();
  };
}

std::function<absl::Status(std::string_view)> set_choice(std::string* out,
                                                         std::vector<std::string> choices) {
  return [out, choices = std::move(choices)](std::string_view v) {
    if (std::find(choices.begin(), choices.end(), v) == choices.end())
      return absl::InvalidArgumentError(
          absl::StrCat("expected one of ", absl::StrJoin(choices, ", "), "; got ", quoted(v)));
    *out = std::string(v);
    return absl::OkStatus();
  };
}

absl::Status parse_host_port(std::string_view text, HostPort* out, bool allow_port_zero) {
  auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected HOST:PORT (", absl_sv(why), "), got ", quoted(text)));
  };
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return bad("no host or port");
  std::string_view host = text.substr(0, colon);
  const std::string_view port = text.substr(colon + 1);
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return bad("unclosed IPv6 bracket");
    host = host.substr(1, host.size() - 2);
    if (host.find_first_not_of("0123456789abcdefABCDEF:.") != std::string_view::npos)
      return bad("not an IPv6 address");
  } else {
    if (host.size() > 253 ||
        host.find_first_not_of(
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-") !=
            std::string_view::npos)
      return bad("the host must be an address or a host name");
  }
  std::uint32_t n = 0;
  const auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), n);
  if (port.empty() || ec != std::errc() || ptr != port.data() + port.size() || n > 65535 ||
      (n == 0 && !allow_port_zero))
    return bad(allow_port_zero ? "the port must be 0..65535" : "the port must be 1..65535");
  out->host = std::string(host);
  out->port = static_cast<std::uint16_t>(n);
  return absl::OkStatus();
}

std::function<absl::Status(std::string_view)> set_host_port(std::string* out,
                                                            bool allow_port_zero) {
  return [out, allow_port_zero](std::string_view v) {
    HostPort hp;
    if (absl::Status s = parse_host_port(v, &hp, allow_port_zero); !s.ok()) return s;
    *out = std::string(v);
    return absl::OkStatus();
  };
}

bool is_loopback_host(std::string_view host) {
  if (host == "localhost" || host == "::1") return true;
  if (!host.starts_with("127.")) return false;
  // 127.a.b.c with numeric parts only.
  int parts = 0;
  for (absl::string_view p : absl::StrSplit(absl_sv(host), '.')) {
    int n = -1;
    const auto [ptr, ec] = std::from_chars(p.data(), p.data() + p.size(), n);
    if (p.empty() || ec != std::errc() || ptr != p.data() + p.size() || n < 0 || n > 255)
      return false;
    ++parts;
  }
  return parts == 4;
}

}  // namespace kairos::cli
