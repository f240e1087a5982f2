#include "prod/net/listen_config.h"

#include <boost/asio/ip/address.hpp>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "prod/net/handshake.h"

namespace kairos::net {

absl::StatusOr<ListenConfig> listen_config_from_flags(std::string_view listen,
                                                      const std::string& secret_file) {
  ListenConfig config;
  if (!secret_file.empty()) {
    auto secret = read_secret_file(secret_file);
    if (!secret.ok())
      return absl::InvalidArgumentError(
          absl::StrCat("flag --worker-secret-file: ", secret.status().message()));
    config.secret = std::move(secret).value();
  }
  if (listen == "none") return config;
  auto address = parse_address(listen, /*allow_port_zero=*/true);
  if (!address.ok())
    return absl::InvalidArgumentError(absl::StrCat("flag --listen: ", address.status().message(),
                                                   " (expected IP:PORT, localhost:PORT or none)"));
  boost::system::error_code ec;
  const auto ip =
      boost::asio::ip::make_address(address->host == "localhost" ? "127.0.0.1" : address->host, ec);
  if (ec)
    return absl::InvalidArgumentError(absl::StrCat(
        "flag --listen: '", address->to_string(),
        "': expected a numeric IP address or localhost (the address of an interface)"));
  if (!ip.is_loopback() && !config.secret)
    return absl::InvalidArgumentError(absl::StrCat(
        "flag --listen: ", address->to_string(),
        " is reachable from other machines, and every worker that connects is handed jobs to "
        "run: remote workers must prove a shared secret, so pass --worker-secret-file FILE (or "
        "listen on 127.0.0.1)"));
  config.address = std::move(address).value();
  return config;
}

}  // namespace kairos::net
