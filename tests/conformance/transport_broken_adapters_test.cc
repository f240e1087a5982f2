// The transport suite's own test: deliberately broken transports (each a
// wrapper over a correct LoopbackHub endpoint with one flaw) that the checks
// of transport_conformance.h must reject.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tests/conformance/transport_conformance.h"

namespace kairos::transport_test {
namespace {

// Forwards everything; the broken transports override one behaviour.
class Forwarding : public Transport {
 public:
  Forwarding(Transport& inner, PeerId self) : inner_(inner), self_(self) {}
  void send(PeerId to, std::string message) override { inner_.send(to, std::move(message)); }
  void set_handler(Handler handler) override { inner_.set_handler(std::move(handler)); }

 protected:
  Transport& inner_;
  PeerId self_;
};

// Sends every message twice.
class Duplicates final : public Forwarding {
 public:
  using Forwarding::Forwarding;
  void send(PeerId to, std::string message) override {
    inner_.send(to, message);
    inner_.send(to, std::move(message));
  }
};

// Swaps each pair of consecutive messages it sends.
class SwapsPairs final : public Forwarding {
 public:
  using Forwarding::Forwarding;
  void send(PeerId to, std::string message) override {
    if (!held_) {
      held_.emplace(to, std::move(message));
      return;
    }
    inner_.send(to, std::move(message));
    inner_.send(held_->first, std::move(held_->second));
    held_.reset();
  }

 private:
  std::optional<std::pair<PeerId, std::string>> held_;
};

// Reports every message as coming from the peer after its real sender.
class WrongFrom final : public Forwarding {
 public:
  using Forwarding::Forwarding;
  void set_handler(Handler handler) override {
    if (!handler) return inner_.set_handler(nullptr);
    inner_.set_handler(
        [handler = std::move(handler)](PeerId from, std::string_view m) { handler(from + 1, m); });
  }
};

// Keeps the first 1 KiB of each message.
class Truncates final : public Forwarding {
 public:
  using Forwarding::Forwarding;
  void send(PeerId to, std::string message) override {
    if (message.size() > 1024) message.resize(1024);
    inner_.send(to, std::move(message));
  }
};

// Buffers what arrives while no handler is installed and hands it to the
// next handler.
class Buffers final : public Forwarding {
 public:
  Buffers(Transport& inner, PeerId self) : Forwarding(inner, self) {
    inner_.set_handler([this](PeerId from, std::string_view m) {
      if (handler_) {
        const Handler h = handler_;
        h(from, m);
      } else {
        buffered_.emplace_back(from, std::string(m));
      }
    });
  }
  void set_handler(Handler handler) override {
    handler_ = std::move(handler);
    if (!handler_) return;
    auto pending = std::move(buffered_);
    buffered_.clear();
    const Handler h = handler_;
    for (auto& [from, m] : pending) h(from, m);
  }

 private:
  Handler handler_;
  std::vector<std::pair<PeerId, std::string>> buffered_;
};

// Delivers to a peer's handler inside send(), when the peer is one of its
// own kind.
class Inline final : public Forwarding {
 public:
  using Registry = std::map<PeerId, Inline*>;
  Inline(Transport& inner, PeerId self, std::shared_ptr<Registry> registry)
      : Forwarding(inner, self), registry_(std::move(registry)) {
    (*registry_)[self] = this;
  }
  ~Inline() override { registry_->erase(self_); }
  void send(PeerId to, std::string message) override {
    auto it = registry_->find(to);
    if (it == registry_->end() || !it->second->handler_) return;
    const Handler h = it->second->handler_;
    h(self_, message);
  }
  void set_handler(Handler handler) override { handler_ = std::move(handler); }

 private:
  std::shared_ptr<Registry> registry_;
  Handler handler_;
};

template <typename Broken>
std::unique_ptr<TransportHarness> broken() {
  return make_wrapped_harness(make_loopback_harness(), "broken", [](Transport& t, PeerId self) {
    return std::make_unique<Broken>(t, self);
  });
}

std::unique_ptr<TransportHarness> inline_delivery() {
  auto registry = std::make_shared<Inline::Registry>();
  return make_wrapped_harness(make_loopback_harness(), "inline",
                              [registry](Transport& t, PeerId self) {
                                return std::make_unique<Inline>(t, self, registry);
                              });
}

TEST(TransportBrokenAdapters, ACorrectWrapperPassesEveryCheck) {
  EXPECT_EQ(check_delivery_to_the_right_peer(*broken<Forwarding>()), "");
  EXPECT_EQ(check_per_peer_order(*broken<Forwarding>()), "");
  EXPECT_EQ(check_messages_arrive_intact(*broken<Forwarding>()), "");
  EXPECT_EQ(check_handler_at_arrival(*broken<Forwarding>()), "");
  EXPECT_EQ(check_remove_from_a_handler(*broken<Forwarding>()), "");
}

TEST(TransportBrokenAdapters, DuplicatesAreCaught) {
  EXPECT_NE(check_per_peer_order(*broken<Duplicates>()), "");
  EXPECT_NE(check_delivery_to_the_right_peer(*broken<Duplicates>()), "");
}

TEST(TransportBrokenAdapters, ReorderingIsCaughtWhereOrderIsPromised) {
  EXPECT_NE(check_per_peer_order(*broken<SwapsPairs>()), "");
}

TEST(TransportBrokenAdapters, AWrongSenderIsCaught) {
  EXPECT_NE(check_delivery_to_the_right_peer(*broken<WrongFrom>()), "");
  EXPECT_NE(check_reply_from_a_handler(*broken<WrongFrom>()), "");
}

TEST(TransportBrokenAdapters, TruncationIsCaught) {
  EXPECT_NE(check_messages_arrive_intact(*broken<Truncates>()), "");
}

TEST(TransportBrokenAdapters, BufferingForALateHandlerIsCaught) {
  EXPECT_NE(check_handler_at_arrival(*broken<Buffers>()), "");
}

TEST(TransportBrokenAdapters, DeliveryInsideSendIsCaught) {
  EXPECT_NE(check_delivery_to_the_right_peer(*inline_delivery()), "");
}

}  // namespace
}  // namespace kairos::transport_test
