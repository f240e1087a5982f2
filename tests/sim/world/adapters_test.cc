#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "sim/world/sim_clock.h"
#include "sim/world/sim_network.h"
#include "sim/world/sim_runner.h"
#include "sim/world/sim_timers.h"
#include "sim/world/sink.h"
#include "sim/world/store_service.h"
#include "sim/world/world.h"

namespace kairos::sim {
namespace {

struct Net {
  World w{42};
  NodeId a = w.add_node("a"), b = w.add_node("b");
  SimNetwork net{w, Random(1)};
  std::vector<std::string> got;
  Net() {
    net.transport(b).set_handler([this](PeerId from, std::string_view m) {
      EXPECT_EQ(from, a);
      got.emplace_back(m);
    });
  }
};

TEST(SimNetwork, DeliversWithDelayAndNeverReentrantly) {
  Net n;
  n.net.transport(n.a).send(n.b, "hello");
  EXPECT_TRUE(n.got.empty());
  n.w.run_for(absl::Seconds(1));
  EXPECT_EQ(n.got, std::vector<std::string>{"hello"});
}

TEST(SimNetwork, LossDuplicationAndReplayFollowTheirRates) {
  Net n;
  NetworkConfig c;
  c.loss_permille = 1000;
  n.net.set_config(c);
  for (int i = 0; i < 100; ++i) n.net.transport(n.a).send(n.b, "x");
  n.w.run_for(absl::Seconds(1));
  EXPECT_TRUE(n.got.empty());
  c.loss_permille = 0;
  c.dup_permille = 1000;
  n.net.set_config(c);
  n.net.transport(n.a).send(n.b, "y");
  n.w.run_for(absl::Seconds(1));
  EXPECT_EQ(n.got.size(), 2u);
  c.dup_permille = 0;
  c.replay_permille = 1000;
  n.net.set_config(c);
  n.got.clear();
  n.net.transport(n.a).send(n.b, "z");
  n.w.run_for(absl::Seconds(10));
  EXPECT_EQ(n.got.size(), 2u);  // z, plus one replayed old message
  EXPECT_EQ(n.net.stats().replayed, 1u);
}

TEST(SimNetwork, PartitionsDropAtSendAndInFlightAndCrashedNodesGetNothing) {
  Net n;
  n.net.cut(n.a, n.b);
  n.net.transport(n.a).send(n.b, "cut");
  n.net.heal(n.a, n.b);
  n.net.transport(n.a).send(n.b, "in-flight");
  n.net.isolate(n.b);  // cut while the message travels
  n.w.run_for(absl::Seconds(1));
  EXPECT_TRUE(n.got.empty());
  n.net.heal_all();
  n.net.transport(n.a).send(n.b, "to-crashed");
  n.w.crash(n.b);
  n.w.run_for(absl::Seconds(1));
  EXPECT_TRUE(n.got.empty());
  n.w.restart(n.b);
  n.net.transport(n.a).send(n.b, "ok");
  n.w.run_for(absl::Seconds(1));
  EXPECT_EQ(n.got, std::vector<std::string>{"ok"});
}

struct Store {
  World w{7};
  NodeId store = w.add_node("store"), client = w.add_node("client");
  SimNetwork net{w, Random(2)};
  SimClock store_clock{w, absl::Seconds(5)};
  StoreService svc;
  std::optional<TxnResult> result;
  explicit Store(StoreConfig c = {}) : svc(w, net, store, store_clock, Random(3), c) {}
  void put(std::string key) {
    result.reset();
    svc.client(client).transact(
        [key](Txn& t) {
          t.put(key, "v");
          return absl::OkStatus();
        },
        [this](TxnResult r) {
          EXPECT_FALSE(result.has_value()) << "two results for one call";
          result = r;
        });
  }
  bool has(const std::string& key) { return svc.storage().contents().count(key) != 0; }
};

TEST(StoreService, CommitsWithTheStoresClockAndRecordsTheCommit) {
  Store s;
  absl::Time seen;
  s.svc.client(s.client).transact(
      [&](Txn& t) {
        seen = t.now();
        t.put("k", "v");
        return absl::OkStatus();
      },
      [&](TxnResult r) { s.result = r; });
  s.w.run_for(absl::Seconds(2));
  ASSERT_TRUE(s.result && s.result->committed());
  EXPECT_GE(seen - s.w.start(), absl::Seconds(5));  // the store's clock, 5 s ahead
  ASSERT_EQ(s.svc.commits().size(), 1u);
  EXPECT_TRUE(s.svc.commits()[0].acked);
  EXPECT_EQ(s.svc.commits()[0].state, StoreCommit::State::kDurable);
}

TEST(StoreService, UnknownWhenTheReplyIsLostAndTheWriteApplied) {
  Store s;
  s.net.cut(s.store, s.client);  // replies cannot come back
  s.put("k");
  s.w.run_for(absl::Seconds(5));
  ASSERT_TRUE(s.result);
  EXPECT_EQ(s.result->outcome, CommitOutcome::kUnknown);
  EXPECT_TRUE(s.has("k"));
  EXPECT_EQ(s.svc.stats().unknown_applied, 1u);
}

TEST(StoreService, UnknownWhenTheRequestIsLostAndNothingApplied) {
  Store s;
  s.put("k");
  s.net.cut(s.client, s.store);  // the request is in flight: dropped on arrival
  s.w.run_for(absl::Seconds(5));
  ASSERT_TRUE(s.result);
  EXPECT_EQ(s.result->outcome, CommitOutcome::kUnknown);
  EXPECT_FALSE(s.has("k"));
  EXPECT_EQ(s.svc.stats().unknown_not_applied, 1u);
}

TEST(StoreService, UnavailableWhenNeverSentOrDuringAnOutage) {
  Store s;
  s.net.cut(s.client, s.store);
  s.put("k");
  s.w.run_for(absl::Seconds(5));
  ASSERT_TRUE(s.result);
  EXPECT_EQ(s.result->outcome, CommitOutcome::kUnavailable);
  s.net.heal_all();
  s.svc.set_unavailable(true);
  s.put("k");
  s.w.run_for(absl::Seconds(5));
  ASSERT_TRUE(s.result);
  EXPECT_EQ(s.result->outcome, CommitOutcome::kUnavailable);
  EXPECT_FALSE(s.has("k"));
}

TEST(StoreService, CrashLosesUnsyncedButNothingAcknowledged) {
  StoreConfig c;
  c.sync_interval = absl::Milliseconds(500);  // a long window before the group commit
  Store s(c);
  s.put("acked");
  s.w.run_for(absl::Seconds(3));
  ASSERT_TRUE(s.result && s.result->committed());
  s.put("unsynced");
  s.w.run_for(absl::Milliseconds(100));  // applied, not yet synced
  ASSERT_TRUE(s.has("unsynced"));
  s.svc.crash();
  EXPECT_FALSE(s.has("unsynced"));
  EXPECT_TRUE(s.has("acked"));
  s.w.run_for(absl::Seconds(3));
  ASSERT_TRUE(s.result);
  EXPECT_EQ(s.result->outcome, CommitOutcome::kUnknown);
  s.svc.restart();
  s.put("after");
  s.w.run_for(absl::Seconds(3));
  EXPECT_TRUE(s.result && s.result->committed());
  int lost = 0;
  for (const auto& cm : s.svc.commits()) {
    EXPECT_FALSE(cm.acked && cm.state == StoreCommit::State::kLost);
    lost += cm.state == StoreCommit::State::kLost;
  }
  EXPECT_EQ(lost, 1);
}

TEST(StoreService, EveryCallEndsWithExactlyOneResultUnderLoss) {
  Store s;
  NetworkConfig nc;
  nc.loss_permille = 300;
  s.net.set_config(nc);
  int results = 0;
  for (int i = 0; i < 200; ++i)
    s.svc.client(s.client).transact(
        [i](Txn& t) {
          t.put("k" + std::to_string(i), "v");
          return absl::OkStatus();
        },
        [&](TxnResult) { ++results; });
  s.w.run_for(absl::Seconds(10));
  EXPECT_EQ(results, 200);
}

TEST(Sink, FencesStaleTokensDedupesAndRecordsEveryAttempt) {
  World w(1);
  const NodeId sink_node = w.add_node("sink");
  SimNetwork net(w, Random(1));
  Sink sink(w, net, sink_node, Random(2));
  auto write = [](std::uint64_t token) { return SinkWrite{"job@1", token, "job", 1, 1}; };
  EXPECT_EQ(sink.apply(0, write(5)), SinkOutcome::kAccepted);
  EXPECT_EQ(sink.apply(0, write(4)), SinkOutcome::kStaleToken);
  EXPECT_EQ(sink.apply(0, write(5)), SinkOutcome::kDuplicate);
  EXPECT_EQ(sink.apply(0, write(7)), SinkOutcome::kDuplicate);
  EXPECT_EQ(sink.apply(0, write(6)), SinkOutcome::kStaleToken);
  EXPECT_EQ(sink.attempts().size(), 5u);
  EXPECT_EQ(sink.accepted(), 1u);
}

TEST(SimRunner, WritesTheEffectBeforeSuccessAndHonoursDeadlineAndStop) {
  World w(1);
  const NodeId sink_node = w.add_node("sink"), worker = w.add_node("worker");
  SimNetwork net(w, Random(1));
  Sink sink(w, net, sink_node, Random(2));
  SimClock clock(w);
  SimTimers timers(w, worker, clock);
  RunnerConfig rc;
  rc.min_duration = rc.max_duration = absl::Seconds(1);
  SimRunner runner(w, worker, timers, clock, sink, Random(3), rc);
  RunRequest req;
  req.job_id = "job";
  req.idempotency_key = "job@1";
  req.fencing_token = 3;
  req.deadline = clock.now() + absl::Seconds(10);
  std::vector<RunStatus> out;
  runner.start(req, [&](RunOutcome o) {
    EXPECT_EQ(sink.accepted(), 1u);  // the effect is in before success is reported
    out.push_back(o.status);
  });
  req.deadline = clock.now() + absl::Milliseconds(500);
  runner.start(req, [&](RunOutcome o) { out.push_back(o.status); });
  req.deadline = clock.now() + absl::Seconds(10);
  const RunHandle h = runner.start(req, [&](RunOutcome o) { out.push_back(o.status); });
  runner.stop(h);
  EXPECT_TRUE(out.empty());
  w.run_for(absl::Seconds(5));
  EXPECT_EQ(out, (std::vector<RunStatus>{RunStatus::kStopped, RunStatus::kTimedOut,
                                         RunStatus::kSucceeded}));
}

}  // namespace
}  // namespace kairos::sim
