// The request path of the HTTP server, apart from its sockets.
//
// Purpose. HttpServer's connections (http_server.cc) take the same steps for
// every request: a Beast parser with the server's limits reads the head,
// a read error becomes an answer or a silent close, the head is checked
// (bearer token), the body is read, the complete message becomes a Request
// for the router (resolve_request / route_request), and the Response is
// turned into the message written back. These functions ARE those steps, so
// a test or a fuzz target can feed bytes from memory through the production
// path (Beast's own read algorithms over an in-memory stream) and reach the
// same router and handlers.
// Guarantees: every function is total over its input (hostile bytes yield an
// answer or a close, never a crash); none does I/O.
#pragma once

#include <boost/beast/core/error.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <optional>

#include "prod/http/http_server.h"

namespace kairos::http {

using RequestParser = boost::beast::http::request_parser<boost::beast::http::string_body>;
using ResponseMessage = boost::beast::http::response<boost::beast::http::string_body>;

// A fresh parser for one request, with the server's head and body limits.
void limit_parser(RequestParser& parser, const HttpServerOptions& options);

// After reading the head (`in_head`) or the body failed with `ec`: the
// answer to send before closing (431, 413, 400 naming the problem), or
// nullopt to close without one (the peer left or timed out).
std::optional<Response> read_failure_answer(const boost::beast::error_code& ec, bool in_head,
                                            const HttpServerOptions& options);

// The check of a complete head: the 403 to send (and close) when the
// browser guard refuses it (browser_refusal, http_server.h), the 401 when
// the server has tokens and the path needs one the head does not carry,
// else nullopt.
std::optional<Response> check_head(const RequestParser::value_type& head,
                                   const HttpServerOptions& options);

// Whether the head asks for "100 Continue" before its body is sent.
bool expects_continue(const RequestParser::value_type& head);

// The complete message as the router's Request (method, target, path,
// headers; the body is moved out).
Request to_request(RequestParser::value_type& message);

// The Response as the HTTP/1.1 message written back: status and reason,
// Content-Type, its headers, the body, Connection per `keep_alive`.
ResponseMessage to_message(Response response, bool keep_alive);

}  // namespace kairos::http
