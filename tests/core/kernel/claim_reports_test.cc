// A claim that carries the worker's completion reports (wire version 3):
// the frame's bytes and its validation, and the node recording the reports
// and taking the claim in one transaction, answered at once with both the
// verdicts and the grants.
#include <gtest/gtest.h>

#include "core/kernel/scheduler_node.h"
#include "core/kernel/wire.h"
#include "core/kernel/worker.h"
#include "core/twins/loopback_transport.h"
#include "tests/support/kernel_test_util.h"
#include "tests/support/node_world.h"
#include "tests/support/wire_bytes.h"

namespace kairos {
namespace {

using namespace test_support;  // the node world, the job builders, wire bytes

CompleteItem report(std::string job, std::uint64_t token) {
  return CompleteItem{
      RunId{std::move(job), 2, absl::FromUnixMicros(3)}, token, RunStatus::kSucceeded, 0, "ok", ""};
}

TEST(ClaimWithReportsWire, BytesArePinned) {
  wire::ClaimRequest m{11, "w", 4, absl::ZeroDuration(), kAcceptAll, {report("j", 5)}};
  const std::string body = le(11, 8) + str("w") + le(4, 4) + le(0, 8) + le(kAcceptAll, 1) +
                           le(1, 4) + str("j") + le(2, 8) + le(3, 8) + le(5, 8) +
                           le(static_cast<std::uint8_t>(RunStatus::kSucceeded), 1) + le(0, 4) +
                           str("ok") + str("");
  EXPECT_EQ(wire::encode(m), frame(1, body));
  auto back = wire::decode(frame(1, body));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(std::get<wire::ClaimRequest>(*back), m);
  EXPECT_EQ(wire::kWireVersion, 3);
}

TEST(ClaimWithReportsWire, RoundTripsAndRejectsBadFields) {
  wire::ClaimResponse r{12,
                        {},
                        {{WriteVerdict::kAccepted, absl::ZeroDuration(), ""},
                         {WriteVerdict::kStaleToken, absl::ZeroDuration(), "stale"}}};
  auto back = wire::decode(wire::encode(r));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(std::get<wire::ClaimResponse>(*back), r);

  // An unknown outcome in a carried report names the report.
  wire::ClaimRequest q{13, "w", 1, absl::ZeroDuration(), kAcceptAll, {report("j", 5)}};
  std::string bad = wire::encode(q);
  // The outcome byte: after header, request id, worker id, max_runs, wait,
  // accepts, the count, and the item's run id and token.
  const std::size_t outcome_at = wire::kFrameHeaderSize + 8 + 5 + 4 + 8 + 1 + 4 + 5 + 8 + 8 + 8;
  ASSERT_EQ(bad[outcome_at], static_cast<char>(RunStatus::kSucceeded));
  bad[outcome_at] = 9;
  auto st = wire::decode(bad).status();
  EXPECT_NE(st.message().find("claim_request.reports[0].outcome"), std::string::npos) << st;

  // A report count beyond the bytes left is refused before allocating.
  wire::ClaimRequest empty{14, "w", 1, absl::ZeroDuration(), kAcceptAll, {}};
  std::string huge = wire::encode(empty);
  huge[huge.size() - 1] = '\x7f';
  st = wire::decode(huge).status();
  EXPECT_NE(st.message().find("claim_request.reports"), std::string::npos) << st;

  // An unknown verdict in a claim answer's results names it.
  std::string bad_verdict = wire::encode(
      wire::ClaimResponse{15, {}, {{WriteVerdict::kAccepted, absl::ZeroDuration(), ""}}});
  bad_verdict[wire::kFrameHeaderSize + 8 + 4 + 4] = 42;
  st = wire::decode(bad_verdict).status();
  EXPECT_NE(st.message().find("claim_response.results[0].verdict"), std::string::npos) << st;

  // Truncated anywhere, or with a trailing byte: an error.
  const std::string good = wire::encode(q);
  for (std::size_t cut = 0; cut < good.size(); ++cut)
    EXPECT_FALSE(wire::decode(std::string_view(good).substr(0, cut)).ok()) << cut;
  EXPECT_FALSE(wire::decode(good + "x").ok());
}

// Node "n1" (one shard) and a bare endpoint speaking the wire protocol.
struct World : NodeWorld {
  Node& n1 = add_node(node_config("n1", 1), 7);
  SchedulerNode* node = &n1.node;
  LoopbackHub::Endpoint& node_ep = *n1.ep;
  LoopbackHub::Endpoint& worker_ep = add_endpoint();
  std::vector<wire::Message> replies;
  World() {
    worker_ep.set_handler([this](PeerId, std::string_view bytes) {
      auto m = wire::decode(bytes);
      if (m.ok()) replies.push_back(*m);
    });
  }
  void send(const wire::Message& m) { worker_ep.send(node_ep.id(), wire::encode(m)); }
};

TEST(ClaimWithReports, RecordsTheReportsAndGrantsTheNextRunsInOneAnswer) {
  World w;
  w.node->start();
  for (const char* id : {"a", "b"}) {
    bool created = false;
    w.node->create_job(once_job(id, T0() + absl::Seconds(1)), [&](auto r) { created = r.ok(); });
    w.stepper.run(absl::Milliseconds(100));
    ASSERT_TRUE(created) << id;
  }
  w.stepper.run(absl::Seconds(3));  // both due and dispatched
  w.send(wire::ClaimRequest{1, "w", 1, absl::ZeroDuration()});
  w.stepper.run(absl::Milliseconds(100));
  ASSERT_EQ(w.replies.size(), 1u);
  const auto first = std::get<wire::ClaimResponse>(w.replies[0]);
  ASSERT_EQ(first.grants.size(), 1u);
  EXPECT_TRUE(first.results.empty());
  const wire::WireGrant g = first.grants[0];

  // The report of the first run carries the claim of the second, with a
  // long-poll wait the node ignores: answered at once.
  const CompleteItem done{g.run, g.token, RunStatus::kSucceeded, 0, "ok", ""};
  w.send(wire::ClaimRequest{2, "w", 4, absl::Seconds(20), kAcceptAll, {done}});
  w.stepper.run(absl::Milliseconds(100));
  ASSERT_EQ(w.replies.size(), 2u);
  const auto second = std::get<wire::ClaimResponse>(w.replies[1]);
  EXPECT_EQ(second.request_id, 2u);
  ASSERT_EQ(second.results.size(), 1u);
  EXPECT_EQ(second.results[0].verdict, WriteVerdict::kAccepted);
  ASSERT_EQ(second.grants.size(), 1u);
  EXPECT_NE(second.grants[0].run.job_id, g.run.job_id);
  EXPECT_EQ(w.node->parked_claims(), 0u);

  // The same report again (a retry after a lost answer): accepted once,
  // nothing left to grant.
  w.send(wire::ClaimRequest{3, "w", 4, absl::ZeroDuration(), kAcceptAll, {done}});
  w.stepper.run(absl::Milliseconds(100));
  ASSERT_EQ(w.replies.size(), 3u);
  const auto third = std::get<wire::ClaimResponse>(w.replies[2]);
  ASSERT_EQ(third.results.size(), 1u);
  EXPECT_EQ(third.results[0].verdict, WriteVerdict::kAccepted);
  EXPECT_TRUE(third.grants.empty());

  auto runs = w.runs();
  ASSERT_EQ(runs.size(), 2u);
  int succeeded = 0, leased = 0;
  for (const auto& r : runs) {
    succeeded += r.state == RunState::kSucceeded;
    leased += r.state == RunState::kLeased;
  }
  EXPECT_EQ(succeeded, 1);
  EXPECT_EQ(leased, 1);
}

// A worker whose runs finish while it has free slots sends their reports
// with its next claim: every run succeeds once, and fewer store
// transactions serve the claims and completions than runs would need apart.
TEST(ClaimWithReports, AWorkerReportsWithItsNextClaim) {
  World w;
  FakeRunner runner(w.loop, w.clock, w.sink, absl::Milliseconds(10));
  LoopbackHub::Endpoint& ep = w.add_endpoint();
  TestWorker tw(w.clock, w.loop, ep, runner, {w.node_ep.id()}, 3);
  w.node->start();
  tw.worker.start();
  constexpr int kJobs = 40;
  for (int i = 0; i < kJobs; ++i)
    w.node->create_job(once_job("j" + std::to_string(i), T0() + absl::Seconds(2)), [](auto) {});
  w.stepper.run(absl::Minutes(1));
  auto runs = w.runs();
  ASSERT_EQ(runs.size(), static_cast<std::size_t>(kJobs));
  for (const auto& r : runs) {
    EXPECT_EQ(r.state, RunState::kSucceeded);
    EXPECT_EQ(r.attempts.size(), 1u);
  }
  EXPECT_EQ(w.sink.effects.size(), static_cast<std::size_t>(kJobs));
  EXPECT_EQ(tw.events.count("worker.report_accepted"), static_cast<std::size_t>(kJobs));
  EXPECT_EQ(tw.events.count("worker.report_rejected"), 0u);
}

}  // namespace
}  // namespace kairos
