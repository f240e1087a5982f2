#include "core/ports/payload.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace kairos {

namespace {

bool is_token_char(char c) {
  // RFC 9110 tchar.
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool has_ctl(std::string_view s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return true;
  return false;
}

absl::Status validate_command(const CommandPayload& p) {
  if (p.argv.empty()) return absl::InvalidArgumentError("payload.command.argv: must not be empty");
  if (p.argv[0].empty())
    return absl::InvalidArgumentError("payload.command.argv[0]: program must not be empty");
  for (std::size_t i = 0; i < p.argv.size(); ++i)
    if (p.argv[i].find('\0') != std::string::npos)
      return absl::InvalidArgumentError(
          absl::StrCat("payload.command.argv[", i, "]: must not contain a NUL byte"));
  for (const auto& [name, value] : p.env) {
    if (name.empty() || name.find('=') != std::string::npos || name.find('\0') != std::string::npos)
      return absl::InvalidArgumentError(absl::StrCat("payload.command.env: variable name '", name,
                                                     "' must be non-empty without '=' or NUL"));
    if (value.find('\0') != std::string::npos)
      return absl::InvalidArgumentError(
          absl::StrCat("payload.command.env.", name, ": value must not contain a NUL byte"));
  }
  if (p.working_dir.find('\0') != std::string::npos)
    return absl::InvalidArgumentError("payload.command.working_dir: must not contain a NUL byte");
  return absl::OkStatus();
}

absl::Status validate_http(const HttpPayload& p) {
  if (p.method.empty()) return absl::InvalidArgumentError("payload.http.method: must not be empty");
  for (char c : p.method)
    if (!is_token_char(c))
      return absl::InvalidArgumentError(
          absl::StrCat("payload.http.method: '", p.method, "' is not a valid HTTP method token"));
  std::string_view rest;
  if (absl::StartsWith(p.url, "http://"))
    rest = std::string_view(p.url).substr(7);
  else if (absl::StartsWith(p.url, "https://"))
    rest = std::string_view(p.url).substr(8);
  else
    return absl::InvalidArgumentError(
        absl::StrCat("payload.http.url: '", p.url, "' must start with http:// or https://"));
  if (rest.empty() || rest[0] == '/' || rest[0] == ':')
    return absl::InvalidArgumentError(absl::StrCat("payload.http.url: '", p.url, "' has no host"));
  if (has_ctl(p.url) || p.url.find(' ') != std::string::npos)
    return absl::InvalidArgumentError(
        "payload.http.url: must not contain spaces or control characters");
  for (const auto& [name, value] : p.headers) {
    if (name.empty())
      return absl::InvalidArgumentError("payload.http.headers: header name must not be empty");
    for (char c : name)
      if (!is_token_char(c))
        return absl::InvalidArgumentError(
            absl::StrCat("payload.http.headers: '", name, "' is not a valid header name"));
    if (has_ctl(value))
      return absl::InvalidArgumentError(absl::StrCat(
          "payload.http.headers.", name, ": value must not contain control characters"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status validate(const Payload& payload) {
  if (const auto* c = std::get_if<CommandPayload>(&payload)) return validate_command(*c);
  return validate_http(std::get<HttpPayload>(payload));
}

}  // namespace kairos
