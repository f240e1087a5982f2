// The transport conformance suite: every adapter of core/ports/transport.h
// must pass every test here. Adapters: LoopbackHub (core/twins) and
// SimNetwork (sim/world) on a fault-free network. A new adapter (TCP) joins
// by adding its factory to adapters().
#include "tests/conformance/transport_conformance.h"

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

namespace kairos::transport_test {
namespace {

struct Adapter {
  std::string name;
  TransportHarnessFactory make;
};

void PrintTo(const Adapter& a, std::ostream* os) { *os << a.name; }

std::vector<Adapter> adapters() {
  return {
      {"Loopback", [] { return make_loopback_harness(); }},
      {"SimNetwork", [] { return make_sim_network_harness(); }},
      {"Tcp", [] { return make_tcp_harness(); }},
  };
}

class TransportConformance : public ::testing::TestWithParam<Adapter> {
 protected:
  void SetUp() override { h_ = GetParam().make(); }
  TransportHarness& h() { return *h_; }
  std::unique_ptr<TransportHarness> h_;
};

TEST_P(TransportConformance, DeliveryToTheRightPeer) {
  EXPECT_EQ(check_delivery_to_the_right_peer(h()), "");
}

TEST_P(TransportConformance, ReplyFromInsideAHandler) {
  EXPECT_EQ(check_reply_from_a_handler(h()), "");
}

TEST_P(TransportConformance, PerPeerOrderAndExactlyOnceOnACleanNetwork) {
  EXPECT_EQ(check_per_peer_order(h()), "");
}

TEST_P(TransportConformance, MessagesArriveIntactUpToMaxMessageSize) {
  EXPECT_EQ(check_messages_arrive_intact(h()), "");
}

TEST_P(TransportConformance, SendToAnUnknownPeerIsDroppedSilently) {
  EXPECT_EQ(check_send_to_unknown_peer(h()), "");
}

TEST_P(TransportConformance, PeersAppearByMessageAndDisappearSilently) {
  EXPECT_EQ(check_peer_appears_and_disappears(h()), "");
}

TEST_P(TransportConformance, MessagesGoToTheHandlerInstalledAtArrival) {
  EXPECT_EQ(check_handler_at_arrival(h()), "");
}

TEST_P(TransportConformance, AHandlerMayReplaceItself) {
  EXPECT_EQ(check_handler_replaces_itself(h()), "");
}

TEST_P(TransportConformance, AHandlerMayRemoveItsOwnPeer) {
  EXPECT_EQ(check_remove_from_a_handler(h()), "");
}

TEST_P(TransportConformance, AMessageAboveMaxMessageSizeIsAProgrammingError) {
  const PeerId a = h().add_peer(), b = h().add_peer();
  EXPECT_DEATH(h().transport(a).send(b, std::string(kMaxMessageSize + 1, 'x')),
               "message larger than kMaxMessageSize");
}

INSTANTIATE_TEST_SUITE_P(Adapters, TransportConformance, ::testing::ValuesIn(adapters()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace kairos::transport_test
