#include "prod/runtime/tls_client.h"

#include <openssl/x509.h>

#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"

namespace kairos {

namespace ssl = boost::asio::ssl;

absl::Status configure_tls_client(ssl::context& context, const std::string& ca_file, bool verify,
                                  std::string_view who) {
  boost::system::error_code ec;
  context.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                      ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  context.set_default_verify_paths(ec);  // a missing system store is not fatal
  if (!ca_file.empty()) {
    context.load_verify_file(ca_file, ec);
    if (ec)
      return absl::InvalidArgumentError(
          absl::StrCat(absl_sv(who), ": cannot load the CA file '", ca_file, "': ", ec.message()));
  }
  context.set_verify_mode(verify ? ssl::verify_peer : ssl::verify_none);
  return absl::OkStatus();
}

std::string tls_error_text(const boost::system::error_code& ec, SSL* ssl) {
  if (ssl != nullptr) {
    const long verify = SSL_get_verify_result(ssl);
    if (verify != X509_V_OK)
      return absl::StrCat("certificate verification failed: ",
                          X509_verify_cert_error_string(verify));
  }
  return ec.message();
}

}  // namespace kairos
