#include "core/kernel/records.h"

#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "core/base/check.h"
#include "core/base/codec.h"
#include "core/kernel/value_codec.h"

namespace kairos {

std::string_view to_string(JobState s) {
  switch (s) {
    case JobState::kActive:
      return "active";
    case JobState::kCancelled:
      return "cancelled";
  }
  return "?";
}

std::string_view to_string(RunState s) {
  switch (s) {
    case RunState::kReady:
      return "ready";
    case RunState::kLeased:
      return "leased";
    case RunState::kSucceeded:
      return "succeeded";
    case RunState::kFailed:
      return "failed";
    case RunState::kCancelled:
      return "cancelled";
    case RunState::kWaiting:
      return "waiting";
  }
  return "?";
}

std::string_view to_string(RunKind k) {
  switch (k) {
    case RunKind::kScheduled:
      return "scheduled";
    case RunKind::kManual:
      return "manual";
  }
  return "?";
}

std::string_view to_string(AttemptEnd e) {
  switch (e) {
    case AttemptEnd::kRunning:
      return "running";
    case AttemptEnd::kSucceeded:
      return "succeeded";
    case AttemptEnd::kFailed:
      return "failed";
    case AttemptEnd::kFailedPermanent:
      return "failed_permanent";
    case AttemptEnd::kTimedOut:
      return "timed_out";
    case AttemptEnd::kReleased:
      return "released";
    case AttemptEnd::kLapsed:
      return "lapsed";
  }
  return "?";
}

std::string_view to_string(LedgerOutcome o) {
  switch (o) {
    case LedgerOutcome::kFired:
      return "fired";
    case LedgerOutcome::kLate:
      return "late";
    case LedgerOutcome::kMovedDst:
      return "moved_dst";
    case LedgerOutcome::kSkippedOverlap:
      return "skipped_overlap";
    case LedgerOutcome::kCoalesced:
      return "coalesced";
    case LedgerOutcome::kSkippedMisfire:
      return "skipped_misfire";
    case LedgerOutcome::kCancelled:
      return "cancelled";
    case LedgerOutcome::kPaused:
      return "paused";
    case LedgerOutcome::kManual:
      return "manual";
  }
  return "?";
}

std::string idempotency_key(const RunId& id) {
  return absl::StrCat(id.job_id, "/", id.incarnation, "/", absl::ToUnixMicros(id.nominal));
}

namespace {
// The bytes encode(RunRecord) writes besides its strings (each string adds
// its length), and those of each attempt: the reserve below, not the format.
constexpr std::size_t kRunRecordFixedSize = 136;
constexpr std::size_t kAttemptFixedSize = 41;

// Reads the version byte: kOldestRecordVersion..kRecordVersion, else DataLoss.
absl::StatusOr<std::uint8_t> read_version(ByteReader& r, std::string_view record) {
  KAIROS_ASSIGN_OR_RETURN(auto v, r.u8(absl::StrCat(absl_sv(record), ".version")));
  if (v < kOldestRecordVersion || v > kRecordVersion)
    return absl::DataLossError(absl::StrCat(absl_sv(record), ": unsupported record version ", v,
                                            " (expected ", kOldestRecordVersion, "..",
                                            kRecordVersion, ")"));
  return v;
}
absl::Status check_version(ByteReader& r, std::string_view record) {
  return read_version(r, record).status();
}

template <typename E>
absl::StatusOr<E> enum_in(ByteReader& r, std::string_view field, E max) {
  KAIROS_ASSIGN_OR_RETURN(auto v, r.u8(field));
  if (v > static_cast<std::uint8_t>(max))
    return absl::InvalidArgumentError(absl::StrCat(absl_sv(field), ": unknown value ", v));
  return static_cast<E>(v);
}

absl::Status as_data_loss(absl::Status s) {
  if (s.ok() || s.code() == absl::StatusCode::kDataLoss) return s;
  return absl::DataLossError(s.message());
}

}  // namespace

void encode_job_policy(ByteWriter& w, const JobPolicy& p) {
  w.u32(p.max_attempts).duration(p.retry_initial).u32(p.retry_multiplier_percent);
  w.duration(p.retry_max).duration(p.timeout).u8(static_cast<std::uint8_t>(p.misfire));
  w.duration(p.misfire_threshold).u32(p.catch_up_max).u8(static_cast<std::uint8_t>(p.overlap));
  w.u32(p.max_concurrent).i32(p.priority);
  w.u32(p.retry_jitter_percent).duration(p.catch_up_spacing);
}

absl::StatusOr<JobPolicy> decode_job_policy(ByteReader& r) {
  JobPolicy p;
  KAIROS_ASSIGN_OR_RETURN(p.max_attempts, r.u32("policy.max_attempts"));
  KAIROS_ASSIGN_OR_RETURN(p.retry_initial, r.duration("policy.retry_initial"));
  KAIROS_ASSIGN_OR_RETURN(p.retry_multiplier_percent, r.u32("policy.retry_multiplier_percent"));
  KAIROS_ASSIGN_OR_RETURN(p.retry_max, r.duration("policy.retry_max"));
  KAIROS_ASSIGN_OR_RETURN(p.timeout, r.duration("policy.timeout"));
  KAIROS_ASSIGN_OR_RETURN(p.misfire, enum_in(r, "policy.misfire", MisfirePolicy::kSkip));
  KAIROS_ASSIGN_OR_RETURN(p.misfire_threshold, r.duration("policy.misfire_threshold"));
  KAIROS_ASSIGN_OR_RETURN(p.catch_up_max, r.u32("policy.catch_up_max"));
  KAIROS_ASSIGN_OR_RETURN(p.overlap, enum_in(r, "policy.overlap", OverlapPolicy::kAllow));
  KAIROS_ASSIGN_OR_RETURN(p.max_concurrent, r.u32("policy.max_concurrent"));
  KAIROS_ASSIGN_OR_RETURN(p.priority, r.i32("policy.priority"));
  KAIROS_ASSIGN_OR_RETURN(p.retry_jitter_percent, r.u32("policy.retry_jitter_percent"));
  KAIROS_ASSIGN_OR_RETURN(p.catch_up_spacing, r.duration("policy.catch_up_spacing"));
  return p;
}

std::string encode(const JobRecord& j) {
  ByteWriter w;
  // Room for the fixed fields and a typical payload: one allocation for most
  // jobs (a larger one grows from there).
  w.reserve(512 + j.spec.id.size() + j.spec.ns.size());
  w.u8(kRecordVersion).str(j.spec.id);
  encode_schedule(w, j.spec.schedule);
  encode_payload(w, j.spec.payload);
  encode_job_policy(w, j.spec.policy);
  w.str(j.spec.ns).u32(static_cast<std::uint32_t>(j.spec.labels.size()));
  for (const auto& [k, v] : j.spec.labels) w.str(k).str(v);
  w.u64(j.incarnation).u8(static_cast<std::uint8_t>(j.state)).time(j.created_at);
  w.boolean(j.next_due_at.has_value()).time(j.next_due_at.value_or(absl::InfinitePast()));
  w.time(j.next_nominal).time(j.cancelled_at);
  w.boolean(j.paused).time(j.paused_at).time(j.resumed_at).u64(j.generation).time(j.updated_at);
  w.u64(j.ledger_count).u64(j.backlog);
  return std::move(w).take();
}

absl::StatusOr<JobRecord> decode_job(std::string_view bytes) {
  ByteReader r(bytes);
  JobRecord j;
  auto body = [&]() -> absl::Status {
    KAIROS_RETURN_IF_ERROR(check_version(r, "job"));
    KAIROS_ASSIGN_OR_RETURN(j.spec.id, r.str("job.id"));
    KAIROS_ASSIGN_OR_RETURN(j.spec.schedule, decode_schedule(r));
    KAIROS_ASSIGN_OR_RETURN(j.spec.payload, decode_payload(r));
    KAIROS_ASSIGN_OR_RETURN(j.spec.policy, decode_job_policy(r));
    KAIROS_ASSIGN_OR_RETURN(j.spec.ns, r.str("job.namespace"));
    KAIROS_ASSIGN_OR_RETURN(std::uint32_t nlabels, r.u32("job.labels.count"));
    if (nlabels > kMaxLabels) return absl::DataLossError("job.labels.count: too many labels");
    for (std::uint32_t i = 0; i < nlabels; ++i) {
      KAIROS_ASSIGN_OR_RETURN(std::string k, r.str("job.labels.key"));
      KAIROS_ASSIGN_OR_RETURN(std::string v, r.str("job.labels.value"));
      if (!j.spec.labels.emplace(std::move(k), std::move(v)).second)
        return absl::DataLossError("job.labels: duplicate key");
    }
    KAIROS_ASSIGN_OR_RETURN(j.incarnation, r.u64("job.incarnation"));
    KAIROS_ASSIGN_OR_RETURN(j.state, enum_in(r, "job.state", JobState::kCancelled));
    KAIROS_ASSIGN_OR_RETURN(j.created_at, r.time("job.created_at"));
    KAIROS_ASSIGN_OR_RETURN(bool has_due, r.boolean("job.has_next_due"));
    KAIROS_ASSIGN_OR_RETURN(absl::Time due, r.time("job.next_due_at"));
    if (has_due) j.next_due_at = due;
    KAIROS_ASSIGN_OR_RETURN(j.next_nominal, r.time("job.next_nominal"));
    KAIROS_ASSIGN_OR_RETURN(j.cancelled_at, r.time("job.cancelled_at"));
    KAIROS_ASSIGN_OR_RETURN(j.paused, r.boolean("job.paused"));
    KAIROS_ASSIGN_OR_RETURN(j.paused_at, r.time("job.paused_at"));
    KAIROS_ASSIGN_OR_RETURN(j.resumed_at, r.time("job.resumed_at"));
    KAIROS_ASSIGN_OR_RETURN(j.generation, r.u64("job.generation"));
    KAIROS_ASSIGN_OR_RETURN(j.updated_at, r.time("job.updated_at"));
    KAIROS_ASSIGN_OR_RETURN(j.ledger_count, r.u64("job.ledger_count"));
    KAIROS_ASSIGN_OR_RETURN(j.backlog, r.u64("job.backlog"));
    return r.expect_end("job record");
  };
  KAIROS_RETURN_IF_ERROR(as_data_loss(body()));
  return j;
}

std::string encode(const JobCounters& c) {
  ByteWriter w;
  w.u8(kRecordVersion).u64(c.incarnation_hw).u64(c.token_hw);
  std::string out = std::move(w).take();
  // Paired with the decoder (cheap: two integers).
  KAIROS_CHECK(decode_counters(out).ok() && decode_counters(out)->token_hw == c.token_hw);
  return out;
}

absl::StatusOr<JobCounters> decode_counters(std::string_view bytes) {
  ByteReader r(bytes);
  JobCounters c;
  auto body = [&]() -> absl::Status {
    KAIROS_RETURN_IF_ERROR(check_version(r, "counters"));
    KAIROS_ASSIGN_OR_RETURN(c.incarnation_hw, r.u64("counters.incarnation_hw"));
    KAIROS_ASSIGN_OR_RETURN(c.token_hw, r.u64("counters.token_hw"));
    return r.expect_end("counters record");
  };
  KAIROS_RETURN_IF_ERROR(as_data_loss(body()));
  return c;
}

std::string encode(const RunRecord& x) {
  ByteWriter w;
  // Room for the whole record: one allocation.
  std::size_t size = kRunRecordFixedSize + x.id.job_id.size() + x.owner.size() + x.detail.size();
  for (const AttemptRecord& a : x.attempts)
    size += kAttemptFixedSize + a.worker.size() + a.output.size();
  w.reserve(size);
  w.u8(kRecordVersion).str(x.id.job_id).u64(x.id.incarnation).time(x.id.nominal);
  w.u32(x.shard).time(x.due_at).u32(x.attempt).u8(static_cast<std::uint8_t>(x.state));
  w.i32(x.priority).time(x.ready_at).u64(x.token).str(x.owner).time(x.lease_expiry);
  w.time(x.dispatched_at).time(x.claimed_at).time(x.finished_at);
  w.u8(static_cast<std::uint8_t>(x.outcome)).i32(x.exit_code).str(x.detail);
  w.u8(static_cast<std::uint8_t>(x.kind)).duration(x.lateness).u32(x.stands_for);
  w.u64(x.trigger_id).duration(x.last_retry_delay);
  w.u32(static_cast<std::uint32_t>(x.attempts.size()));
  for (const AttemptRecord& a : x.attempts) {
    w.u32(a.attempt).u64(a.token).str(a.worker).time(a.claimed_at).time(a.finished_at);
    w.u8(static_cast<std::uint8_t>(a.end)).i32(a.exit_code).str(a.output);
  }
  return std::move(w).take();
}

absl::StatusOr<RunRecord> decode_run(std::string_view bytes) {
  ByteReader r(bytes);
  RunRecord x;
  auto body = [&]() -> absl::Status {
    KAIROS_ASSIGN_OR_RETURN(const std::uint8_t version, read_version(r, "run"));
    KAIROS_ASSIGN_OR_RETURN(x.id.job_id, r.str("run.job_id"));
    KAIROS_ASSIGN_OR_RETURN(x.id.incarnation, r.u64("run.incarnation"));
    KAIROS_ASSIGN_OR_RETURN(x.id.nominal, r.time("run.nominal"));
    KAIROS_ASSIGN_OR_RETURN(x.shard, r.u32("run.shard"));
    KAIROS_ASSIGN_OR_RETURN(x.due_at, r.time("run.due_at"));
    KAIROS_ASSIGN_OR_RETURN(x.attempt, r.u32("run.attempt"));
    KAIROS_ASSIGN_OR_RETURN(x.state, enum_in(r, "run.state", RunState::kWaiting));
    KAIROS_ASSIGN_OR_RETURN(x.priority, r.i32("run.priority"));
    KAIROS_ASSIGN_OR_RETURN(x.ready_at, r.time("run.ready_at"));
    KAIROS_ASSIGN_OR_RETURN(x.token, r.u64("run.token"));
    KAIROS_ASSIGN_OR_RETURN(x.owner, r.str("run.owner"));
    KAIROS_ASSIGN_OR_RETURN(x.lease_expiry, r.time("run.lease_expiry"));
    KAIROS_ASSIGN_OR_RETURN(x.dispatched_at, r.time("run.dispatched_at"));
    KAIROS_ASSIGN_OR_RETURN(x.claimed_at, r.time("run.claimed_at"));
    KAIROS_ASSIGN_OR_RETURN(x.finished_at, r.time("run.finished_at"));
    KAIROS_ASSIGN_OR_RETURN(x.outcome, enum_in(r, "run.outcome", RunStatus::kStopped));
    KAIROS_ASSIGN_OR_RETURN(x.exit_code, r.i32("run.exit_code"));
    KAIROS_ASSIGN_OR_RETURN(x.detail, r.str("run.detail"));
    KAIROS_ASSIGN_OR_RETURN(x.kind, enum_in(r, "run.kind", RunKind::kManual));
    KAIROS_ASSIGN_OR_RETURN(x.lateness, r.duration("run.lateness"));
    KAIROS_ASSIGN_OR_RETURN(x.stands_for, r.u32("run.stands_for"));
    KAIROS_ASSIGN_OR_RETURN(x.trigger_id, r.u64("run.trigger_id"));
    KAIROS_ASSIGN_OR_RETURN(x.last_retry_delay, r.duration("run.last_retry_delay"));
    KAIROS_ASSIGN_OR_RETURN(std::uint32_t n, r.u32("run.attempts.count"));
    if (n > 10'000) return absl::DataLossError("run.attempts.count: too many attempts");
    for (std::uint32_t i = 0; i < n; ++i) {
      AttemptRecord a;
      KAIROS_ASSIGN_OR_RETURN(a.attempt, r.u32("run.attempts.attempt"));
      KAIROS_ASSIGN_OR_RETURN(a.token, r.u64("run.attempts.token"));
      KAIROS_ASSIGN_OR_RETURN(a.worker, r.str("run.attempts.worker"));
      KAIROS_ASSIGN_OR_RETURN(a.claimed_at, r.time("run.attempts.claimed_at"));
      KAIROS_ASSIGN_OR_RETURN(a.finished_at, r.time("run.attempts.finished_at"));
      KAIROS_ASSIGN_OR_RETURN(a.end, enum_in(r, "run.attempts.end", AttemptEnd::kLapsed));
      KAIROS_ASSIGN_OR_RETURN(a.exit_code, r.i32("run.attempts.exit_code"));
      if (version >= 3) {
        KAIROS_ASSIGN_OR_RETURN(a.output, r.str("run.attempts.output"));
        if (a.output.size() > kMaxRunOutputSize)
          return absl::DataLossError("run.attempts.output: longer than kMaxRunOutputSize");
      }
      x.attempts.push_back(std::move(a));
    }
    return r.expect_end("run record");
  };
  KAIROS_RETURN_IF_ERROR(as_data_loss(body()));
  return x;
}

std::string encode(const LeaderRecord& l) {
  ByteWriter w;
  w.u8(kRecordVersion).str(l.holder).u64(l.epoch).time(l.expiry);
  std::string out = std::move(w).take();
  KAIROS_CHECK(decode_leader(out).ok() && decode_leader(out)->epoch == l.epoch);
  return out;
}

absl::StatusOr<LeaderRecord> decode_leader(std::string_view bytes) {
  ByteReader r(bytes);
  LeaderRecord l;
  auto body = [&]() -> absl::Status {
    KAIROS_RETURN_IF_ERROR(check_version(r, "leader"));
    KAIROS_ASSIGN_OR_RETURN(l.holder, r.str("leader.holder"));
    KAIROS_ASSIGN_OR_RETURN(l.epoch, r.u64("leader.epoch"));
    KAIROS_ASSIGN_OR_RETURN(l.expiry, r.time("leader.expiry"));
    return r.expect_end("leader record");
  };
  KAIROS_RETURN_IF_ERROR(as_data_loss(body()));
  return l;
}

std::string encode(const NodeRecord& n) {
  ByteWriter w;
  w.u8(kRecordVersion).str(n.id).time(n.started).time(n.expiry);
  std::string out = std::move(w).take();
  KAIROS_CHECK_MSG(decode_node(out).ok(), "an encoded node record decodes");
  return out;
}

absl::StatusOr<NodeRecord> decode_node(std::string_view bytes) {
  ByteReader r(bytes);
  NodeRecord n;
  auto body = [&]() -> absl::Status {
    KAIROS_RETURN_IF_ERROR(check_version(r, "node"));
    KAIROS_ASSIGN_OR_RETURN(n.id, r.str("node.id"));
    if (n.id.empty() || n.id.size() > kMaxNodeIdSize)
      return absl::DataLossError("node.id: must be 1..200 bytes");
    KAIROS_ASSIGN_OR_RETURN(n.started, r.time("node.started"));
    KAIROS_ASSIGN_OR_RETURN(n.expiry, r.time("node.expiry"));
    if (n.started > n.expiry) return absl::DataLossError("node.started: after node.expiry");
    return r.expect_end("node record");
  };
  KAIROS_RETURN_IF_ERROR(as_data_loss(body()));
  return n;
}

std::string encode(const DueEntry& d) {
  ByteWriter w;
  w.u8(kRecordVersion).u64(d.incarnation).time(d.nominal);
  std::string out = std::move(w).take();
  KAIROS_CHECK(decode_due(out).ok() && decode_due(out)->incarnation == d.incarnation);
  return out;
}

absl::StatusOr<DueEntry> decode_due(std::string_view bytes) {
  ByteReader r(bytes);
  DueEntry d;
  auto body = [&]() -> absl::Status {
    KAIROS_RETURN_IF_ERROR(check_version(r, "due"));
    KAIROS_ASSIGN_OR_RETURN(d.incarnation, r.u64("due.incarnation"));
    KAIROS_ASSIGN_OR_RETURN(d.nominal, r.time("due.nominal"));
    return r.expect_end("due entry");
  };
  KAIROS_RETURN_IF_ERROR(as_data_loss(body()));
  return d;
}

std::string encode(const LedgerRecord& l) {
  ByteWriter w;
  w.u8(kRecordVersion).u64(l.incarnation).time(l.nominal).time(l.through).u64(l.count);
  w.u8(static_cast<std::uint8_t>(l.outcome)).time(l.fire_at).time(l.run_nominal);
  w.duration(l.lateness).time(l.recorded_at).str(l.detail);
  return std::move(w).take();
}

absl::StatusOr<LedgerRecord> decode_ledger(std::string_view bytes) {
  ByteReader r(bytes);
  LedgerRecord l;
  auto body = [&]() -> absl::Status {
    KAIROS_RETURN_IF_ERROR(check_version(r, "ledger"));
    KAIROS_ASSIGN_OR_RETURN(l.incarnation, r.u64("ledger.incarnation"));
    KAIROS_ASSIGN_OR_RETURN(l.nominal, r.time("ledger.nominal"));
    KAIROS_ASSIGN_OR_RETURN(l.through, r.time("ledger.through"));
    KAIROS_ASSIGN_OR_RETURN(l.count, r.u64("ledger.count"));
    KAIROS_ASSIGN_OR_RETURN(l.outcome, enum_in(r, "ledger.outcome", LedgerOutcome::kManual));
    KAIROS_ASSIGN_OR_RETURN(l.fire_at, r.time("ledger.fire_at"));
    KAIROS_ASSIGN_OR_RETURN(l.run_nominal, r.time("ledger.run_nominal"));
    KAIROS_ASSIGN_OR_RETURN(l.lateness, r.duration("ledger.lateness"));
    KAIROS_ASSIGN_OR_RETURN(l.recorded_at, r.time("ledger.recorded_at"));
    KAIROS_ASSIGN_OR_RETURN(l.detail, r.str("ledger.detail"));
    // count 0: a range too long to count (JobStore::close_overdue over a
    // backlog of more than 100 chunks; docs/POLICIES.md), written so.
    if (l.through < l.nominal) return absl::DataLossError("ledger: through must be >= nominal");
    return r.expect_end("ledger record");
  };
  KAIROS_RETURN_IF_ERROR(as_data_loss(body()));
  return l;
}

namespace {
absl::Time trunc_time(absl::Time t) {
  if (t == absl::InfinitePast() || t == absl::InfiniteFuture()) return t;
  return absl::FromUnixMicros(absl::ToUnixMicros(t));
}
absl::Duration trunc_dur(absl::Duration d) {
  if (d == absl::InfiniteDuration() || d == -absl::InfiniteDuration()) return d;
  return absl::Microseconds(absl::ToInt64Microseconds(d));
}
}  // namespace

JobSpec normalize_spec(JobSpec spec) {
  auto& s = spec.schedule;
  s.at = trunc_time(s.at);
  s.start = trunc_time(s.start);
  s.end = trunc_time(s.end);
  s.every = trunc_dur(s.every);
  s.jitter = trunc_dur(s.jitter);
  auto& p = spec.policy;
  p.retry_initial = trunc_dur(p.retry_initial);
  p.retry_max = trunc_dur(p.retry_max);
  p.timeout = trunc_dur(p.timeout);
  p.misfire_threshold = trunc_dur(p.misfire_threshold);
  p.catch_up_spacing = trunc_dur(p.catch_up_spacing);
  return spec;
}

}  // namespace kairos
