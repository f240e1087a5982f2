#include "core/kernel/keyspace.h"

#include <iterator>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/base/key_codec.h"

namespace kairos::keys {

// Every table has its own tag, and a priority band fits the u8 it is
// encoded in.
constexpr bool tags_distinct() {
  constexpr std::uint8_t tags[] = {kMeta,  kJob,    kCounters, kDue,    kRun,  kOpen,
                                   kReady, kExpiry, kLeader,   kLedger, kSweep};
  for (std::size_t i = 0; i < std::size(tags); ++i)
    for (std::size_t j = i + 1; j < std::size(tags); ++j)
      if (tags[i] == tags[j]) return false;
  return true;
}
static_assert(tags_distinct());
static_assert(kMaxPriority - kMinPriority < 256);
static_assert(kMaxShards > 0);

namespace {
// A builder with room for `fixed` bytes besides the escaped string `id`
// (its terminator included): the key is built with one allocation instead
// of one per doubling of its string. The bytes are the same.
KeyBuilder sized(std::size_t fixed, std::string_view id) {
  std::string out;
  out.reserve(fixed + id.size() + 2);
  return KeyBuilder(std::move(out));
}
// The key a builder holds, moved out (build() on the reference a chain of
// appends returns would copy it).
std::string take(KeyBuilder& b) { return std::move(b).build(); }
// The fixed bytes of a run suffix (incarnation, nominal).
constexpr std::size_t kRunSuffix = 16;
KeyBuilder& run_suffix(KeyBuilder& b, const RunId& id) {
  return b.str(id.job_id).u64(id.incarnation).time(id.nominal);
}
absl::Status expect_tag(KeyReader& r, std::uint8_t tag, std::string_view table) {
  auto t = r.tag();
  if (!t.ok() || *t != tag)
    return absl::DataLossError(absl::StrCat("key: not a ", std::string(table), " key"));
  return absl::OkStatus();
}
absl::StatusOr<RunId> read_run_suffix(KeyReader& r) {
  RunId id;
  KAIROS_ASSIGN_OR_RETURN(id.job_id, r.str());
  KAIROS_ASSIGN_OR_RETURN(id.incarnation, r.u64());
  KAIROS_ASSIGN_OR_RETURN(id.nominal, r.time());
  KAIROS_RETURN_IF_ERROR(r.expect_end());
  return id;
}
}  // namespace

std::string shard_count() { return take(KeyBuilder().tag(kMeta).str("kairos.shard_count")); }
std::string encode_shard_count(std::uint32_t n) { return take(KeyBuilder().u32(n)); }
absl::StatusOr<std::uint32_t> decode_shard_count(std::string_view v) {
  KeyReader r(v);
  KAIROS_ASSIGN_OR_RETURN(auto n, r.u32());
  KAIROS_RETURN_IF_ERROR(r.expect_end());
  if (n == 0 || n > kMaxShards)
    return absl::DataLossError(absl::StrCat("shard_count: ", n, " out of range"));
  return n;
}

std::string job(std::string_view id) { return take(KeyBuilder().tag(kJob).str(id)); }
Range all_jobs() {
  std::string b = take(KeyBuilder().tag(kJob));
  return {b, prefix_end(b)};
}
std::string counters(std::string_view id) { return take(KeyBuilder().tag(kCounters).str(id)); }

std::string due(std::uint32_t shard, absl::Time due_at, std::string_view id) {
  return take(sized(1 + 4 + 8, id).tag(kDue).u32(shard).time(due_at).str(id));
}
Range due_of(std::uint32_t shard) {
  std::string b = take(KeyBuilder().tag(kDue).u32(shard));
  return {b, prefix_end(b)};
}
Range due_until(std::uint32_t shard, absl::Time until) {
  std::string b = take(KeyBuilder().tag(kDue).u32(shard));
  std::string e = take(KeyBuilder().tag(kDue).u32(shard).time(until + absl::Microseconds(1)));
  return {std::move(b), std::move(e)};
}

std::string run(const RunId& id) {
  KeyBuilder b = sized(1 + kRunSuffix, id.job_id);
  b.tag(kRun);
  return take(run_suffix(b, id));
}
Range runs_of(std::string_view id) {
  std::string b = take(KeyBuilder().tag(kRun).str(id));
  return {b, prefix_end(b)};
}
Range runs_of(std::string_view id, std::uint64_t incarnation) {
  std::string b = take(KeyBuilder().tag(kRun).str(id).u64(incarnation));
  return {b, prefix_end(b)};
}
std::string open_run(const RunId& id) {
  KeyBuilder b = sized(1 + kRunSuffix, id.job_id);
  b.tag(kOpen);
  return take(run_suffix(b, id));
}
Range open_runs_of(std::string_view id, std::uint64_t incarnation) {
  std::string b = take(KeyBuilder().tag(kOpen).str(id).u64(incarnation));
  return {b, prefix_end(b)};
}

std::uint8_t priority_band(std::int32_t priority) {
  KAIROS_CHECK(priority >= kMinPriority && priority <= kMaxPriority);
  return static_cast<std::uint8_t>(kMaxPriority - priority);
}
std::string ready(std::uint32_t shard, std::int32_t priority, absl::Time ready_at,
                  const RunId& id) {
  KeyBuilder b = sized(1 + 4 + 1 + 8 + kRunSuffix, id.job_id);
  b.tag(kReady).u32(shard).u8(priority_band(priority)).time(ready_at);
  return take(run_suffix(b, id));
}
Range ready_until(std::uint32_t shard, std::uint8_t band, absl::Time until) {
  std::string b = take(KeyBuilder().tag(kReady).u32(shard).u8(band));
  std::string e =
      take(KeyBuilder().tag(kReady).u32(shard).u8(band).time(until + absl::Microseconds(1)));
  return {std::move(b), std::move(e)};
}
Range ready_of(std::uint32_t shard) {
  std::string b = take(KeyBuilder().tag(kReady).u32(shard));
  return {b, prefix_end(b)};
}
std::string expiry(std::uint32_t shard, absl::Time expiry, const RunId& id) {
  KeyBuilder b = sized(1 + 4 + 8 + kRunSuffix, id.job_id);
  b.tag(kExpiry).u32(shard).time(expiry);
  return take(run_suffix(b, id));
}
Range expiry_until(std::uint32_t shard, absl::Time until) {
  std::string b = take(KeyBuilder().tag(kExpiry).u32(shard));
  std::string e = take(KeyBuilder().tag(kExpiry).u32(shard).time(until + absl::Microseconds(1)));
  return {std::move(b), std::move(e)};
}
std::string sweep(std::uint32_t shard, absl::Time cancelled_at, std::string_view id) {
  return take(KeyBuilder().tag(kSweep).u32(shard).time(cancelled_at).str(id));
}
Range sweep_until(std::uint32_t shard, absl::Time until) {
  return {take(KeyBuilder().tag(kSweep).u32(shard)),
          take(KeyBuilder().tag(kSweep).u32(shard).time(until + absl::Microseconds(1)))};
}
absl::StatusOr<SweepKey> parse_sweep(std::string_view key) {
  KeyReader r(key);
  KAIROS_RETURN_IF_ERROR(expect_tag(r, kSweep, "sweep"));
  SweepKey k;
  KAIROS_ASSIGN_OR_RETURN(k.shard, r.u32());
  KAIROS_ASSIGN_OR_RETURN(k.cancelled_at, r.time());
  KAIROS_ASSIGN_OR_RETURN(k.job_id, r.str());
  KAIROS_RETURN_IF_ERROR(r.expect_end());
  return k;
}
std::string leader(std::uint32_t shard) { return take(KeyBuilder().tag(kLeader).u32(shard)); }
std::string node(std::string_view id) { return take(KeyBuilder().tag(kNode).str(id)); }
Range all_nodes() {
  std::string b = take(KeyBuilder().tag(kNode));
  return {b, prefix_end(b)};
}
std::string ledger(std::string_view id, absl::Time nominal, std::uint64_t incarnation) {
  return take(sized(1 + 8 + 8, id).tag(kLedger).str(id).time(nominal).u64(incarnation));
}
Range ledger_between(std::string_view id, absl::Time from, absl::Time to) {
  return {take(KeyBuilder().tag(kLedger).str(id).time(from)),
          take(KeyBuilder().tag(kLedger).str(id).time(to))};
}
Range ledger_of(std::string_view id) {
  std::string b = take(KeyBuilder().tag(kLedger).str(id));
  return {b, prefix_end(b)};
}

absl::StatusOr<DueKey> parse_due(std::string_view key) {
  KeyReader r(key);
  KAIROS_RETURN_IF_ERROR(expect_tag(r, kDue, "due"));
  DueKey d;
  KAIROS_ASSIGN_OR_RETURN(d.shard, r.u32());
  KAIROS_ASSIGN_OR_RETURN(d.due_at, r.time());
  KAIROS_ASSIGN_OR_RETURN(d.job_id, r.str());
  KAIROS_RETURN_IF_ERROR(r.expect_end());
  return d;
}
absl::StatusOr<RunId> parse_ready(std::string_view key) {
  KeyReader r(key);
  KAIROS_RETURN_IF_ERROR(expect_tag(r, kReady, "ready"));
  KAIROS_RETURN_IF_ERROR(r.u32().status());
  KAIROS_RETURN_IF_ERROR(r.u8().status());
  KAIROS_RETURN_IF_ERROR(r.time().status());
  return read_run_suffix(r);
}
absl::StatusOr<std::uint8_t> parse_ready_band(std::string_view key) {
  KeyReader r(key);
  KAIROS_RETURN_IF_ERROR(expect_tag(r, kReady, "ready"));
  KAIROS_RETURN_IF_ERROR(r.u32().status());
  return r.u8();
}
absl::StatusOr<RunId> parse_expiry(std::string_view key, absl::Time* expiry) {
  KeyReader r(key);
  KAIROS_RETURN_IF_ERROR(expect_tag(r, kExpiry, "expiry"));
  KAIROS_RETURN_IF_ERROR(r.u32().status());
  KAIROS_ASSIGN_OR_RETURN(*expiry, r.time());
  return read_run_suffix(r);
}
absl::StatusOr<RunId> parse_open(std::string_view key) {
  KeyReader r(key);
  KAIROS_RETURN_IF_ERROR(expect_tag(r, kOpen, "open-run"));
  return read_run_suffix(r);
}
absl::StatusOr<std::string> parse_job(std::string_view key) {
  KeyReader r(key);
  KAIROS_RETURN_IF_ERROR(expect_tag(r, kJob, "job"));
  KAIROS_ASSIGN_OR_RETURN(auto id, r.str());
  KAIROS_RETURN_IF_ERROR(r.expect_end());
  return id;
}

}  // namespace kairos::keys
