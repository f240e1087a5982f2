// The server's listener for remote workers, from its two flags.
//
// Purpose. `kairos server --listen ADDR:PORT --worker-secret-file FILE`
// validates both here, before anything starts, with errors naming the flag
// (the command exits 2 on them), and then starts one TcpServerTransport.
//
// Rules. --listen takes a numeric IP address or "localhost" and a port
// (0 picks a free one, logged in net.listening), or "none" for no listener;
// the default is 127.0.0.1:7070. Anyone who can reach the port and pass the
// handshake is handed runs to execute, so a listener reachable beyond this
// machine (any address that is not loopback, 0.0.0.0 and :: included)
// requires --worker-secret-file: the server refuses to start without it and
// says why. On loopback the secret is optional (given, it is required of
// every worker all the same).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "prod/net/tcp_transport.h"

namespace kairos::net {

inline constexpr std::string_view kDefaultListen = "127.0.0.1:7070";

struct ListenConfig {
  std::optional<NetAddress> address;  // none: no listener
  std::optional<std::string> secret;
};

// `secret_file` empty: not given.
absl::StatusOr<ListenConfig> listen_config_from_flags(std::string_view listen,
                                                      const std::string& secret_file);

}  // namespace kairos::net
