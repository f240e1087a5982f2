// The plumbing shared by the scheduler node and the worker (node_support.h),
// the lease-safety helpers (lease_config.h) and the config checks that the
// node and the worker run on construction; and the wire bytes of the
// (run, token) items (run_ref.h), pinned byte for byte.
#include "core/kernel/node_support.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/kernel/lease_config.h"
#include "core/kernel/scheduler_node.h"
#include "core/kernel/wire.h"
#include "core/kernel/worker.h"
#include "core/twins/manual_clock.h"
#include "core/twins/manual_loop.h"
#include "core/twins/memory_event_log.h"
#include "tests/support/wire_bytes.h"

namespace kairos {
namespace {

// ---------------------------------------------------------------------------
// Backoff.

TEST(Backoff, CapDoublesFromBaseAndStopsAtMax) {
  const absl::Duration base = absl::Milliseconds(20), max = absl::Seconds(1);
  EXPECT_EQ(backoff_cap(base, max, 0), base);  // 0 counts as the first retry
  EXPECT_EQ(backoff_cap(base, max, 1), base);
  EXPECT_EQ(backoff_cap(base, max, 2), absl::Milliseconds(40));
  EXPECT_EQ(backoff_cap(base, max, 6), absl::Milliseconds(640));
  EXPECT_EQ(backoff_cap(base, max, 7), max);  // 1280ms, capped
  EXPECT_EQ(backoff_cap(base, max, 1000), max);
  EXPECT_EQ(backoff_cap(max, max, 5), max);
}

TEST(Backoff, WaitIsWithinHalfCapAndCap) {
  const absl::Duration base = absl::Milliseconds(50), max = absl::Seconds(2);
  Random random(42);
  for (std::uint32_t attempt = 0; attempt < 40; ++attempt) {
    const absl::Duration cap = backoff_cap(base, max, attempt);
    for (int i = 0; i < 50; ++i) {
      const absl::Duration d = retry_backoff(random, base, max, attempt);
      EXPECT_GE(d, cap / 2) << attempt;
      EXPECT_LE(d, cap) << attempt;
    }
  }
}

TEST(Backoff, DrawsExactlyOneNumber) {
  const absl::Duration base = absl::Milliseconds(20), max = absl::Seconds(1);
  Random a(7), b(7);
  const absl::Duration d = retry_backoff(a, base, max, 3);
  const std::int64_t cap = absl::ToInt64Microseconds(backoff_cap(base, max, 3));
  EXPECT_EQ(d, absl::Microseconds(b.between(cap / 2, cap)));
  EXPECT_EQ(a.next_u64(), b.next_u64());  // same position in the sequence
}

TEST(Backoff, SubMicrosecondBaseWaitsZero) {
  Random random(1);
  EXPECT_EQ(retry_backoff(random, absl::Nanoseconds(500), absl::Nanoseconds(800), 4),
            absl::ZeroDuration());
}

TEST(BackoffDeathTest, BaseAboveMaxIsABug) {
  EXPECT_DEATH(backoff_cap(absl::Seconds(2), absl::Seconds(1), 1), "0 < base <= max");
}

// ---------------------------------------------------------------------------
// Events.

TEST(RecordEvent, CounterNameReplacesDots) {
  EXPECT_EQ(event_counter_name("run.claimed"), "kairos_run_claimed_total");
  EXPECT_EQ(event_counter_name("worker.report_accepted"), "kairos_worker_report_accepted_total");
}

TEST(RecordEvent, StampsTagsCountsAndRecords) {
  MemoryEventLog log;
  Metrics metrics;
  const absl::Time now = absl::FromUnixSeconds(1000);
  Event e;
  e.kind = "leader.lost";
  e.with("shard", std::uint64_t{3});
  record_event(std::move(e), now, "node", "n1", log, metrics);
  Event tagged;
  tagged.kind = "leader.lost";
  tagged.with("node", std::string("other"));
  record_event(std::move(tagged), now + absl::Seconds(1), "node", "n1", log, metrics);

  ASSERT_EQ(log.events().size(), 2u);
  EXPECT_EQ(log.events()[0].at, now);
  ASSERT_NE(log.events()[0].find("node"), nullptr);
  EXPECT_EQ(std::get<std::string>(*log.events()[0].find("node")), "n1");
  // A field already present is kept, not duplicated.
  EXPECT_EQ(std::get<std::string>(*log.events()[1].find("node")), "other");
  EXPECT_EQ(log.events()[1].fields.size(), 1u);
  EXPECT_EQ(metrics.counter_value("kairos_leader_lost_total"), 2);
}

// ---------------------------------------------------------------------------
// Lease safety.

TEST(WithinLease, LeaseDeadlineIsInsideAndOneMicrosecondLaterIsNot) {
  const LeaseConfig c;
  const absl::Time sent = absl::FromUnixSeconds(5000);
  for (absl::Duration ttl : {c.lease_ttl, c.leader_ttl, absl::Milliseconds(2001), absl::Hours(1000),
                             absl::Microseconds(1)}) {
    const absl::Time d = lease_deadline(sent, ttl, c.max_drift_ppm, c.margin);
    EXPECT_TRUE(within_lease(sent, d, ttl, c.margin)) << ttl;
  }
  // Without drift the deadline is exactly a margin inside: one more
  // microsecond is outside.
  const absl::Time d = lease_deadline(sent, c.lease_ttl, 0, c.margin);
  EXPECT_TRUE(within_lease(sent, d, c.lease_ttl, c.margin));
  EXPECT_FALSE(within_lease(sent, d + absl::Microseconds(1), c.lease_ttl, c.margin));
  EXPECT_FALSE(within_lease(sent, sent + c.lease_ttl, c.lease_ttl, c.margin));
}

TEST(WithinLease, HoldsForEveryTtlTheWireCanCarry) {
  const LeaseConfig c;
  const absl::Time sent = absl::FromUnixSeconds(5000);
  for (absl::Duration ttl : {absl::ZeroDuration(), absl::Seconds(-30), absl::Microseconds(-1),
                             absl::InfiniteDuration(), -absl::InfiniteDuration()}) {
    const absl::Time d = lease_deadline(sent, ttl, c.max_drift_ppm, c.margin);
    EXPECT_TRUE(within_lease(sent, d, ttl, c.margin)) << ttl;
  }
}

TEST(LeaseInvariants, DefaultsHold) {
  const LeaseConfig c;
  check_lease_invariants(c);
  EXPECT_EQ(effective_lease(c.lease_ttl, c), absl::Milliseconds(27'700));
  EXPECT_EQ(effective_lease(c.leader_ttl, c), absl::Milliseconds(7'900));
  EXPECT_EQ(SchedulerNodeConfig{}.poll_interval, absl::Seconds(1));
  EXPECT_EQ(WorkerConfig{}.claim_wait, absl::Seconds(10));
}

TEST(LeaseInvariantsDeathTest, ARefusedConfigIsABugWhereInvariantsAreChecked) {
  LeaseConfig c;
  c.margin = c.lease_ttl;  // the worker's deadline would be at or before its send
  EXPECT_FALSE(validate(c).ok());
  EXPECT_DEATH(check_lease_invariants(c), "lease.heartbeat_period");
}

// ---------------------------------------------------------------------------
// A worker whose run deadline would fall outside its lease is refused.

class SilentTransport final : public Transport {
 public:
  void send(PeerId, std::string) override {}
  void set_handler(Handler) override {}
};
class IdleRunner final : public Runner {
 public:
  RunHandle start(RunRequest, std::function<void(RunOutcome)>) override { return 1; }
  void stop(RunHandle) override {}
};

struct WorkerParts {
  ManualClock clock{absl::FromUnixSeconds(1'800'000'000)};
  ManualLoop loop{clock};
  SilentTransport transport;
  IdleRunner runner;
  Random random{3};
  MemoryEventLog events;
  Metrics metrics;
  static WorkerConfig config() {
    WorkerConfig c;
    c.worker_id = "w1";
    c.nodes = {1};
    return c;
  }
};

TEST(WorkerConfigChecks, DefaultsConstruct) {
  WorkerParts p;
  Worker w(p.clock, p.loop, p.transport, p.runner, p.random, p.events, p.metrics, p.config());
  EXPECT_EQ(w.running(), 0u);
}

TEST(WorkerConfigDeathTest, RunDeadlineOutsideTheLeaseIsRefused) {
  auto build = [](WorkerConfig c) {
    WorkerParts p;
    Worker w(p.clock, p.loop, p.transport, p.runner, p.random, p.events, p.metrics, std::move(c));
  };
  WorkerConfig margin_eats_lease = WorkerParts::config();
  margin_eats_lease.lease.margin = margin_eats_lease.lease.lease_ttl + absl::Seconds(1);
  EXPECT_DEATH(build(margin_eats_lease), "lease.heartbeat_period");
  WorkerConfig drift_eats_lease = WorkerParts::config();
  drift_eats_lease.lease.max_drift_ppm = 2'000'000;
  EXPECT_DEATH(build(drift_eats_lease), "lease.max_drift_ppm");
  WorkerConfig long_poll = WorkerParts::config();
  long_poll.claim_wait = long_poll.lease.lease_ttl;  // grants would arrive lapsing
  EXPECT_DEATH(build(long_poll), "worker.claim_wait");
}

// ---------------------------------------------------------------------------
// Wire bytes of the shared (run, token) items, written out by hand from the
// framing in wire.h and the encodings in core/base/codec.h.

using test_support::frame;
using test_support::le;
using test_support::str;

TEST(WireItems, RenewRequestBytesArePinned) {
  wire::RenewRequest m{9, "w", {RenewItem{RunId{"j", 2, absl::FromUnixMicros(3)}, 4}}};
  const std::string body =
      le(9, 8) + str("w") + le(1, 4) + str("j") + le(2, 8) + le(3, 8) + le(4, 8);
  EXPECT_EQ(wire::encode(m), frame(3, body));
  auto back = wire::decode(frame(3, body));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(std::get<wire::RenewRequest>(*back), m);
}

TEST(WireItems, CompleteRequestBytesArePinned) {
  wire::CompleteRequest m{10,
                          "w",
                          {CompleteItem{RunId{"j", 2, absl::FromUnixMicros(3)}, 4,
                                        RunStatus::kFailed, -1, "boom", "out"}}};
  const std::string body = le(10, 8) + str("w") + le(1, 4) + str("j") + le(2, 8) + le(3, 8) +
                           le(4, 8) + le(static_cast<std::uint8_t>(RunStatus::kFailed), 1) +
                           le(0xFFFFFFFFu, 4) + str("boom") + str("out");
  EXPECT_EQ(wire::encode(m), frame(5, body));
  auto back = wire::decode(frame(5, body));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(std::get<wire::CompleteRequest>(*back), m);
}

TEST(WireItems, CountBoundsAdmitMinimalItems) {
  // A batch of the smallest items the encoder can write decodes: the
  // decoder's per-element bound is not above the encoders' minimum.
  wire::RenewRequest renew{1, "w", std::vector<RenewItem>(wire::kMaxBatch)};
  EXPECT_TRUE(wire::decode(wire::encode(renew)).ok());
  wire::CompleteRequest complete{1, "w", std::vector<CompleteItem>(wire::kMaxBatch)};
  EXPECT_TRUE(wire::decode(wire::encode(complete)).ok());
  wire::RenewResponse verdicts{1, std::vector<wire::WireVerdict>(wire::kMaxBatch)};
  EXPECT_TRUE(wire::decode(wire::encode(verdicts)).ok());
  wire::ClaimResponse grants{1, std::vector<wire::WireGrant>(wire::kMaxBatch)};
  EXPECT_TRUE(wire::decode(wire::encode(grants)).ok());
}

}  // namespace
}  // namespace kairos
