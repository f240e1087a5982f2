// Store records: the values kept under the keys of core/keyspace.h.
//
// Each record is encoded with a leading version byte (kRecordVersion) and the
// fields in a fixed order (core/codec.h). Decoding is strict: an unknown
// version, a truncated field, an out-of-range enum or trailing bytes is an
// error naming the record and the field. A record that fails to decode means
// the store holds something Kairos did not write; callers treat it as a
// corrupt-store error (kAborted with kDataLoss), never as "absent".
//
// Times are kept at microsecond resolution (the store's and the wire's unit);
// job specs are normalised to it at the API boundary (normalize_spec) so an
// identical create compares equal after a round trip through the store.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/payload.h"
#include "core/runner.h"
#include "core/schedule.h"

namespace kairos {

class ByteWriter;
class ByteReader;

inline constexpr std::uint8_t kRecordVersion = 1;

// Policies of issue 6. The kernel stores and carries them; only `timeout`
// (passed to workers) and `priority` (ready-queue order) act today.
enum class MisfirePolicy : std::uint8_t { kRunOnce, kCatchUp, kSkip };
enum class OverlapPolicy : std::uint8_t { kSkip, kQueue, kAllow };

inline constexpr std::int32_t kMinPriority = 0;
inline constexpr std::int32_t kMaxPriority = 9;

struct JobPolicy {
  std::uint32_t max_attempts = 3;
  absl::Duration retry_initial = absl::Seconds(10);
  std::uint32_t retry_multiplier_percent = 200;  // x2.00 per attempt
  absl::Duration retry_max = absl::Minutes(5);
  absl::Duration timeout = absl::Hours(1);  // per-run; separate from the lease
  MisfirePolicy misfire = MisfirePolicy::kRunOnce;
  absl::Duration misfire_threshold = absl::Seconds(60);
  std::uint32_t catch_up_max = 10;
  OverlapPolicy overlap = OverlapPolicy::kSkip;
  std::uint32_t max_concurrent = 1;
  std::int32_t priority = 5;  // kMinPriority..kMaxPriority; higher is served first
  friend bool operator==(const JobPolicy&, const JobPolicy&) = default;
};

// What a user submits.
struct JobSpec {
  std::string id;
  ScheduleSpec schedule;
  Payload payload;
  JobPolicy policy;
  friend bool operator==(const JobSpec&, const JobSpec&) = default;
};

enum class JobState : std::uint8_t { kActive, kCancelled };
std::string_view to_string(JobState s);

// J|id
struct JobRecord {
  JobSpec spec;
  std::uint64_t incarnation = 0;
  JobState state = JobState::kActive;
  absl::Time created_at;  // store clock
  // The due-index entry this job currently owns (D|shard|next_due_at|id), if
  // any: cancel and dispatch use it to find the entry without a scan.
  std::optional<absl::Time> next_due_at;
  absl::Time next_nominal = absl::InfinitePast();
  absl::Time cancelled_at = absl::InfinitePast();
  friend bool operator==(const JobRecord&, const JobRecord&) = default;
};

// T|id: high-water marks that survive deletion of the id.
struct JobCounters {
  std::uint64_t incarnation_hw = 0;
  std::uint64_t token_hw = 0;
  friend bool operator==(const JobCounters&, const JobCounters&) = default;
};

// The occurrence identity and idempotency key of a run.
struct RunId {
  std::string job_id;
  std::uint64_t incarnation = 0;
  absl::Time nominal;
  friend bool operator==(const RunId&, const RunId&) = default;
  friend bool operator<(const RunId& a, const RunId& b) {
    if (a.job_id != b.job_id) return a.job_id < b.job_id;
    if (a.incarnation != b.incarnation) return a.incarnation < b.incarnation;
    return a.nominal < b.nominal;
  }
};
// "job-id/incarnation/nominal-micros": what Runner passes to the job as
// KAIROS_IDEMPOTENCY_KEY.
std::string idempotency_key(const RunId& id);

enum class RunState : std::uint8_t { kReady, kLeased, kSucceeded, kFailed, kCancelled };
std::string_view to_string(RunState s);
inline bool is_terminal(RunState s) {
  return s == RunState::kSucceeded || s == RunState::kFailed || s == RunState::kCancelled;
}

// R|id|incarnation|nominal
struct RunRecord {
  RunId id;
  std::uint32_t shard = 0;
  absl::Time due_at;          // when the occurrence fired (after jitter)
  std::uint32_t attempt = 1;  // 1-based; +1 on every re-grant after a lapse
  RunState state = RunState::kReady;
  std::int32_t priority = 5;
  absl::Time ready_at;        // key time of its Q entry while ready
  std::uint64_t token = 0;    // current (latest granted) fencing token; 0: never granted
  std::string owner;          // worker id while leased
  absl::Time lease_expiry = absl::InfinitePast();  // store clock, while leased
  absl::Time dispatched_at;
  absl::Time claimed_at = absl::InfinitePast();
  absl::Time finished_at = absl::InfinitePast();
  RunStatus outcome = RunStatus::kFailed;  // meaningful when terminal (not cancelled)
  std::int32_t exit_code = 0;
  std::string detail;
  friend bool operator==(const RunRecord&, const RunRecord&) = default;
};

// L|shard
struct LeaderRecord {
  std::string holder;
  std::uint64_t epoch = 0;
  absl::Time expiry = absl::InfinitePast();  // store clock
  friend bool operator==(const LeaderRecord&, const LeaderRecord&) = default;
};

// Value of a D entry: which incarnation and occurrence it stands for.
struct DueEntry {
  std::uint64_t incarnation = 0;
  absl::Time nominal;
  friend bool operator==(const DueEntry&, const DueEntry&) = default;
};

void encode_job_policy(ByteWriter& w, const JobPolicy& p);
absl::StatusOr<JobPolicy> decode_job_policy(ByteReader& r);

std::string encode(const JobRecord& r);
std::string encode(const JobCounters& r);
std::string encode(const RunRecord& r);
std::string encode(const LeaderRecord& r);
std::string encode(const DueEntry& r);
absl::StatusOr<JobRecord> decode_job(std::string_view bytes);
absl::StatusOr<JobCounters> decode_counters(std::string_view bytes);
absl::StatusOr<RunRecord> decode_run(std::string_view bytes);
absl::StatusOr<LeaderRecord> decode_leader(std::string_view bytes);
absl::StatusOr<DueEntry> decode_due(std::string_view bytes);

// Truncates every time and duration in a spec to whole microseconds.
JobSpec normalize_spec(JobSpec spec);

}  // namespace kairos
