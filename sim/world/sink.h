// Sink: the downstream system that jobs write their effects to.
//
// It plays an external service that fences per idempotency key, as the brief
// asks downstream systems to do: a write carries (idempotency key, fencing
// token). The sink
//   - rejects a token lower than the highest it has seen for that key
//     (kStaleToken; not applied),
//   - dedupes by key: a key that already has an accepted effect is not applied
//     again (kDuplicate; reported as success, so retries are idempotent),
//   - otherwise applies the effect (kAccepted),
// and records every attempt, accepted or not, for the checker.
//
// Faults (seeded, per-mille): error_permille -> kError before anything is
// applied; timeout_permille -> the reply is lost (the write is applied or not,
// 50/50: "unknown" both ways) and the writer sees kTimeout after its timeout.
// The sink lives on its own node and is reached over the simulated network,
// so partitions and message loss apply too; every write() ends with exactly
// one callback on the writer's node (the timeout guarantees it) unless the
// writer crashes first.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "core/ports/random.h"
#include "sim/world/sim_network.h"
#include "sim/world/world.h"

namespace kairos::sim {

struct SinkConfig {
  std::uint32_t error_permille = 0;
  std::uint32_t timeout_permille = 0;
  absl::Duration timeout = absl::Seconds(2);  // the writer's timeout
  friend bool operator==(const SinkConfig&, const SinkConfig&) = default;
};

struct SinkWrite {
  std::string key;  // idempotency key: (job id, incarnation, nominal time)
  std::uint64_t token = 0;
  std::string job_id;
  std::int64_t nominal_us = 0;  // occurrence, for reports
  std::uint32_t attempt = 0;
};

enum class SinkOutcome : std::uint8_t { kAccepted, kDuplicate, kStaleToken, kError, kTimeout };
std::string_view to_string(SinkOutcome outcome);

struct SinkAttempt {
  std::uint64_t index = 0;
  absl::Time at;  // true time at the sink
  NodeId from = kWorldNode;
  SinkWrite write;
  SinkOutcome outcome = SinkOutcome::kError;  // what the sink decided
  bool applied = false;                       // it became the key's effect
  bool reply_dropped = false;                 // injected timeout
};

class Sink {
 public:
  Sink(World& world, SimNetwork& network, NodeId node, Random random, SinkConfig config = {});

  // Sends `write` from `from`; `done` runs once on `from` (see file comment).
  void write(NodeId from, SinkWrite write, std::function<void(SinkOutcome)> done);

  // The sink's decision for a write arriving now, recorded as an attempt.
  // Public for tests; write() uses it on the sink node.
  SinkOutcome apply(NodeId from, const SinkWrite& write, bool inject_faults = true);

  // Forget pending writes of `node` (call when it crashes).
  void reset_node(NodeId node);
  void set_config(const SinkConfig& config) { config_ = config; }
  const SinkConfig& config() const { return config_; }
  NodeId node() const { return node_; }
  const std::vector<SinkAttempt>& attempts() const { return attempts_; }
  std::uint64_t accepted() const { return accepted_; }

 private:
  struct KeyState {
    std::uint64_t highest_token = 0;
    bool has_effect = false;
  };
  struct Pending {
    std::function<void(SinkOutcome)> done;
    EventId timer = 0;
    NodeId from = kWorldNode;
  };
  void finish(std::uint64_t id, SinkOutcome outcome);

  World& world_;
  SimNetwork& network_;
  NodeId node_;
  Random random_;
  SinkConfig config_;
  absl::flat_hash_map<std::string, KeyState> keys_;  // lookups only, never iterated
  std::vector<SinkAttempt> attempts_;
  std::uint64_t accepted_ = 0;
  std::uint64_t next_id_ = 0;
  std::map<std::uint64_t, Pending> pending_;
};

}  // namespace kairos::sim
