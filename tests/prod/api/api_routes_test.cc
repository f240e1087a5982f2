// The API routes against a real SchedulerNode on a ManualLoop and a
// MemoryStorage, without sockets: every request goes through the same
// router and handlers the HTTP server uses (http::route_request).
#include "prod/api/api_routes.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "tests/support/node_world.h"

namespace kairos::api {
namespace {

namespace json = boost::json;
using test_support::NodeWorld;

class ApiRoutesTest : public ::testing::Test {
 protected:
  ApiRoutesTest()
      : node(world.add_node(test_support::node_config("n1", 2), 7)),
        api(node.node, node.metrics),
        router(api.router()) {
    node.node.start();
    world.stepper.run(absl::Seconds(2));
  }

  struct Answer {
    int status = 0;
    json::value body;
    std::string text;
    std::string header(std::string_view name) const {
      for (const auto& [k, v] : headers)
        if (k == name) return v;
      return {};
    }
    std::vector<std::pair<std::string, std::string>> headers;
  };

  Answer call(std::string method, std::string target, std::string body = {},
              std::vector<std::pair<std::string, std::string>> headers = {}) {
    http::Request r;
    r.method = std::move(method);
    r.target = std::move(target);
    r.body = std::move(body);
    r.headers = std::move(headers);
    std::optional<http::Response> got;
    const std::string route =
        http::route_request(router, r, [&](http::Response res) { got = res; });
    for (int i = 0; i < 100 && !got; ++i) world.stepper.run(absl::Milliseconds(100));
    EXPECT_TRUE(got.has_value()) << r.method << " " << r.target;
    Answer a;
    if (!got) return a;
    api.count(route, got->status);
    a.status = got->status;
    a.text = got->body;
    a.headers = got->headers;
    boost::system::error_code ec;
    a.body = json::parse(got->body, ec);
    return a;
  }

  // Starts node n2 on the same store, lets it run for `settle`, and answers
  // GET /v1/cluster through n2's own routes (null when it never answers).
  json::value cluster_seen_by_n2(absl::Duration settle) {
    NodeWorld::Node& other = world.add_node(test_support::node_config("n2", 2), 8);
    ApiRoutes other_api(other.node, other.metrics);
    http::Router other_router = other_api.router();
    other.node.start();
    world.stepper.run(settle);
    http::Request r;
    r.method = "GET";
    r.target = "/v1/cluster";
    std::optional<http::Response> got;
    http::route_request(other_router, r, [&](http::Response res) { got = res; });
    for (int i = 0; i < 100 && !got; ++i) world.stepper.run(absl::Milliseconds(100));
    EXPECT_TRUE(got.has_value());
    return got ? json::parse(got->body) : json::value();
  }

  static std::string error_field(const Answer& a) {
    const auto* e = a.body.is_object() ? a.body.as_object().if_contains("error") : nullptr;
    if (e == nullptr || !e->as_object().contains("field")) return "<none>";
    return std::string(e->at("field").as_string());
  }

  NodeWorld world;
  NodeWorld::Node& node;
  ApiRoutes api;
  http::Router router;
};

constexpr const char* kJob =
    R"({"id": "every-10s", "labels": {"team": "data"}, "schedule": {"every": "10s"},
        "command": {"argv": ["/bin/true"]}})";

TEST_F(ApiRoutesTest, CreateGetAndTheIdempotentRepeat) {
  Answer a = call("POST", "/v1/jobs", kJob);
  ASSERT_EQ(a.status, 201) << a.text;
  EXPECT_EQ(a.header("ETag"), "\"1\"");
  EXPECT_EQ(a.header("Location"), "/v1/jobs/every-10s");
  EXPECT_EQ(a.body.at("status").at("state").as_string(), "active");
  a = call("POST", "/v1/jobs", kJob);
  EXPECT_EQ(a.status, 200) << a.text;  // identical: nothing new
  a = call(
      "POST", "/v1/jobs",
      R"({"id": "every-10s", "schedule": {"every": "20s"}, "command": {"argv": ["/bin/true"]}})");
  EXPECT_EQ(a.status, 409) << a.text;
  EXPECT_EQ(a.body.at("error").at("code").as_string(), "conflict");

  a = call("GET", "/v1/jobs/every-10s");
  ASSERT_EQ(a.status, 200) << a.text;
  EXPECT_EQ(a.header("ETag"), "\"1\"");
  // What a GET returns can be PUT back unchanged.
  Answer put = call("PUT", "/v1/jobs/every-10s", a.text);
  EXPECT_EQ(put.status, 200) << put.text;
  EXPECT_EQ(put.header("ETag"), "\"1\"");

  a = call("POST", "/v1/jobs",
           R"({"schedule": {"cron": "0 * * * *"}, "command": {"argv": ["/bin/true"]}})");
  ASSERT_EQ(a.status, 201) << a.text;
  EXPECT_TRUE(std::string(a.body.at("id").as_string()).starts_with("job-"));
}

TEST_F(ApiRoutesTest, RefusedCreatesNameTheFieldAndLeaveNoJob) {
  const std::pair<const char*, const char*> bad[] = {
      {R"({"id": "x1", "schedule": {"cron": "61 * * * *"}, "command": {"argv": ["a"]}})",
       "schedule.cron"},
      {R"({"id": "x2", "schedule": {"cron": "* * * * *", "zone": "Mars/Olympus"}, "command": {"argv": ["a"]}})",
       "schedule.zone"},
      {R"({"id": "x3", "schedule": {"cron": "* * * * *"}, "command": {"argv": ["a"]}, "extra": 1})",
       "extra"},
      {R"({"id": "x4", "schedule": {"cron": "* * * * *"}, "command": {"argv": ["a"]}, "policy": {"priority": 10}})",
       "policy.priority"},
  };
  int i = 1;
  for (const auto& [body, field] : bad) {
    Answer a = call("POST", "/v1/jobs", body);
    EXPECT_EQ(a.status, 400) << a.text;
    EXPECT_EQ(error_field(a), field) << a.text;
    EXPECT_EQ(call("GET", "/v1/jobs/x" + std::to_string(i++)).status, 404);
  }
  Answer a = call("POST", "/v1/jobs", "{not json");
  EXPECT_EQ(a.status, 400);
  EXPECT_EQ(a.body.at("error").at("code").as_string(), "invalid_argument");
}

TEST_F(ApiRoutesTest, PutPatchAndIfMatch) {
  Answer a = call("PUT", "/v1/jobs/p%2F1",
                  R"({"schedule": {"every": "10s"}, "command": {"argv": ["/bin/true"]}})");
  ASSERT_EQ(a.status, 201) << a.text;
  EXPECT_EQ(a.body.at("id").as_string(), "p/1");
  a = call("PUT", "/v1/jobs/p%2F1",
           R"({"id": "other", "schedule": {"every": "10s"}, "command": {"argv": ["/bin/true"]}})");
  EXPECT_EQ(a.status, 400);
  EXPECT_EQ(error_field(a), "id");

  a = call("PATCH", "/v1/jobs/p%2F1", R"({"policy": {"priority": 8}, "labels": {"k": "v"}})",
           {{"If-Match", "\"1\""}});
  ASSERT_EQ(a.status, 200) << a.text;
  EXPECT_EQ(a.body.at("policy").at("priority").to_number<int>(), 8);
  EXPECT_EQ(a.body.at("labels").at("k").as_string(), "v");
  EXPECT_EQ(a.body.at("schedule").at("every").as_string(), "10s");  // untouched
  EXPECT_EQ(a.header("ETag"), "\"2\"");

  a = call("PATCH", "/v1/jobs/p%2F1", R"({"policy": {"priority": 9}})", {{"If-Match", "\"1\""}});
  EXPECT_EQ(a.status, 412) << a.text;
  EXPECT_EQ(a.body.at("error").at("code").as_string(), "precondition_failed");
  a = call("POST", "/v1/jobs/p%2F1:pause", "", {{"If-Match", "\"1\""}});
  EXPECT_EQ(a.status, 412) << a.text;
  a = call("PATCH", "/v1/jobs/p%2F1", R"({"policy": {"priority": 99}})");
  EXPECT_EQ(a.status, 400);
  EXPECT_EQ(error_field(a), "policy.priority");
  a = call("PATCH", "/v1/jobs/p%2F1", R"({"id": "renamed"})");
  EXPECT_EQ(a.status, 400);
  EXPECT_EQ(error_field(a), "id");
  EXPECT_EQ(call("PATCH", "/v1/jobs/none", "{}").status, 404);
}

TEST_F(ApiRoutesTest, IfMatchIsCheckedByTheWriteItself) {
  ASSERT_EQ(call("POST", "/v1/jobs", kJob).status, 201);
  Answer a = call("POST", "/v1/jobs/every-10s:pause", "", {{"If-Match", "\"1\""}});
  ASSERT_EQ(a.status, 200) << a.text;
  const std::string etag = a.header("ETag");
  EXPECT_NE(etag, "\"1\"");  // a pause is a change a client sees
  a = call("DELETE", "/v1/jobs/every-10s", "", {{"If-Match", "\"1\""}});
  EXPECT_EQ(a.status, 412) << a.text;
  EXPECT_EQ(error_field(a), "If-Match");
  EXPECT_EQ(call("GET", "/v1/jobs/every-10s").body.at("status").at("state").as_string(), "active");
  EXPECT_EQ(call("DELETE", "/v1/jobs/nope", "", {{"If-Match", "*"}}).status, 412);
  EXPECT_EQ(call("DELETE", "/v1/jobs/every-10s", "", {{"If-Match", "3"}}).status, 400);
  a = call("DELETE", "/v1/jobs/every-10s", "", {{"If-Match", etag}});
  EXPECT_EQ(a.status, 200) << a.text;
}

TEST_F(ApiRoutesTest, BatchIsAllOrNothing) {
  Answer a = call("POST", "/v1/jobs:batch",
                  R"({"jobs": [
                    {"id": "b1", "schedule": {"every": "1m"}, "command": {"argv": ["x"]}},
                    {"id": "b2", "schedule": {"cron": "61 * * * *"}, "command": {"argv": ["x"]}},
                    {"schedule": {"every": "1m"}, "command": {"argv": ["x"]}}]})");
  ASSERT_EQ(a.status, 400) << a.text;
  EXPECT_EQ(error_field(a), "jobs[1].schedule.cron");
  const json::array& items = a.body.at("error").at("items").as_array();
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[1].at("field").as_string(), "jobs[2].id");
  EXPECT_EQ(call("GET", "/v1/jobs/b1").status, 404);  // nothing applied

  const std::string good =
      R"({"jobs": [
        {"id": "b1", "schedule": {"every": "1m"}, "command": {"argv": ["x"]}},
        {"id": "b2", "schedule": {"cron": "1 * * * *"}, "command": {"argv": ["x"]}}]})";
  a = call("POST", "/v1/jobs:batch", good);
  ASSERT_EQ(a.status, 200) << a.text;
  EXPECT_EQ(a.body.at("jobs").as_array().size(), 2u);
  EXPECT_EQ(a.body.at("created").to_number<int>(), 2);
  a = call("POST", "/v1/jobs:batch", good);  // a retry changes nothing
  ASSERT_EQ(a.status, 200) << a.text;
  EXPECT_EQ(a.body.at("created").to_number<int>(), 0);
  EXPECT_EQ(call("POST", "/v1/jobs:batch", R"({"jobs": []})").status, 400);
  EXPECT_EQ(call("POST", "/v1/jobs:batch", R"({"jobs": [], "x": 1})").status, 400);
  EXPECT_EQ(call("POST", "/v1/jobs:batch",
                 R"({"jobs": [{"id": "d", "schedule": {"every": "1m"}, "command": {"argv": ["x"]}},
                              {"id": "d", "schedule": {"every": "2m"}, "command": {"argv": ["x"]}}]})")
                .status,
            400);
}

TEST_F(ApiRoutesTest, PauseResumeTriggerRunsDelete) {
  ASSERT_EQ(call("POST", "/v1/jobs", kJob).status, 201);
  Answer a = call("POST", "/v1/jobs/every-10s:pause");
  ASSERT_EQ(a.status, 200) << a.text;
  EXPECT_TRUE(a.body.at("status").at("paused").as_bool());
  a = call("POST", "/v1/jobs/every-10s:resume", "", {{"If-Match", "*"}});
  ASSERT_EQ(a.status, 200) << a.text;
  EXPECT_FALSE(a.body.at("status").at("paused").as_bool());

  a = call("POST", "/v1/jobs/every-10s:trigger", R"({"force": true})");
  ASSERT_EQ(a.status, 201) << a.text;
  EXPECT_EQ(a.body.at("kind").as_string(), "manual");
  EXPECT_EQ(call("POST", "/v1/jobs/every-10s:trigger", R"({"forse": true})").status, 400);

  // No worker: the manual run stays ready, so overlap `skip` refuses the
  // scheduled occurrences, and the ledger says so.
  world.stepper.run(absl::Seconds(30));
  a = call("GET", "/v1/jobs/every-10s/runs?limit=50");
  ASSERT_EQ(a.status, 200) << a.text;
  ASSERT_EQ(a.body.at("runs").as_array().size(), 1u);
  EXPECT_EQ(a.body.at("runs").as_array()[0].at("state").as_string(), "ready");
  a = call("GET", "/v1/jobs/every-10s/occurrences?from=2020-01-01T00:00:00Z");
  ASSERT_EQ(a.status, 200) << a.text;
  ASSERT_FALSE(a.body.at("occurrences").as_array().empty());
  EXPECT_NE(a.text.find("skipped_overlap"), std::string::npos) << a.text;
  EXPECT_EQ(call("GET", "/v1/jobs/every-10s/runs?limit=0").status, 400);
  EXPECT_EQ(call("GET", "/v1/jobs/every-10s/occurrences?from=yesterday").status, 400);
  a = call("GET",
           "/v1/jobs/every-10s/occurrences?from=2020-01-02T00:00:00Z&to=2020-01-01T00:00:00Z");
  EXPECT_EQ(a.status, 400) << a.text;
  EXPECT_NE(a.text.find("to: must not be before from"), std::string::npos) << a.text;
  EXPECT_EQ(call("GET", "/v1/jobs/nope/runs").status, 404);

  a = call("DELETE", "/v1/jobs/every-10s");
  ASSERT_EQ(a.status, 200) << a.text;
  EXPECT_EQ(a.body.at("status").at("state").as_string(), "cancelled");
  a = call("POST", "/v1/jobs/every-10s:pause");
  EXPECT_EQ(a.status, 409) << a.text;  // a cancelled job cannot be paused
  EXPECT_EQ(call("DELETE", "/v1/jobs/nope").status, 404);
}

TEST_F(ApiRoutesTest, ListFiltersAndPages) {
  for (const char* id : {"a", "b", "c"}) {
    const std::string team = std::string(id) == "b" ? "ops" : "data";
    ASSERT_EQ(call("POST", "/v1/jobs",
                   std::string(R"({"id": ")") + id + R"(", "labels": {"team": ")" + team +
                       R"("}, "schedule": {"every": "1m"}, "command": {"argv": ["x"]}})")
                  .status,
              201);
  }
  ASSERT_EQ(call("POST", "/v1/jobs/c:pause").status, 200);
  Answer a = call("GET", "/v1/jobs?selector=team%3Ddata");
  ASSERT_EQ(a.status, 200) << a.text;
  EXPECT_EQ(a.body.at("jobs").as_array().size(), 2u);
  a = call("GET", "/v1/jobs?paused=true");
  ASSERT_EQ(a.body.at("jobs").as_array().size(), 1u);
  EXPECT_EQ(a.body.at("jobs").as_array()[0].at("id").as_string(), "c");
  a = call("GET", "/v1/jobs?page_size=2");
  ASSERT_EQ(a.body.at("jobs").as_array().size(), 2u);
  const std::string token(a.body.at("next_page_token").as_string());
  ASSERT_FALSE(token.empty());
  a = call("GET", "/v1/jobs?page_size=2&page_token=" + token);
  EXPECT_EQ(a.body.at("jobs").as_array().size(), 1u);
  EXPECT_EQ(call("GET", "/v1/jobs?colour=red").status, 400);
  EXPECT_EQ(call("GET", "/v1/jobs?state=maybe").status, 400);
  EXPECT_EQ(call("GET", "/v1/jobs?selector=novalue").status, 400);
  EXPECT_EQ(call("GET", "/v1/jobs?page_size=100000").status, 400);
}

TEST_F(ApiRoutesTest, ClusterShowsTheLeaders) {
  Answer a = call("GET", "/v1/cluster");
  ASSERT_EQ(a.status, 200) << a.text;
  EXPECT_EQ(a.body.at("shard_count").to_number<int>(), 2);
  const json::array& shards = a.body.at("shards").as_array();
  ASSERT_EQ(shards.size(), 2u);
  EXPECT_EQ(shards[0].at("leader").as_string(), "n1");
  EXPECT_FALSE(shards[1].at("expires_in").is_null());
  EXPECT_EQ(a.body.at("node").at("leads").as_array().size(), 2u);
}

TEST_F(ApiRoutesTest, ClusterListsTheNodesWithTheirLiveness) {
  Answer a = call("GET", "/v1/cluster");
  ASSERT_EQ(a.status, 200) << a.text;
  EXPECT_EQ(a.body.at("live_nodes").to_number<int>(), 1);
  const json::array& nodes = a.body.at("nodes").as_array();
  ASSERT_EQ(nodes.size(), 1u) << a.text;
  EXPECT_EQ(nodes[0].at("id").as_string(), "n1");
  EXPECT_EQ(nodes[0].at("liveness").as_string(), "live");
  EXPECT_FALSE(nodes[0].at("expires_in").is_null());
  EXPECT_TRUE(nodes[0].at("started").is_string());
  // The node stops: its record lapses and is shown as expired, not dropped.
  node.node.stop();
  world.stepper.run(absl::Seconds(11));
  const json::value body = cluster_seen_by_n2(absl::Seconds(1));
  ASSERT_TRUE(body.is_object());
  EXPECT_EQ(body.at("live_nodes").to_number<int>(), 1);
  const json::array& both = body.at("nodes").as_array();
  ASSERT_EQ(both.size(), 2u) << body;
  EXPECT_EQ(both[0].at("id").as_string(), "n1");
  EXPECT_EQ(both[0].at("liveness").as_string(), "expired");
  EXPECT_TRUE(both[0].at("expires_in").is_null());
  EXPECT_EQ(both[1].at("liveness").as_string(), "live");
}

TEST_F(ApiRoutesTest, ClusterShowsEachShardsDueBacklog) {
  for (int i = 0; i < 3; ++i) {
    Answer c = call(
        "POST", "/v1/jobs",
        absl::StrCat(R"({"id": "b)", i,
                     R"(", "schedule": {"every": "1s"}, "command": {"argv": ["/bin/true"]}})"));
    ASSERT_EQ(c.status, 201) << c.text;
  }
  Answer a = call("GET", "/v1/cluster");
  ASSERT_EQ(a.status, 200) << a.text;
  for (const json::value& s : a.body.at("shards").as_array()) {
    EXPECT_TRUE(s.at("due_backlog").is_number()) << a.text;
    EXPECT_FALSE(s.at("due_backlog_capped").as_bool());
  }
  // The leader stops; its leases hold the shards for a while, so nothing is
  // dispatched: every job's next occurrence is backlog, seen from n2.
  node.node.stop();
  world.stepper.run(absl::Seconds(3));
  const json::value body = cluster_seen_by_n2(absl::Milliseconds(200));
  ASSERT_TRUE(body.is_object());
  std::int64_t due = 0;
  for (const json::value& s : body.at("shards").as_array()) {
    EXPECT_EQ(s.at("leader").as_string(), "n1") << body;  // still n1's lease
    due += s.at("due_backlog").to_number<std::int64_t>();
  }
  EXPECT_EQ(due, 3) << body;
}

TEST_F(ApiRoutesTest, HealthReadinessMetricsAndUnknownRoutes) {
  EXPECT_EQ(call("GET", "/healthz").status, 200);
  Answer a = call("GET", "/readyz");
  EXPECT_EQ(a.status, 200) << a.text;
  EXPECT_EQ(call("GET", "/v1/nothing").status, 404);
  EXPECT_EQ(call("DELETE", "/v1/jobs").status, 405);
  a = call("GET", "/metrics");
  EXPECT_EQ(a.status, 200);
  EXPECT_NE(a.text.find("# TYPE kairos_http_requests_total counter"), std::string::npos) << a.text;
  EXPECT_NE(a.text.find(R"(kairos_http_requests_total{route="/readyz",status="200"} 1)"),
            std::string::npos)
      << a.text;
  EXPECT_NE(a.text.find(R"(kairos_http_requests_total{route="unmatched",status="404"} 1)"),
            std::string::npos);
}

TEST(ApiReadiness, NotReadyUntilStartedAndWhileTheStoreIsClosed) {
  NodeWorld world;
  auto& node = world.add_node(test_support::node_config("n1", 2), 7);
  bool open = true;
  ApiOptions options;
  options.store_open = [&] { return open; };
  ApiRoutes api(node.node, node.metrics, options);
  const http::Router router = api.router();
  auto ready = [&] {
    http::Request r;
    r.method = "GET";
    r.target = "/readyz";
    int status = 0;
    std::string body;
    http::route_request(router, r, [&](http::Response res) {
      status = res.status;
      body = res.body;
    });
    for (int i = 0; i < 50 && status == 0; ++i) world.stepper.run(absl::Milliseconds(100));
    return std::make_pair(status, body);
  };
  EXPECT_EQ(ready().first, 503);
  EXPECT_NE(ready().second.find("not running"), std::string::npos);
  node.node.start();
  world.stepper.run(absl::Seconds(2));
  EXPECT_EQ(ready().first, 200) << ready().second;
  open = false;
  EXPECT_EQ(ready().first, 503);
  EXPECT_NE(ready().second.find("store"), std::string::npos);
}

TEST(ApiReadiness, AShardLedByAnotherNodeCountsAsKnown) {
  NodeWorld world;
  auto& first = world.add_node(test_support::node_config("n1", 4), 7);
  first.node.start();
  world.stepper.run(absl::Seconds(2));  // n1 leads all four shards
  auto& second = world.add_node(test_support::node_config("n2", 4), 8);
  second.node.start();
  world.stepper.run(absl::Seconds(2));
  ApiRoutes api(second.node, second.metrics);
  const http::Router router = api.router();
  http::Request r;
  r.method = "GET";
  r.target = "/readyz";
  int status = 0;
  std::string body;
  http::route_request(router, r, [&](http::Response res) {
    status = res.status;
    body = res.body;
  });
  for (int i = 0; i < 50 && status == 0; ++i) world.stepper.run(absl::Milliseconds(100));
  EXPECT_EQ(status, 200) << body;  // n2 leads nothing, but every leader is known
  first.node.stop();
  second.node.stop();
}

TEST(PrometheusText, MicrosecondHistogramsAreExportedInSeconds) {
  Metrics m;
  m.counter("kairos_x_total", "X.").add(3);
  Histogram& h = m.histogram("kairos_commit_latency_us{store=\"lmdb\"}", {100, 2500000}, "Commit.");
  h.observe(50);
  h.observe(3000000);
  m.histogram("kairos_batch_size", {10}).observe(4);
  const std::string text = prometheus_text(m);
  EXPECT_NE(text.find("# HELP kairos_commit_latency_seconds Commit."), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE kairos_commit_latency_seconds histogram"), std::string::npos);
  EXPECT_NE(text.find(R"(kairos_commit_latency_seconds_bucket{store="lmdb",le="0.0001"} 1)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(R"(kairos_commit_latency_seconds_bucket{store="lmdb",le="2.5"} 1)"),
            std::string::npos);
  EXPECT_NE(text.find(R"(kairos_commit_latency_seconds_bucket{store="lmdb",le="+Inf"} 2)"),
            std::string::npos);
  EXPECT_NE(text.find(R"(kairos_commit_latency_seconds_sum{store="lmdb"} 3.00005)"),
            std::string::npos);
  EXPECT_NE(text.find(R"(kairos_commit_latency_seconds_count{store="lmdb"} 2)"), std::string::npos);
  EXPECT_EQ(text.find("_us"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(kairos_batch_size_bucket{le="10"} 1)"), std::string::npos);
  EXPECT_NE(text.find("kairos_x_total 3"), std::string::npos);
}

}  // namespace
}  // namespace kairos::api
