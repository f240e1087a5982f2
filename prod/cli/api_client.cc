#include "prod/cli/api_client.h"

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/json/serialize.hpp>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "core/base/check.h"
#include "core/base/duration.h"
#include "core/base/text.h"
#include "prod/api/job_json.h"
#include "prod/cli/flags.h"
#include "prod/runtime/tls_client.h"

namespace kairos::cli {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace json = boost::json;
using tcp = asio::ip::tcp;

namespace {

constexpr std::size_t kListPageSize = 500;

Transport& testing_transport() {
  static Transport* t = new Transport();
  return *t;
}

absl::StatusCode code_of_http(int status) {
  switch (status) {
    case 400:
      return absl::StatusCode::kInvalidArgument;
    case 401:
    case 403:
      return absl::StatusCode::kUnauthenticated;
    case 404:
      return absl::StatusCode::kNotFound;
    case 409:
      return absl::StatusCode::kAlreadyExists;
    case 412:
      return absl::StatusCode::kFailedPrecondition;
    case 413:
      return absl::StatusCode::kResourceExhausted;
    case 503:
      return absl::StatusCode::kUnavailable;
    default:
      return absl::StatusCode::kInternal;
  }
}

// One request/response exchange on a fresh connection (TLS when the URL
// is https://), every step bounded by the stream's expiry and the
// context's run_for.
absl::StatusOr<HttpResponse> exchange(const ServerUrl& server, const std::string& ca_file,
                                      absl::Duration timeout, std::size_t max_response,
                                      const HttpRequest& request) {
  asio::io_context ioc;
  tcp::resolver resolver(ioc);
  std::optional<asio::ssl::context> tls;
  std::optional<beast::tcp_stream> plain;
  std::optional<beast::ssl_stream<beast::tcp_stream>> secure;
  if (server.tls) {
    tls.emplace(asio::ssl::context::tls_client);
    KAIROS_RETURN_IF_ERROR(configure_tls_client(*tls, ca_file, /*verify=*/true, "flag --ca-file"));
    secure.emplace(ioc, *tls);
    boost::system::error_code ec;
    asio::ip::make_address(server.host, ec);
    prepare_tls_client(*secure, server.host, /*host_is_ip=*/!ec, /*verify=*/true);
  } else {
    plain.emplace(ioc);
  }
  beast::tcp_stream& tcp_layer = secure ? beast::get_lowest_layer(*secure) : *plain;
  beast::flat_buffer buffer;
  http::request<http::string_body> req;
  req.version(11);
  req.method_string(request.method);
  req.target(server.base_path + request.target);
  const bool ipv6 = server.host.find(':') != std::string::npos;
  req.set(http::field::host,
          absl::StrCat(ipv6 ? "[" : "", server.host, ipv6 ? "]:" : ":", server.port));
  req.set(http::field::user_agent, "kairos-cli");
  req.set(http::field::accept, "application/json");
  req.set(http::field::connection, "close");
  for (const auto& [k, v] : request.headers) req.set(k, v);
  if (!request.body.empty()) req.set(http::field::content_type, "application/json");
  req.body() = request.body;
  req.prepare_payload();
  http::response_parser<http::string_body> parser;
  parser.body_limit(max_response);
  parser.header_limit(64 * 1024);

  const auto chrono_timeout = absl::ToChronoMilliseconds(timeout);
  tcp_layer.expires_after(chrono_timeout);
  beast::error_code failure;
  std::string stage;
  bool done = false;
  auto fail = [&](std::string_view what, beast::error_code ec) {
    failure = ec;
    stage = std::string(what);
  };
  // Write the request and read the answer on whichever stream is in use.
  auto talk = [&](auto& stream) {
    http::async_write(stream, req, [&](beast::error_code ec, std::size_t) {
      if (ec) return fail("send", ec);
      http::async_read(stream, buffer, parser, [&](beast::error_code ec, std::size_t) {
        if (ec) return fail("read", ec);
        done = true;
      });
    });
  };
  // The service name is numeric; host names are looked up here.
  resolver.async_resolve(
      server.host, std::to_string(server.port),
      [&](beast::error_code ec, tcp::resolver::results_type results) {
        if (ec) return fail("resolve", ec);
        tcp_layer.async_connect(results, [&](beast::error_code ec, const tcp::endpoint&) {
          if (ec) return fail("connect", ec);
          if (!secure) return talk(*plain);
          secure->async_handshake(asio::ssl::stream_base::client, [&](beast::error_code ec) {
            if (ec) return fail("handshake", ec);
            talk(*secure);
          });
        });
      });
  ioc.run_for(chrono_timeout + std::chrono::milliseconds(500));
  const std::string where = absl::StrCat("server ", server.text);
  const std::string unknown =
      stage == "read" || stage == "send"
          ? " (the request may or may not have taken effect; it is safe to retry)"
          : "";
  if (!done && !failure) failure = beast::error::timeout;
  if (failure == beast::error::timeout || failure == asio::error::timed_out)
    return absl::DeadlineExceededError(absl::StrCat(
        where, ": no answer within ", format_duration(timeout), " (--timeout)",
        stage.empty() || stage == "read" || stage == "send"
            ? "; the outcome is unknown: the request may or may not have taken effect, and it "
              "is safe to retry"
            : ""));
  if (failure == http::error::body_limit)
    return absl::InternalError(
        absl::StrCat(where, ": response larger than ", max_response, " bytes; refused"));
  if (failure) {
    if (stage == "resolve")
      return absl::UnavailableError(
          absl::StrCat(where, ": cannot resolve host '", server.host, "': ", failure.message()));
    if (stage == "handshake")  // nothing was sent: a definite failure
      return absl::UnavailableError(absl::StrCat(
          where, ": TLS handshake failed: ", tls_error_text(failure, secure->native_handle()),
          " (a private CA: --ca-file or KAIROS_CA_FILE)"));
    return absl::UnavailableError(
        absl::StrCat(where, ": ", stage, " failed: ", failure.message(), unknown,
                     stage == "connect" ? " (is it running? see --server, KAIROS_SERVER)" : ""));
  }
  HttpResponse out;
  const auto& res = parser.get();
  out.status = static_cast<int>(res.result_int());
  for (const auto& field : res)
    out.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  out.body = res.body();
  return out;
}

std::string strip_quotes(std::string_view s) {
  if (s.starts_with("W/")) s.remove_prefix(2);
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  return std::string(s);
}

}  // namespace

int exit_code(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return kExitOk;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kResourceExhausted:
      return kExitUsage;
    case absl::StatusCode::kNotFound:
      return kExitNotFound;
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kFailedPrecondition:
      return kExitConflict;
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
      return kExitUnavailable;
    default:
      return kExitError;
  }
}

std::string HttpResponse::header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (absl::EqualsIgnoreCase(absl_sv(k), absl_sv(name))) return v;
  return {};
}

absl::StatusOr<ServerUrl> parse_server_url(std::string_view url) {
  ServerUrl out;
  out.text = std::string(url);
  out.tls = absl::StartsWithIgnoreCase(absl_sv(url), "https://");
  if (!out.tls && !absl::StartsWithIgnoreCase(absl_sv(url), "http://"))
    return absl::InvalidArgumentError(absl::StrCat(
        "flag --server: expected http(s)://HOST[:PORT][/PATH], got '", excerpt(url), "'"));
  std::string_view rest = url.substr(out.tls ? 8 : 7);
  const auto slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) {
    std::string_view path = rest.substr(slash);
    while (path.ends_with('/')) path.remove_suffix(1);
    if (path.find_first_of("?# ") != std::string_view::npos || !is_printable_ascii(path))
      return absl::InvalidArgumentError(
          absl::StrCat("flag --server: the path may not hold a query, fragment or space, got '",
                       excerpt(url), "'"));
    out.base_path = std::string(path);
  }
  if (authority.find('@') != std::string_view::npos)
    return absl::InvalidArgumentError(
        "flag --server: user information in the URL is not supported; use --token-file");
  const bool has_port = authority.starts_with('[') ? authority.find("]:") != std::string_view::npos
                                                   : authority.find(':') != std::string_view::npos;
  HostPort hp;
  if (absl::Status s =
          parse_host_port(has_port ? std::string(authority)
                                   : absl::StrCat(absl_sv(authority), out.tls ? ":443" : ":80"),
                          &hp,
                          /*allow_port_zero=*/false);
      !s.ok())
    return absl::InvalidArgumentError(absl::StrCat("flag --server: ", s.message()));
  out.host = hp.host;
  if (out.host.size() >= 2 && out.host.front() == '[')
    out.host = out.host.substr(1, out.host.size() - 2);
  out.port = hp.port;
  return out;
}

Transport beast_transport(ServerUrl server, absl::Duration timeout, std::size_t max_response,
                          std::string ca_file) {
  return [server = std::move(server), timeout, max_response,
          ca_file = std::move(ca_file)](const HttpRequest& request) {
    return exchange(server, ca_file, timeout, max_response, request);
  };
}

absl::Status status_of_response(const HttpResponse& response) {
  if (response.status >= 200 && response.status < 300) return absl::OkStatus();
  const absl::StatusCode code = code_of_http(response.status);
  std::string message;
  std::string field;
  if (auto parsed = api::parse_json(response.body); parsed.ok() && parsed->is_object()) {
    if (const json::value* e = parsed->get_object().if_contains("error");
        e != nullptr && e->is_object()) {
      const json::object& err = e->get_object();
      if (const json::value* m = err.if_contains("message"); m && m->is_string())
        message = std::string(m->get_string());
      if (const json::value* f = err.if_contains("field"); f && f->is_string())
        field = std::string(f->get_string());
    }
  }
  if (message.empty())
    message = absl::StrCat("HTTP ", response.status, response.body.empty() ? "" : ": ",
                           excerpt(response.body));
  absl::Status s(code, message);
  if (!field.empty()) s = api::with_field(std::move(s), field);
  return s;
}

std::string describe(const absl::Status& status) {
  const std::string field = api::error_field(status);
  const std::string message(status.message());
  if (field.empty() || absl::StrContains(message, field)) return message;
  return absl::StrCat(field, ": ", message);
}

std::string url_encode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (absl::ascii_isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

ApiClient::ApiClient(Transport transport, std::string token)
    : transport_(std::move(transport)), token_(std::move(token)) {}

absl::StatusOr<ApiResult> ApiClient::call(std::string_view method, std::string target,
                                          const json::value* body,
                                          std::optional<std::uint64_t> if_match) const {
  HttpRequest request;
  request.method = std::string(method);
  request.target = std::move(target);
  if (!token_.empty()) request.headers.emplace_back("Authorization", "Bearer " + token_);
  if (if_match) request.headers.emplace_back("If-Match", absl::StrCat("\"", *if_match, "\""));
  if (body != nullptr) request.body = json::serialize(*body);
  KAIROS_ASSIGN_OR_RETURN(HttpResponse response, transport_(request));
  KAIROS_RETURN_IF_ERROR(status_of_response(response));
  ApiResult out;
  out.status = response.status;
  if (!response.body.empty()) {
    auto parsed = api::parse_json(response.body);
    if (!parsed.ok())
      return absl::InternalError(
          absl::StrCat("the server's response is not JSON: ", excerpt(response.body)));
    out.body = std::move(*parsed);
  }
  if (const std::string etag = strip_quotes(response.header("ETag")); !etag.empty()) {
    std::uint64_t g = 0;
    if (absl::SimpleAtoi(absl_sv(etag), &g)) out.generation = g;
  }
  return out;
}

absl::StatusOr<json::array> list_jobs(const ApiClient& client, std::string_view query,
                                      std::size_t limit) {
  json::array out;
  std::string token;
  std::set<std::string> tokens_seen;
  for (;;) {
    std::string target = absl::StrCat("/v1/jobs?", absl_sv(query), query.empty() ? "" : "&");
    const std::size_t want =
        limit == 0 ? kListPageSize : std::min(kListPageSize, limit - out.size());
    absl::StrAppend(&target, "page_size=", want);
    if (!token.empty()) absl::StrAppend(&target, "&page_token=", url_encode(token));
    KAIROS_ASSIGN_OR_RETURN(ApiResult page, client.call("GET", target));
    const json::value* jobs =
        page.body.is_object() ? page.body.get_object().if_contains("jobs") : nullptr;
    if (jobs == nullptr || !jobs->is_array())
      return absl::InternalError("the server's job list has no \"jobs\" array");
    for (const json::value& j : jobs->get_array()) {
      if (limit != 0 && out.size() >= limit) return out;
      out.push_back(j);
    }
    const json::value* next = page.body.get_object().if_contains("next_page_token");
    if (next == nullptr || !next->is_string() || next->get_string().empty()) return out;
    if (limit != 0 && out.size() >= limit) return out;
    token = std::string(next->get_string());
    if (!tokens_seen.insert(token).second)
      return absl::InternalError("the server returned the same page token twice");
  }
}

void add_client_flags(FlagTable& table, ClientFlags* flags, bool timeout_is_request) {
  table.add({"server", "URL", "$KAIROS_SERVER or http://127.0.0.1:8080",
             "the API server (http:// or https://)", set_string(&flags->server)});
  table.add({"ca-file", "FILE", "$KAIROS_CA_FILE or the system's",
             "PEM certificates trusted for an https:// server\n(besides the system's)",
             set_string(&flags->ca_file)});
  table.add({"token-file", "FILE", "$KAIROS_TOKEN",
             "a file whose first line is the bearer token; else\nthe token in KAIROS_TOKEN",
             set_string(&flags->token_file)});
  table.add(
      {"json", "", "off", "print the server's JSON instead of tables", set_switch(&flags->json)});
  table.add({timeout_is_request ? "timeout" : "request-timeout", "DURATION", "30s",
             "how long to wait for the server (100ms..1h)",
             set_duration(&flags->timeout, absl::Milliseconds(100), absl::Hours(1))});
}

absl::StatusOr<ApiClient> make_client(const ClientFlags& flags, const Transport& transport) {
  std::string server = flags.server;
  if (server.empty()) {
    const char* env = std::getenv("KAIROS_SERVER");
    server = env != nullptr && *env != '\0' ? env : kDefaultServer;
  }
  KAIROS_ASSIGN_OR_RETURN(ServerUrl url, parse_server_url(server));
  std::string token;
  if (!flags.token_file.empty()) {
    auto text = read_bounded_file(flags.token_file, kMaxTokenFileSize);
    if (!text.ok())
      return absl::InvalidArgumentError(
          absl::StrCat("flag --token-file: ", text.status().message()));
    token = std::string(absl::StripAsciiWhitespace(text->substr(0, text->find('\n'))));
  } else if (const char* env = std::getenv("KAIROS_TOKEN"); env != nullptr) {
    token = std::string(absl::StripAsciiWhitespace(env));
  }
  if (!is_printable_ascii(token) || token.find(' ') != std::string::npos)
    return absl::InvalidArgumentError(
        "flag --token-file: the token must be printable ASCII without spaces");
  std::string ca_file = flags.ca_file;
  if (!ca_file.empty() && !url.tls)
    return absl::InvalidArgumentError(absl::StrCat(
        "flag --ca-file: only for an https:// server; --server is '", excerpt(url.text), "'"));
  if (const char* env = std::getenv("KAIROS_CA_FILE"); ca_file.empty() && env != nullptr)
    ca_file = env;
  if (url.tls && !ca_file.empty()) {  // a file that does not load is a usage error, now
    asio::ssl::context probe(asio::ssl::context::tls_client);
    KAIROS_RETURN_IF_ERROR(configure_tls_client(probe, ca_file, true, "flag --ca-file"));
  }
  Transport t = transport ? transport
                          : beast_transport(std::move(url), flags.timeout, kMaxResponseSize,
                                            url.tls ? std::move(ca_file) : std::string());
  return ApiClient(std::move(t), std::move(token));
}

absl::StatusOr<std::string> read_bounded_file(const std::string& path, std::size_t max_size) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("cannot read '", excerpt(path), "'"));
  std::string text(max_size + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > max_size)
    return absl::InvalidArgumentError(
        absl::StrCat("'", excerpt(path), "' is larger than ", max_size, " bytes"));
  return text;
}

void set_transport_for_testing(Transport transport) { testing_transport() = std::move(transport); }
const Transport& transport_for_testing() { return testing_transport(); }

}  // namespace kairos::cli
