#include "core/twins/loopback_transport.h"

#include <utility>

#include "core/base/check.h"

namespace kairos {

LoopbackHub::LoopbackHub(Timers& loop) : loop_(loop) {}

LoopbackHub::~LoopbackHub() {
  KAIROS_CHECK_MSG(state_->endpoints.empty(), "a LoopbackHub endpoint outlives its hub");
  state_->closed = true;
}

std::unique_ptr<LoopbackHub::Endpoint> LoopbackHub::connect() {
  const PeerId id = next_id_++;
  std::unique_ptr<Endpoint> ep(new Endpoint(*this, id));
  state_->endpoints.emplace(id, ep.get());
  return ep;
}

void LoopbackHub::deliver(PeerId from, PeerId to, std::string message) {
  ++state_->sent;
  loop_.post([state = state_, from, to, message = std::move(message)] {
    if (state->closed) return;
    auto it = state->endpoints.find(to);
    if (it == state->endpoints.end() || !it->second->handler_) {
      ++state->dropped;
      return;
    }
    ++state->delivered;
    // Copy the handler: it may replace itself (set_handler) or destroy its
    // endpoint while it runs.
    const Transport::Handler handler = it->second->handler_;
    handler(from, message);
  });
}

LoopbackHub::Endpoint::~Endpoint() { hub_.state_->endpoints.erase(id_); }

void LoopbackHub::Endpoint::send(PeerId to, std::string message) {
  KAIROS_CHECK_MSG(message.size() <= kMaxMessageSize, "message larger than kMaxMessageSize");
  hub_.deliver(id_, to, std::move(message));
}

void LoopbackHub::Endpoint::set_handler(Handler handler) { handler_ = std::move(handler); }

}  // namespace kairos
