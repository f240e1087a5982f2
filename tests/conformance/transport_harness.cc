// The Transport adapters under test, each behind a TransportHarness
// (transport_conformance.h).
#include <map>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/twins/loopback_transport.h"
#include "core/twins/manual_clock.h"
#include "core/twins/manual_loop.h"
#include "sim/world/sim_network.h"
#include "sim/world/world.h"
#include "tests/conformance/transport_conformance.h"

namespace kairos::transport_test {
namespace {

class LoopbackHarness final : public TransportHarness {
 public:
  ~LoopbackHarness() override { endpoints_.clear(); }  // before the hub
  std::string name() const override { return "Loopback"; }
  PeerId add_peer() override {
    auto ep = hub_.connect();
    const PeerId id = ep->id();
    endpoints_.emplace(id, std::move(ep));
    return id;
  }
  Transport& transport(PeerId peer) override {
    auto it = endpoints_.find(peer);
    KAIROS_CHECK(it != endpoints_.end());
    return *it->second;
  }
  void remove_peer(PeerId peer) override { endpoints_.erase(peer); }
  PeerId unknown_peer() override { return 1'000'000; }
  void run() override { loop_.run_ready(); }
  bool ordered() const override { return true; }

 private:
  ManualClock clock_;
  ManualLoop loop_{clock_};
  LoopbackHub hub_{loop_};
  std::map<PeerId, std::unique_ptr<LoopbackHub::Endpoint>> endpoints_;
};

class SimNetworkHarness final : public TransportHarness {
 public:
  std::string name() const override { return "SimNetwork"; }
  PeerId add_peer() override {
    const sim::NodeId node = world_.add_node(absl::StrCat("peer-", world_.node_count()));
    net_.transport(node);
    return node;
  }
  Transport& transport(PeerId peer) override {
    return net_.transport(static_cast<sim::NodeId>(peer));
  }
  void remove_peer(PeerId peer) override { world_.crash(static_cast<sim::NodeId>(peer)); }
  PeerId unknown_peer() override { return world_.node_count() + 7; }
  void run() override {
    while (world_.step()) {
    }
  }
  bool ordered() const override { return false; }

 private:
  sim::World world_{/*seed=*/3};
  sim::SimNetwork net_{world_, world_.random().fork()};
};

class WrappedHarness final : public TransportHarness {
 public:
  WrappedHarness(std::unique_ptr<TransportHarness> inner, std::string name, TransportWrap wrap)
      : inner_(std::move(inner)), name_(std::move(name)), wrap_(std::move(wrap)) {}
  ~WrappedHarness() override { wrapped_.clear(); }  // before the inner transports
  std::string name() const override { return name_; }
  PeerId add_peer() override {
    const PeerId id = inner_->add_peer();
    wrapped_[id] = wrap_(inner_->transport(id), id);
    return id;
  }
  Transport& transport(PeerId peer) override {
    auto it = wrapped_.find(peer);
    KAIROS_CHECK(it != wrapped_.end());
    return *it->second;
  }
  void remove_peer(PeerId peer) override {
    // Kept until the harness goes: the peer's own handler may be running.
    retired_.push_back(std::move(wrapped_[peer]));
    wrapped_.erase(peer);
    inner_->remove_peer(peer);
  }
  PeerId unknown_peer() override { return inner_->unknown_peer(); }
  void run() override { inner_->run(); }
  bool ordered() const override { return inner_->ordered(); }

 private:
  std::unique_ptr<TransportHarness> inner_;
  std::string name_;
  TransportWrap wrap_;
  std::map<PeerId, std::unique_ptr<Transport>> wrapped_;
  std::vector<std::unique_ptr<Transport>> retired_;
};

}  // namespace

std::unique_ptr<TransportHarness> make_wrapped_harness(std::unique_ptr<TransportHarness> inner,
                                                       std::string name, TransportWrap wrap) {
  return std::make_unique<WrappedHarness>(std::move(inner), std::move(name), std::move(wrap));
}

std::unique_ptr<TransportHarness> make_loopback_harness() {
  return std::make_unique<LoopbackHarness>();
}
std::unique_ptr<TransportHarness> make_sim_network_harness() {
  return std::make_unique<SimNetworkHarness>();
}

}  // namespace kairos::transport_test
