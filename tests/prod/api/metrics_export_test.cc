// GET /metrics as an operator scrapes it: the node's operator series (runs
// by outcome, due backlog, lateness, store and HTTP latency) with HELP and
// TYPE lines, in Prometheus units (durations in seconds, no "_us" left).
// The routes run against a real SchedulerNode and worker on the manual clock
// (no sockets): the same router and handlers the HTTP server uses.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "prod/api/api_routes.h"
#include "tests/support/kernel_test_util.h"
#include "tests/support/node_world.h"

namespace kairos::api {
namespace {

using test_support::NodeWorld;

class MetricsExportTest : public ::testing::Test {
 protected:
  MetricsExportTest()
      : node(world.add_node(test_support::node_config("n1", 2), 7)),
        runner(world.add_runner(absl::Seconds(1))),
        worker(world.add_worker(runner, test_support::worker_config("w1", {node.ep->id()}), 3)),
        api(node.node, node.metrics),
        router(api.router()) {
    node.node.start();
    worker.worker.start();
    world.stepper.run(absl::Seconds(2));
  }

  // The body of `method target`, answered on the manual loop.
  http::Response call(std::string method, std::string target) {
    http::Request r;
    r.method = std::move(method);
    r.target = std::move(target);
    std::optional<http::Response> got;
    const std::string route =
        http::route_request(router, r, [&](http::Response res) { got = std::move(res); });
    for (int i = 0; i < 100 && !got; ++i) world.stepper.run(absl::Milliseconds(100));
    EXPECT_TRUE(got.has_value()) << r.target;
    if (!got) return {};
    api.count(route, got->status);
    return *got;
  }

  static bool has(const std::string& text, std::string_view what) {
    return text.find(what) != std::string::npos;
  }

  NodeWorld world;
  NodeWorld::Node& node;
  test_support::FakeRunner& runner;
  test_support::TestWorker& worker;
  ApiRoutes api;
  http::Router router;
};

TEST_F(MetricsExportTest, OperatorSeriesAreExportedWithHelpTypeAndSeconds) {
  bool created = false;
  node.node.create_job(test_support::once_job("a", test_support::T0() + absl::Seconds(5)),
                       [&](absl::StatusOr<CreateResult> r) { created = r.ok(); });
  world.stepper.run(absl::Seconds(8));
  ASSERT_TRUE(created);
  ASSERT_EQ(world.sink.effects.size(), 1u);
  EXPECT_EQ(call("GET", "/readyz").status, 200);

  const http::Response res = call("GET", "/metrics");
  ASSERT_EQ(res.status, 200);
  EXPECT_EQ(res.content_type, "text/plain; version=0.0.4; charset=utf-8");
  const std::string& text = res.body;
  for (std::string_view family :
       {"kairos_runs_total counter", "kairos_due_backlog gauge",
        "kairos_dispatch_lateness_seconds histogram", "kairos_fire_lateness_seconds histogram",
        "kairos_txn_duration_seconds histogram", "kairos_txn_total counter",
        "kairos_http_requests_total counter", "kairos_http_request_duration_seconds histogram",
        "kairos_leader_acquired_total counter", "kairos_leader_lost_total counter",
        "kairos_run_retry_scheduled_total counter", "kairos_run_lease_lapsed_total counter",
        "kairos_write_rejected_stale_token_total counter"}) {
    const std::string name(family.substr(0, family.find(' ')));
    EXPECT_TRUE(has(text, "# TYPE " + std::string(family) + "\n")) << family << "\n" << text;
    EXPECT_TRUE(has(text, "# HELP " + name + " ")) << name;
  }
  // Durations are in seconds: bounds, sums and names.
  EXPECT_FALSE(has(text, "_us")) << text;
  EXPECT_TRUE(has(text, "kairos_dispatch_lateness_seconds_bucket{le=\"0.1\"} 1\n")) << text;
  EXPECT_TRUE(has(text, "kairos_dispatch_lateness_seconds_count 1\n"));
  EXPECT_TRUE(has(text, "kairos_fire_lateness_seconds_count 1\n"));
  EXPECT_TRUE(has(text, "kairos_txn_duration_seconds_bucket{op=\"dispatch\",le=\"0.0001\"} "));
  EXPECT_TRUE(has(text, "kairos_http_request_duration_seconds_count{route=\"/readyz\"} 1\n"));
  EXPECT_TRUE(has(text, "kairos_runs_total{outcome=\"succeeded\"} 1\n"));
  EXPECT_TRUE(has(text, "kairos_runs_total{outcome=\"failed\"} 0\n"));
  EXPECT_TRUE(has(text, "kairos_due_backlog{shard=\"0\"} "));
  EXPECT_TRUE(has(text, "kairos_due_backlog{shard=\"1\"} "));
  EXPECT_TRUE(has(text, "kairos_leader_acquired_total 2\n"));  // both shards
  // Every family's TYPE line follows its HELP line.
  for (std::size_t at = text.find("# TYPE "); at != std::string::npos;
       at = text.find("# TYPE ", at + 1)) {
    const std::string name = text.substr(at + 7, text.find(' ', at + 7) - at - 7);
    const std::size_t help = text.rfind("# HELP " + name + " ", at);
    EXPECT_TRUE(help != std::string::npos && text.find('\n', help) + 1 == at) << name;
  }
}

}  // namespace
}  // namespace kairos::api
