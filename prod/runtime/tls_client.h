// TLS for Kairos's HTTP clients: the webhook runner (prod/runners) and the
// API client of the `kairos job|apply|cluster` commands (prod/cli).
//
// Purpose. One place decides how a client connection is secured, so every
// client verifies the same way: TLS 1.2 or newer, the system's trust store
// plus an optional CA file, the peer's certificate checked against the host
// name or IP address the user gave (RFC 2818 rules), SNI sent for names,
// and errors that say why verification failed rather than "handshake
// failure".
// Guarantees: configure_tls_client never leaves a context half set up (an
// error names the file and OpenSSL's reason); prepare_tls_client is called
// on a fresh stream before its handshake.
#pragma once

#include <openssl/ssl.h>

#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/system/error_code.hpp>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace kairos {

// Sets up `context` (a tls_client context) for Kairos's clients: TLS >= 1.2,
// the default trust store (a missing one is not an error), `ca_file` when not
// empty, and peer verification when `verify`. `who` prefixes errors
// ("http runner", "flag --ca-file").
absl::Status configure_tls_client(boost::asio::ssl::context& context, const std::string& ca_file,
                                  bool verify, std::string_view who);

// Before the handshake of `stream` (any Asio/Beast SSL stream) to `host`:
// SNI when `host` is a name, and, when `verify`, the check of the
// certificate against `host` (a name or an IP literal).
template <typename SslStream>
void prepare_tls_client(SslStream& stream, const std::string& host, bool host_is_ip, bool verify) {
  if (!host_is_ip) SSL_set_tlsext_host_name(stream.native_handle(), host.c_str());
  if (verify) stream.set_verify_callback(boost::asio::ssl::host_name_verification(host));
}

// A failed handshake's reason: the certificate verification error when
// there was one ("certificate verification failed: self-signed
// certificate"), else the error's message.
std::string tls_error_text(const boost::system::error_code& ec, SSL* ssl);

}  // namespace kairos
