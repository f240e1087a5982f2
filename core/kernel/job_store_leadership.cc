// JobStore, leadership: acquiring and renewing a shard's leader record, and
// the gate every leader body (dispatch, reap) passes first. An epoch is only
// ever replaced by a higher one; a leader body under a stale epoch aborts.
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "core/base/check.h"
#include "core/kernel/event_kinds.h"
#include "core/kernel/job_store.h"
#include "core/kernel/keyspace.h"
#include "core/kernel/run_lifecycle.h"
#include "core/schedule/schedule.h"

namespace kairos {

using namespace job_store_internal;  // the bodies' shared helpers

absl::Status JobStore::acquire_or_renew(Txn& txn, std::uint32_t shard, std::string_view node,
                                        std::uint64_t known_epoch, absl::Duration ttl,
                                        LeadershipResult* out) const {
  *out = {};
  KAIROS_CHECK(shard < shard_count_);
  const absl::Time now = txn.now();
  KAIROS_ASSIGN_OR_RETURN(auto current,
                          read<LeaderRecord>(txn, keys::leader(shard), decode_leader));
  LeaderRecord rec = current.value_or(LeaderRecord{});
  out->previous = rec;
  if (current && rec.holder == node && known_epoch != 0 && rec.epoch == known_epoch) {
    rec.expiry = now + ttl;
    out->kind = LeadershipResult::Kind::kRenewed;
  } else if (!current || rec.expiry <= now || rec.holder == node) {
    const bool takeover = current.has_value() && rec.holder != node;
    rec.holder = std::string(node);
    rec.epoch = takeover ? next_epoch(out->previous, true) : rec.epoch + 1;
    KAIROS_CHECK_MSG(
        (rec.epoch == out->previous.epoch + 1 || bugs_.handover_keeps_epoch) && rec.epoch > 0,
        "an acquired epoch is the previous epoch + 1");
    rec.expiry = now + ttl;
    out->kind = LeadershipResult::Kind::kAcquired;
    Event e;
    e.kind = event_kinds::kLeaderAcquired;
    e.with("shard", static_cast<std::uint64_t>(shard))
        .with("epoch", rec.epoch)
        .with("node", std::string(node))
        .with("previous", out->previous.holder)
        .with("previous_epoch", out->previous.epoch);
    out->events.push_back(std::move(e));
  } else {
    out->kind = LeadershipResult::Kind::kHeldByOther;
    out->record = rec;
    out->held_for = rec.expiry - now;
    return absl::OkStatus();
  }
  // Leadership is only ever taken over by a higher epoch, and a renewal keeps
  // the holder and the epoch.
  KAIROS_CHECK(rec.holder == node && rec.epoch >= out->previous.epoch);
  KAIROS_CHECK(out->kind != LeadershipResult::Kind::kRenewed ||
               (rec.epoch == known_epoch && rec.epoch == out->previous.epoch));
  txn.put(keys::leader(shard), encode(rec));
  out->record = rec;
  return absl::OkStatus();
}

absl::Status JobStore::check_leader(Txn& txn, std::uint32_t shard,
                                    const LeaderToken& leader) const {
  KAIROS_ASSIGN_OR_RETURN(auto current,
                          read<LeaderRecord>(txn, keys::leader(shard), decode_leader));
  const absl::Time now = txn.now();
  if (current && current->holder == leader.node && current->epoch == leader.epoch &&
      current->expiry > now)
    return absl::OkStatus();
  if (!current)
    return absl::FailedPreconditionError(absl::StrCat("stale epoch ", leader.epoch, " for shard ",
                                                      shard, ": the shard has no leader record"));
  return absl::FailedPreconditionError(
      absl::StrCat("stale epoch ", leader.epoch, " for shard ", shard, " (node '", leader.node,
                   "'): current epoch ", current->epoch, " held by '", current->holder, "'",
                   current->expiry <= now ? " (expired)" : ""));
}

absl::Status JobStore::leaders(Txn& txn,
                               std::vector<std::pair<std::uint32_t, LeaderRecord>>* out) const {
  out->clear();
  for (std::uint32_t shard = 0; shard < shard_count_; ++shard) {
    KAIROS_ASSIGN_OR_RETURN(auto rec, read<LeaderRecord>(txn, keys::leader(shard), decode_leader));
    if (rec) out->emplace_back(shard, std::move(*rec));
  }
  return absl::OkStatus();
}

void JobStore::due_backlog(Txn& txn, std::uint32_t shard, std::uint64_t cap, std::uint64_t* count,
                           bool* capped) const {
  KAIROS_CHECK(shard < shard_count_ && cap > 0);
  const keys::Range range = keys::due_until(shard, txn.now());
  const std::size_t found = txn.scan(range.begin, range.end, cap + 1).size();
  *capped = found > cap;
  *count = *capped ? cap : found;
}

absl::Status JobStore::release_leadership(Txn& txn, std::uint32_t shard, const LeaderToken& leader,
                                          bool* released, std::vector<Event>* events) const {
  KAIROS_CHECK(shard < shard_count_);
  *released = false;
  KAIROS_ASSIGN_OR_RETURN(auto current,
                          read<LeaderRecord>(txn, keys::leader(shard), decode_leader));
  const absl::Time now = txn.now();
  if (!current || current->holder != leader.node || current->epoch != leader.epoch ||
      current->expiry <= now)
    return absl::OkStatus();  // lapsed or taken over: nothing of ours to give up
  LeaderRecord rec = *current;
  rec.expiry = now;
  txn.put(keys::leader(shard), encode(rec));
  *released = true;
  Event e;
  e.kind = event_kinds::kLeaderReleased;
  e.with("shard", static_cast<std::uint64_t>(shard))
      .with("epoch", rec.epoch)
      .with("node", rec.holder);
  events->push_back(std::move(e));
  return absl::OkStatus();
}

absl::Status JobStore::announce(Txn& txn, std::string_view node, bool first, absl::Duration ttl,
                                MembershipResult* out) const {
  *out = {};
  KAIROS_CHECK(!node.empty() && node.size() <= kMaxNodeIdSize);
  KAIROS_CHECK(ttl > absl::ZeroDuration());
  const absl::Time now = txn.now();
  out->now = now;
  const keys::Range range = keys::all_nodes();
  bool self_seen = false;
  for (KeyValue& kv : txn.scan(range.begin, range.end, kMaxNodeRecords)) {
    absl::StatusOr<NodeRecord> rec = decode_node(kv.value);
    if (!rec.ok() || kv.key != keys::node(rec->id)) {
      // Passed over; our own record is simply rewritten below.
      if (kv.key != keys::node(node)) ++out->undecodable;
      continue;
    }
    if (rec->id == node) {
      self_seen = true;
      out->self = *rec;
      continue;
    }
    if (rec->expiry + kNodeRecordRetention <= now) {
      txn.erase(kv.key);
      Event e;
      e.kind = event_kinds::kNodePruned;
      e.with("pruned", rec->id).with("expiry", rec->expiry);
      out->events.push_back(std::move(e));
      continue;
    }
    if (rec->expiry > now) ++out->live;
    out->nodes.push_back(std::move(*rec));
  }
  NodeRecord self;
  self.id = std::string(node);
  self.started = first || !self_seen ? now : std::min(out->self.started, now);
  self.expiry = now + ttl;
  txn.put(keys::node(node), encode(self));
  out->self = self;
  ++out->live;
  const auto at =
      std::lower_bound(out->nodes.begin(), out->nodes.end(), self.id,
                       [](const NodeRecord& n, const std::string& id) { return n.id < id; });
  out->nodes.insert(at, self);
  for (std::uint32_t shard = 0; shard < shard_count_; ++shard) {
    const std::optional<std::string> v = txn.get(keys::leader(shard));
    if (!v) {
      out->free_shards.push_back(shard);
      continue;
    }
    absl::StatusOr<LeaderRecord> l = decode_leader(*v);
    if (!l.ok()) continue;  // the leader step reports it
    if (l->expiry <= now)
      out->free_shards.push_back(shard);
    else
      out->held.emplace_back(shard, std::move(l->holder));
  }
  KAIROS_CHECK(out->live >= 1 && out->live <= out->nodes.size());
  return absl::OkStatus();
}

absl::Status JobStore::depart(Txn& txn, std::string_view node, bool* departed,
                              std::vector<Event>* events) const {
  KAIROS_CHECK(!node.empty() && node.size() <= kMaxNodeIdSize);
  *departed = false;
  const std::optional<std::string> v = txn.get(keys::node(node));
  if (!v) return absl::OkStatus();
  absl::StatusOr<NodeRecord> rec = decode_node(*v);
  const absl::Time now = txn.now();
  // Undecodable or already lapsed: nothing counts it as live.
  if (!rec.ok() || rec->id != node || rec->expiry <= now) return absl::OkStatus();
  rec->expiry = std::max(now, rec->started);
  txn.put(keys::node(node), encode(*rec));
  *departed = true;
  Event e;
  e.kind = event_kinds::kNodeDeparted;
  e.with("departed", rec->id).with("expiry", rec->expiry);
  events->push_back(std::move(e));
  return absl::OkStatus();
}

absl::Status JobStore::nodes(Txn& txn, std::vector<NodeRecord>* out) const {
  out->clear();
  const keys::Range range = keys::all_nodes();
  for (KeyValue& kv : txn.scan(range.begin, range.end, kMaxNodeRecords)) {
    absl::StatusOr<NodeRecord> rec = decode_node(kv.value);
    if (rec.ok() && kv.key == keys::node(rec->id)) out->push_back(std::move(*rec));
  }
  return absl::OkStatus();
}

absl::Status JobStore::leader_gate(Txn& txn, std::uint32_t shard, const LeaderToken& leader) const {
  KAIROS_CHECK(shard < shard_count_);
  if (planted_skips_epoch_check()) return absl::OkStatus();
  return check_leader(txn, shard, leader);
}

}  // namespace kairos
