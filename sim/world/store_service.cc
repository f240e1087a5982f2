#include "sim/world/store_service.h"

#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"

namespace kairos::sim {

bool StoreService::corrupt_record(const std::string& key) {
  return corrupt_records(key, key + '\0', [](std::string_view) { return true; }) != 0;
}

std::size_t StoreService::corrupt_records(const std::string& begin, const std::string& end,
                                          const std::function<bool(std::string_view key)>& pick) {
  std::vector<WriteOp> bad;
  const TxnResult r = storage_.run([&](Txn& txn) {
    for (const KeyValue& kv : txn.scan(begin, end, std::numeric_limits<std::size_t>::max())) {
      if (kv.value.empty() || !pick(kv.key)) continue;
      std::string v = kv.value;
      v[0] = static_cast<char>(v[0] ^ 0x7f);
      txn.put(kv.key, v);
      bad.push_back({WriteOp::Kind::kPut, kv.key, std::move(v)});
    }
    return absl::OkStatus();
  });
  KAIROS_CHECK(r.committed());
  if (bad.empty()) return 0;
  // In the commit log like any write (no client; never acknowledged), so a
  // replay of the log still reproduces the store.
  const std::size_t n = bad.size();
  StoreCommit sc;
  sc.index = commits_.size();
  sc.at = world_.now();
  sc.store_time = clock_.now();
  if (config_.record_writes) sc.ops = std::move(bad);
  unsynced_.push_back(sc.index);
  commits_.push_back(std::move(sc));
  if (storage_.unsynced_count() != 0) arm_sync();
  return n;
}

namespace {

// Forwards to the store's Txn and records every write, in order.
class RecordingTxn final : public Txn {
 public:
  RecordingTxn(Txn& inner, std::vector<WriteOp>& ops, std::uint64_t& digest, bool keep)
      : inner_(inner), ops_(ops), digest_(digest), keep_(keep) {}
  absl::Time now() const override { return inner_.now(); }
  std::optional<std::string> get(std::string_view key) override { return inner_.get(key); }
  std::vector<KeyValue> scan(std::string_view begin, std::string_view end, std::size_t limit,
                             Direction direction) override {
    return inner_.scan(begin, end, limit, direction);
  }
  void put(std::string_view key, std::string_view value) override {
    inner_.put(key, value);
    add(WriteOp::Kind::kPut, key, value);
  }
  void erase(std::string_view key) override {
    inner_.erase(key);
    add(WriteOp::Kind::kErase, key, {});
  }
  void erase_range(std::string_view begin, std::string_view end) override {
    inner_.erase_range(begin, end);
    add(WriteOp::Kind::kEraseRange, begin, end);
  }
  std::size_t writes() const { return writes_; }

 private:
  void add(WriteOp::Kind kind, std::string_view a, std::string_view b) {
    ++writes_;
    if (keep_)
      digest_ =
          hash_mix(hash_mix(hash_mix(digest_, static_cast<std::uint64_t>(kind)), hash_bytes(a)),
                   hash_bytes(b));
    // The tables the checker reads: runs, leader records, the ledger.
    const bool fact = !a.empty() && (a[0] == 'R' || a[0] == 'L' || a[0] == 'H');
    if (keep_ || fact) ops_.push_back(WriteOp{kind, std::string(a), std::string(b)});
  }
  Txn& inner_;
  std::vector<WriteOp>& ops_;
  std::uint64_t& digest_;
  bool keep_;
  std::size_t writes_ = 0;
};

}  // namespace

// The per-node Storage adapter.
class StoreService::Client final : public Storage {
 public:
  Client(StoreService& svc, NodeId node) : svc_(svc), node_(node) {}

  void transact(TxnBody body, TxnDone done, TxnMode mode) override {
    World& world = svc_.world_;
    const std::uint64_t id = ++next_id_;
    ++svc_.stats_.requests;
    Pending& p = pending_[id];
    p.done = std::move(done);
    if (!svc_.network_.linked(node_, svc_.node_)) {
      // Never sent: the connection could not be made.
      p.timer = world.schedule_after(
          svc_.config_.connect_timeout, EventKind::kTimeout, node_, id, [this, id] {
            finish(id, {CommitOutcome::kUnavailable,
                        absl::UnavailableError("store: no route to the store; request "
                                               "not sent")});
          });
      return;
    }
    p.timer = world.schedule_after(svc_.config_.client_timeout, EventKind::kTimeout, node_, id,
                                   [this, id] { time_out(id); });
    StoreService* svc = &svc_;
    const NodeId from = node_;
    // The node's clock now: the instant it sent the request, by its own clock.
    const std::int64_t sent_local_ns =
        svc_.client_clock_ ? absl::ToUnixNanos(svc_.client_clock_(node_)) : 0;
    svc_.network_.send_call(node_, svc_.node_, EventKind::kStoreCall, id,
                            [svc, from, id, body = std::move(body), mode, sent_local_ns]() mutable {
                              svc->arrive(Request{from, id, std::move(body), mode, sent_local_ns});
                            });
  }

  // A reply arrived on this node.
  void reply(std::uint64_t id, TxnResult result, std::optional<std::uint64_t> commit) {
    auto it = pending_.find(id);
    if (it == pending_.end()) return;  // already timed out
    if (result.committed()) {
      ++svc_.stats_.committed;
      if (commit) svc_.commits_[*commit].acked = true;
    } else if (result.outcome == CommitOutcome::kUnavailable) {
      ++svc_.stats_.unavailable;
    } else {
      ++svc_.stats_.other;
    }
    finish(id, std::move(result));
  }

  void applied(std::uint64_t id, std::uint64_t commit) {
    auto it = pending_.find(id);
    if (it != pending_.end()) it->second.applied_commit = commit;
  }

  void reset() {
    for (auto& [id, p] : pending_) svc_.world_.cancel(p.timer);
    pending_.clear();
  }

 private:
  struct Pending {
    TxnDone done;
    EventId timer = 0;
    std::optional<std::uint64_t> applied_commit;
  };

  void time_out(std::uint64_t id) {
    auto it = pending_.find(id);
    if (it == pending_.end()) return;
    ++svc_.stats_.unknown;
    if (it->second.applied_commit) {
      ++svc_.stats_.unknown_applied;
      svc_.world_.mark("store.unknown-applied");
    } else {
      ++svc_.stats_.unknown_not_applied;
      svc_.world_.mark("store.unknown-not-applied");
    }
    finish(id, {CommitOutcome::kUnknown,
                absl::DeadlineExceededError("store: no reply before the client timeout; the "
                                            "transaction may or may not have applied")});
  }

  void finish(std::uint64_t id, TxnResult result) {
    auto it = pending_.find(id);
    KAIROS_CHECK(it != pending_.end());
    TxnDone done = std::move(it->second.done);
    svc_.world_.cancel(it->second.timer);
    pending_.erase(it);
    done(std::move(result));
  }

  StoreService& svc_;
  NodeId node_;
  std::uint64_t next_id_ = 0;
  std::map<std::uint64_t, Pending> pending_;
};

StoreService::StoreService(World& world, SimNetwork& network, NodeId store_node,
                           SimClock& store_clock, Random random, StoreConfig config)
    : world_(world),
      network_(network),
      node_(store_node),
      clock_(store_clock),
      timers_(world, store_node, store_clock),
      random_(random),
      config_(config),
      storage_(store_clock, timers_) {
  storage_.set_deferred_sync(true);
}

StoreService::~StoreService() = default;

Storage& StoreService::client(NodeId node) {
  auto& c = clients_[node];
  if (!c) c = std::make_unique<Client>(*this, node);
  return *c;
}

void StoreService::reset_client(NodeId node) {
  auto it = clients_.find(node);
  if (it != clients_.end()) it->second->reset();
}

void StoreService::arrive(Request request) {
  if (unavailable_) {
    Client* c = clients_.at(request.client).get();
    const std::uint64_t id = request.id;
    network_.send_call(node_, request.client, EventKind::kStoreReply, id, [c, id] {
      c->reply(id,
               {CommitOutcome::kUnavailable,
                absl::UnavailableError("store: unavailable (outage); not applied")},
               std::nullopt);
    });
    return;
  }
  const absl::Duration service =
      on_grid(random_.duration_between(config_.service_min, config_.service_max), config_.quantum) +
      slowdown_;
  world_.schedule_after(
      service, EventKind::kStoreCall, node_, request.id,
      [this, request = std::move(request)]() mutable { execute(std::move(request)); });
}

void StoreService::execute(Request request) {
  auto ops = std::make_shared<std::vector<WriteOp>>();
  auto digest = std::make_shared<std::uint64_t>(0);
  auto writes = std::make_shared<std::size_t>(0);
  const bool keep = config_.record_writes;
  TxnBody body = [inner = std::move(request.body), ops, digest, writes, keep](Txn& txn) {
    ops->clear();
    *digest = 0;
    RecordingTxn rec(txn, *ops, *digest, keep);
    absl::Status s = inner(rec);
    *writes = rec.writes();
    return s;
  };
  const NodeId client = request.client;
  const std::uint64_t id = request.id;
  Client* c = clients_.at(client).get();
  // Filled in below, after the body ran, if it wrote something.
  auto commit_index = std::make_shared<std::optional<std::uint64_t>>();
  TxnDone done = [this, c, client, id, commit_index](TxnResult result) {
    // Runs on the store node after the covering sync: send the reply.
    const std::optional<std::uint64_t> commit = *commit_index;
    network_.send_call(node_, client, EventKind::kStoreReply, id,
                       [c, id, result = std::move(result), commit]() mutable {
                         c->reply(id, std::move(result), commit);
                       });
  };
  const std::uint64_t before = storage_.commit_count();
  storage_.transact(std::move(body), std::move(done), request.mode);
  if (storage_.commit_count() != before) {
    StoreCommit sc;
    sc.index = commits_.size();
    sc.at = world_.now();
    sc.store_time = clock_.now();
    sc.client = client;
    sc.request = id;
    sc.sent_local_ns = request.sent_local_ns;
    sc.digest = *digest;
    if (observer_) observer_(sc, *ops);
    if (keep) sc.ops = std::move(*ops);
    const std::uint64_t index = sc.index;
    *commit_index = index;
    unsynced_.push_back(index);
    commits_.push_back(std::move(sc));
    c->applied(id, index);
  }
  if (storage_.unsynced_count() != 0) arm_sync();
}

void StoreService::arm_sync() {
  if (sync_armed_) return;
  sync_armed_ = true;
  world_.schedule_after(config_.sync_interval, EventKind::kStoreSync, node_, 0, [this] {
    sync_armed_ = false;
    ++stats_.syncs;
    for (std::uint64_t i : unsynced_) commits_[i].state = StoreCommit::State::kDurable;
    unsynced_.clear();
    storage_.sync();
  });
}

void StoreService::crash() {
  if (!world_.is_up(node_)) return;
  ++stats_.crashes;
  storage_.lose_unsynced();
  for (std::uint64_t i : unsynced_) {
    commits_[i].state = StoreCommit::State::kLost;
    ++stats_.lost_commits;
    world_.mark("store.lost-unsynced");
  }
  unsynced_.clear();
  sync_armed_ = false;
  world_.crash(node_);
}

void StoreService::restart() {
  if (world_.is_up(node_)) return;
  world_.restart(node_);
}

}  // namespace kairos::sim
