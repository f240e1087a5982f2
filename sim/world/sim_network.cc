#include "sim/world/sim_network.h"

#include <algorithm>
#include <utility>

#include "core/base/check.h"

namespace kairos::sim {

namespace {
constexpr std::size_t kReplayHistory = 256;
}

class SimNetwork::Endpoint final : public Transport {
 public:
  Endpoint(SimNetwork& net, NodeId node) : net_(net), node_(node) {}
  void send(PeerId to, std::string message) override {
    KAIROS_CHECK_MSG(message.size() <= kMaxMessageSize, "message larger than kMaxMessageSize");
    if (to >= net_.world_.node_count()) return;  // unknown peer: dropped
    net_.send_message(node_, static_cast<NodeId>(to), std::move(message));
  }
  void set_handler(Handler handler) override {
    handler_ = handler ? std::make_shared<const Handler>(std::move(handler)) : nullptr;
  }
  // Shared, so that a delivery keeps the handler alive while it runs even if
  // the handler replaces itself.
  std::shared_ptr<const Handler> handler() const { return handler_; }

 private:
  SimNetwork& net_;
  NodeId node_;
  std::shared_ptr<const Handler> handler_;
};

SimNetwork::SimNetwork(World& world, Random random, NetworkConfig config)
    : world_(world), random_(random), config_(config) {}

SimNetwork::~SimNetwork() = default;

void SimNetwork::grow(NodeId node) {
  if (node < size_) return;
  const std::size_t n = node + 1;
  std::vector<std::uint8_t> next(n * n, 0);
  for (std::size_t f = 0; f < size_; ++f)
    for (std::size_t t = 0; t < size_; ++t) next[f * n + t] = cut_[f * size_ + t];
  cut_ = std::move(next);
  extra_.resize(n, absl::ZeroDuration());
  endpoints_.resize(n);
  size_ = n;
}

Transport& SimNetwork::transport(NodeId node) {
  KAIROS_CHECK(node < world_.node_count());
  grow(node);
  if (!endpoints_[node]) endpoints_[node] = std::make_unique<Endpoint>(*this, node);
  return *endpoints_[node];
}

void SimNetwork::cut(NodeId from, NodeId to) {
  grow(std::max(from, to));
  cut_[from * size_ + to] = 1;
}
void SimNetwork::heal(NodeId from, NodeId to) {
  grow(std::max(from, to));
  cut_[from * size_ + to] = 0;
}
void SimNetwork::isolate(NodeId node) {
  grow(node);
  for (NodeId other = 0; other < world_.node_count(); ++other) {
    if (other == node) continue;
    cut_both(node, other);
  }
}
void SimNetwork::heal_node(NodeId node) {
  grow(node);
  for (NodeId other = 0; other < size_; ++other) heal_both(node, other);
}
void SimNetwork::heal_all() { std::fill(cut_.begin(), cut_.end(), 0); }

bool SimNetwork::linked(NodeId from, NodeId to) const {
  if (from >= size_ || to >= size_) return true;
  return cut_[from * size_ + to] == 0;
}

void SimNetwork::set_extra_delay(NodeId node, absl::Duration d) {
  grow(node);
  extra_[node] = d;
}
absl::Duration SimNetwork::extra_delay(NodeId node) const {
  return node < size_ ? extra_[node] : absl::ZeroDuration();
}

absl::Duration SimNetwork::draw_delay(NodeId from, NodeId to) {
  absl::Duration d = random_.duration_between(config_.min_delay, config_.max_delay);
  if (config_.slow_permille != 0 && random_.chance(config_.slow_permille, 1000))
    d += random_.duration_between(absl::ZeroDuration(), config_.slow_max);
  return on_grid(d, config_.quantum) + extra_delay(from) + extra_delay(to);
}

void SimNetwork::send_message(NodeId from, NodeId to, std::string bytes) {
  ++stats_.sent;
  Message m{from, to, std::make_shared<const std::string>(std::move(bytes)), 0};
  m.digest = hash_mix(hash_bytes(*m.bytes), static_cast<std::uint64_t>(from) << 32 | to);
  if (!linked(from, to)) {
    ++stats_.cut;
    return;
  }
  if (config_.replay_permille != 0 && !history_.empty() &&
      random_.chance(config_.replay_permille, 1000)) {
    ++stats_.replayed;
    world_.mark("net.replayed");
    deliver(history_[random_.below(history_.size())], /*replay=*/true);
  }
  history_.push_back(m);
  if (history_.size() > kReplayHistory) history_.pop_front();
  if (config_.loss_permille != 0 && random_.chance(config_.loss_permille, 1000)) {
    ++stats_.lost;
    return;
  }
  deliver(m, false);
  if (config_.dup_permille != 0 && random_.chance(config_.dup_permille, 1000)) {
    ++stats_.duplicated;
    world_.mark("net.duplicated");
    deliver(m, false);
  }
}

void SimNetwork::deliver(const Message& m, bool replay) {
  if (!linked(m.from, m.to)) {
    ++stats_.cut;
    return;
  }
  const absl::Duration d =
      draw_delay(m.from, m.to) +
      (replay ? random_.duration_between(absl::ZeroDuration(), absl::Seconds(5))
              : absl::ZeroDuration());
  world_.schedule_after(d, EventKind::kDeliver, m.to, m.digest, [this, m] {
    if (!linked(m.from, m.to)) {
      ++stats_.cut;
      return;
    }
    ++stats_.delivered;
    Endpoint* e = m.to < endpoints_.size() ? endpoints_[m.to].get() : nullptr;
    if (e == nullptr) return;
    if (const std::shared_ptr<const Transport::Handler> handler = e->handler())
      (*handler)(m.from, *m.bytes);
  });
}

bool SimNetwork::send_call(NodeId from, NodeId to, EventKind kind, std::uint64_t payload,
                           std::function<void()> fn) {
  ++stats_.sent;
  if (!linked(from, to)) {
    ++stats_.cut;
    return false;
  }
  if (config_.loss_permille != 0 && random_.chance(config_.loss_permille, 1000)) {
    ++stats_.lost;
    return true;
  }
  world_.schedule_after(draw_delay(from, to), kind, to, payload,
                        [this, from, to, fn = std::move(fn)] {
                          if (!linked(from, to)) {
                            ++stats_.cut;
                            return;
                          }
                          ++stats_.delivered;
                          fn();
                        });
  return true;
}

}  // namespace kairos::sim
