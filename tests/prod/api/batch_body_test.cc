// POST /v1/jobs:batch on its fast path (the body parsed into an arena, the
// reply written as text): hostile bodies still get their clear 400s, and
// the reply's jobs are exactly the bodies GET returns for them.
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "prod/api/api_routes.h"
#include "tests/support/node_world.h"

namespace kairos::api {
namespace {

namespace json = boost::json;
using test_support::NodeWorld;

class BatchBodyTest : public ::testing::Test {
 protected:
  BatchBodyTest()
      : node(world.add_node(test_support::node_config("n1", 2), 7)),
        api(node.node, node.metrics),
        router(api.router()) {
    node.node.start();
    world.stepper.run(absl::Seconds(2));
  }

  http::Response call(std::string method, std::string target, std::string body = {}) {
    http::Request r;
    r.method = std::move(method);
    r.target = std::move(target);
    r.body = std::move(body);
    std::optional<http::Response> got;
    http::route_request(router, r, [&](http::Response res) { got = res; });
    for (int i = 0; i < 100 && !got; ++i) world.stepper.run(absl::Milliseconds(100));
    EXPECT_TRUE(got.has_value());
    return got.value_or(http::Response{});
  }

  static std::string message(const http::Response& r) {
    boost::system::error_code ec;
    const json::value v = json::parse(r.body, ec);
    if (ec) return "<not JSON>";
    return std::string(v.at("error").at("message").as_string());
  }

  static std::string job(int i) {
    return absl::StrCat(R"({"id": "bulk-)", i, R"(", "labels": {"k": "v\"q\\\u00e9"},)",
                        R"("schedule": {"at": "2030-01-01T00:00:0)", i % 10, R"(Z"},)",
                        R"("command": {"argv": ["/bin/true"]}})");
  }

  NodeWorld world;
  NodeWorld::Node& node;
  ApiRoutes api;
  http::Router router;
};

TEST_F(BatchBodyTest, HostileBodiesGetTheirErrors) {
  http::Response r = call("POST", "/v1/jobs:batch", R"({"jobs": [{"id": "a",)");
  EXPECT_EQ(r.status, 400);
  EXPECT_TRUE(message(r).starts_with("request body is not valid JSON: ")) << r.body;

  std::string deep = R"({"jobs": [{"id": "a", "labels": )";
  for (int i = 0; i < 40; ++i) deep += "[";
  for (int i = 0; i < 40; ++i) deep += "]";
  deep += "}]}";
  r = call("POST", "/v1/jobs:batch", deep);
  EXPECT_EQ(r.status, 400);
  EXPECT_TRUE(message(r).starts_with("request body is not valid JSON: ")) << r.body;

  std::string many = R"({"jobs": [)";
  for (int i = 0; i <= 1000; ++i) absl::StrAppend(&many, i > 0 ? "," : "", job(i));
  many += "]}";
  r = call("POST", "/v1/jobs:batch", many);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(message(r), "jobs: must hold 1..1000 jobs, got 1001");
  EXPECT_EQ(call("GET", "/v1/jobs/bulk-0").status, 404);

  r = call("POST", "/v1/jobs:batch", R"({"jobs": [3]})");
  EXPECT_EQ(r.status, 400);
  EXPECT_TRUE(message(r).find("jobs[0]") != std::string::npos) << r.body;
}

TEST_F(BatchBodyTest, TheReplyHoldsWhatGetReturns) {
  std::string body = R"({"jobs": [)";
  for (int i = 0; i < 1000; ++i) absl::StrAppend(&body, i > 0 ? "," : "", job(i));
  body += "]}";
  const http::Response r = call("POST", "/v1/jobs:batch", body);
  ASSERT_EQ(r.status, 200) << r.body.substr(0, 300);
  const json::value reply = json::parse(r.body);
  EXPECT_EQ(reply.at("created").to_number<int>(), 1000);
  const json::array& jobs = reply.at("jobs").as_array();
  ASSERT_EQ(jobs.size(), 1000u);
  for (int i : {0, 1, 499, 999}) {
    const http::Response got = call("GET", absl::StrCat("/v1/jobs/bulk-", i));
    ASSERT_EQ(got.status, 200);
    EXPECT_EQ(json::serialize(jobs[static_cast<std::size_t>(i)]), got.body) << i;
  }
}

}  // namespace
}  // namespace kairos::api
