// TransportMux (prod/net/transport_mux.h) over two LoopbackHubs on a manual
// loop: one node-side Transport reaching peers of both, replies routed back
// through the transport each message came from, ids never shared.
#include "prod/net/transport_mux.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "core/twins/loopback_transport.h"
#include "core/twins/manual_clock.h"
#include "core/twins/manual_loop.h"

namespace kairos::net {
namespace {

struct Got {
  PeerId from;
  std::string message;
};

class MuxTest : public ::testing::Test {
 protected:
  ManualClock clock_;
  ManualLoop loop_{clock_};
  LoopbackHub local_{loop_}, remote_{loop_};
  // The node's endpoint on each hub, and a worker on each.
  std::unique_ptr<LoopbackHub::Endpoint> node_local_ = local_.connect();
  std::unique_ptr<LoopbackHub::Endpoint> node_remote_ = remote_.connect();
  std::unique_ptr<LoopbackHub::Endpoint> w_local_ = local_.connect();
  std::unique_ptr<LoopbackHub::Endpoint> w_remote_ = remote_.connect();
  std::unique_ptr<TransportMux> mux_ = std::make_unique<TransportMux>(
      std::vector<Transport*>{node_local_.get(), node_remote_.get()});

  void TearDown() override {
    mux_.reset();
    w_local_.reset();
    w_remote_.reset();
    node_local_.reset();
    node_remote_.reset();
  }
};

TEST_F(MuxTest, RepliesGoBackThroughTheTransportTheMessageCameFrom) {
  std::vector<Got> at_node;
  mux_->set_handler([&](PeerId from, std::string_view m) {
    at_node.push_back({from, std::string(m)});
    mux_->send(from, "re:" + std::string(m));
  });
  std::vector<std::string> at_local, at_remote;
  w_local_->set_handler([&](PeerId from, std::string_view m) {
    EXPECT_EQ(from, node_local_->id());
    at_local.emplace_back(m);
  });
  w_remote_->set_handler([&](PeerId from, std::string_view m) {
    EXPECT_EQ(from, node_remote_->id());
    at_remote.emplace_back(m);
  });
  w_local_->send(node_local_->id(), "from-local");
  w_remote_->send(node_remote_->id(), "from-remote");
  loop_.run_ready();
  ASSERT_EQ(at_node.size(), 2u);
  // Same inner id (both workers are endpoint 2 of their hub), distinct mux ids.
  EXPECT_EQ(w_local_->id(), w_remote_->id());
  EXPECT_NE(at_node[0].from, at_node[1].from);
  EXPECT_EQ(at_node[0].from, mux_->id_of(0, w_local_->id()));
  EXPECT_EQ(at_node[1].from, mux_->id_of(1, w_remote_->id()));
  EXPECT_EQ(at_local, std::vector<std::string>{"re:from-local"});
  EXPECT_EQ(at_remote, std::vector<std::string>{"re:from-remote"});
}

TEST_F(MuxTest, IdsOfDifferentInnerTransportsNeverCollide) {
  std::set<PeerId> seen;
  for (PeerId p = 0; p < 1000; ++p) {
    EXPECT_TRUE(seen.insert(mux_->id_of(0, p)).second);
    EXPECT_TRUE(seen.insert(mux_->id_of(1, p)).second);
  }
}

TEST_F(MuxTest, AnEmptyHandlerDropsAndAHandlerMayReplaceItself) {
  int first = 0, second = 0;
  mux_->set_handler([&](PeerId, std::string_view) {
    ++first;
    mux_->set_handler([&](PeerId, std::string_view) { ++second; });
  });
  w_local_->send(node_local_->id(), "a");
  loop_.run_ready();
  w_remote_->send(node_remote_->id(), "b");
  loop_.run_ready();
  EXPECT_EQ(first, 1);
  EXPECT_EQ(second, 1);
  mux_->set_handler(nullptr);
  w_local_->send(node_local_->id(), "c");
  loop_.run_ready();
  EXPECT_EQ(second, 1);
}

TEST_F(MuxTest, ASendToAPeerThatIsGoneIsDropped) {
  std::vector<Got> got;
  w_local_->set_handler([&](PeerId from, std::string_view m) {
    got.push_back({from, std::string(m)});
  });
  const PeerId gone = mux_->id_of(1, w_remote_->id());
  w_remote_.reset();
  mux_->send(gone, "lost");
  mux_->send(mux_->id_of(0, w_local_->id()), "kept");
  loop_.run_ready();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].message, "kept");
}

}  // namespace
}  // namespace kairos::net
