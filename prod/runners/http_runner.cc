#include "prod/runners/http_runner.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <algorithm>
#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <charconv>
#include <optional>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "core/base/check.h"
#include "core/base/rfc3339.h"
#include "prod/runners/process_runner.h"
#include "prod/runtime/tls_client.h"

namespace kairos {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr std::size_t kChunk = 8 * 1024;
constexpr std::size_t kResponseHeaderLimit = 16 * 1024;
constexpr int kMaxInterim = 8;

absl::Status url_error(std::string_view url, std::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("payload.http.url: '", absl_sv(url), "': ", absl_sv(what)));
}

bool dns_char(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
}

// RFC 9110 tchar: the characters of a method or a header name.
bool token_char(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), token_char);
}

// Header names the runner sets itself; a payload header by one of these
// names (any case) is dropped.
constexpr std::string_view kReserved[] = {
    "idempotency-key", "kairos-fencing-token", "kairos-job-id",
    "kairos-run-id",   "kairos-attempt",       "kairos-scheduled-at",
    "kairos-late-by",  "kairos-occurrences",   "host",
    "content-length",  "transfer-encoding",    "connection",
};

bool reserved(std::string_view name) {
  const std::string lower = absl::AsciiStrToLower(absl_sv(name));
  return std::find(std::begin(kReserved), std::end(kReserved), lower) != std::end(kReserved);
}

}  // namespace

absl::StatusOr<HttpUrl> parse_http_url(std::string_view url) {
  for (char c : url) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f)
      return url_error(url, "must not contain spaces, control or non-ASCII characters");
  }
  HttpUrl out;
  const auto colon = url.find("://");
  if (colon == std::string_view::npos) return url_error(url, "must start with http:// or https://");
  const std::string scheme = absl::AsciiStrToLower(absl_sv(url.substr(0, colon)));
  if (scheme == "https") {
    out.tls = true;
  } else if (scheme != "http") {
    return url_error(url, absl::StrCat("scheme '", absl_sv(url.substr(0, colon)),
                                       "' is not supported (http or https)"));
  }
  std::string_view rest = url.substr(colon + 3);
  if (const auto hash = rest.find('#'); hash != std::string_view::npos) rest = rest.substr(0, hash);
  const auto path_at = rest.find_first_of("/?");
  const std::string_view authority = rest.substr(0, path_at);
  std::string_view target = path_at == std::string_view::npos ? "" : rest.substr(path_at);
  if (authority.find('@') != std::string_view::npos)
    return url_error(url, "user info ('user@') is not supported");
  std::string_view host;
  std::string_view port_text;
  if (authority.starts_with('[')) {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) return url_error(url, "IPv6 address has no closing ']'");
    host = authority.substr(1, close - 1);
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (!after.starts_with(':')) return url_error(url, "unexpected text after the IPv6 address");
      port_text = after.substr(1);
      if (port_text.empty()) return url_error(url, "empty port");
    }
    boost::system::error_code ec;
    asio::ip::make_address_v6(std::string(host), ec);
    if (ec || host.find('%') != std::string_view::npos)
      return url_error(url, absl::StrCat("'", absl_sv(host), "' is not an IPv6 address"));
    out.host_is_ip = true;
  } else {
    const auto c = authority.rfind(':');
    host = authority.substr(0, c);
    if (c != std::string_view::npos) {
      port_text = authority.substr(c + 1);
      if (port_text.empty()) return url_error(url, "empty port");
    }
    if (host.empty()) return url_error(url, "has no host");
    if (!std::all_of(host.begin(), host.end(), dns_char))
      return url_error(url, absl::StrCat("host '", absl_sv(host),
                                         "' may contain only letters, digits, '-', '_' and '.'"));
    if (host.size() > 253) return url_error(url, "host is longer than 253 characters");
    boost::system::error_code ec;
    asio::ip::make_address_v4(std::string(host), ec);
    out.host_is_ip = !ec;
  }
  if (host.empty()) return url_error(url, "has no host");
  out.port = out.tls ? 443 : 80;
  if (!port_text.empty()) {
    unsigned port = 0;
    const auto [ptr, ec] =
        std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc() || ptr != port_text.data() + port_text.size())
      return url_error(url, absl::StrCat("port '", absl_sv(port_text), "' is not a number"));
    if (port < 1 || port > 65535) return url_error(url, "port must be 1..65535");
    out.port = static_cast<std::uint16_t>(port);
  }
  out.host = std::string(host);
  if (target.empty()) target = "/";
  out.target = target.starts_with('?') ? absl::StrCat("/", absl_sv(target)) : std::string(target);
  const bool default_port = out.port == (out.tls ? 443 : 80);
  out.host_header = absl::StrCat(
      authority.starts_with('[') ? absl::StrCat("[", absl_sv(host), "]") : std::string(host),
      default_port ? "" : absl::StrCat(":", out.port));
  return out;
}

struct HttpRunner::Tls {
  ssl::context context{ssl::context::tls_client};
};

struct HttpRunner::Call {
  explicit Call(asio::io_context& io) : resolver(io) {}

  RunHandle handle = 0;
  RunRequest request;
  std::function<void(RunOutcome)> done;
  HttpUrl url;
  http::request<http::string_body> message;
  absl::Time started_at;
  const char* phase = "resolving the host";
  bool sending = false;  // a byte of the request may have left
  bool finished = false;
  int interim = 0;  // interim (1xx) responses skipped
  std::optional<TimerId> deadline_timer;
  tcp::resolver resolver;
  tcp::resolver::results_type endpoints;
  std::optional<tcp::socket> plain;
  std::optional<ssl::stream<tcp::socket>> secure;
  boost::beast::flat_buffer buffer;
  std::optional<http::response_parser<http::buffer_body>> parser;
  std::array<char, kChunk> chunk{};
  std::string body;  // the start of the response body, at most output_bytes

  tcp::socket& socket() { return secure ? secure->next_layer() : *plain; }
  template <typename F>
  void with_stream(F&& f) {
    if (secure)
      f(*secure);
    else
      f(*plain);
  }
};

absl::StatusOr<std::unique_ptr<HttpRunner>> HttpRunner::create(asio::io_context& io, Timers& timers,
                                                               const Clock& clock,
                                                               HttpRunnerOptions options) {
  if (options.output_bytes > kMaxRunOutputSize)
    return absl::InvalidArgumentError(absl::StrCat("http runner: output_bytes ",
                                                   options.output_bytes, " is above the maximum ",
                                                   kMaxRunOutputSize));
  for (int s : options.retryable_statuses)
    if (s < 400 || s > 499)
      return absl::InvalidArgumentError(
          absl::StrCat("http runner: retryable status ", s, " is not a 4xx status"));
  auto tls = std::make_unique<Tls>();
  KAIROS_RETURN_IF_ERROR(configure_tls_client(tls->context, options.ca_file,
                                              options.verify_certificates, "http runner"));
  return std::unique_ptr<HttpRunner>(
      new HttpRunner(io, timers, clock, std::move(options), std::move(tls)));
}

HttpRunner::HttpRunner(asio::io_context& io, Timers& timers, const Clock& clock,
                       HttpRunnerOptions options, std::unique_ptr<Tls> tls)
    : io_(io), timers_(timers), clock_(clock), options_(std::move(options)), tls_(std::move(tls)) {}

HttpRunner::~HttpRunner() {
  *alive_ = false;
  for (auto& [handle, c] : calls_) {
    c->finished = true;
    if (c->deadline_timer) timers_.cancel(*c->deadline_timer);
    c->resolver.cancel();
    boost::system::error_code ignored;
    c->socket().close(ignored);
  }
  calls_.clear();
}

void HttpRunner::deliver(RunRequest request, std::function<void(RunOutcome)> done,
                         RunOutcome outcome, absl::Time started) {
  timers_.post([this, alive = alive_, request = std::move(request), done = std::move(done),
                outcome = std::move(outcome), started]() mutable {
    if (!*alive) return;
    if (options_.on_exit) {
      HttpExit e;
      e.request = &request;
      e.outcome = outcome;
      e.elapsed = clock_.now() - started;
      options_.on_exit(e);
    }
    done(std::move(outcome));  // last: it may destroy this runner
  });
}

void HttpRunner::fail_to_start(RunRequest request, std::function<void(RunOutcome)> done,
                               std::string detail) {
  RunOutcome o{RunStatus::kFailedPermanent, 0, std::move(detail), /*started=*/false};
  deliver(std::move(request), std::move(done), std::move(o), clock_.now());
}

RunHandle HttpRunner::start(RunRequest request, std::function<void(RunOutcome)> done) {
  const RunHandle handle = ++next_handle_;
  const auto* payload = std::get_if<HttpPayload>(&request.payload);
  if (payload == nullptr) {
    fail_to_start(std::move(request), std::move(done), "the http runner runs http payloads only");
    return handle;
  }
  auto url = parse_http_url(payload->url);
  if (!url.ok()) {
    fail_to_start(std::move(request), std::move(done), std::string(url.status().message()));
    return handle;
  }
  if (!is_token(payload->method)) {
    std::string detail =
        absl::StrCat("payload.http.method: '", payload->method, "' is not a valid HTTP method");
    fail_to_start(std::move(request), std::move(done), std::move(detail));
    return handle;
  }
  auto c = std::make_shared<Call>(io_);
  c->handle = handle;
  c->url = *std::move(url);
  c->message.version(11);
  c->message.method_string(payload->method);
  c->message.target(c->url.target);
  for (const auto& [name, value] : payload->headers) {
    if (!is_token(name)) {
      std::string detail =
          absl::StrCat("payload.http.headers: '", name, "' is not a valid header name");
      fail_to_start(std::move(request), std::move(done), std::move(detail));
      return handle;
    }
    if (std::any_of(value.begin(), value.end(), [](char ch) {
          const auto u = static_cast<unsigned char>(ch);
          return (u < 0x20 && ch != '\t') || u == 0x7f;
        })) {
      std::string detail = absl::StrCat("payload.http.headers.", name,
                                        ": value must not contain control characters");
      fail_to_start(std::move(request), std::move(done), std::move(detail));
      return handle;
    }
    if (!reserved(name)) c->message.insert(name, value);
  }
  c->message.set(http::field::host, c->url.host_header);
  c->message.set(http::field::user_agent, options_.user_agent);
  c->message.set(http::field::connection, "close");
  c->message.set("Idempotency-Key", request.idempotency_key);
  c->message.set("Kairos-Fencing-Token", absl::StrCat(request.fencing_token));
  c->message.set("Kairos-Job-Id", request.job_id);
  c->message.set("Kairos-Run-Id", request.run_id);
  c->message.set("Kairos-Attempt", absl::StrCat(request.attempt));
  c->message.set("Kairos-Scheduled-At", format_rfc3339_utc(request.nominal_time));
  if (request.late_by > absl::ZeroDuration() || request.occurrences > 1) {
    c->message.set("Kairos-Late-By", format_late_by(request.late_by));
    c->message.set("Kairos-Occurrences", absl::StrCat(request.occurrences));
  }
  c->message.body() = payload->body;
  c->message.prepare_payload();
  c->request = std::move(request);
  c->done = std::move(done);
  c->started_at = clock_.now();
  if (c->url.tls) {
    c->secure.emplace(io_, tls_->context);
  } else {
    c->plain.emplace(io_);
  }
  calls_.emplace(handle, c);

  c->deadline_timer = timers_.after(c->request.deadline - clock_.now(), [this, alive = alive_, c] {
    if (!*alive || c->finished) return;
    c->deadline_timer.reset();
    finish(c,
           RunOutcome{RunStatus::kTimedOut, 0,
                      absl::StrCat("timed out (deadline ", format_rfc3339_utc(c->request.deadline),
                                   ") while ", c->phase)});
  });
  // A deadline already past: nothing is sent; the timer above reports it.
  if (c->request.deadline <= clock_.now()) return handle;
  c->resolver.async_resolve(
      c->url.host, std::to_string(c->url.port),
      [this, alive = alive_, c](const boost::system::error_code& ec,
                                tcp::resolver::results_type results) {
        if (!*alive || c->finished) return;
        if (ec) {
          finish(c, RunOutcome{RunStatus::kFailed, 0,
                               absl::StrCat("cannot resolve '", c->url.host, "': ", ec.message())});
          return;
        }
        c->endpoints = std::move(results);
        resolved(c);
      });
  return handle;
}

void HttpRunner::resolved(const CallPtr& c) {
  c->phase = "connecting";
  asio::async_connect(
      c->socket(), c->endpoints,
      [this, alive = alive_, c](const boost::system::error_code& ec, const tcp::endpoint&) {
        if (!*alive || c->finished) return;
        if (ec) {
          finish(c, RunOutcome{RunStatus::kFailed, 0,
                               absl::StrCat("cannot connect to ", c->url.host_header, " (port ",
                                            c->url.port, "): ", ec.message())});
          return;
        }
        connected(c);
      });
}

void HttpRunner::connected(const CallPtr& c) {
  if (!c->secure) {
    send(c);
    return;
  }
  c->phase = "the TLS handshake";
  prepare_tls_client(*c->secure, c->url.host, c->url.host_is_ip, options_.verify_certificates);
  c->secure->async_handshake(
      ssl::stream_base::client, [this, alive = alive_, c](const boost::system::error_code& ec) {
        if (!*alive || c->finished) return;
        if (ec) {
          finish(c, RunOutcome{RunStatus::kFailed, 0,
                               absl::StrCat("TLS handshake with ", c->url.host_header, " failed: ",
                                            tls_error_text(ec, c->secure->native_handle()))});
          return;
        }
        send(c);
      });
}

void HttpRunner::send(const CallPtr& c) {
  c->phase = "sending the request";
  c->sending = true;
  c->with_stream([&](auto& stream) {
    http::async_write(
        stream, c->message,
        [this, alive = alive_, c](const boost::system::error_code& ec, std::size_t) {
          if (!*alive || c->finished) return;
          if (ec) {
            finish(c, RunOutcome{RunStatus::kFailed, 0,
                                 absl::StrCat("sending the request failed: ", ec.message())});
            return;
          }
          read_header(c);
        });
  });
}

void HttpRunner::read_header(const CallPtr& c) {
  c->phase = "waiting for the response";
  c->parser.emplace();
  c->parser->header_limit(kResponseHeaderLimit);
  c->parser->body_limit(boost::none);  // read only as far as output_bytes
  if (absl::EqualsIgnoreCase(absl_sv(std::string_view(c->message.method_string())), "HEAD"))
    c->parser->skip(true);
  c->with_stream([&](auto& stream) {
    http::async_read_header(
        stream, c->buffer, *c->parser,
        [this, alive = alive_, c](const boost::system::error_code& ec, std::size_t) {
          if (!*alive || c->finished) return;
          if (ec) {
            finish(c, RunOutcome{RunStatus::kFailed, 0,
                                 absl::StrCat("reading the response failed: ", ec.message())});
            return;
          }
          // Interim responses (100 Continue, 103 Early Hints) precede the
          // real one; a server sending nothing else is cut off by the bound.
          const unsigned status = c->parser->get().result_int();
          if (status >= 100 && status <= 199 && status != 101 && ++c->interim <= kMaxInterim) {
            read_header(c);
            return;
          }
          read_body(c);
        });
  });
}

void HttpRunner::read_body(const CallPtr& c) {
  c->phase = "reading the response";
  if (c->parser->is_done() || c->body.size() >= options_.output_bytes) {
    respond(c);
    return;
  }
  const std::size_t want = std::min(kChunk, options_.output_bytes - c->body.size());
  c->parser->get().body().data = c->chunk.data();
  c->parser->get().body().size = want;
  c->with_stream([&](auto& stream) {
    http::async_read(
        stream, c->buffer, *c->parser,
        [this, alive = alive_, c, want](boost::system::error_code ec, std::size_t) {
          if (!*alive || c->finished) return;
          if (ec == http::error::need_buffer) ec = {};
          c->body.append(c->chunk.data(), want - c->parser->get().body().size);
          // A server that closes without TLS close_notify after a body that
          // ends at EOF: the status is known, take it.
          if (ec == ssl::error::stream_truncated) ec = {};
          if (ec) {
            finish(c,
                   RunOutcome{RunStatus::kFailed, static_cast<int>(c->parser->get().result_int()),
                              absl::StrCat("reading the response body failed: ", ec.message())});
            return;
          }
          if (c->parser->is_done()) {
            respond(c);
            return;
          }
          read_body(c);
        });
  });
}

void HttpRunner::respond(const CallPtr& c) {
  const auto& res = c->parser->get();
  const int status = static_cast<int>(res.result_int());
  RunOutcome o;
  o.exit_code = status;
  o.output = c->body;
  std::string what = absl::StrCat("HTTP ", status);
  if (!res.reason().empty()) absl::StrAppend(&what, " ", absl_sv(std::string_view(res.reason())));
  if (status >= 200 && status <= 299) {
    o.status = RunStatus::kSucceeded;
  } else if (status == 429 || (status >= 500 && status <= 599)) {
    o.status = RunStatus::kFailed;
  } else if (status >= 400 && status <= 499) {
    const auto& r = options_.retryable_statuses;
    o.status = std::find(r.begin(), r.end(), status) != r.end() ? RunStatus::kFailed
                                                                : RunStatus::kFailedPermanent;
  } else if (status >= 300 && status <= 399) {
    o.status = RunStatus::kFailedPermanent;
    const auto location = res.find(http::field::location);
    absl::StrAppend(&what, "; redirects are not followed");
    if (location != res.end())
      absl::StrAppend(
          &what, " (Location: ", absl_sv(std::string_view(location->value()).substr(0, 200)), ")");
  } else {
    o.status = RunStatus::kFailed;
    absl::StrAppend(&what, "; not a final status");
  }
  o.detail = std::move(what);
  finish(c, std::move(o));
}

void HttpRunner::finish(const CallPtr& c, RunOutcome outcome) {
  KAIROS_CHECK(!c->finished);
  c->finished = true;
  if (c->deadline_timer) timers_.cancel(*c->deadline_timer);
  c->deadline_timer.reset();
  c->resolver.cancel();
  boost::system::error_code ignored;
  c->socket().shutdown(tcp::socket::shutdown_both, ignored);
  c->socket().close(ignored);
  outcome.started = c->sending;
  if (outcome.status == RunStatus::kTimedOut || outcome.status == RunStatus::kStopped) {
    if (!c->sending) absl::StrAppend(&outcome.detail, "; nothing was sent");
  }
  calls_.erase(c->handle);
  deliver(std::move(c->request), std::move(c->done), std::move(outcome), c->started_at);
}

void HttpRunner::stop(RunHandle handle) {
  auto it = calls_.find(handle);
  if (it == calls_.end()) return;
  const CallPtr c = it->second;
  finish(c, RunOutcome{RunStatus::kStopped, 0, absl::StrCat("stopped while ", c->phase)});
}

void HttpRunner::terminate_all() {
  std::vector<RunHandle> all;
  for (const auto& [h, c] : calls_) all.push_back(h);
  for (RunHandle h : all) stop(h);
}

}  // namespace kairos
