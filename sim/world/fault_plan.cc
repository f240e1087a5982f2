#include "sim/world/fault_plan.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/kernel/lease_config.h"

namespace kairos::sim {

namespace {

absl::Duration between(Random& r, absl::Duration lo, absl::Duration hi) {
  return r.duration_between(lo, hi);
}

FaultSpec draw_fault(const Scenario& s, Random& r, FaultKind kind, absl::Duration at) {
  FaultSpec f;
  f.kind = kind;
  f.at = at;
  f.length = between(r, s.random_faults.min_length, s.random_faults.max_length);
  f.node = "any";
  switch (kind) {
    case FaultKind::kPause:
      // Often past the lease: that is the dangerous case.
      f.node = r.chance(1, 2) ? "any-worker" : "any-scheduler";
      if (r.chance(1, 2)) f.length = s.timing.lease + between(r, absl::Seconds(1), s.timing.lease);
      break;
    case FaultKind::kCrash:
      f.node = r.chance(2, 3) ? "any-worker" : "any-scheduler";
      break;
    case FaultKind::kCrashAt:
      f.node = r.chance(1, 2) ? "any-worker" : "any-scheduler";
      f.point = std::string(kKnownCrashPoints[r.below(std::size(kKnownCrashPoints))]);
      break;
    case FaultKind::kPartition:
    case FaultKind::kOneWay:
      f.node = r.chance(1, 2) ? "any-worker" : (r.chance(1, 2) ? "leader" : "any-scheduler");
      f.peer = r.chance(1, 2) ? "store" : "any";
      break;
    case FaultKind::kIsolate:
      f.node = r.chance(1, 2) ? "any-worker" : "any-scheduler";
      break;
    case FaultKind::kSwizzle:
      break;
    case FaultKind::kNet:
      f.loss = static_cast<std::uint32_t>(r.between(0, 300));
      f.duplicate = static_cast<std::uint32_t>(r.between(0, 100));
      f.replay = static_cast<std::uint32_t>(r.between(0, 50));
      break;
    case FaultKind::kStoreOutage:
    case FaultKind::kStoreCrash:
      f.node = "store";
      break;
    case FaultKind::kStoreSlow:
      f.node = "store";
      // Sometimes slower than a leader lease: requests sent by a leader
      // execute after its lease lapsed and another node took the shard.
      f.amount = r.chance(1, 3) ? between(r, absl::Seconds(2), absl::Seconds(15))
                                : between(r, absl::Milliseconds(10), absl::Seconds(2));
      break;
    case FaultKind::kClockJump: {
      // Often the leader, often backwards: a leader whose clock went back
      // believes in its lease after the store gave the shard to another.
      f.node = r.chance(1, 2) ? "leader" : "any";
      const absl::Duration mag = between(r, absl::Seconds(1), 2 * s.timing.lease);
      f.amount = r.chance(1, 3) ? mag : -mag;
      f.length = s.random_faults.jump_length;  // zero: until the heal
      break;
    }
    case FaultKind::kClockDrift:
      f.drift_ppm = r.between(-100000, 100000);
      break;
    case FaultKind::kSinkFaults:
      f.node = "sink";
      f.error = static_cast<std::uint32_t>(r.between(0, 500));
      f.timeout = static_cast<std::uint32_t>(r.between(0, 300));
      break;
    case FaultKind::kFleetRestart:
      f.length = between(r, absl::Seconds(1), absl::Seconds(10));
      break;
    case FaultKind::kCorruptRecord:
      KAIROS_CHECK_MSG(false, "corrupt-record is never drawn (not a swarm kind)");
      break;
    case FaultKind::kLeave:
    case FaultKind::kDrain:
    case FaultKind::kStop:
      KAIROS_CHECK_MSG(false, "planned stops are never drawn (not swarm kinds)");
      break;
  }
  return f;
}

}  // namespace

std::vector<FaultAction> plan_faults(const Scenario& s, Random& random) {
  std::vector<FaultAction> out;
  for (const auto& f : s.faults) out.push_back({f, false});
  const absl::Duration window = s.duration - s.quiet_tail;
  if (s.random_faults.per_hour != 0 && !s.random_faults.kinds.empty() &&
      window > absl::ZeroDuration()) {
    // Integer count: per_hour * window / 1h, at least 1.
    const std::int64_t count =
        std::max<std::int64_t>(1, static_cast<std::int64_t>(s.random_faults.per_hour) *
                                      absl::ToInt64Seconds(window) / 3600);
    for (std::int64_t i = 0; i < count; ++i) {
      const FaultKind kind = s.random_faults.kinds[random.below(s.random_faults.kinds.size())];
      const absl::Duration at = between(random, absl::ZeroDuration(), window);
      FaultSpec f = draw_fault(s, random, kind, at);
      // Heal before the quiet tail.
      if (f.at + f.length > window) f.length = std::max(absl::ZeroDuration(), window - f.at);
      if ((f.kind == FaultKind::kCrash || f.kind == FaultKind::kStoreCrash ||
           f.kind == FaultKind::kFleetRestart) &&
          f.length <= absl::ZeroDuration())
        f.length = absl::Milliseconds(1);
      out.push_back({std::move(f), true});
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const FaultAction& a, const FaultAction& b) {
    return a.spec.at < b.spec.at;
  });
  return out;
}

Scenario default_swarm_base() {
  // Line numbers matter: the control directives name job lines (job=K).
  auto s = parse_scenario(R"(name swarm
duration 30m
quiet-tail 8m
# 1: plain interval jobs (one line is rescheduled at 9m)
job interval count=16 every=30s
# 2: cron in a DST zone (two are paused from 5m to 12m, both fire times)
job cron count=5 expr="*/2 * * * *" zone=Europe/Berlin
job once count=40 within=20m
# 4-6: runs slower than their interval under each overlap policy
job interval count=3 every=20s run=30s..50s timeout=2m
job interval count=2 every=20s run=30s..45s timeout=2m overlap=queue
job interval count=2 every=15s run=30s..40s timeout=2m overlap=allow max-concurrent=2
# 7: failing jobs retried with backoff, some failing for good; the outage
# leaves them a backlog to skip
job interval count=3 every=1m attempts=4 retry=2s..30s fail=600 permanent-fail=50 misfire=skip
# 8-9: catch-up with a small bound; a scheduler outage leaves a backlog
job interval count=3 every=10s misfire=catch-up catch-up-max=3 catch-up-spacing=5s
job interval count=2 every=1m misfire=catch-up catch-up-max=3 catch-up-spacing=10s threshold=30s
# 10: a priority spread (triggered at 7m)
job interval count=8 every=30s priority=0..9 run=1s..4s
cancel count=2 at=10m
pause at=5m count=2 job=2 for=7m
trigger at=7m count=3 job=10
reschedule at=9m count=2 job=1 every=45s
)",
                          "swarm-base");
  KAIROS_CHECK_MSG(s.ok(), std::string(s.status().message()).c_str());
  return *s;
}

Scenario swarm_scenario(const Scenario& base, Random& r) {
  Scenario s = base;
  s.name = base.name + "-swarm";
  s.faults.clear();
  s.topology.schedulers = static_cast<std::uint32_t>(r.between(1, 5));
  s.topology.workers = static_cast<std::uint32_t>(r.between(1, 8));
  s.topology.shards = static_cast<std::uint32_t>(r.between(1, 8));
  s.network.min_delay = absl::Milliseconds(r.between(0, 2));
  s.network.max_delay = s.network.min_delay + absl::Milliseconds(r.between(0, 20));
  s.network.loss_permille = r.chance(1, 3) ? static_cast<std::uint32_t>(r.between(0, 100)) : 0;
  s.network.dup_permille = r.chance(1, 3) ? static_cast<std::uint32_t>(r.between(0, 100)) : 0;
  s.network.replay_permille = r.chance(1, 4) ? static_cast<std::uint32_t>(r.between(0, 50)) : 0;
  s.network.slow_permille = r.chance(1, 3) ? static_cast<std::uint32_t>(r.between(0, 100)) : 0;
  s.sink.error_permille = r.chance(1, 3) ? static_cast<std::uint32_t>(r.between(0, 200)) : 0;
  s.sink.timeout_permille = r.chance(1, 3) ? static_cast<std::uint32_t>(r.between(0, 200)) : 0;
  s.runner.fail_permille = static_cast<std::uint32_t>(r.between(0, 200));
  s.runner.hang_permille = r.chance(1, 4) ? static_cast<std::uint32_t>(r.between(0, 50)) : 0;
  // A few kinds at high rates (swarm testing).
  s.random_faults.kinds.clear();
  const auto n_kinds = static_cast<std::size_t>(r.between(1, 4));
  for (std::size_t i = 0; i < n_kinds; ++i) {
    const FaultKind k = kAllFaultKinds[r.below(std::size(kAllFaultKinds))];
    if (std::find(s.random_faults.kinds.begin(), s.random_faults.kinds.end(), k) ==
        s.random_faults.kinds.end())
      s.random_faults.kinds.push_back(k);
  }
  s.random_faults.per_hour = static_cast<std::uint32_t>(r.between(2, 60));
  s.random_faults.min_length = absl::Seconds(1);
  s.random_faults.max_length = absl::Seconds(r.between(2, 60));
  // Half the seeds: every scheduler down at once for 2..5 minutes, so the
  // misfire policies face a backlog (larger than a small catch_up_max for
  // jobs due every 10 s or every minute); it ends a few minutes before the
  // quiet tail, so the late runs are judged too.
  const absl::Duration window = s.duration - s.quiet_tail;
  const absl::Duration outage = absl::Seconds(r.between(120, 300));
  if (r.chance(1, 2) && window > outage + absl::Minutes(5)) {
    FaultSpec f;
    f.kind = FaultKind::kCrash;
    f.at = between(r, absl::Minutes(2), window - outage - absl::Minutes(3));
    f.length = outage;
    for (std::uint32_t k = 1; k <= s.topology.schedulers; ++k) {
      f.node = absl::StrCat("scheduler-", k);
      s.faults.push_back(f);
    }
  }
  // A quarter of the seeds: a leader goes stale. Its clock steps back (by
  // less than the skew the kernel tolerates, so it keeps leading), then its
  // requests stop reaching the store for longer than the leader lease but
  // shorter than the lease plus the step less the node's own safety margins
  // (drift allowance, rpc margin, up to a renew period): when they reach it again the
  // store's clock has let its shards lapse (a peer may hold them) while its
  // own clock still shows its lease. Only the store's epoch check stands
  // between its next writes and a second leader. (The random mix reaches
  // this only when it draws such a jump and such a cut together.) Drawn
  // last, so the other seeds keep their mixes.
  if (s.topology.schedulers != 0 && window > absl::Minutes(4) && r.chance(1, 4)) {
    const absl::Duration ttl = LeaseConfig{}.leader_ttl;
    const absl::Duration step = between(r, absl::Seconds(7), absl::Milliseconds(9500));
    FaultSpec jump;
    jump.kind = FaultKind::kClockJump;
    jump.node = "leader";
    jump.at = between(r, absl::Minutes(1), window - absl::Minutes(3));
    jump.amount = -step;
    jump.length = between(r, absl::Seconds(40), absl::Minutes(2));
    FaultSpec cut;
    cut.kind = FaultKind::kOneWay;
    cut.node = "leader";
    cut.peer = "store";
    cut.at = jump.at + absl::Seconds(1);
    cut.length = ttl + between(r, absl::Milliseconds(200), step - absl::Seconds(5));
    s.faults.push_back(jump);
    s.faults.push_back(cut);
  }
  s.description = absl::StrCat("swarm mix drawn from ", base.name);
  return s;
}

}  // namespace kairos::sim
