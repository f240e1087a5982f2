// API client: how the `kairos job|apply|cluster` commands talk to a server.
//
// Purpose. A small synchronous HTTP/1.1 client of the API contract
// (docs/API.md): one request per connection, a JSON body out, a JSON body
// back, every failure turned into an absl::Status whose code decides the
// command's exit code (exit_code()). A command may block: it has nothing
// else to do while it waits.
//
// Guarantees.
// - http:// and https:// servers. TLS is verified as the webhook runner
//   verifies it (prod/runtime/tls_client.h): TLS >= 1.2, the system's trust
//   store plus --ca-file / KAIROS_CA_FILE, the certificate checked against
//   the URL's host; a failed handshake is kUnavailable naming the reason
//   (nothing was sent).
// - Every request ends within the timeout (resolve, connect, write and read
//   together); a timeout is kDeadlineExceeded and says the outcome is
//   unknown (the request may have taken effect, and is safe to retry).
// - A response is read up to kMaxResponseSize bytes; a larger one is an
//   error, never a partial read.
// - A non-2xx response becomes the status of its contract error body
//   {"error": {"code", "message", "field"}}: 400 kInvalidArgument (with the
//   field, see api::error_field), 401 kUnauthenticated, 404 kNotFound,
//   409 kAlreadyExists, 412 kFailedPrecondition, 413 kResourceExhausted,
//   503 kUnavailable, anything else kInternal. A body that is not the error
//   shape still gives the status code and an excerpt of the body.
// - The transport is a function, so the commands can be tested against a
//   fake server without sockets (see tests/prod/cli).
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/value.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace kairos::cli {

class FlagTable;

inline constexpr std::size_t kMaxResponseSize = std::size_t{16} << 20;
inline constexpr std::size_t kMaxTokenFileSize = std::size_t{64} << 10;
inline constexpr const char* kDefaultServer = "http://127.0.0.1:8080";

// The exit codes of every client command (also in their --help).
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;        // anything else (401, 500, a local failure)
inline constexpr int kExitUsage = 2;        // bad usage or input, the server's 400/413
inline constexpr int kExitNotFound = 3;     // 404
inline constexpr int kExitConflict = 4;     // 409, 412
inline constexpr int kExitUnavailable = 5;  // 503, connection refused, timeout: outcome unknown
inline constexpr const char* kExitCodesHelp =
    "exit codes: 0 ok, 1 error, 2 usage or bad input (names the flag or field),\n"
    "3 not found, 4 conflict or precondition failed (409/412),\n"
    "5 unavailable or outcome unknown (503, connection refused, timeout)";

int exit_code(const absl::Status& status);

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string target;  // "/v1/jobs?namespace=x", relative to the server's base path
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;  // sent with Content-Type: application/json when non-empty
};

struct HttpResponse {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // The first header of that name (case-insensitive), or empty.
  std::string header(std::string_view name) const;
};

using Transport = std::function<absl::StatusOr<HttpResponse>(const HttpRequest&)>;

// "http://HOST[:PORT][/BASE]" (PORT defaults to 80) or "https://..." (443).
struct ServerUrl {
  bool tls = false;
  std::string host;
  std::uint16_t port = 80;
  std::string base_path;  // without a trailing '/'; may be empty
  std::string text;       // as given, for messages
};
absl::StatusOr<ServerUrl> parse_server_url(std::string_view url);

// The real transport: Boost.Beast over TCP (TLS for https://, trusting
// `ca_file` besides the system's store), a fresh connection per request.
Transport beast_transport(ServerUrl server, absl::Duration timeout,
                          std::size_t max_response = kMaxResponseSize, std::string ca_file = "");

// The status a non-2xx response stands for (see the file comment).
absl::Status status_of_response(const HttpResponse& response);

// "field: message" of a status as shown to the operator (the field when the
// message does not already start with it).
std::string describe(const absl::Status& status);

// Percent-encodes a path segment or query value (everything but A-Z a-z 0-9 - . _ ~).
std::string url_encode(std::string_view text);

struct ApiResult {
  int status = 0;
  boost::json::value body;                  // null for an empty body
  std::optional<std::uint64_t> generation;  // from ETag: "<generation>"
};

class ApiClient {
 public:
  ApiClient(Transport transport, std::string token);

  // One request; `body` is serialized when given, `if_match` sent as
  // If-Match: "<generation>". A 2xx body must be JSON (or empty).
  absl::StatusOr<ApiResult> call(std::string_view method, std::string target,
                                 const boost::json::value* body = nullptr,
                                 std::optional<std::uint64_t> if_match = std::nullopt) const;

 private:
  Transport transport_;
  std::string token_;
};

// GET /v1/jobs?`query` (already encoded: "namespace=a&state=active"),
// following next_page_token; at most `limit` jobs (0: all of them).
absl::StatusOr<boost::json::array> list_jobs(const ApiClient& client, std::string_view query,
                                             std::size_t limit);

// The flags every client command has: --server, --token-file, --json and
// the request timeout (named --timeout, or --request-timeout where a
// command's own --timeout means something else).
struct ClientFlags {
  std::string server;
  std::string token_file;
  std::string ca_file;
  bool json = false;
  absl::Duration timeout = absl::Seconds(30);
};
void add_client_flags(FlagTable& table, ClientFlags* flags, bool timeout_is_request = true);

// The client the flags and the environment (KAIROS_SERVER, KAIROS_TOKEN)
// describe. `transport` replaces the network (tests); errors are usage
// errors naming the flag.
absl::StatusOr<ApiClient> make_client(const ClientFlags& flags,
                                      const Transport& transport = nullptr);

// The contents of a file of at most `max_size` bytes (token, apply and edit
// files); errors say which file and why.
absl::StatusOr<std::string> read_bounded_file(const std::string& path, std::size_t max_size);

// Tests replace the network of every command with this (nullptr: the real one).
void set_transport_for_testing(Transport transport);
const Transport& transport_for_testing();

}  // namespace kairos::cli
