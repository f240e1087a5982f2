// libFuzzer target for the HTTP request path of the API server: any byte
// string is a client's request stream on one connection. It goes through
// the production steps (prod/http/request_path.h): Beast's own read_header
// and read over an in-memory stream, with the server's default limits; the
// read-failure answers; the head check (bearer tokens, when the input's
// first byte says so); the router and the API handlers (prod/api/
// api_routes.h) on a real SchedulerNode over MemoryStorage and a manual
// clock (tests/support/node_world.h); the response message as written.
// Keep-alive requests follow each other, at most kMaxRequests per input.
// The input's first byte also picks the size of the stream's reads, so
// request boundaries fall across reads in every way.
// Oracles: nothing crashes, hangs or over-reads (ASan, UBSan); every request
// is answered within 10 s of virtual time; every status is 200..599 and
// every non-2xx body is the API's error shape {"error": {"code",
// "message"}} with a string code and message; the response serializes.
#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/json/parse.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

#include "prod/api/api_routes.h"
#include "prod/http/http_server.h"
#include "prod/http/request_path.h"
#include "tests/support/node_world.h"

namespace {

namespace asio = boost::asio;
namespace bhttp = boost::beast::http;
using kairos::http::Response;

constexpr int kMaxRequests = 8;

// A SyncReadStream over the input: reads at most `chunk` bytes at a time,
// then end of file.
class MemoryStream {
 public:
  MemoryStream(std::string_view data, std::size_t chunk) : rest_(data), chunk_(chunk) {}

  template <typename Buffers>
  std::size_t read_some(const Buffers& buffers, boost::system::error_code& ec) {
    if (rest_.empty()) {
      ec = asio::error::eof;
      return 0;
    }
    ec = {};
    const std::size_t n =
        asio::buffer_copy(buffers, asio::buffer(rest_.data(), std::min(rest_.size(), chunk_)));
    rest_.remove_prefix(n);
    return n;
  }
  template <typename Buffers>
  std::size_t read_some(const Buffers& buffers) {
    boost::system::error_code ec;
    const std::size_t n = read_some(buffers, ec);
    if (ec) throw boost::system::system_error(ec);
    return n;
  }

 private:
  std::string_view rest_;
  std::size_t chunk_;
};

// The oracle on one answer; serializes it as the server writes it.
void check_answer(Response response, bool keep_alive) {
  if (response.status < 200 || response.status > 599) std::abort();
  if (response.status >= 300) {
    boost::system::error_code ec;
    const boost::json::value body = boost::json::parse(response.body, ec);
    if (ec || !body.is_object()) std::abort();
    const auto* error = body.as_object().if_contains("error");
    if (error == nullptr || !error->is_object()) std::abort();
    const auto* code = error->as_object().if_contains("code");
    const auto* message = error->as_object().if_contains("message");
    if (code == nullptr || !code->is_string() || message == nullptr || !message->is_string())
      std::abort();
  }
  std::ostringstream out;
  out << kairos::http::to_message(std::move(response), keep_alive);
  if (out.str().empty()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t control = data[0];
  const std::string_view stream_bytes(reinterpret_cast<const char*>(data) + 1, size - 1);

  kairos::test_support::NodeWorld world;
  auto& node = world.add_node(kairos::test_support::node_config("n1", 2), 7);
  kairos::api::ApiRoutes api(node.node, node.metrics);
  const kairos::http::Router router = api.router();
  node.node.start();
  world.stepper.run(absl::Seconds(1));

  kairos::http::HttpServerOptions options;  // the server's default limits
  if (control & 0x80) options.tokens = *kairos::http::TokenSet::parse("fuzz-token\n");
  const std::size_t chunks[] = {1, 7, 64, 1 << 20};
  MemoryStream stream(stream_bytes, chunks[control & 3]);
  boost::beast::flat_buffer buffer;

  for (int i = 0; i < kMaxRequests; ++i) {
    kairos::http::RequestParser parser;
    kairos::http::limit_parser(parser, options);
    boost::system::error_code ec;
    bhttp::read_header(stream, buffer, parser, ec);
    if (ec) {
      if (auto answer = kairos::http::read_failure_answer(ec, /*in_head=*/true, options))
        check_answer(std::move(*answer), false);
      break;
    }
    if (auto refused = kairos::http::check_head(parser.get(), options)) {
      check_answer(std::move(*refused), false);
      break;
    }
    (void)kairos::http::expects_continue(parser.get());
    bhttp::read(stream, buffer, parser, ec);
    if (ec) {
      if (auto answer = kairos::http::read_failure_answer(ec, /*in_head=*/false, options))
        check_answer(std::move(*answer), false);
      break;
    }
    const bool keep_alive = parser.get().keep_alive();
    kairos::http::Request request = kairos::http::to_request(parser.get());
    // Shared: an answer that came twice, even late, is caught.
    auto got = std::make_shared<std::optional<Response>>();
    const std::string route =
        kairos::http::route_request(router, request, [got](Response response) {
          if (got->has_value()) std::abort();  // answered twice
          *got = std::move(response);
        });
    for (int step = 0; step < 100 && !got->has_value(); ++step)
      world.stepper.run(absl::Milliseconds(100));
    if (!got->has_value()) std::abort();  // a request never answered: a hang
    api.count(route, (*got)->status);
    check_answer(**got, keep_alive);
    if (!keep_alive) break;
  }
  node.node.stop();
  world.stepper.run(absl::Seconds(1));
  return 0;
}
