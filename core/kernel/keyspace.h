// Keyspace: the one place that owns the layout of keys in the store.
//
// Every table is a one-byte tag followed by key_codec.h components, so that
// byte order equals the tuple order shown. All per-shard tables put the shard
// first, so each shard is one contiguous key range.
//
//   0x00 ...                     store metadata. The schema version belongs to
//                                the storage adapters; the kernel adds
//                                0x00 "kairos.shard_count" -> u32 (fixed at init).
//   J | id                       JobRecord
//   T | id                       JobCounters: incarnation and fencing-token
//                                high-water marks; never deleted.
//   D | shard | due_at | id      DueEntry (incarnation, nominal): the job's
//                                next occurrence. One per active job.
//   R | id | inc | nominal       RunRecord; (id, inc, nominal) is the
//                                occurrence identity and idempotency key.
//   O | id | inc | nominal       (empty) open runs: not yet terminal (kept
//                                exact by write_run, run_lifecycle.h). Lets
//                                cancel (and the overlap policy) find a
//                                job's live runs without scanning its history.
//   Q | shard | band | ready_at | id | inc | nominal
//                                (empty) claimable runs. band = kMaxPriority -
//                                priority, so higher priority sorts first.
//   E | shard | expiry | id | inc | nominal
//                                (empty) lease expiry index for the reaper.
//   L | shard                    LeaderRecord.
//   N | node id                  NodeRecord: a scheduler node's announcement
//                                and lease (renewed every leader renewal
//                                period). Records expired for longer than
//                                kNodeRecordRetention are removed by the
//                                announcing nodes.
//   H | id | nominal | inc       LedgerRecord: what became of each
//                                occurrence (or range of occurrences starting
//                                at `nominal`). Keyed by id across
//                                incarnations so one time-range scan answers
//                                "what happened to job X between t1 and t2"
//                                and pruning walks one prefix oldest-first.
//   X | shard | cancelled_at | id
//                                (empty) retention sweep of a cancelled job:
//                                once its ledger is past ledger_max_age the
//                                shard's reaper prunes it (bounded per pass),
//                                then drops the entry.
//
// Range helpers return [begin, end) pairs for Txn::scan.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/kernel/records.h"

namespace kairos::keys {

inline constexpr std::uint8_t kMeta = 0x00;
inline constexpr std::uint8_t kJob = 'J';
inline constexpr std::uint8_t kCounters = 'T';
inline constexpr std::uint8_t kDue = 'D';
inline constexpr std::uint8_t kRun = 'R';
inline constexpr std::uint8_t kOpen = 'O';
inline constexpr std::uint8_t kReady = 'Q';
inline constexpr std::uint8_t kExpiry = 'E';
inline constexpr std::uint8_t kLeader = 'L';
inline constexpr std::uint8_t kNode = 'N';
inline constexpr std::uint8_t kLedger = 'H';
inline constexpr std::uint8_t kSweep = 'X';

inline constexpr std::uint32_t kMaxShards = 4096;

struct Range {
  std::string begin;
  std::string end;
};

std::string shard_count();  // metadata key
std::string encode_shard_count(std::uint32_t n);
absl::StatusOr<std::uint32_t> decode_shard_count(std::string_view v);

std::string job(std::string_view id);
Range all_jobs();
std::string counters(std::string_view id);
std::string due(std::uint32_t shard, absl::Time due_at, std::string_view id);
// Due entries of `shard` with due_at <= until.
Range due_until(std::uint32_t shard, absl::Time until);
// Every due entry of `shard`, earliest first.
Range due_of(std::uint32_t shard);
std::string run(const RunId& id);
Range runs_of(std::string_view id, std::uint64_t incarnation);
// Every run of `id`, of every incarnation.
Range runs_of(std::string_view id);
std::string open_run(const RunId& id);
Range open_runs_of(std::string_view id, std::uint64_t incarnation);
std::uint8_t priority_band(std::int32_t priority);
std::string ready(std::uint32_t shard, std::int32_t priority, absl::Time ready_at, const RunId& id);
// Ready entries of one priority band with ready_at <= until.
Range ready_until(std::uint32_t shard, std::uint8_t band, absl::Time until);
// Every ready entry of one shard (all bands, in band order).
Range ready_of(std::uint32_t shard);
// The priority band of a ready entry's key.
absl::StatusOr<std::uint8_t> parse_ready_band(std::string_view key);
std::string sweep(std::uint32_t shard, absl::Time cancelled_at, std::string_view id);
// Sweep entries of one shard cancelled at or before `until`.
Range sweep_until(std::uint32_t shard, absl::Time until);
struct SweepKey {
  std::uint32_t shard = 0;
  absl::Time cancelled_at;
  std::string job_id;
};
absl::StatusOr<SweepKey> parse_sweep(std::string_view key);
std::string expiry(std::uint32_t shard, absl::Time expiry, const RunId& id);
Range expiry_until(std::uint32_t shard, absl::Time until);
std::string leader(std::uint32_t shard);
std::string node(std::string_view id);
Range all_nodes();
std::string ledger(std::string_view id, absl::Time nominal, std::uint64_t incarnation);
// Ledger records of `id` whose first nominal is in [from, to).
Range ledger_between(std::string_view id, absl::Time from, absl::Time to);
Range ledger_of(std::string_view id);

// Decoders for scanned keys (strict; errors name the table).
struct DueKey {
  std::uint32_t shard;
  absl::Time due_at;
  std::string job_id;
};
absl::StatusOr<DueKey> parse_due(std::string_view key);
absl::StatusOr<RunId> parse_ready(std::string_view key);  // the run it names
absl::StatusOr<RunId> parse_expiry(std::string_view key, absl::Time* expiry);
absl::StatusOr<RunId> parse_open(std::string_view key);
absl::StatusOr<std::string> parse_job(std::string_view key);

}  // namespace kairos::keys
