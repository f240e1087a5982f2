// RapidCheck stateful test of the policy state machines against a model.
//
// One recurring job with random policies (retries, overlap, misfire,
// threshold, catch-up bound/spacing) is driven by random commands: clock
// advances (short and long, so misfires happen), dispatch, claim, reports
// (success, failure, permanent failure, timeout, release), reaper passes,
// manual triggers (never forced), pause and resume. Every transaction gets a
// random commit outcome (committed, unknown-applied, unknown-not-applied).
// After every command the harness checks, against the store and the events
// of applied transactions:
//   1. attempts never exceed max_attempts;
//   2. every retry delay equals the model's delay and lies within the jitter
//      bounds [retry_lower_bound, retry_base_delay]; ready_at = now + delay;
//   3. no more unfinished runs than the overlap policy allows (active <= cap,
//      at most one waiting, and only under `queue`);
//   4. catch-up is bounded (due - skipped <= catch_up_max, at most one run
//      per decision) and rate-limited (an already-due successor waits the
//      spacing);
//   5. misfire decisions match the threshold (fired/moved records are within
//      it; late records, misfire decisions and skip-policy skips are past it);
//   6. every occurrence before the due entry has exactly one ledger outcome,
//      and one that fired has its run.
// A second property checks the claim order: higher priority first among due
// runs, except that runs past the starvation bound go first, oldest first.
// Each planted policy bug must be caught.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>
#include <rapidcheck/state.h>

#include <algorithm>
#include <map>

#include "core/kernel/job_store.h"
#include "core/kernel/keyspace.h"
#include "core/kernel/policy.h"
#include "core/schedule/schedule.h"
#include "tests/support/job_store_fixture.h"
#include "tests/support/kernel_test_util.h"
#include "tests/support/seeded_property.h"

namespace kairos {
namespace {

using test_support::T0;

enum class Outcome { kCommitted, kUnknownApplied, kUnknownNotApplied };
const absl::Duration kTtl = absl::Seconds(30);

struct Sut {
  Sut(JobPolicy p, PlantedBugs bugs) : bench(1, bugs), policy(p), bugs(bugs) {
    spec = test_support::interval_job("j", absl::Seconds(30), T0());
    spec.policy = p;
    auto s = Schedule::compile(spec.schedule, spec.id);
    schedule = std::make_shared<Schedule>(*s);
    CreateResult out;
    RC_ASSERT(bench.run([&](Txn& t) { return store.create(t, spec, &out); }).committed());
    LeadershipResult l;
    RC_ASSERT(bench
                  .run([&](Txn& t) {
                    return store.acquire_or_renew(t, 0, "n", 0, absl::Hours(100000), &l);
                  })
                  .committed());
    leader = {"n", l.record.epoch};
  }
  test_support::StoreBench bench;
  JobStore& store = bench.store;
  JobPolicy policy;
  PlantedBugs bugs;
  JobSpec spec;
  std::shared_ptr<Schedule> schedule;
  LeaderToken leader;
  std::vector<RunRecord> grants;

  template <typename F>
  bool txn(Outcome o, F&& body) {
    if (o == Outcome::kUnknownNotApplied) {
      bench.run([&](Txn& t) {
        (void)body(t);
        return absl::CancelledError("rolled back");
      });
      return false;
    }
    TxnResult r = bench.run(body);
    return r.committed();
  }
  absl::Time now() const { return bench.clock.now(); }
  const auto& m() const { return bench.storage.contents(); }
  JobRecord job() const { return *decode_job(m().at(keys::job("j"))); }
  bool lateness_ok(const LedgerRecord& l) const {
    switch (l.outcome) {
      case LedgerOutcome::kFired:
      case LedgerOutcome::kMovedDst:
        return l.lateness <= policy.misfire_threshold;
      case LedgerOutcome::kLate:
        return l.lateness > policy.misfire_threshold;
      case LedgerOutcome::kSkippedMisfire:
        return policy.misfire != MisfirePolicy::kSkip || l.lateness > policy.misfire_threshold;
      default:
        return true;
    }
  }

  void check_events(const std::vector<Event>& events) {
    for (const Event& e : events) {
      auto dur = [&](std::string_view f) { return std::get<absl::Duration>(*e.find(f)); };
      auto u64 = [&](std::string_view f) { return std::get<std::uint64_t>(*e.find(f)); };
      if (e.kind == "run.retry_scheduled") {
        const auto failed = static_cast<std::uint32_t>(u64("failed_attempt"));
        const RunId id{"j", u64("incarnation"), std::get<absl::Time>(*e.find("nominal"))};
        const absl::Duration d = dur("delay");
        // 2. retry delays within the jitter bounds, and the model's delay.
        RC_ASSERT(d >= retry_lower_bound(policy, failed));
        RC_ASSERT(d <= retry_base_delay(policy, failed));
        RC_ASSERT(d == retry_delay(policy, id, failed));
        RC_ASSERT(std::get<absl::Time>(*e.find("ready_at")) == now() + d);
        RC_ASSERT(failed < policy.max_attempts);
      }
      if (e.kind == "misfire.decided") {
        // 5. a misfire decision is taken only past the threshold.
        RC_ASSERT(dur("lateness") > policy.misfire_threshold);
        RC_ASSERT(u64("fired") <= 1u);
        if (policy.misfire == MisfirePolicy::kCatchUp && u64("capped") == 0) {
          // 4. catch-up bounded.
          RC_ASSERT(u64("due") - u64("skipped") <= policy.catch_up_max);
        }
      }
    }
  }

  void check_invariants() {
    const JobRecord job = this->job();
    std::uint32_t active = 0, waiting = 0;
    for (auto it = m().lower_bound(std::string(1, keys::kRun));
         it != m().end() && static_cast<std::uint8_t>(it->first[0]) == keys::kRun; ++it) {
      const RunRecord r = *decode_run(it->second);
      // 1. attempts never exceed the maximum.
      RC_ASSERT(r.attempt <= policy.max_attempts);
      RC_ASSERT(r.attempts.size() <= policy.max_attempts);
      if (r.state == RunState::kReady || r.state == RunState::kLeased) ++active;
      if (r.state == RunState::kWaiting) ++waiting;
      if (r.state == RunState::kReady)
        RC_ASSERT(m().count(keys::ready(r.shard, r.priority, r.ready_at, r.id)) == 1u);
      RC_ASSERT(m().count(keys::open_run(r.id)) == (is_terminal(r.state) ? 0u : 1u));
    }
    // 3. overlap bounds.
    const std::uint32_t cap = policy.overlap == OverlapPolicy::kAllow ? policy.max_concurrent : 1;
    RC_ASSERT(active <= cap);
    RC_ASSERT(waiting <= (policy.overlap == OverlapPolicy::kQueue ? 1u : 0u));
    // 6. one ledger outcome per occurrence; 5. lateness matches the outcome.
    std::map<absl::Time, int> covered;
    std::uint64_t records = 0;
    const keys::Range lr = keys::ledger_of("j");
    for (auto l = m().lower_bound(lr.begin); l != m().end() && l->first < lr.end; ++l) {
      ++records;
      const LedgerRecord rec = *decode_ledger(l->second);
      RC_ASSERT(lateness_ok(rec));
      if (rec.outcome == LedgerOutcome::kManual) continue;
      std::uint64_t n = 0;
      for (auto f = schedule->next_after(rec.nominal - absl::Microseconds(1));
           f && f->nominal <= rec.through; f = schedule->next_after(f->nominal)) {
        ++covered[f->nominal];
        ++n;
      }
      RC_ASSERT(n == rec.count);
      if (has_own_run(rec.outcome)) RC_ASSERT(m().count(keys::run({"j", 1, rec.nominal})) == 1u);
    }
    RC_ASSERT(records == job.ledger_count);
    const absl::Time upto = job.next_nominal == absl::InfinitePast() ? now() : job.next_nominal;
    for (auto f = schedule->next_after(T0() - absl::Microseconds(1)); f && f->nominal < upto;
         f = schedule->next_after(f->nominal)) {
      if (job.paused && f->at > job.paused_at) break;
      RC_ASSERT(covered[f->nominal] == 1);
    }
  }
};

struct Model {
  std::size_t grants = 0;
};
using Cmd = rc::state::Command<Model, Sut>;

rc::Gen<Outcome> gen_outcome() {
  return rc::gen::weightedElement<Outcome>(
      {{8, Outcome::kCommitted}, {1, Outcome::kUnknownApplied}, {1, Outcome::kUnknownNotApplied}});
}

struct Advance : Cmd {
  std::int64_t secs = *rc::gen::weightedElement<std::int64_t>(
      {{6, *rc::gen::inRange<std::int64_t>(1, 40)}, {1, *rc::gen::inRange<std::int64_t>(60, 900)}});
  void run(const Model&, Sut& s) const override {
    s.bench.clock.advance(absl::Seconds(secs));
    s.check_invariants();
  }
  void show(std::ostream& os) const override { os << "Advance(" << secs << "s)"; }
};

struct Dispatch : Cmd {
  Outcome o = *gen_outcome();
  void run(const Model&, Sut& s) const override {
    DispatchResult d;
    const bool applied = s.txn(o, [&](Txn& t) { return s.store.dispatch(t, 0, s.leader, 10, &d); });
    if (applied) {
      s.check_events(d.events);
      // 4. catch-up rate limit: an already-due successor of a catch-up run
      // waits the spacing.
      const JobRecord job = s.job();
      for (const Event& e : d.events) {
        if (e.kind != "misfire.decided" || s.policy.misfire != MisfirePolicy::kCatchUp) continue;
        if (std::get<std::uint64_t>(*e.find("fired")) == 0 || !job.next_due_at) continue;
        for (const RunRecord& r : d.dispatched) {
          auto next = s.schedule->next_after(r.id.nominal);
          if (next && next->at <= s.now())
            RC_ASSERT(*job.next_due_at >= s.now() + s.policy.catch_up_spacing);
        }
      }
    }
    s.check_invariants();
  }
  void show(std::ostream& os) const override { os << "Dispatch"; }
};

struct Claim : Cmd {
  std::uint32_t n = *rc::gen::inRange<std::uint32_t>(1, 4);
  Outcome o = *gen_outcome();
  void apply(Model& m) const override { ++m.grants; }
  void run(const Model&, Sut& s) const override {
    ClaimResult out;
    ClaimArgs args{"w", n, kTtl, 0};
    if (s.txn(o, [&](Txn& t) { return s.store.claim(t, args, &out); }))
      for (const auto& g : out.grants) s.grants.push_back(g.run);
    s.check_invariants();
  }
  void show(std::ostream& os) const override { os << "Claim(" << n << ")"; }
};

struct Report : Cmd {
  std::size_t pick = *rc::gen::arbitrary<std::size_t>();
  RunStatus status =
      *rc::gen::element(RunStatus::kSucceeded, RunStatus::kFailed, RunStatus::kFailed,
                        RunStatus::kFailedPermanent, RunStatus::kTimedOut, RunStatus::kStopped);
  Outcome o = *gen_outcome();
  void checkPreconditions(const Model& m) const override { RC_PRE(m.grants > 0); }
  void run(const Model&, Sut& s) const override {
    if (s.grants.empty()) return;
    const RunRecord g = s.grants[pick % s.grants.size()];
    CompleteResult out;
    std::vector<CompleteItem> items{{g.id, g.token, status, 0, ""}};
    if (s.txn(o, [&](Txn& t) { return s.store.complete(t, "w", items, &out); }))
      s.check_events(out.events);
    s.check_invariants();
  }
  void show(std::ostream& os) const override {
    os << "Report(" << static_cast<int>(status) << ", pick " << pick << ")";
  }
};

struct Reap : Cmd {
  Outcome o = *gen_outcome();
  void run(const Model&, Sut& s) const override {
    ReapResult out;
    if (s.txn(o, [&](Txn& t) { return s.store.reap(t, 0, s.leader, 10, &out); }))
      s.check_events(out.events);
    s.check_invariants();
  }
  void show(std::ostream& os) const override { os << "Reap"; }
};

struct Trigger : Cmd {
  std::uint64_t id = *rc::gen::inRange<std::uint64_t>(1, 5);
  Outcome o = *gen_outcome();
  void run(const Model&, Sut& s) const override {
    TriggerResult out;
    TriggerArgs a{"j", id, s.now(), false};
    s.txn(o, [&](Txn& t) { return s.store.trigger(t, a, &out); });
    s.check_invariants();
  }
  void show(std::ostream& os) const override { os << "Trigger(" << id << ")"; }
};

struct PauseResume : Cmd {
  bool pause = *rc::gen::arbitrary<bool>();
  Outcome o = *gen_outcome();
  void run(const Model&, Sut& s) const override {
    ControlResult out;
    s.txn(o, [&](Txn& t) {
      return pause ? s.store.pause(t, "j", &out) : s.store.resume(t, "j", &out);
    });
    s.check_invariants();
  }
  void show(std::ostream& os) const override { os << (pause ? "Pause" : "Resume"); }
};

rc::Gen<JobPolicy> gen_policy() {
  return rc::gen::exec([] {
    JobPolicy p;
    p.max_attempts = *rc::gen::inRange<std::uint32_t>(1, 5);
    p.retry_initial = absl::Seconds(*rc::gen::inRange(1, 20));
    p.retry_multiplier_percent = *rc::gen::element<std::uint32_t>(100, 150, 200, 300);
    p.retry_max = p.retry_initial * *rc::gen::inRange(1, 10);
    p.retry_jitter_percent = *rc::gen::element<std::uint32_t>(0, 20, 50, 100);
    p.misfire =
        *rc::gen::element(MisfirePolicy::kRunOnce, MisfirePolicy::kCatchUp, MisfirePolicy::kSkip);
    p.misfire_threshold = absl::Seconds(*rc::gen::element(0, 20, 60, 120));
    p.catch_up_max = *rc::gen::inRange<std::uint32_t>(1, 6);
    p.catch_up_spacing = absl::Seconds(*rc::gen::element(0, 5, 45));
    p.overlap =
        *rc::gen::element(OverlapPolicy::kSkip, OverlapPolicy::kQueue, OverlapPolicy::kAllow);
    p.max_concurrent = *rc::gen::inRange<std::uint32_t>(1, 4);
    return p;
  });
}

void run_property(PlantedBugs bugs) {
  const JobPolicy p = *gen_policy();
  Model model;
  Sut sut(p, bugs);
  rc::state::check(
      model, sut,
      rc::state::gen::execOneOfWithArgs<Advance, Advance, Dispatch, Dispatch, Claim, Claim, Report,
                                        Report, Reap, Trigger, PauseResume>());
}

RC_GTEST_PROP(PolicyStateful, PolicyInvariantsUnderEveryCommitOutcome, ()) { run_property({}); }

// The property on its own seed and test count (see seeded_property.h).
bool check_seeded(std::uint64_t seed, int tests, PlantedBugs bugs, bool print) {
  return test_support::check_seeded(
      "policy invariants", seed, tests, [bugs] { run_property(bugs); }, print);
}

TEST(PolicyStateful, MoreHistoriesOnFixedSeeds) {
  for (std::uint64_t seed = 1; seed <= 3; ++seed)
    ASSERT_TRUE(check_seeded(seed, 300, {}, false)) << seed;
}

TEST(PolicyStateful, CatchesPlantedPolicyBugs) {
  for (const char* name : {"unbounded-catch-up", "overlap-ignored", "retry-without-backoff"}) {
    PlantedBugs bugs;
    ASSERT_TRUE(set_planted_bug(bugs, name));
    std::fprintf(stderr, "--- expecting a failure with --inject-bug=%s\n", name);
    EXPECT_FALSE(check_seeded(7, 2000, bugs, true)) << name;
  }
}

// Claim order: among due runs, higher priority first and FIFO within a band,
// except that runs ready for at least the starvation bound go first, oldest
// first.
RC_GTEST_PROP(PriorityProperty, ClaimOrderFollowsTheDocumentedRule, ()) {
  test_support::StoreBench bench{1};
  JobStore& store = bench.store;
  const auto n = *rc::gen::inRange(1, 12);
  bench.clock.advance(absl::Hours(1));
  const absl::Time now = bench.clock.now() + absl::Minutes(10);
  struct Item {
    std::string id;
    std::int32_t priority;
    absl::Time at;
  };
  std::vector<Item> items;
  for (int i = 0; i < n; ++i) {
    Item it{"j" + std::to_string(i), *rc::gen::inRange(kMinPriority, kMaxPriority + 1),
            now - absl::Seconds(*rc::gen::inRange(0, 180))};
    JobSpec s = test_support::once_job(it.id, it.at);
    s.policy.priority = it.priority;
    CreateResult c;
    RC_ASSERT(bench.run([&](Txn& t) { return store.create(t, s, &c); }).committed());
    items.push_back(it);
  }
  bench.clock.set(now);
  LeadershipResult l;
  RC_ASSERT(
      bench.run([&](Txn& t) { return store.acquire_or_renew(t, 0, "n", 0, absl::Hours(1), &l); })
          .committed());
  DispatchResult d;
  RC_ASSERT(bench.run([&](Txn& t) {
                   return store.dispatch(t, 0, {"n", l.record.epoch}, 100, &d);
                 })
                .committed());
  RC_ASSERT(d.dispatched.size() == static_cast<std::size_t>(n));
  // The model's order.
  const absl::Duration bound = store.options().starvation_bound;
  auto key = [](const Item& i) { return keys::ready(0, i.priority, i.at, RunId{i.id, 1, i.at}); };
  std::vector<Item> starved, fresh;
  for (const auto& i : items) (now - i.at >= bound ? starved : fresh).push_back(i);
  std::sort(starved.begin(), starved.end(), [&](const Item& a, const Item& b) {
    return std::make_pair(a.at, key(a)) < std::make_pair(b.at, key(b));
  });
  std::sort(fresh.begin(), fresh.end(),
            [&](const Item& a, const Item& b) { return key(a) < key(b); });
  std::vector<std::string> want;
  for (const auto& i : starved) want.push_back(i.id);
  for (const auto& i : fresh) want.push_back(i.id);
  std::vector<std::string> got;
  for (int i = 0; i < n; ++i) {
    ClaimResult out;
    ClaimArgs a{"w", 1, absl::Seconds(30), 0};
    RC_ASSERT(bench.run([&](Txn& t) { return store.claim(t, a, &out); }).committed());
    RC_ASSERT(out.grants.size() == 1u);
    got.push_back(out.grants[0].run.id.job_id);
  }
  RC_ASSERT(got == want);
}

}  // namespace
}  // namespace kairos
