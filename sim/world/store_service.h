// StoreService: the store as a service on its own simulated node, reached
// over the simulated network, and the client-side Storage adapter per node.
//
// Path of one transaction (StoreClient::transact):
//   1. If the link client -> store is cut, the request is never sent: after
//      connect_timeout the client reports kUnavailable (definitely not
//      applied).
//   2. Otherwise the request travels (delay, loss, partition). The client
//      arms a timeout; if no reply arrives by then it reports kUnknown: the
//      request may have been lost (not applied) or the reply may have been
//      lost (applied). Both directions of "unknown" arise naturally.
//   3. At the store: during an outage window the store answers kUnavailable.
//      Otherwise, after a service delay (plus any slowdown), the body runs
//      against a MemoryStorage whose clock is the store node's clock
//      (Txn::now()), with deferred sync: the reply is held until the group
//      commit (every sync_interval) makes the commit durable, then sent back.
//   4. The reply travels back (delay, loss, partition). The client reports
//      its outcome if the call is still pending.
// Every call ends with exactly one result on the client's node (the timeout
// guarantees it), unless the client node crashes first (then none: the
// process that asked is gone).
//
// Crash of the store node: unsynced commits are rolled back
// (MemoryStorage::lose_unsynced), held replies are dropped, pending work is
// dropped; restart() brings it back with its durable state.
//
// History. Every transaction that wrote something is recorded as a
// StoreCommit (optionally with its write operations) and its fate: applied,
// durable (covered by a sync) or lost (rolled back by a crash), and whether
// the client was told kCommitted. The checker uses this for "nothing
// acknowledged rolls back" and to replay the durable history.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "core/ports/random.h"
#include "core/ports/storage.h"
#include "core/twins/memory_storage.h"
#include "sim/world/sim_clock.h"
#include "sim/world/sim_network.h"
#include "sim/world/sim_timers.h"
#include "sim/world/world.h"

namespace kairos::sim {

struct StoreConfig {
  absl::Duration sync_interval = absl::Milliseconds(2);
  absl::Duration service_min = absl::Microseconds(20);
  absl::Duration service_max = absl::Microseconds(300);
  absl::Duration client_timeout = absl::Seconds(1);
  absl::Duration connect_timeout = absl::Milliseconds(5);
  bool record_writes = true;  // keep every commit's operations (memory!)
  // The service time rounded up to a multiple of this (on_grid; 0: off);
  // from the scenario's `timing quantum=`, not written on the `store` line.
  absl::Duration quantum = absl::ZeroDuration();
  friend bool operator==(const StoreConfig&, const StoreConfig&) = default;
};

struct WriteOp {
  enum class Kind : std::uint8_t { kPut, kErase, kEraseRange };
  Kind kind;
  std::string key;    // kEraseRange: begin
  std::string value;  // kPut: value; kEraseRange: end
};

struct StoreCommit {
  enum class State : std::uint8_t { kApplied, kDurable, kLost };
  std::uint64_t index = 0;  // order of application at the store
  absl::Time at;            // true time of application
  absl::Time store_time;    // the store's clock (Txn::now())
  NodeId client = kWorldNode;
  std::uint64_t request = 0;
  // The client node's own clock when it sent the request, in nanoseconds
  // (StoreService::set_client_clock; 0 when unknown). The store client is
  // called in the same instant the node reads its clock to stamp a send, so
  // this is the very reading a node measures its own deadlines from.
  std::int64_t sent_local_ns = 0;
  State state = State::kApplied;
  bool acked = false;        // the client was told kCommitted
  std::uint64_t digest = 0;  // hash of the operations (when record_writes)
  std::vector<WriteOp> ops;  // when StoreConfig::record_writes
};

struct StoreStats {
  std::uint64_t requests = 0;
  std::uint64_t committed = 0;            // results kCommitted delivered to clients
  std::uint64_t unavailable = 0;          // kUnavailable delivered
  std::uint64_t unknown = 0;              // kUnknown delivered (client timeouts)
  std::uint64_t unknown_applied = 0;      // ... of which the body had applied
  std::uint64_t unknown_not_applied = 0;  // ... of which it had not (so far)
  std::uint64_t other = 0;                // aborted / conflict
  std::uint64_t syncs = 0;
  std::uint64_t lost_commits = 0;
  std::uint64_t crashes = 0;
};

class StoreService {
 public:
  StoreService(World& world, SimNetwork& network, NodeId store_node, SimClock& store_clock,
               Random random, StoreConfig config = {});
  ~StoreService();

  // The Storage adapter that `node` uses (created on first use).
  Storage& client(NodeId node);
  // Forget every pending call of `node` (call when the node crashes).
  void reset_client(NodeId node);

  // Crash / restart the store node.
  void crash();
  void restart();
  bool up() const { return world_.is_up(node_); }
  // Outage: requests are answered kUnavailable while set.
  void set_unavailable(bool unavailable) { unavailable_ = unavailable; }
  // Extra processing delay per request while set (slowness).
  void set_slowdown(absl::Duration extra) { slowdown_ = extra; }
  // Corrupts the stored record at `key` in place (its first byte, the record
  // version, is flipped), outside any client transaction, as a bad disk or a
  // foreign writer would; false when the key is absent.
  bool corrupt_record(const std::string& key);
  // The same for every record in [begin, end) whose key `pick` accepts, in
  // one commit (key order); entries with an empty value (the index tables)
  // are left alone. Returns how many records it corrupted.
  std::size_t corrupt_records(const std::string& begin, const std::string& end,
                              const std::function<bool(std::string_view key)>& pick);

  // Called once per applied writing commit, at the store, in commit order,
  // with the commit and its writes to the run ('R'), leader ('L') and ledger
  // ('H') tables (every write when record_writes is set). The cluster turns
  // them into the checker's store facts.
  using CommitObserver = std::function<void(const StoreCommit&, const std::vector<WriteOp>&)>;
  void set_commit_observer(CommitObserver observer) { observer_ = std::move(observer); }
  // Reads a client node's own clock; the client adapter stamps each request
  // with it at the send (StoreCommit::sent_local_ns). Reading a clock draws
  // nothing and schedules nothing: the run is the same with or without it.
  using ClientClock = std::function<absl::Time(NodeId)>;
  void set_client_clock(ClientClock clock) { client_clock_ = std::move(clock); }

  NodeId node() const { return node_; }
  MemoryStorage& storage() { return storage_; }
  // Frees the stored records and every unsynced commit (MemoryStorage::clear)
  // once the run is over; the commit history stays.
  void release_contents() { storage_.clear(); }
  const std::vector<StoreCommit>& commits() const { return commits_; }
  const StoreStats& stats() const { return stats_; }
  const StoreConfig& config() const { return config_; }

 private:
  class Client;
  friend class Client;
  struct Request {
    NodeId client;
    std::uint64_t id;
    TxnBody body;
    TxnMode mode;
    std::int64_t sent_local_ns = 0;  // the client's clock at the send (0: unknown)
  };
  void arrive(Request request);
  void execute(Request request);
  void arm_sync();

  World& world_;
  SimNetwork& network_;
  NodeId node_;
  const SimClock& clock_;
  SimTimers timers_;
  Random random_;
  StoreConfig config_;
  MemoryStorage storage_;
  bool unavailable_ = false;
  absl::Duration slowdown_ = absl::ZeroDuration();
  bool sync_armed_ = false;
  std::vector<std::uint64_t> unsynced_;  // indices into commits_
  std::vector<StoreCommit> commits_;
  StoreStats stats_;
  std::map<NodeId, std::unique_ptr<Client>> clients_;
  CommitObserver observer_;
  ClientClock client_clock_;
};

}  // namespace kairos::sim
