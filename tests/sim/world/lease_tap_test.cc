// LeaseTap (sim/world/lease_tap.h): a worker's transport seen from outside.
// Bytes pass through unchanged; while the worker handles a claim answer the
// grants it carries are known with the worker's clock at the claim's send;
// the first answer to a renewal reports each refused (run, token) once; every
// report sent, alone or carried by a claim, is seen as sent and with the
// verdict of the first answer to it.
#include "sim/world/lease_tap.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "core/kernel/wire.h"
#include "sim/world/sim_network.h"

namespace kairos::sim {
namespace {

struct Net {
  World w{7};
  NodeId worker = w.add_node("worker-1"), node = w.add_node("scheduler-1");
  SimNetwork net{w, Random(3)};
  SimClock clock{w};
  struct Refusal {
    RunId run;
    std::uint64_t token;
    absl::Time sent, local;
  };
  std::vector<Refusal> refusals;
  struct Report {
    CompleteItem item;
    std::optional<WriteVerdict> verdict;  // none: as sent (or an error answered it)
    bool error = false;                   // an error message answered it
    bool by_claim = false;                // a claim carried it
  };
  std::vector<Report> reports;
  LeaseTap tap{
      w, net.transport(worker), clock,
      [this](const RunId& run, std::uint64_t token, absl::Time, absl::Time sent, absl::Time local) {
        refusals.push_back({run, token, sent, local});
      },
      [this](const CompleteItem& item, const wire::WireVerdict* answer, bool error, std::uint64_t,
             bool by_claim) {
        reports.push_back(
            {item, answer ? std::optional(answer->verdict) : std::nullopt, error, by_claim});
      }};
  Net() { clock.set_offset(absl::Seconds(100)); }
  void answer(const wire::Message& m) { net.transport(node).send(worker, wire::encode(m)); }
};

RunId run_a() { return RunId{"job-a", 1, absl::FromUnixSeconds(1767225600)}; }

TEST(LeaseTap, KnowsTheGrantBeingHandledWithItsClaimsSendTime) {
  Net n;
  const absl::Time sent = n.clock.now();
  n.tap.send(n.node, wire::encode(wire::ClaimRequest{41, "worker-1", 1}));
  n.w.run_for(absl::Seconds(1));
  wire::WireGrant g;
  g.run = run_a();
  g.token = 5;
  g.lease_ttl = absl::Seconds(30);
  RunRequest req;
  req.job_id = "job-a";
  req.incarnation = 1;
  req.nominal_time = run_a().nominal;
  req.fencing_token = 5;
  std::vector<std::string> seen;
  const LeaseTap::Grant* during = nullptr;
  absl::Time during_sent;
  n.tap.set_handler([&](PeerId, std::string_view m) {
    seen.emplace_back(m);
    during = n.tap.grant_for(req);
    if (during != nullptr) during_sent = during->sent;
  });
  const std::string bytes = wire::encode(wire::ClaimResponse{41, {g}});
  n.answer(wire::ClaimResponse{41, {g}});
  n.w.run_for(absl::Seconds(1));
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], bytes);  // passed through unchanged
  ASSERT_NE(during, nullptr);
  EXPECT_EQ(during_sent, sent);              // the worker's clock, offset included
  EXPECT_EQ(n.tap.grant_for(req), nullptr);  // only while handling
  // Another token is not this grant.
  req.fencing_token = 6;
  n.answer(wire::ClaimResponse{41, {g}});
  n.w.run_for(absl::Seconds(1));
  EXPECT_EQ(during, nullptr);
}

TEST(LeaseTap, ReportsTheRefusalsOfTheFirstAnswerToARenewal) {
  Net n;
  n.tap.set_handler([](PeerId, std::string_view) {});
  const absl::Time sent = n.clock.now();
  wire::RenewRequest r{77, "worker-1", {{run_a(), 5}, {RunId{"job-b", 1, run_a().nominal}, 2}}};
  n.tap.send(n.node, wire::encode(r));
  n.w.run_for(absl::Seconds(1));
  wire::RenewResponse ans{77,
                          {{WriteVerdict::kAccepted, absl::Seconds(30), ""},
                           {WriteVerdict::kStaleToken, absl::ZeroDuration(), "stale"}}};
  n.answer(ans);
  n.answer(ans);  // a duplicate: the worker no longer waits for it
  n.w.run_for(absl::Seconds(1));
  ASSERT_EQ(n.refusals.size(), 1u);
  EXPECT_EQ(n.refusals[0].run.job_id, "job-b");
  EXPECT_EQ(n.refusals[0].token, 2u);
  EXPECT_EQ(n.refusals[0].sent, sent);
  EXPECT_GT(n.refusals[0].local, sent);
  // After a crash the outstanding requests are forgotten.
  n.tap.send(n.node, wire::encode(wire::RenewRequest{78, "worker-1", {{run_a(), 5}}}));
  n.tap.reset();
  n.answer(wire::RenewResponse{78, {{WriteVerdict::kStaleToken, absl::ZeroDuration(), ""}}});
  n.w.run_for(absl::Seconds(1));
  EXPECT_EQ(n.refusals.size(), 1u);
}

TEST(LeaseTap, SeesEveryReportAsSentAndTheFirstAnswerToIt) {
  Net n;
  n.tap.set_handler([](PeerId, std::string_view) {});
  CompleteItem a{run_a(), 5, RunStatus::kFailed, 1, "boom", ""};
  CompleteItem b{RunId{"job-b", 1, run_a().nominal}, 2, RunStatus::kSucceeded, 0, "ok", "out"};
  n.tap.send(n.node, wire::encode(wire::CompleteRequest{90, "worker-1", {a, b}}));
  wire::ClaimRequest claim{91, "worker-1", 1};
  claim.reports = {a};
  n.tap.send(n.node, wire::encode(claim));
  ASSERT_EQ(n.reports.size(), 3u);
  EXPECT_EQ(n.reports[0].item, a);
  EXPECT_EQ(n.reports[1].item, b);
  EXPECT_EQ(n.reports[2].item, a);
  for (const auto& r : n.reports) EXPECT_FALSE(r.verdict.has_value());
  n.w.run_for(absl::Seconds(1));
  const wire::CompleteResponse ans{
      90, {{WriteVerdict::kAccepted, {}, ""}, {WriteVerdict::kStaleToken, {}, "stale"}}};
  n.answer(ans);
  n.answer(ans);  // a duplicate: nothing more is waited for
  wire::ClaimResponse granted{91, {}};
  granted.results = {{WriteVerdict::kAccepted, {}, "already recorded"}};
  n.answer(granted);
  n.w.run_for(absl::Seconds(1));
  ASSERT_EQ(n.reports.size(), 6u);
  EXPECT_EQ(n.reports[3].item, a);
  EXPECT_EQ(n.reports[3].verdict, WriteVerdict::kAccepted);
  EXPECT_EQ(n.reports[4].item, b);
  EXPECT_EQ(n.reports[4].verdict, WriteVerdict::kStaleToken);
  EXPECT_EQ(n.reports[5].item, a);
  EXPECT_EQ(n.reports[5].verdict, WriteVerdict::kAccepted);
  // An answer whose verdicts do not line up with the request says nothing.
  n.tap.send(n.node, wire::encode(wire::CompleteRequest{92, "worker-1", {a, b}}));
  n.answer(wire::CompleteResponse{92, {{WriteVerdict::kAccepted, {}, ""}}});
  n.w.run_for(absl::Seconds(1));
  EXPECT_EQ(n.reports.size(), 8u);  // the two sent, no answer
}

TEST(LeaseTap, SeesAnErrorAnsweringTheReportsOfARequest) {
  Net n;
  n.tap.set_handler([](PeerId, std::string_view) {});
  CompleteItem a{run_a(), 5, RunStatus::kFailed, 1, "boom", ""};
  CompleteItem b{RunId{"job-b", 1, run_a().nominal}, 2, RunStatus::kSucceeded, 0, "ok", ""};
  n.tap.send(n.node, wire::encode(wire::CompleteRequest{90, "worker-1", {a}}));
  wire::ClaimRequest claim{91, "worker-1", 1};
  claim.reports = {b};
  n.tap.send(n.node, wire::encode(claim));
  n.w.run_for(absl::Seconds(1));
  n.answer(wire::ErrorMessage{90, 14, "store unavailable"});
  n.answer(wire::ErrorMessage{91, 14, "store unavailable"});
  n.answer(wire::ErrorMessage{90, 14, "store unavailable"});  // nothing more is waited for
  n.answer(wire::ErrorMessage{77, 14, "no such request"});
  n.w.run_for(absl::Seconds(1));
  ASSERT_EQ(n.reports.size(), 4u);
  EXPECT_EQ(n.reports[2].item, a);
  EXPECT_TRUE(n.reports[2].error);
  EXPECT_FALSE(n.reports[2].verdict.has_value());
  EXPECT_EQ(n.reports[3].item, b);
  EXPECT_TRUE(n.reports[3].error);
  EXPECT_FALSE(n.reports[0].error);
  // Which request carried each: the completion, then the claim.
  EXPECT_FALSE(n.reports[0].by_claim);
  EXPECT_TRUE(n.reports[1].by_claim);
  EXPECT_FALSE(n.reports[2].by_claim);
  EXPECT_TRUE(n.reports[3].by_claim);
}

}  // namespace
}  // namespace kairos::sim
