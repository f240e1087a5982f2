// A stored record that does not decode stalls nothing but its own job: the
// node passes it over, serves the rest of its shard, records
// record.undecodable once per key (counted in Metrics) and reports itself
// degraded. Both shapes: a job record that does not decode (passed over in
// the dispatch scan) and a run record that does not decode while its job is
// dispatched (the dispatch aborts once; the node then passes the job over);
// and a run record that does not decode while the run is ready (claims pass
// it over) or leased (its renewals are refused, the other runs' are not).
#include <gtest/gtest.h>

#include <string>

#include "core/kernel/keyspace.h"
#include "core/kernel/scheduler_node.h"
#include "tests/support/kernel_test_util.h"
#include "tests/support/node_world.h"

namespace kairos {
namespace {

using namespace test_support;

// Flips the version byte (the first) of the record at `key`.
void corrupt(MemoryStorage& mem, const std::string& key) {
  const TxnResult r = mem.run([&](Txn& t) {
    auto v = t.get(key);
    KAIROS_CHECK(v && !v->empty());
    (*v)[0] = static_cast<char>((*v)[0] ^ 0x7f);
    t.put(key, *v);
    return absl::OkStatus();
  });
  KAIROS_CHECK(r.committed());
}

JobRecord job_of(const MemoryStorage& mem, const std::string& id) {
  return *decode_job(mem.contents().at(keys::job(id)));
}

std::size_t undecodable_events(const MemoryEventLog& events, std::string_view job) {
  std::size_t n = 0;
  for (const Event& e : events.events()) {
    if (e.kind != "record.undecodable") continue;
    const EventValue* j = e.find("job");
    n += j != nullptr && format_event(e).find(std::string(job)) != std::string::npos;
  }
  return n;
}

TEST(UndecodableRecord, AJobRecordThatDoesNotDecodeStallsOnlyItsJob) {
  NodeWorld w;
  // One shard: every job shares it (and the dispatch scan).
  auto& n1 = w.add_node(node_config("n1", 1), 7);
  auto& runner = w.add_runner(absl::Seconds(2));
  w.add_worker(runner, worker_config("w1", {n1.ep->id()}), 9).worker.start();
  n1.node.start();
  int created = 0;
  for (const char* id : {"a", "b", "c"})
    n1.node.create_job(interval_job(id), [&](auto r) { created += r.ok(); });
  w.stepper.run(absl::Seconds(70));
  ASSERT_EQ(created, 3);
  EXPECT_FALSE(n1.node.health().degraded);

  corrupt(w.mem, keys::job("b"));
  const absl::Time corrupted_at = w.clock.now();
  const std::int64_t dispatches_before =
      n1.metrics.counter("kairos_txn_total{op=\"dispatch\",outcome=\"committed\"}").value();
  w.stepper.run(absl::Minutes(5));

  // a and c fire every minute; b never again (its record stays as it was).
  const auto effects = w.sink.by_key();
  for (const char* id : {"a", "c"}) {
    for (absl::Time t = T0() + absl::Minutes(1); t <= corrupted_at + absl::Minutes(4);
         t += absl::Minutes(1)) {
      const std::string key = idempotency_key({id, 1, t});
      auto it = effects.find(key);
      ASSERT_NE(it, effects.end()) << key;
      EXPECT_EQ(it->second.size(), 1u) << key;
    }
  }
  EXPECT_EQ(effects.count(idempotency_key({"b", 1, T0() + absl::Minutes(3)})), 0u);
  EXPECT_TRUE(decode_job(w.mem.contents().at(keys::job("b"))).status().code() ==
              absl::StatusCode::kDataLoss);

  // Loud once per key; counted; the node is degraded and says why.
  EXPECT_EQ(undecodable_events(w.events, "b"), 1u);
  EXPECT_EQ(w.events.count("record.undecodable"), 1u);
  EXPECT_EQ(n1.metrics.counter("kairos_record_undecodable_total").value(), 1);
  EXPECT_TRUE(n1.node.health().degraded);
  EXPECT_EQ(n1.node.health().undecodable_records, 1u);
  EXPECT_NE(n1.node.health().reason.find("undecodable record"), std::string::npos);
  EXPECT_EQ(n1.node.health().failed_txns, 0u);

  // The passed-over entry never makes the shard look due now: the node keeps
  // to its poll (about two dispatches a second), it does not spin.
  const std::int64_t dispatches =
      n1.metrics.counter("kairos_txn_total{op=\"dispatch\",outcome=\"committed\"}").value() -
      dispatches_before;
  EXPECT_LT(dispatches, 5 * 60 * 4);
}

TEST(UndecodableRecord, APassedOverEntryNeverTakesTheBatchOfOthers) {
  NodeWorld w;
  SchedulerNodeConfig c = node_config("n1", 1);
  c.dispatch_batch = 1;  // the bad entry would fill every batch
  auto& n1 = w.add_node(c, 7);
  n1.node.start();
  int created = 0;
  for (const char* id : {"a", "b", "c"})
    n1.node.create_job(interval_job(id), [&](auto r) { created += r.ok(); });
  w.stepper.run(absl::Seconds(1));
  ASSERT_EQ(created, 3);
  corrupt(w.mem, keys::job("a"));  // the first due key of every minute
  w.stepper.run(absl::Minutes(3) + absl::Seconds(10));
  for (const char* id : {"b", "c"})
    EXPECT_GE(job_of(w.mem, id).next_nominal, T0() + absl::Minutes(4)) << id;
  EXPECT_EQ(w.events.count("record.undecodable"), 1u);
  EXPECT_TRUE(n1.node.health().degraded);
}

TEST(UndecodableRecord, ARunRecordThatDoesNotDecodeStallsOnlyItsJob) {
  NodeWorld w;
  auto& n1 = w.add_node(node_config("n1", 1), 7);
  n1.node.start();
  int created = 0;
  for (const char* id : {"a", "b", "c"})
    n1.node.create_job(interval_job(id), [&](auto r) { created += r.ok(); });
  // No worker: the first runs stay open, so the next dispatch of each job
  // reads its open run (the overlap policy).
  w.stepper.run(absl::Seconds(70));
  ASSERT_EQ(created, 3);
  std::string run_key;
  absl::Time b_nominal;
  for (const RunRecord& r : w.runs())
    if (r.id.job_id == "b") {
      run_key = keys::run(r.id);
      b_nominal = r.id.nominal;
    }
  ASSERT_FALSE(run_key.empty());
  const absl::Time b_next = job_of(w.mem, "b").next_nominal;
  ASSERT_GT(b_next, b_nominal);
  corrupt(w.mem, run_key);
  w.stepper.run(absl::Minutes(3));
  for (const char* id : {"a", "c"})
    EXPECT_GE(job_of(w.mem, id).next_nominal, b_next + absl::Minutes(2)) << id;
  EXPECT_EQ(job_of(w.mem, "b").next_nominal, b_next);
  EXPECT_EQ(undecodable_events(w.events, "b"), 1u);
  EXPECT_EQ(w.events.count("record.undecodable"), 1u);
  EXPECT_TRUE(n1.node.health().degraded);
}

// The key of the one run of `job` the store holds in `state`.
std::string run_key_of(const NodeWorld& w, std::string_view job, RunState state) {
  std::string key;
  for (const RunRecord& r : w.runs())
    if (r.id.job_id == job && r.state == state) {
      EXPECT_TRUE(key.empty()) << "more than one " << to_string(state) << " run of " << job;
      key = keys::run(r.id);
    }
  return key;
}

TEST(UndecodableRecord, AReadyRunThatDoesNotDecodeStallsNoClaim) {
  NodeWorld w;
  auto& n1 = w.add_node(node_config("n1", 1), 7);
  n1.node.start();
  int created = 0;
  for (const char* id : {"a", "b", "c"})
    n1.node.create_job(interval_job(id), [&](auto r) { created += r.ok(); });
  // No worker yet: the first run of each job (due at 0) waits ready.
  w.stepper.run(absl::Seconds(70));
  ASSERT_EQ(created, 3);
  const std::string bad = run_key_of(w, "b", RunState::kReady);
  ASSERT_FALSE(bad.empty());
  corrupt(w.mem, bad);
  auto& runner = w.add_runner(absl::Seconds(2));
  w.add_worker(runner, worker_config("w1", {n1.ep->id()}), 9).worker.start();
  w.stepper.run(absl::Minutes(3));
  // a and c run once each of their occurrences (1m fell while their first
  // run waited: skipped by the overlap policy); b's ready run stays as it was.
  const auto effects = w.sink.by_key();
  for (const char* id : {"a", "c"})
    for (int m : {0, 2, 3, 4}) {
      const std::string key = idempotency_key({id, 1, T0() + absl::Minutes(m)});
      auto it = effects.find(key);
      ASSERT_NE(it, effects.end()) << key;
      EXPECT_EQ(it->second.size(), 1u) << key;
    }
  EXPECT_EQ(effects.count(idempotency_key({"b", 1, T0()})), 0u);
  EXPECT_EQ(w.mem.contents().count(bad), 1u);
  EXPECT_GE(undecodable_events(w.events, "b"), 1u);
  EXPECT_TRUE(n1.node.health().degraded);
  EXPECT_EQ(n1.node.health().failed_txns, 0u);
}

TEST(UndecodableRecord, ALeasedRunThatDoesNotDecodeFailsNoOtherReport) {
  NodeWorld w;
  auto& n1 = w.add_node(node_config("n1", 1), 7);
  // Runs longer than a lease: each is renewed, in one request for all three.
  auto& runner = w.add_runner(absl::Seconds(40));
  w.add_worker(runner, worker_config("w1", {n1.ep->id()}), 9).worker.start();
  n1.node.start();
  int created = 0;
  for (const char* id : {"a", "b", "c"})
    n1.node.create_job(interval_job(id), [&](auto r) { created += r.ok(); });
  w.stepper.run(absl::Seconds(65));
  ASSERT_EQ(created, 3);
  const std::string bad = run_key_of(w, "b", RunState::kLeased);
  ASSERT_FALSE(bad.empty());
  corrupt(w.mem, bad);
  w.stepper.run(absl::Minutes(2));
  // a's and c's first runs are renewed past the bad one and succeed once.
  const auto effects = w.sink.by_key();
  for (const char* id : {"a", "c"}) {
    const std::string key = idempotency_key({id, 1, T0() + absl::Minutes(1)});
    auto it = effects.find(key);
    ASSERT_NE(it, effects.end()) << key;
    EXPECT_EQ(it->second.size(), 1u) << key;
  }
  EXPECT_EQ(w.events.count("run.lease_lapsed"), 0u);
  EXPECT_GE(undecodable_events(w.events, "b"), 1u);
  EXPECT_EQ(n1.node.health().failed_txns, 0u);
}

}  // namespace
}  // namespace kairos
