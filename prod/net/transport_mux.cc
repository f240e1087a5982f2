#include "prod/net/transport_mux.h"

#include <limits>
#include <utility>

#include "core/base/check.h"

namespace kairos::net {

TransportMux::TransportMux(std::vector<Transport*> inner) : inner_(std::move(inner)) {
  KAIROS_CHECK(!inner_.empty());
  for (Transport* t : inner_) KAIROS_CHECK(t != nullptr);
}

TransportMux::~TransportMux() {
  for (Transport* t : inner_) t->set_handler(nullptr);
}

PeerId TransportMux::id_of(std::size_t index, PeerId peer) const {
  KAIROS_CHECK(index < inner_.size());
  const PeerId n = inner_.size();
  KAIROS_CHECK_MSG(peer <= (std::numeric_limits<PeerId>::max() - index) / n,
                   "an inner peer id too large for the mux");
  return peer * n + index;
}

void TransportMux::send(PeerId to, std::string message) {
  KAIROS_CHECK_MSG(message.size() <= kMaxMessageSize, "message larger than kMaxMessageSize");
  const PeerId n = inner_.size();
  inner_[to % n]->send(to / n, std::move(message));
}

void TransportMux::set_handler(Handler handler) {
  if (!handler) {
    for (Transport* t : inner_) t->set_handler(nullptr);
    return;
  }
  // One shared copy; each inner delivery runs its own copy of the handler,
  // so the handler may replace itself while it runs.
  auto shared = std::make_shared<Handler>(std::move(handler));
  for (std::size_t i = 0; i < inner_.size(); ++i) {
    inner_[i]->set_handler([this, shared, i](PeerId from, std::string_view message) {
      const Handler h = *shared;
      h(id_of(i, from), message);
    });
  }
}

}  // namespace kairos::net
