#include "prod/http/http_server.h"

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/json/serialize.hpp>
#include <charconv>
#include <chrono>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "core/base/text.h"
#include "prod/api/job_json.h"
#include "prod/http/request_path.h"

namespace kairos::http {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = boost::asio::ip::tcp;

namespace {

constexpr std::size_t kMaxTokenFileBytes = 1 << 20;

std::chrono::steady_clock::duration to_chrono(absl::Duration d) {
  return std::chrono::microseconds(absl::ToInt64Microseconds(d));
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::vector<std::string_view> split_path(std::string_view path) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t slash = path.find('/', start);
    out.push_back(path.substr(start, slash == std::string_view::npos ? path.npos : slash - start));
    if (slash == std::string_view::npos) return out;
    start = slash + 1;
  }
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (absl::ascii_tolower(static_cast<unsigned char>(a[i])) !=
        absl::ascii_tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

std::string_view status_reason(int status) {
  return bhttp::obsolete_reason(static_cast<bhttp::status>(status));
}

}  // namespace

std::string Request::header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (iequals(k, name)) return v;
  return {};
}

Response error_response(int status, std::string_view code, std::string_view message) {
  Response r;
  r.status = status;
  r.body = boost::json::serialize(api::error_body(code, message));
  return r;
}

std::optional<std::string> percent_decode(std::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '%') {
      if (i + 2 >= text.size()) return std::nullopt;
      const int hi = hex_value(text[i + 1]);
      const int lo = hex_value(text[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::optional<std::map<std::string, std::string>> parse_query(std::string_view query) {
  std::map<std::string, std::string> out;
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    const std::size_t eq = pair.find('=');
    auto key = percent_decode(pair.substr(0, eq), true);
    auto value = percent_decode(eq == std::string_view::npos ? "" : pair.substr(eq + 1), true);
    if (!key || !value) return std::nullopt;
    out[*key] = *value;
  }
  return out;
}

void Router::add(std::string method, std::string pattern, Handler handler) {
  std::string name = pattern;
  routes_.push_back({std::move(method), std::move(pattern), std::move(name), std::move(handler)});
}

Router::Match Router::match(std::string_view method, std::string_view raw_path) const {
  Match result;
  const std::vector<std::string_view> got = split_path(raw_path);
  for (const Route& route : routes_) {
    const std::vector<std::string_view> want = split_path(route.pattern);
    if (want.size() != got.size()) continue;
    std::map<std::string, std::string> params;
    bool ok = true;
    for (std::size_t i = 0; ok && i < want.size(); ++i) {
      const std::string_view p = want[i];
      const std::string_view s = got[i];
      if (!p.starts_with('{')) {
        ok = p == s;
        continue;
      }
      const std::size_t close = p.find('}');
      const std::string_view suffix = p.substr(close + 1);
      if (s.size() <= suffix.size() || !s.ends_with(suffix)) {
        ok = false;
        continue;
      }
      auto value = percent_decode(s.substr(0, s.size() - suffix.size()));
      if (!value) {
        result.bad_escape = true;
        return result;
      }
      params[std::string(p.substr(1, close - 1))] = std::move(*value);
    }
    if (!ok) continue;
    if (route.method != method) {
      result.allowed.push_back(route.method);
      continue;
    }
    result.route = &route;
    result.params = std::move(params);
    return result;
  }
  return result;
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  const std::size_t n = std::max(a.size(), b.size());
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned>(x ^ y);
  }
  return diff == 0;
}

absl::StatusOr<TokenSet> TokenSet::parse(std::string_view text) {
  TokenSet set;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    line = std_sv(absl::StripAsciiWhitespace(absl_sv(line)));
    if (line.empty() || line.starts_with('#')) continue;
    if (!is_printable_ascii(line) || line.find(' ') != std::string_view::npos)
      return absl::InvalidArgumentError(
          "a token must be printable ASCII without spaces (one token per line)");
    set.tokens_.emplace_back(line);
  }
  if (set.tokens_.empty()) return absl::InvalidArgumentError("no token in the token file");
  return set;
}

absl::StatusOr<TokenSet> TokenSet::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read token file '", excerpt(path), "'"));
  std::string text(kMaxTokenFileBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxTokenFileBytes)
    return absl::InvalidArgumentError(
        absl::StrCat("token file '", excerpt(path), "' is larger than 1 MiB"));
  auto set = parse(text);
  if (!set.ok())
    return absl::InvalidArgumentError(
        absl::StrCat("token file '", excerpt(path), "': ", set.status().message()));
  return set;
}

bool TokenSet::accepts(std::string_view authorization) const {
  constexpr std::string_view kBearer = "Bearer ";
  if (authorization.size() <= kBearer.size() || !iequals(authorization.substr(0, 7), kBearer))
    return false;
  const std::string_view token = authorization.substr(kBearer.size());
  bool any = false;
  for (const std::string& t : tokens_) any |= constant_time_equal(t, token);
  return any;
}

bool needs_token(std::string_view path, const TokenSet* tokens) {
  return tokens != nullptr && tokens->size() > 0 && path != "/healthz";
}

bool host_is_loopback(std::string_view host) {
  std::string_view name = host;
  if (name.starts_with('[')) {  // [v6]:port
    const std::size_t close = name.find(']');
    if (close == std::string_view::npos) return false;
    const std::string_view rest = name.substr(close + 1);
    if (!rest.empty() && !rest.starts_with(':')) return false;
    name = name.substr(1, close - 1);
  } else if (const std::size_t colon = name.find(':'); colon != std::string_view::npos) {
    if (name.find(':', colon + 1) != std::string_view::npos) return false;  // bare v6: not a Host
    name = name.substr(0, colon);
  }
  if (name.ends_with('.')) name.remove_suffix(1);  // a fully qualified "localhost."
  if (iequals(name, "localhost") ||
      (name.size() > 10 && iequals(name.substr(name.size() - 10), ".localhost")))
    return true;
  boost::system::error_code ec;
  const auto a = asio::ip::make_address(std::string(name), ec);
  return !ec && a.is_loopback();
}

std::optional<std::string> browser_refusal(std::string_view method, std::string_view host,
                                           std::string_view origin, std::string_view sec_fetch_site,
                                           bool has_tokens) {
  if (!has_tokens && !host.empty() && !host_is_loopback(host))
    return absl::StrCat("Host '", excerpt(host),
                        "' is not localhost or a loopback address; a server without "
                        "--auth-token-file answers only requests for loopback names (this "
                        "refuses DNS-rebinding pages); give tokens to serve other names");
  const bool safe = method == "GET" || method == "HEAD" || method == "OPTIONS";
  if (safe) return std::nullopt;
  if (iequals(sec_fetch_site, "cross-site") || iequals(sec_fetch_site, "same-site"))
    return absl::StrCat("a ", absl_sv(sec_fetch_site),
                        " browser request may not change anything (Sec-Fetch-Site)");
  if (origin.empty()) return std::nullopt;
  const bool same = !host.empty() && (iequals(origin, absl::StrCat("http://", absl_sv(host))) ||
                                      iequals(origin, absl::StrCat("https://", absl_sv(host))));
  if (same) return std::nullopt;
  return absl::StrCat("a cross-origin request (Origin '", excerpt(origin),
                      "') may not change anything");
}

bool ListenAddress::loopback() const {
  boost::system::error_code ec;
  const auto a = asio::ip::make_address(host, ec);
  return !ec && a.is_loopback();
}

absl::StatusOr<ListenAddress> parse_listen_address(std::string_view text) {
  const auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected ADDRESS:PORT such as 127.0.0.1:8080 or [::1]:8080 (", absl_sv(why),
                     "), got '", excerpt(text), "'"));
  };
  const std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return bad("no port");
  std::string_view host = text.substr(0, colon);
  const std::string_view port_text = text.substr(colon + 1);
  if (host.starts_with('[') && host.ends_with(']')) host = host.substr(1, host.size() - 2);
  ListenAddress a;
  a.host = host == "localhost" ? "127.0.0.1" : std::string(host);
  boost::system::error_code ec;
  asio::ip::make_address(a.host, ec);
  if (ec || host.empty()) return bad("the address must be an IP address");
  unsigned port = 0;
  const auto [ptr, err] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (err != std::errc() || ptr != port_text.data() + port_text.size() || port_text.empty() ||
      port > 65535)
    return bad("the port must be 0..65535");
  a.port = static_cast<std::uint16_t>(port);
  return a;
}

absl::Status check_exposure(const ListenAddress& address, const TokenSet* tokens) {
  if (address.loopback() || (tokens != nullptr && tokens->size() > 0)) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "refusing to serve the API on ", address.host,
      ", which is not a loopback address, without authentication: give --auth-token-file FILE "
      "(one token per line) or bind to 127.0.0.1"));
}

// ---- The server ------------------------------------------------------------

class Connection;

struct HttpServer::Impl : std::enable_shared_from_this<HttpServer::Impl> {
  Impl(asio::io_context& loop, HttpServerOptions o, Router r)
      : io(loop), options(std::move(o)), router(std::move(r)), acceptor(loop) {}

  asio::io_context& io;
  HttpServerOptions options;
  Router router;
  tcp::acceptor acceptor;
  std::map<std::uint64_t, std::weak_ptr<Connection>> connections;
  std::uint64_t next_id = 0;
  bool stopped = false;

  void accept();
  void reject_busy(tcp::socket socket);
  void answered(std::string_view route, int status) {
    if (options.on_response) options.on_response(route, status);
  }
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, std::shared_ptr<HttpServer::Impl> server, std::uint64_t id)
      : stream_(std::move(socket)), server_(server), id_(id) {}

  void start() { read_head(); }
  void close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.close();
  }
  ~Connection() {
    if (auto s = server_.lock()) s->connections.erase(id_);
  }

 private:
  void read_head() {
    auto server = server_.lock();
    if (!server || server->stopped) return;
    parser_.emplace();
    limit_parser(*parser_, server->options);
    route_ = "unmatched";
    stream_.expires_after(to_chrono(server->options.header_timeout));
    bhttp::async_read_header(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_head(ec); });
  }

  void on_head(beast::error_code ec) {
    auto server = server_.lock();
    if (!server || server->stopped) return;
    if (ec) return fail_read(ec, /*in_head=*/true, server->options);
    const auto& head = parser_->get();
    if (auto refused = check_head(head, server->options)) return write(std::move(*refused), true);
    if (expects_continue(head)) {
      auto cont = std::make_shared<bhttp::response<bhttp::empty_body>>(bhttp::status::continue_,
                                                                       head.version());
      stream_.expires_after(to_chrono(server->options.body_timeout));
      bhttp::async_write(stream_, *cont,
                         [self = shared_from_this(), cont](beast::error_code ec, std::size_t) {
                           if (ec) return self->close();
                           self->read_body();
                         });
      return;
    }
    read_body();
  }

  // Answers a failed read (and closes), or just closes.
  void fail_read(beast::error_code ec, bool in_head, const HttpServerOptions& options) {
    if (auto answer = read_failure_answer(ec, in_head, options))
      return write(std::move(*answer), true);
    close();
  }

  void read_body() {
    auto server = server_.lock();
    if (!server || server->stopped) return;
    stream_.expires_after(to_chrono(server->options.body_timeout));
    bhttp::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_body(ec); });
  }

  void on_body(beast::error_code ec) {
    auto server = server_.lock();
    if (!server || server->stopped) return;
    if (ec) return fail_read(ec, /*in_head=*/false, server->options);
    stream_.expires_never();
    auto& message = parser_->get();
    keep_alive_ = message.keep_alive();
    Request request = to_request(message);
    // The answer holds the connection open until it comes (a node call
    // answers within its bounded retries, or is dropped when the node stops).
    Response error;
    const Router::Route* route = resolve_request(server->router, request, &error);
    if (route == nullptr) return write(std::move(error), false);
    route_ = route->name;
    route->handler(request, [self = shared_from_this()](Response response) {
      self->write(std::move(response), false);
    });
  }

  void write(Response r, bool close_after) {
    auto server = server_.lock();
    if (!server || server->stopped || writing_) return;
    writing_ = true;
    server->answered(route_, r.status);
    const bool keep = keep_alive_ && !close_after;
    auto res = std::make_shared<ResponseMessage>(to_message(std::move(r), keep));
    stream_.expires_after(to_chrono(server->options.body_timeout));
    bhttp::async_write(stream_, *res,
                       [self = shared_from_this(), res, keep](beast::error_code ec, std::size_t) {
                         self->writing_ = false;
                         if (ec || !keep) return self->close();
                         self->read_head();
                       });
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  std::weak_ptr<HttpServer::Impl> server_;
  std::uint64_t id_;
  std::string route_ = "unmatched";
  bool keep_alive_ = false;
  bool writing_ = false;
};

void HttpServer::Impl::accept() {
  acceptor.async_accept([self = shared_from_this()](beast::error_code ec, tcp::socket socket) {
    if (self->stopped) return;
    if (!ec) {
      if (self->connections.size() >= self->options.max_connections) {
        self->reject_busy(std::move(socket));
      } else {
        const std::uint64_t id = ++self->next_id;
        auto c = std::make_shared<Connection>(std::move(socket), self, id);
        self->connections[id] = c;
        c->start();
      }
    }
    self->accept();
  });
}

void HttpServer::Impl::reject_busy(tcp::socket socket) {
  const std::string body = boost::json::serialize(
      api::error_body("unavailable", "too many connections; try again later"));
  auto text = std::make_shared<std::string>(absl::StrCat(
      "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: ",
      body.size(), "\r\nConnection: close\r\n\r\n", body));
  auto stream = std::make_shared<beast::tcp_stream>(std::move(socket));
  stream->expires_after(to_chrono(options.header_timeout));
  answered("unmatched", 503);
  asio::async_write(*stream, asio::buffer(*text), [stream, text](beast::error_code, std::size_t) {
    beast::error_code ignored;
    stream->socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream->close();
  });
}

const Router::Route* resolve_request(const Router& router, Request& request, Response* error) {
  const std::size_t q = request.target.find('?');
  request.path = request.target.substr(0, q);
  if (q != std::string::npos) {
    auto query = parse_query(std::string_view(request.target).substr(q + 1));
    if (!query) {
      *error = error_response(400, "invalid_argument", "malformed query string");
      return nullptr;
    }
    request.query = std::move(*query);
  }
  Router::Match m = router.match(request.method, request.path);
  if (m.bad_escape) {
    *error = error_response(400, "invalid_argument", "malformed %-escape in the path");
    return nullptr;
  }
  if (m.route == nullptr) {
    if (m.allowed.empty()) {
      *error = error_response(404, "not_found",
                              absl::StrCat("no such endpoint: ", excerpt(request.path)));
      return nullptr;
    }
    *error = error_response(405, "invalid_argument",
                            absl::StrCat("method ", excerpt(request.method), " is not allowed on ",
                                         excerpt(request.path)));
    std::string allow;
    for (const auto& a : m.allowed) absl::StrAppend(&allow, allow.empty() ? "" : ", ", a);
    error->headers.emplace_back("Allow", allow);
    return nullptr;
  }
  request.params = std::move(m.params);
  return m.route;
}

std::string route_request(const Router& router, Request& request, Reply reply) {
  Response error;
  const Router::Route* route = resolve_request(router, request, &error);
  if (route == nullptr) {
    reply(std::move(error));
    return "unmatched";
  }
  route->handler(request, std::move(reply));
  return route->name;
}

void limit_parser(RequestParser& parser, const HttpServerOptions& options) {
  parser.header_limit(static_cast<std::uint32_t>(options.max_header_bytes));
  parser.body_limit(options.max_body_bytes);
}

std::optional<Response> read_failure_answer(const beast::error_code& ec, bool in_head,
                                            const HttpServerOptions& options) {
  // 413, from the head's Content-Length or while the body is read.
  if (ec == bhttp::error::body_limit)
    return error_response(
        413, "payload_too_large",
        absl::StrCat("the request body is larger than ", options.max_body_bytes, " bytes"));
  if (in_head && ec == bhttp::error::header_limit)
    return error_response(431, "invalid_argument", "the request head is too large");
  if (ec == beast::error::timeout || ec == asio::error::operation_aborted) return std::nullopt;
  if (in_head && (ec == bhttp::error::end_of_stream || ec == asio::error::eof ||
                  ec == asio::error::connection_reset))
    return std::nullopt;
  return error_response(400, "invalid_argument", absl::StrCat("malformed request: ", ec.message()));
}

std::optional<Response> check_head(const RequestParser::value_type& head,
                                   const HttpServerOptions& options) {
  const std::string_view target(head.target().data(), head.target().size());
  const std::string_view path = target.substr(0, target.find('?'));
  const TokenSet* tokens = options.tokens ? &*options.tokens : nullptr;
  const auto field = [&](bhttp::field f) {
    const auto v = head[f];
    return std::string_view(v.data(), v.size());
  };
  if (auto refusal = browser_refusal(
          std::string_view(head.method_string().data(), head.method_string().size()),
          field(bhttp::field::host), field(bhttp::field::origin),
          std::string_view(head["Sec-Fetch-Site"].data(), head["Sec-Fetch-Site"].size()),
          tokens != nullptr && tokens->size() > 0))
    return error_response(403, "permission_denied", *refusal);
  if (!needs_token(path, tokens) || (options.public_path && options.public_path(path)))
    return std::nullopt;
  const auto auth = head[bhttp::field::authorization];
  if (tokens->accepts(std::string_view(auth.data(), auth.size()))) return std::nullopt;
  // No bearer token: a session (the dashboard's cookie) may stand in; the
  // hook answers "" to accept, a reason to refuse, nullopt for no session.
  std::optional<std::string> refusal;
  if (options.session_auth) {
    Request probe;
    probe.method = std::string(head.method_string());
    probe.target = std::string(target);
    probe.path = std::string(path);
    for (const auto& field : head)
      probe.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    refusal = options.session_auth(probe);
  }
  if (refusal && refusal->empty()) return std::nullopt;
  return error_response(
      401, "unauthenticated",
      refusal ? *refusal : "missing or wrong bearer token (Authorization: Bearer <token>)");
}

bool expects_continue(const RequestParser::value_type& head) {
  const auto expect = head[bhttp::field::expect];
  return iequals(std::string_view(expect.data(), expect.size()), "100-continue");
}

Request to_request(RequestParser::value_type& message) {
  Request request;
  request.method = std::string(message.method_string());
  request.target = std::string(message.target());
  request.path = request.target.substr(0, request.target.find('?'));
  for (const auto& field : message)
    request.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  request.body = std::move(message.body());
  return request;
}

ResponseMessage to_message(Response r, bool keep_alive) {
  ResponseMessage res;
  res.version(11);
  res.result(static_cast<unsigned>(r.status));
  res.reason(status_reason(r.status));
  res.set(bhttp::field::content_type, r.content_type);
  for (const auto& [k, v] : r.headers) res.set(k, v);
  res.body() = std::move(r.body);
  res.keep_alive(keep_alive);
  res.prepare_payload();
  return res;
}

HttpServer::HttpServer(asio::io_context& io, HttpServerOptions options, Router router)
    : impl_(std::make_shared<Impl>(io, std::move(options), std::move(router))) {}

HttpServer::~HttpServer() { stop(); }

absl::Status HttpServer::start() {
  const TokenSet* tokens = impl_->options.tokens ? &*impl_->options.tokens : nullptr;
  if (absl::Status s = check_exposure(impl_->options.listen, tokens); !s.ok()) return s;
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(impl_->options.listen.host, ec);
  if (ec) return absl::InvalidArgumentError(absl::StrCat("bad address: ", ec.message()));
  const tcp::endpoint endpoint(address, impl_->options.listen.port);
  const std::string where =
      absl::StrCat(impl_->options.listen.host, ":", impl_->options.listen.port);
  impl_->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl_->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) impl_->acceptor.bind(endpoint, ec);
  if (!ec) impl_->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    impl_->acceptor.close(ec);
    return absl::UnavailableError(absl::StrCat("cannot listen on ", where, ": ", ec.message()));
  }
  impl_->accept();
  return absl::OkStatus();
}

void HttpServer::stop() {
  if (impl_->stopped) return;
  impl_->stopped = true;
  beast::error_code ec;
  impl_->acceptor.close(ec);
  auto connections = std::move(impl_->connections);
  impl_->connections.clear();
  for (auto& [id, weak] : connections)
    if (auto c = weak.lock()) c->close();
}

std::uint16_t HttpServer::port() const {
  beast::error_code ec;
  const auto endpoint = impl_->acceptor.local_endpoint(ec);
  return ec ? 0 : endpoint.port();
}

std::size_t HttpServer::connections() const { return impl_->connections.size(); }

}  // namespace kairos::http
