// The two read-only routes the dashboard needs beyond the job API:
// GET /v1/stats (RunStats, fed by the node's events) and
// GET /v1/jobs/{id}/next (the next fires with their DST notes), plus the
// runs route's `from`. Virtual time throughout (NodeWorld).
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/kernel/event_kinds.h"
#include "prod/api/api_routes.h"
#include "prod/api/next_fires.h"
#include "prod/api/run_stats.h"
#include "tests/support/node_world.h"

namespace kairos::api {
namespace {

namespace json = boost::json;

const absl::Time kT0 =
    absl::FromUnixSeconds(1'800'000'000);  // 2027-01-15T08:00:00Z, a minute boundary

Event event(std::string_view kind, absl::Time at) {
  Event e;
  e.kind = kind;
  e.at = at;
  return e;
}

TEST(RunStats, CountsRunsPerMinuteAndLatenessPercentiles) {
  RunStats stats(60);
  for (int i = 0; i < 8; ++i)
    stats.observe(event(event_kinds::kRunDispatched, kT0)
                      .with("kind", std::string("scheduled"))
                      .with("lateness", absl::Milliseconds(3)));
  stats.observe(event(event_kinds::kRunDispatched, kT0)
                    .with("kind", std::string("scheduled"))
                    .with("lateness", absl::Seconds(7)));
  stats.observe(event(event_kinds::kRunDispatched, kT0)
                    .with("kind", std::string("scheduled"))
                    .with("lateness", absl::Minutes(20)));
  // Manual runs are not late; other events are not runs.
  stats.observe(event(event_kinds::kRunDispatched, kT0)
                    .with("kind", std::string("manual"))
                    .with("lateness", absl::Hours(5)));
  stats.observe(event(event_kinds::kRunCompleted, kT0 + absl::Minutes(1))
                    .with("worker", std::string("n1/w1"))
                    .with("outcome", std::string("succeeded")));
  stats.observe(event(event_kinds::kRunCompleted, kT0 + absl::Minutes(1))
                    .with("worker", std::string("n1/w2"))
                    .with("outcome", std::string("failed")));
  stats.observe(event(event_kinds::kRunRetryScheduled, kT0 + absl::Minutes(1)));
  stats.observe(event(event_kinds::kJobCreated, kT0));

  const json::object out = stats.to_json(kT0 + absl::Minutes(1));
  const json::array& minutes = out.at("minutes").as_array();
  ASSERT_EQ(minutes.size(), 60u);
  const json::object& last = minutes.back().as_object();
  const json::object& before = minutes[58].as_object();
  EXPECT_EQ(before.at("dispatched").to_number<std::int64_t>(), 11);
  EXPECT_EQ(last.at("succeeded").to_number<std::int64_t>(), 1);
  EXPECT_EQ(last.at("failed").to_number<std::int64_t>(), 1);
  EXPECT_EQ(last.at("retried").to_number<std::int64_t>(), 1);
  EXPECT_EQ(last.at("start").as_string(), "2027-01-15T08:01:00Z");
  const json::object& late = out.at("lateness").as_object();
  EXPECT_EQ(late.at("count").to_number<std::int64_t>(), 10);
  EXPECT_EQ(late.at("p50").as_string(), "5ms");  // the upper bound of (1ms, 5ms]
  EXPECT_EQ(late.at("p90").as_string(), "10s");
  EXPECT_EQ(late.at("p99").as_string(), "20m");  // (15m, 1h], capped by the maximum
  EXPECT_EQ(late.at("max").as_string(), "20m");
  EXPECT_EQ(out.at("workers").as_array().size(), 2u);

  // An hour later every minute is empty again; workers unseen for 5 minutes drop out.
  const json::object later = stats.to_json(kT0 + absl::Minutes(61));
  for (const auto& m : later.at("minutes").as_array()) {
    EXPECT_EQ(m.at("dispatched").to_number<std::int64_t>(), 0);
    EXPECT_EQ(m.at("succeeded").to_number<std::int64_t>(), 0);
  }
  EXPECT_TRUE(later.at("lateness").at("p50").is_null());
  EXPECT_TRUE(later.at("workers").as_array().empty());

  // The ring reuses a slot for a newer minute, and ignores events older than it.
  stats.observe(event(event_kinds::kRunRetryScheduled, kT0 + absl::Minutes(60)));
  stats.observe(event(event_kinds::kRunRetryScheduled, kT0));
  stats.observe(event(event_kinds::kRunRetryScheduled, absl::InfinitePast()));
  const json::object wrapped = stats.to_json(kT0 + absl::Minutes(60));
  std::int64_t retried = 0;
  for (const auto& m : wrapped.at("minutes").as_array())
    retried += m.at("retried").to_number<std::int64_t>();
  EXPECT_EQ(retried, 2);  // minute +1's and minute +60's
}

TEST(StatsEventLog, FeedsTheStatsAndPassesEveryEventOn) {
  struct Recorder final : EventLog {
    std::vector<std::string> kinds;
    void record(Event e) override { kinds.emplace_back(e.kind); }
  } next;
  RunStats stats;
  StatsEventLog log(next, stats);
  log.record(event(event_kinds::kRunRetryScheduled, kT0));
  log.record(event(event_kinds::kJobCreated, kT0));
  EXPECT_EQ(next.kinds, (std::vector<std::string>{"run.retry_scheduled", "job.created"}));
  EXPECT_EQ(
      stats.to_json(kT0).at("minutes").as_array().back().at("retried").to_number<std::int64_t>(),
      1);
}

class DashboardApiTest : public ::testing::Test {
 protected:
  DashboardApiTest()
      : node(world.add_node(test_support::node_config("n1", 2), 7)),
        api(node.node, node.metrics, options()),
        router(api.router()) {
    node.node.start();
    world.stepper.run(absl::Seconds(2));
  }
  ApiOptions options() {
    ApiOptions o;
    o.stats = &stats;
    o.now = [] { return kT0; };
    return o;
  }
  std::pair<int, json::value> call(std::string method, std::string target, std::string body = {}) {
    http::Request r;
    r.method = std::move(method);
    r.target = std::move(target);
    r.body = std::move(body);
    std::optional<http::Response> got;
    http::route_request(router, r, [&](http::Response res) { got = res; });
    for (int i = 0; i < 100 && !got; ++i) world.stepper.run(absl::Milliseconds(100));
    EXPECT_TRUE(got.has_value()) << r.target;
    if (!got) return {0, nullptr};
    boost::system::error_code ec;
    return {got->status, json::parse(got->body, ec)};
  }
  static std::string field_of(const json::value& v) {
    return std::string(v.at("error").at("field").as_string());
  }

  RunStats stats;
  test_support::NodeWorld world;
  test_support::NodeWorld::Node& node;
  ApiRoutes api;
  http::Router router;
};

TEST_F(DashboardApiTest, NextFiresMarkTheDstGapAndFollowTheSchedule) {
  auto [created, job] = call("POST", "/v1/jobs", R"({"id": "berlin", "schedule": {"cron":
      "30 2 * * *", "zone": "Europe/Berlin"}, "command": {"argv": ["/bin/true"]}})");
  ASSERT_EQ(created, 201) << json::serialize(job);
  auto [status, next] = call("GET", "/v1/jobs/berlin/next?count=4&from=2026-03-27T00:00:00Z");
  ASSERT_EQ(status, 200) << json::serialize(next);
  EXPECT_NE(std::string(next.at("description").as_string()).find("02:30"), std::string::npos);
  EXPECT_NE(std::string(next.at("description").as_string()).find("Europe/Berlin"),
            std::string::npos);
  const json::array& fires = next.at("fires").as_array();
  ASSERT_EQ(fires.size(), 4u);
  EXPECT_EQ(fires[0].at("at").as_string(), "2026-03-27T01:30:00Z");
  EXPECT_EQ(fires[0].at("local").as_string(), "2026-03-27T02:30:00+01:00");
  EXPECT_EQ(fires[0].at("note").as_string(), "");
  // 2026-03-29 02:30 does not exist in Berlin: shifted to the transition.
  EXPECT_EQ(fires[2].at("at").as_string(), "2026-03-29T01:00:00Z");
  EXPECT_NE(fires[2].at("note").as_string(), "");
  EXPECT_EQ(fires[3].at("local").as_string(), "2026-03-30T02:30:00+02:00");
  EXPECT_FALSE(next.at("explain").as_array().empty());

  // Without `from`: the fires the scheduler takes next, from its next occurrence on.
  auto [s2, dflt] = call("GET", "/v1/jobs/berlin/next");
  ASSERT_EQ(s2, 200);
  EXPECT_EQ(dflt.at("fires").as_array().size(), 10u);

  call("POST", "/v1/jobs",
       R"({"id": "tick", "schedule": {"every": "90s"}, "command": {"argv": ["/bin/true"]}})");
  auto [s3, tick] = call("GET", "/v1/jobs/tick/next?count=2&from=1970-01-01T00:00:00Z");
  ASSERT_EQ(s3, 200);
  EXPECT_EQ(tick.at("description").as_string(), "every 1m30s");
  EXPECT_EQ(tick.at("fires").as_array()[1].at("at").as_string(), "1970-01-01T00:03:00Z");
  EXPECT_TRUE(tick.at("explain").as_array().empty());

  auto [s4, bad] = call("GET", "/v1/jobs/berlin/next?count=0");
  EXPECT_EQ(s4, 400);
  EXPECT_EQ(field_of(bad), "count");
  auto [s5, bad2] = call("GET", "/v1/jobs/berlin/next?from=yesterday");
  EXPECT_EQ(s5, 400);
  EXPECT_EQ(field_of(bad2), "from");
  auto [s6, bad3] = call("GET", "/v1/jobs/berlin/next?cnt=3");
  EXPECT_EQ(s6, 400);
  EXPECT_EQ(field_of(bad3), "cnt");
  EXPECT_EQ(call("GET", "/v1/jobs/none/next").first, 404);

  // A cancelled job has no further fires.
  ASSERT_EQ(call("DELETE", "/v1/jobs/tick").first, 200);
  EXPECT_TRUE(call("GET", "/v1/jobs/tick/next").second.at("fires").as_array().empty());
}

TEST_F(DashboardApiTest, StatsAnswerFromTheRingAndRunsTakeAFrom) {
  stats.observe(event(event_kinds::kRunRetryScheduled, kT0));
  auto [status, body] = call("GET", "/v1/stats");
  ASSERT_EQ(status, 200);
  EXPECT_EQ(body.at("now").as_string(), "2027-01-15T08:00:00Z");
  EXPECT_EQ(body.at("minutes").as_array().back().at("retried").to_number<std::int64_t>(), 1);
  auto [s2, bad] = call("GET", "/v1/stats?window=2h");
  EXPECT_EQ(s2, 400);
  EXPECT_EQ(field_of(bad), "window");

  call("POST", "/v1/jobs",
       R"({"id": "tick", "schedule": {"every": "10s"}, "command": {"argv": ["/bin/true"]},
           "policy": {"overlap": "allow", "max_concurrent": 10}})");
  world.stepper.run(absl::Seconds(60));  // no worker: the runs stay ready
  auto [s3, all] = call("GET", "/v1/jobs/tick/runs");
  ASSERT_EQ(s3, 200);
  const json::array& runs = all.at("runs").as_array();
  ASSERT_GE(runs.size(), 3u);
  const std::string third(runs[2].at("nominal").as_string());
  auto [s4, tail] = call("GET", "/v1/jobs/tick/runs?from=" + third);
  ASSERT_EQ(s4, 200);
  EXPECT_EQ(tail.at("runs").as_array().front().at("nominal").as_string(), third);
  EXPECT_GE(tail.at("runs").as_array().size(), runs.size() - 2);
  auto [s5, bad5] = call("GET", "/v1/jobs/tick/runs?from=soon");
  EXPECT_EQ(s5, 400);
  EXPECT_EQ(field_of(bad5), "from");
}

TEST(DescribeSchedule, InWords) {
  ScheduleSpec once;
  once.kind = ScheduleSpec::Kind::kOnce;
  once.at = kT0;
  EXPECT_EQ(describe_schedule(once, "j"), "once at 2027-01-15T08:00:00Z");
  ScheduleSpec every;
  every.kind = ScheduleSpec::Kind::kInterval;
  every.every = absl::Seconds(30);
  every.start = absl::UnixEpoch();
  EXPECT_EQ(describe_schedule(every, "j"), "every 30s");
  every.start = kT0;
  every.end = kT0 + absl::Hours(1);
  EXPECT_EQ(describe_schedule(every, "j"),
            "every 30s from 2027-01-15T08:00:00Z until 2027-01-15T09:00:00Z");
}

}  // namespace
}  // namespace kairos::api
