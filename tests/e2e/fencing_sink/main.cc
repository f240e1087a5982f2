// fencing_sink: a small HTTP server that is the target of webhook jobs in the
// e2e tests, following the HTTP pattern of docs/FENCING.md exactly (the
// rules are in fencing_ledger.h), with scripted paths for retry tests.
//
//   fencing_sink --state FILE [--listen ADDR:PORT] [--port-file FILE]
//                [--answer PATH=S1,S2,...]... [--requests FILE]
//
// Listens on ADDR:PORT (default 127.0.0.1:0, an ephemeral port), writes the
// port it got to --port-file (written whole, then renamed into place), and
// after every request that changed the ledger writes the ledger's JSON to
// --state the same way, so a reader never sees half a file. Every method and
// path is a request to apply an effect except GET /state, which answers the
// ledger's JSON, and the paths of --answer scripts (scripted_answers.h),
// which answer their programmed statuses and leave the ledger alone. With
// --requests, every request is recorded there (the whole file rewritten the
// same way), one JSON object a line, in arrival order:
//   {"at_ms": UNIX-MILLIS, "method": M, "target": T, "headers": {NAME: VALUE},
//    "body": B, "status": ANSWERED}
// Requests are read with a 1 MiB body limit and a 10 s deadline per
// connection; one loop, one thread; at most 10000 requests are recorded.
// SIGTERM or SIGINT stops it (exit 0). Bad flags: a message naming the flag,
// exit 2.
#include <signal.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>

#include "tests/e2e/fencing_sink/fencing_ledger.h"
#include "tests/e2e/fencing_sink/scripted_answers.h"

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;
using kairos::fencing_sink::Answer;
using kairos::fencing_sink::FencingLedger;
using kairos::fencing_sink::ScriptedAnswers;

constexpr std::size_t kMaxRecorded = 10'000;

// Writes `text` to `path` through a temporary file and a rename.
bool write_whole(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc | std::ios::binary);
    out << text;
    out.flush();
    if (!out) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

struct Sink {
  FencingLedger ledger;
  ScriptedAnswers scripts;
  std::string state_path;
  std::string requests_path;
  std::string requests;  // the recorded lines
  std::size_t recorded = 0;

  void persist() {
    if (!write_whole(state_path, boost::json::serialize(ledger.to_json()) + "\n"))
      std::cerr << "fencing_sink: cannot write " << state_path << "\n";
  }

  void record(const http::request<http::string_body>& req, int status) {
    if (requests_path.empty() || recorded == kMaxRecorded) return;
    ++recorded;
    boost::json::object line;
    line["at_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count();
    line["method"] = std::string_view(req.method_string());
    line["target"] = std::string_view(req.target());
    boost::json::object headers;
    for (const auto& field : req) headers[std::string_view(field.name_string())] = field.value();
    line["headers"] = std::move(headers);
    line["body"] = req.body();
    line["status"] = status;
    requests += boost::json::serialize(line) + "\n";
    if (!write_whole(requests_path, requests))
      std::cerr << "fencing_sink: cannot write " << requests_path << "\n";
  }
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, Sink& sink) : stream_(std::move(socket)), sink_(sink) {}

  void start() {
    parser_.emplace();
    parser_->body_limit(1 << 20);
    stream_.expires_after(std::chrono::seconds(10));
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) {
                       if (!ec) self->answer();
                     });
  }

 private:
  void answer() {
    const auto& req = parser_->get();
    Answer a;
    if (const auto scripted = sink_.scripts.next(std::string_view(req.target()))) {
      a = Answer{*scripted, "{\"scripted\":" + std::to_string(*scripted) + "}"};
    } else if (req.method() == http::verb::get && req.target() == "/state") {
      a = Answer{200, boost::json::serialize(sink_.ledger.to_json())};
    } else {
      bool changed = false;
      a = sink_.ledger.handle(std::string_view(req["Idempotency-Key"]),
                              std::string_view(req["Kairos-Fencing-Token"]), req.body(), &changed);
      if (changed) sink_.persist();
    }
    sink_.record(req, a.status);
    res_.version(11);
    res_.result(static_cast<unsigned>(a.status));
    res_.set(http::field::content_type, "application/json");
    res_.set(http::field::connection, "close");
    if (a.replayed) res_.set("Idempotent-Replayed", "true");
    res_.body() = std::move(a.body);
    res_.prepare_payload();
    http::async_write(stream_, res_, [self = shared_from_this()](beast::error_code, std::size_t) {
      beast::error_code ignored;
      self->stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    });
  }

  beast::tcp_stream stream_;
  Sink& sink_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> res_;
};

void accept(tcp::acceptor& acceptor, Sink& sink) {
  acceptor.async_accept([&acceptor, &sink](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted) return;
    if (!ec) std::make_shared<Session>(std::move(socket), sink)->start();
    accept(acceptor, sink);
  });
}

int usage(const std::string& why) {
  std::cerr << "fencing_sink: " << why
            << "\nusage: fencing_sink --state FILE [--listen ADDR:PORT] [--port-file FILE]\n"
               "                    [--answer PATH=S1,S2,...]... [--requests FILE]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Sink sink;
  std::string listen = "127.0.0.1:0";
  std::string port_file;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag != "--state" && flag != "--listen" && flag != "--port-file" && flag != "--answer" &&
        flag != "--requests")
      return usage("unknown flag '" + flag + "'");
    if (i + 1 >= argc) return usage(flag + " needs a value");
    const std::string value = argv[++i];
    if (flag == "--state") sink.state_path = value;
    if (flag == "--listen") listen = value;
    if (flag == "--port-file") port_file = value;
    if (flag == "--requests") sink.requests_path = value;
    std::string error;
    if (flag == "--answer" && !sink.scripts.add(value, &error)) return usage("--answer: " + error);
  }
  if (sink.state_path.empty()) return usage("--state is required");
  const auto colon = listen.rfind(':');
  if (colon == std::string::npos)
    return usage("--listen: expected ADDR:PORT, got '" + listen + "'");
  unsigned port = 0;
  const std::string port_text = listen.substr(colon + 1);
  const auto [ptr, pec] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (pec != std::errc() || ptr != port_text.data() + port_text.size() || port > 65535)
    return usage("--listen: port '" + port_text + "' is not 0..65535");
  beast::error_code ec;
  const auto address = asio::ip::make_address(listen.substr(0, colon), ec);
  if (ec) return usage("--listen: '" + listen.substr(0, colon) + "' is not an IP address");

  asio::io_context io;
  tcp::acceptor acceptor(io);
  const tcp::endpoint at(address, static_cast<unsigned short>(port));
  acceptor.open(at.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(at, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    std::cerr << "fencing_sink: cannot listen on " << listen << ": " << ec.message() << "\n";
    return 1;
  }
  sink.persist();  // an empty ledger: the state file exists from the start
  if (!sink.requests_path.empty() && !write_whole(sink.requests_path, "")) {
    std::cerr << "fencing_sink: cannot write " << sink.requests_path << "\n";
    return 1;
  }
  if (!port_file.empty() &&
      !write_whole(port_file, std::to_string(acceptor.local_endpoint().port()) + "\n")) {
    std::cerr << "fencing_sink: cannot write " << port_file << "\n";
    return 1;
  }
  asio::signal_set signals(io, SIGTERM, SIGINT);
  signals.async_wait([&](beast::error_code, int) {
    acceptor.close();
    io.stop();
  });
  accept(acceptor, sink);
  io.run();
  return 0;
}
