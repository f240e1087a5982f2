// Schedule: when a job's occurrences fall.
//
// Purpose. A job's schedule is stored as a ScheduleSpec (plain data the user
// gave: a cron expression with its IANA zone and DST policy, a one-off
// instant, or a fixed interval) and compiled into a Schedule that answers
// "what is the next occurrence strictly after t". The scheduler calls
// next_after() when it dispatches an occurrence and advances the due index;
// the CLI (`kairos cron next`) and the simulator's workload use the same code.
//
// Guarantees.
// - Pure and deterministic: no I/O beyond loading a zone from the system tz
//   database at compile(); no clock reads; the same spec and job id give the
//   same fires in every process (the `H` hash is stable, see stable_hash.h).
// - next_after(t) returns fires strictly after t, strictly increasing, and
//   std::nullopt when the schedule has no further fire (a one-off after its
//   instant, an interval past its end, a cron expression past year 9999).
// - compile() rejects a spec that can never fire (e.g. `0 0 30 2 *`) with an
//   error that says so, rather than looping.
// - Jitter (optional) is deterministic from (job id, nominal time) and never
//   moves a fire to or past the following nominal occurrence.
//
// The cron syntax, the DST rules and their defaults are documented in
// docs/SCHEDULES.md.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/civil_time.h"
#include "absl/time/time.h"

namespace kairos {

// Fixed-time schedules only (see docs/SCHEDULES.md): what a local time that
// falls in a spring-forward gap does.
enum class DstGap : std::uint8_t { kShift, kSkip };
// Fixed-time schedules only: which pass of a repeated (fall-back) local time
// fires.
enum class DstFold : std::uint8_t { kFirst, kLast, kBoth };

// What a DST rule did to one fire.
enum class DstNote : std::uint8_t {
  kNone,
  kGapShifted,  // nominal local time did not exist; fired at the transition
  kFoldFirst,   // repeated local time; this is its first pass
  kFoldSecond,  // repeated local time; this is its second pass
};

struct ScheduleSpec {
  enum class Kind : std::uint8_t { kCron, kOnce, kInterval };
  Kind kind = Kind::kCron;

  // kCron
  std::string cron;          // 5 or 6 fields, or a macro (@daily, ...)
  std::string zone = "UTC";  // IANA zone; never the server's local zone
  DstGap dst_gap = DstGap::kShift;
  DstFold dst_fold = DstFold::kFirst;

  // kOnce
  absl::Time at = absl::InfinitePast();

  // kInterval: fires at start + k * every for k >= 0, up to and including
  // `end` (docs/SCHEDULES.md). next_after() is strictly after its argument,
  // so next_after(start) is start + every.
  absl::Duration every = absl::ZeroDuration();
  absl::Time start = absl::InfinitePast();
  absl::Time end = absl::InfiniteFuture();

  // All kinds: deterministic per-occurrence delay in [0, jitter].
  absl::Duration jitter = absl::ZeroDuration();

  friend bool operator==(const ScheduleSpec&, const ScheduleSpec&) = default;
};

// The instants Kairos accepts wherever a time enters (RFC 3339 text, one-off
// instants, interval anchors and ends): from 1970-01-01T00:00:00Z up to, not
// including, 9999-12-30T00:00:00Z. Outside it a local wall time may leave the
// calendar's years 1..9999 and the RFC 3339 form its four-digit year, so such
// times are refused with an error rather than computed wrongly.
inline constexpr std::int64_t kEarliestUnixSeconds = 0;        // 1970-01-01T00:00:00Z
inline constexpr std::int64_t kEndUnixSeconds = 253402128000;  // 9999-12-30T00:00:00Z
bool in_supported_range(absl::Time t);
// "1970-01-01T00:00:00Z to (not including) 9999-12-30T00:00:00Z".
std::string supported_range_text();
// OK, or an error naming `what` and the supported range.
absl::Status check_supported_time(absl::Time t, std::string_view what);

struct Fire {
  absl::Time at;              // when to fire (after DST rules and jitter)
  absl::Time nominal;         // the occurrence's identity (before jitter)
  absl::CivilSecond local;    // nominal local wall time in the zone
  absl::Duration utc_offset;  // zone offset at `nominal`
  DstNote note = DstNote::kNone;
};

class Schedule {
 public:
  // Validates and compiles `spec`. `job_id` seeds `H` fields and jitter.
  // Errors name the field and what was expected.
  static absl::StatusOr<Schedule> compile(const ScheduleSpec& spec, std::string_view job_id);

  // The first fire whose nominal time is strictly after `t`, or nullopt.
  std::optional<Fire> next_after(absl::Time t) const;

  // The last fire whose nominal time is strictly before `t`, or nullopt
  // (jitter applied as in next_after).
  std::optional<Fire> prev_before(absl::Time t) const;

  // True when `t` is the nominal time of a fire.
  bool matches(absl::Time t) const;

  const ScheduleSpec& spec() const { return spec_; }

  // Implementation detail (cron compiled form); opaque to callers.
  struct Compiled;

 private:
  std::optional<Fire> with_jitter(std::optional<Fire> f) const;

  ScheduleSpec spec_;
  std::string job_id_;
  std::shared_ptr<const Compiled> compiled_;
};

}  // namespace kairos
