// LoopbackHub: deferred, ordered, exactly-once delivery between endpoints of
// one loop; silent drops for unknown, destroyed or handler-less endpoints; and
// a scheduler node and a worker running a job through it over the real wire
// protocol.
#include "core/twins/loopback_transport.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "core/kernel/scheduler_node.h"
#include "core/kernel/worker.h"
#include "core/ports/event_log.h"
#include "core/ports/metrics.h"
#include "core/ports/random.h"
#include "core/ports/runner.h"
#include "core/twins/manual_clock.h"
#include "core/twins/manual_loop.h"
#include "core/twins/memory_event_log.h"
#include "core/twins/memory_storage.h"
#include "tests/support/node_world.h"

namespace kairos {
namespace {

struct Received {
  PeerId from;
  std::string message;
};

class LoopbackTest : public ::testing::Test {
 protected:
  ManualClock clock_{absl::FromUnixSeconds(1'700'000'000)};
  ManualLoop loop_{clock_};
};

TEST_F(LoopbackTest, DeliversLaterInOrderWithTheSendersId) {
  LoopbackHub hub(loop_);
  auto a = hub.connect();
  auto b = hub.connect();
  EXPECT_EQ(a->id(), 1u);
  EXPECT_EQ(b->id(), 2u);
  std::vector<Received> at_b;
  b->set_handler([&](PeerId from, std::string_view m) { at_b.push_back({from, std::string(m)}); });

  a->send(b->id(), "one");
  a->send(b->id(), "two");
  a->send(b->id(), "three");
  EXPECT_TRUE(at_b.empty()) << "delivery must never happen inside send()";
  loop_.run_ready();
  ASSERT_EQ(at_b.size(), 3u);
  EXPECT_EQ(at_b[0].message, "one");
  EXPECT_EQ(at_b[1].message, "two");
  EXPECT_EQ(at_b[2].message, "three");
  for (const auto& r : at_b) EXPECT_EQ(r.from, a->id());
  EXPECT_EQ(hub.sent(), 3u);
  EXPECT_EQ(hub.delivered(), 3u);
  EXPECT_EQ(hub.dropped(), 0u);
}

TEST_F(LoopbackTest, AReplyFromInsideAHandlerIsAlsoDeferred) {
  LoopbackHub hub(loop_);
  auto server = hub.connect();
  auto client = hub.connect();
  server->set_handler(
      [&](PeerId from, std::string_view m) { server->send(from, "re:" + std::string(m)); });
  std::vector<std::string> replies;
  client->set_handler([&](PeerId from, std::string_view m) {
    EXPECT_EQ(from, server->id());
    replies.emplace_back(m);
  });
  client->send(server->id(), "ping");
  // The request is delivered, the reply is queued but not yet delivered: the
  // loop runs it as a separate callback.
  EXPECT_EQ(loop_.run_ready(), 2u);
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0], "re:ping");
}

TEST_F(LoopbackTest, DropsSilentlyWhenNobodyCanReceive) {
  LoopbackHub hub(loop_);
  auto a = hub.connect();
  auto no_handler = hub.connect();
  auto gone = hub.connect();
  int received = 0;
  gone->set_handler([&](PeerId, std::string_view) { ++received; });
  const PeerId gone_id = gone->id();

  a->send(99, "to nobody");
  a->send(0, "to zero");
  a->send(no_handler->id(), "no handler yet");
  a->send(gone_id, "destroyed before delivery");
  gone.reset();
  loop_.run_ready();
  EXPECT_EQ(received, 0);
  EXPECT_EQ(hub.dropped(), 4u);

  // Ids are never reused: a new endpoint does not receive the old one's mail.
  auto fresh = hub.connect();
  EXPECT_GT(fresh->id(), gone_id);
}

TEST_F(LoopbackTest, DestroyingTheHubDropsQueuedMessages) {
  int received = 0;
  {
    LoopbackHub hub(loop_);
    auto a = hub.connect();
    auto b = hub.connect();
    b->set_handler([&](PeerId, std::string_view) { ++received; });
    a->send(b->id(), "queued");
    a.reset();
    b.reset();
  }
  loop_.run_ready();
  EXPECT_EQ(received, 0);
}

TEST_F(LoopbackTest, AHandlerMayReplaceItselfOrDestroyItsEndpoint) {
  LoopbackHub hub(loop_);
  auto a = hub.connect();
  auto b = hub.connect();
  std::vector<std::string> seen;
  b->set_handler([&](PeerId, std::string_view m) {
    seen.emplace_back(m);
    b->set_handler(
        [&](PeerId, std::string_view m2) { seen.push_back("second:" + std::string(m2)); });
  });
  a->send(b->id(), "x");
  a->send(b->id(), "y");
  loop_.run_ready();
  EXPECT_EQ(seen, (std::vector<std::string>{"x", "second:y"}));

  b->set_handler([&](PeerId, std::string_view) { b.reset(); });
  a->send(2, "destroy");
  a->send(2, "after");
  loop_.run_ready();
  EXPECT_EQ(b, nullptr);
  EXPECT_EQ(hub.dropped(), 1u);
}

// A runner whose jobs succeed after one second of loop time.
class InstantRunner final : public Runner {
 public:
  explicit InstantRunner(Timers& loop) : loop_(loop) {}
  RunHandle start(RunRequest req, std::function<void(RunOutcome)> done) override {
    requests.push_back(req);
    loop_.after(absl::Seconds(1), [done = std::move(done)] {
      done(RunOutcome{RunStatus::kSucceeded, 0, "ok"});
    });
    return ++next_;
  }
  void stop(RunHandle) override {}
  std::vector<RunRequest> requests;

 private:
  Timers& loop_;
  RunHandle next_ = 0;
};

// Through the node-world fixture (tests/support/node_world.h), which is
// built on the hub.
TEST_F(LoopbackTest, ANodeAndAWorkerRunAJobThroughTheHub) {
  test_support::NodeWorld w(absl::FromUnixSeconds(1'700'000'000));
  const LoopbackHub& hub = w.hub;
  const MemoryEventLog& events = w.events;
  InstantRunner& runner = w.keep<InstantRunner>(w.loop);

  SchedulerNodeConfig nc;
  nc.node_id = "node-a";
  nc.shard_count = 2;
  auto& n = w.add_node(nc, 1);
  SchedulerNode& node = n.node;
  WorkerConfig wc;
  wc.worker_id = "worker-a";
  wc.nodes = {n.ep->id()};
  wc.claim_wait = absl::Seconds(2);
  Worker& worker = w.add_worker(runner, wc, 2, /*shared_events=*/true).worker;
  node.start();
  worker.start();

  JobSpec spec;
  spec.id = "every-5s";
  spec.schedule.kind = ScheduleSpec::Kind::kInterval;
  spec.schedule.every = absl::Seconds(5);
  spec.schedule.start = w.clock.now();
  spec.payload = CommandPayload{{"/bin/true"}, {}, {}};
  bool created = false;
  node.create_job(spec, [&](absl::StatusOr<CreateResult> r) {
    ASSERT_TRUE(r.ok()) << r.status();
    created = r->created;
  });
  w.loop.advance(absl::Seconds(21));
  ASSERT_TRUE(created);

  EXPECT_GE(events.count("run.completed"), 3u);
  ASSERT_GE(runner.requests.size(), 3u);
  std::map<std::string, int> keys;
  for (std::size_t i = 0; i < runner.requests.size(); ++i) {
    const RunRequest& r = runner.requests[i];
    EXPECT_EQ(r.job_id, "every-5s");
    EXPECT_EQ(++keys[r.idempotency_key], 1) << "occurrence run twice: " << r.idempotency_key;
    if (i > 0) {
      EXPECT_GT(r.fencing_token, runner.requests[i - 1].fencing_token);
    }
  }
  EXPECT_GT(hub.delivered(), 0u);
  EXPECT_EQ(hub.dropped(), 0u);
  worker.stop();
  node.stop();
}

}  // namespace
}  // namespace kairos
