// A worker's report superseded by a newer attempt of the same run: the
// worker keeps one waiting report per run, so when a newer grant's attempt
// finishes while the older token's report still waits for its answer, the
// older one is dropped with an event saying so, and the late answer to the
// older report's send settles nothing of the newer one (it is still sent).
// And an answer whose verdicts do not line up with the reports sent (not a
// Kairos node's: it answers one verdict per item) is no answer: ignored,
// the reports sent again after the request's timeout. The node side is a
// hand-driven endpoint, so the answers come exactly when the test says.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "core/kernel/event_kinds.h"
#include "core/kernel/wire.h"
#include "core/kernel/worker.h"
#include "tests/support/kernel_test_util.h"
#include "tests/support/node_world.h"

namespace kairos {
namespace {

using namespace test_support;

wire::WireGrant grant(const RunId& run, std::uint64_t token) {
  wire::WireGrant g;
  g.run = run;
  g.attempt = static_cast<std::uint32_t>(token);
  g.token = token;
  g.lease_ttl = absl::Seconds(30);
  g.timeout = absl::Minutes(5);
  return g;
}

struct World : NodeWorld {
  LoopbackHub::Endpoint& server = add_endpoint();
  std::vector<wire::Message> sent;  // what the worker sent, in order
  PeerId worker_peer = 0;
  World() {
    server.set_handler([this](PeerId from, std::string_view bytes) {
      worker_peer = from;
      auto m = wire::decode(bytes);
      if (m.ok()) sent.push_back(*m);
    });
  }
  void answer(const wire::Message& m) { server.send(worker_peer, wire::encode(m)); }
  // Worker "w1" (two slots, 200 ms runs, rpc_timeout 2 s), started, its
  // first claim answered with token 1 of `run`; returns that claim's id.
  std::uint64_t start_worker_holding(const RunId& run) {
    FakeRunner& runner = add_runner(absl::Milliseconds(200));
    WorkerConfig c = worker_config("w1", {server.id()});
    c.max_concurrent = 2;
    c.lease.rpc_timeout = absl::Seconds(2);
    worker = &add_worker(runner, c, 5);
    worker->worker.start();
    stepper.run(absl::Milliseconds(100));
    auto first = last_claim();
    EXPECT_TRUE(first.has_value());
    if (!first) return 0;
    answer(wire::ClaimResponse{first->request_id, {grant(run, 1)}, {}});
    return first->request_id;
  }
  TestWorker* worker = nullptr;
  // The last claim the worker sent, if any.
  std::optional<wire::ClaimRequest> last_claim() const {
    for (auto it = sent.rbegin(); it != sent.rend(); ++it)
      if (auto* c = std::get_if<wire::ClaimRequest>(&*it)) return *c;
    return std::nullopt;
  }
  // Every report the worker sent (plain completions and claims carrying them).
  std::vector<std::pair<std::uint64_t, CompleteItem>> reports() const {
    std::vector<std::pair<std::uint64_t, CompleteItem>> out;
    for (const auto& m : sent) {
      if (auto* c = std::get_if<wire::CompleteRequest>(&m))
        for (const auto& i : c->items) out.push_back({c->request_id, i});
      if (auto* c = std::get_if<wire::ClaimRequest>(&m))
        for (const auto& i : c->reports) out.push_back({c->request_id, i});
    }
    return out;
  }
};

TEST(SupersededReport, ANewerAttemptsReportReplacesTheOlderAndALateAnswerSettlesNothingOfIt) {
  World w;
  const RunId run{"job-a", 1, T0()};
  // The first claim gets token 1 of the run; the worker claims again at once
  // (one slot left), a long poll the node keeps.
  const std::uint64_t first = w.start_worker_holding(run);
  TestWorker& tw = *w.worker;
  w.stepper.run(absl::Milliseconds(100));
  auto second = w.last_claim();
  ASSERT_TRUE(second.has_value());
  ASSERT_NE(second->request_id, first);

  // Token 1 finishes; with the claim parked, its report goes in a plain
  // completion, which the node leaves unanswered for now.
  w.stepper.run(absl::Milliseconds(300));
  auto reports = w.reports();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].second.token, 1u);
  const std::uint64_t old_request = reports[0].first;

  // The parked claim is answered with token 2 of the same run (token 1's
  // lease lapsed on the store, say); it finishes while token 1's report
  // still waits.
  w.answer(wire::ClaimResponse{second->request_id, {grant(run, 2)}, {}});
  w.stepper.run(absl::Milliseconds(400));
  bool superseded = false;
  for (const Event& e : tw.events.events())
    if (e.kind == event_kinds::kWorkerReportDropped) {
      const auto* token = e.find("token");
      const auto* reason = e.find("reason");
      ASSERT_TRUE(token && reason);
      EXPECT_EQ(std::get<std::uint64_t>(*token), 1u);
      EXPECT_EQ(std::get<std::string>(*reason), "superseded by token 2");
      superseded = true;
    }
  EXPECT_TRUE(superseded);

  // The late answer to token 1's report: stale. It settles token 1 (already
  // dropped), not token 2, whose report is sent next.
  w.answer(wire::CompleteResponse{
      old_request, {{WriteVerdict::kStaleToken, absl::ZeroDuration(), "stale token 1"}}});
  w.stepper.run(absl::Milliseconds(100));
  EXPECT_EQ(tw.events.count(event_kinds::kWorkerReportRejected), 0u);
  reports = w.reports();
  ASSERT_GE(reports.size(), 2u);
  EXPECT_EQ(reports.back().second.token, 2u);
  EXPECT_EQ(reports.back().second.run, run);
  EXPECT_NE(reports.back().first, old_request);
}

TEST(SupersededReport, AnAnswerWithTheWrongNumberOfVerdictsIsIgnored) {
  World w;
  w.start_worker_holding(RunId{"job-a", 1, T0()});
  TestWorker& tw = *w.worker;
  w.stepper.run(absl::Milliseconds(400));  // runs, reported in a plain completion
  auto reports = w.reports();
  ASSERT_EQ(reports.size(), 1u);
  // Two verdicts for one report.
  w.answer(wire::CompleteResponse{reports[0].first,
                                  {{WriteVerdict::kAccepted, absl::ZeroDuration(), ""},
                                   {WriteVerdict::kAccepted, absl::ZeroDuration(), ""}}});
  w.stepper.run(absl::Milliseconds(100));
  EXPECT_EQ(tw.events.count(event_kinds::kWorkerReportAccepted), 0u);
  EXPECT_EQ(w.reports().size(), 1u);
  // No answer, then: after the timeout and a backoff the report goes again.
  w.stepper.run(absl::Seconds(5));
  reports = w.reports();
  ASSERT_GE(reports.size(), 2u);
  EXPECT_EQ(reports.back().second.token, 1u);
  EXPECT_NE(reports.back().first, reports[0].first);
}

}  // namespace
}  // namespace kairos
