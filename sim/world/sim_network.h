// SimNetwork: the simulated network between nodes, and a Transport per node.
//
// Messages (Transport::send) and calls (send_call: a closure standing for an
// RPC request or reply, used by the store service and the sink) travel with a
// seeded delay and are subject to the current fault settings:
//   delay        uniform in [min_delay, max_delay], plus, with slow_permille,
//                up to slow_max more (a tail); plus the per-node extra delay
//                of either end (a "slow node", see swizzle)
//   loss         loss_permille per message (calls too)
//   duplication  dup_permille: the message is delivered twice, independently
//                delayed (messages only: calls model TCP request/reply)
//   reordering   follows from independent delays
//   replay       replay_permille: an old message from the recent history
//                (any sender/receiver) is delivered again later (messages
//                only)
//   partitions   directed link cuts. A message is dropped if its link is cut
//                when it is sent or when it would arrive.
// Nothing is delivered to a crashed node (deliveries are node-scoped world
// events). Every random choice comes from the network's own Random.
//
// As a Transport (core/ports/transport.h): a PeerId is a NodeId (a restarted
// node keeps it); a send to a PeerId that is no node is dropped; a node may
// send to itself; a message is handed to the handler installed when it
// arrives (none installed: dropped); a handler may send and replace itself;
// the per-node transports live as long as the network. A message larger than
// kMaxMessageSize is a programming error (KAIROS_CHECK in send()).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "core/ports/random.h"
#include "core/ports/transport.h"
#include "sim/world/world.h"

namespace kairos::sim {

struct NetworkConfig {
  absl::Duration min_delay = absl::Microseconds(200);
  absl::Duration max_delay = absl::Milliseconds(2);
  std::uint32_t slow_permille = 0;
  absl::Duration slow_max = absl::Milliseconds(200);
  std::uint32_t loss_permille = 0;
  std::uint32_t dup_permille = 0;
  std::uint32_t replay_permille = 0;
  // Every drawn delay rounded up to a multiple of this (on_grid; 0: off).
  // Set by the cluster from the scenario's `timing quantum=`, never written
  // on the `network` line.
  absl::Duration quantum = absl::ZeroDuration();
  friend bool operator==(const NetworkConfig&, const NetworkConfig&) = default;
};

struct NetworkStats {
  std::uint64_t sent = 0;
  std::uint64_t delivered = 0;
  std::uint64_t lost = 0;
  std::uint64_t cut = 0;  // dropped by a partition
  std::uint64_t duplicated = 0;
  std::uint64_t replayed = 0;
};

class SimNetwork {
 public:
  SimNetwork(World& world, Random random, NetworkConfig config = {});
  ~SimNetwork();

  // The Transport of `node` (created on first use; lives as long as the
  // network). PeerIds are NodeIds.
  Transport& transport(NodeId node);

  const NetworkConfig& config() const { return config_; }
  void set_config(const NetworkConfig& config) { config_ = config; }

  // --- partitions --------------------------------------------------------
  void cut(NodeId from, NodeId to);  // one-way
  void heal(NodeId from, NodeId to);
  void cut_both(NodeId a, NodeId b) {
    cut(a, b);
    cut(b, a);
  }
  void heal_both(NodeId a, NodeId b) {
    heal(a, b);
    heal(b, a);
  }
  void isolate(NodeId node);  // every link to and from `node`
  void heal_node(NodeId node);
  void heal_all();
  bool linked(NodeId from, NodeId to) const;
  // Extra one-way latency added to everything sent or received by `node`.
  void set_extra_delay(NodeId node, absl::Duration d);
  absl::Duration extra_delay(NodeId node) const;

  // Sends a call: `fn` runs on `to` after a network delay, unless the link is
  // cut (now or on arrival), the call is lost, or `to` crashes first. Returns
  // false when the link was cut at send time (the call was never sent).
  bool send_call(NodeId from, NodeId to, EventKind kind, std::uint64_t payload,
                 std::function<void()> fn);

  const NetworkStats& stats() const { return stats_; }

 private:
  class Endpoint;
  struct Message {
    NodeId from;
    NodeId to;
    std::shared_ptr<const std::string> bytes;
    std::uint64_t digest;
  };
  void send_message(NodeId from, NodeId to, std::string bytes);
  void deliver(const Message& m, bool replay);
  absl::Duration draw_delay(NodeId from, NodeId to);
  void grow(NodeId node);

  World& world_;
  Random random_;
  NetworkConfig config_;
  NetworkStats stats_;
  std::vector<std::unique_ptr<Endpoint>> endpoints_;
  std::size_t size_ = 0;
  std::vector<std::uint8_t> cut_;  // size_ x size_, [from * size_ + to]
  std::vector<absl::Duration> extra_;
  std::deque<Message> history_;  // recent messages, for replay
};

}  // namespace kairos::sim
