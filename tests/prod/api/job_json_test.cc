// The job JSON codec: the contract's examples decode, encode/decode round
// trips, every refused input names its field, merge patch follows RFC 7396.
#include "prod/api/job_json.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <string>

#include "absl/time/time.h"
#include "core/kernel/job_store.h"

namespace kairos::api {
namespace {

namespace json = boost::json;

constexpr const char* kCronJob = R"({
  "id": "nightly-report", "namespace": "default", "labels": {"team": "data"},
  "schedule": {"cron": "0 2 * * *", "zone": "Europe/Berlin", "dst_gap": "skip", "dst_fold": "both"},
  "command": {"argv": ["/usr/bin/backup", "--full"], "env": {"K": "V"}, "working_dir": "/tmp"},
  "policy": {"max_attempts": 3, "retry_initial": "10s", "retry_multiplier_percent": 200,
    "retry_max": "5m", "retry_jitter_percent": 20, "timeout": "1h", "misfire": "catch-up",
    "misfire_threshold": "60s", "catch_up_max": 10, "catch_up_spacing": "10s",
    "overlap": "queue", "max_concurrent": 1, "priority": 7}
})";

TEST(JobJson, ContractCronExampleDecodes) {
  auto spec = decode_job_spec(kCronJob);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->id, "nightly-report");
  EXPECT_EQ(spec->labels.at("team"), "data");
  EXPECT_EQ(spec->schedule.kind, ScheduleSpec::Kind::kCron);
  EXPECT_EQ(spec->schedule.zone, "Europe/Berlin");
  EXPECT_EQ(spec->schedule.dst_gap, DstGap::kSkip);
  EXPECT_EQ(spec->schedule.dst_fold, DstFold::kBoth);
  const auto& c = std::get<CommandPayload>(spec->payload);
  EXPECT_EQ(c.argv.size(), 2u);
  EXPECT_EQ(c.env.at(0).second, "V");
  EXPECT_EQ(spec->policy.misfire, MisfirePolicy::kCatchUp);
  EXPECT_EQ(spec->policy.overlap, OverlapPolicy::kQueue);
  EXPECT_EQ(spec->policy.priority, 7);
  EXPECT_EQ(spec->policy.retry_max, absl::Minutes(5));
}

TEST(JobJson, OneOffIntervalAndHttpDecode) {
  auto once = decode_job_spec(
      R"({"schedule": {"at": "2026-12-01T10:00:00Z"}, "http": {"url": "https://example.com/x"}})");
  ASSERT_TRUE(once.ok()) << once.status();
  EXPECT_TRUE(once->id.empty());
  EXPECT_EQ(once->schedule.at, absl::FromUnixSeconds(1796119200));
  EXPECT_EQ(std::get<HttpPayload>(once->payload).method, "POST");

  auto every = decode_job_spec(
      R"({"id": "e", "schedule": {"every": "30s", "jitter": "1s"}, "command": {"argv": ["/bin/true"]}})");
  ASSERT_TRUE(every.ok()) << every.status();
  EXPECT_EQ(every->schedule.every, absl::Seconds(30));
  EXPECT_EQ(every->schedule.start, absl::UnixEpoch());  // the contract's default anchor
  EXPECT_EQ(every->schedule.jitter, absl::Seconds(1));
}

TEST(JobJson, RoundTripsThroughTheResponseShape) {
  for (const char* text : {kCronJob,
                           R"({"id": "a/b:c", "schedule": {"every": "1m30s", "start":
                               "2026-01-01T00:00:00Z", "end": "2027-01-01T00:00:00Z"},
                               "http": {"method": "PUT", "url": "http://h/p",
                               "headers": {"X": "1"}, "body": "{}"}})"}) {
    auto spec = decode_job_spec(text);
    ASSERT_TRUE(spec.ok()) << spec.status();
    JobRecord job;
    job.spec = *spec;
    job.incarnation = 2;
    job.generation = 5;
    job.created_at = absl::FromUnixSeconds(1700000000);
    job.next_due_at = absl::FromUnixSeconds(1700000100);
    const std::string body = serialize(job_to_json(job));
    auto back = decode_job_spec(body);  // a GET body can be PUT back
    ASSERT_TRUE(back.ok()) << back.status() << "\n" << body;
    EXPECT_EQ(*back, *spec) << body;
    const json::value v = json::parse(body);
    EXPECT_EQ(v.at("status").at("generation").to_number<std::uint64_t>(), 5u);
    EXPECT_EQ(v.at("status").at("state").as_string(), "active");
    EXPECT_TRUE(v.at("status").at("cancelled_at").is_null());
    EXPECT_EQ(v.at("status").at("next_due_at").as_string(), "2023-11-14T22:15:00Z");
  }
}

struct Bad {
  const char* body;
  const char* field;
};

TEST(JobJson, EveryErrorNamesItsField) {
  const Bad cases[] = {
      {R"({"bogus": 1})", "bogus"},
      {R"({"id": 5})", "id"},
      {R"({"id": ""})", "id"},
      {R"({"id": "has space", "schedule": {"cron": "* * * * *"}, "command": {"argv": ["x"]}})",
       "id"},
      {R"({"command": {"argv": ["x"]}})", "schedule"},
      {R"({"schedule": 3, "command": {"argv": ["x"]}})", "schedule"},
      {R"({"schedule": {"cron": "61 * * * *"}, "command": {"argv": ["x"]}})", "schedule.cron"},
      {R"({"schedule": {"cron": "* * * * *", "zone": "Mars/Olympus"}, "command": {"argv": ["x"]}})",
       "schedule.zone"},
      {R"({"schedule": {"cron": "* * * * *", "at": "2026-01-01T00:00:00Z"}, "command": {"argv": ["x"]}})",
       "schedule"},
      {R"({"schedule": {}, "command": {"argv": ["x"]}})", "schedule"},
      {R"({"schedule": {"cron": "* * * * *", "start": "2026-01-01T00:00:00Z"}, "command": {"argv": ["x"]}})",
       "schedule.start"},
      {R"({"schedule": {"at": "2026-01-01T00:00:00Z", "zone": "UTC"}, "command": {"argv": ["x"]}})",
       "schedule.zone"},
      {R"({"schedule": {"at": "yesterday"}, "command": {"argv": ["x"]}})", "schedule.at"},
      {R"({"schedule": {"at": "2026-01-01T00:00:00"}, "command": {"argv": ["x"]}})", "schedule.at"},
      {R"({"schedule": {"every": "1.5h"}, "command": {"argv": ["x"]}})", "schedule.every"},
      {R"({"schedule": {"every": "0s"}, "command": {"argv": ["x"]}})", "schedule.every"},
      {R"({"schedule": {"every": "1m", "start": "2026-01-01T00:00:00Z", "end": "2025-01-01T00:00:00Z"}, "command": {"argv": ["x"]}})",
       "schedule.end"},
      {R"({"schedule": {"cron": "* * * * *", "jitter": "-1s"}, "command": {"argv": ["x"]}})",
       "schedule.jitter"},
      {R"({"schedule": {"cron": "* * * * *", "dst_gap": "maybe"}, "command": {"argv": ["x"]}})",
       "schedule.dst_gap"},
      {R"({"schedule": {"cron": "* * * * *"}})", "command"},
      {R"({"schedule": {"cron": "* * * * *"}, "command": {"argv": ["x"]}, "http": {"url": "http://h"}})",
       "http"},
      {R"({"schedule": {"cron": "* * * * *"}, "command": {"argv": []}})", "command.argv"},
      {R"({"schedule": {"cron": "* * * * *"}, "command": {"argv": [1]}})", "command.argv[0]"},
      {R"({"schedule": {"cron": "* * * * *"}, "command": {"args": ["x"]}})", "command.args"},
      {R"({"schedule": {"cron": "* * * * *"}, "command": {"argv": ["x"], "env": {"A": 1}}})",
       "command.env.A"},
      {R"({"schedule": {"cron": "* * * * *"}, "http": {"url": "ftp://h"}})", "http.url"},
      {R"({"schedule": {"cron": "* * * * *"}, "http": {}})", "http.url"},
      {R"({"labels": {"a": true}, "schedule": {"cron": "* * * * *"}, "command": {"argv": ["x"]}})",
       "labels.a"},
      {R"({"namespace": "", "schedule": {"cron": "* * * * *"}, "command": {"argv": ["x"]}})",
       "namespace"},
      {R"({"schedule": {"cron": "* * * * *"}, "command": {"argv": ["x"]}, "policy": {"priority": 12}})",
       "policy.priority"},
      {R"({"schedule": {"cron": "* * * * *"}, "command": {"argv": ["x"]}, "policy": {"priority": 1.5}})",
       "policy.priority"},
      {R"({"schedule": {"cron": "* * * * *"}, "command": {"argv": ["x"]}, "policy": {"max_attempts": 99999999999}})",
       "policy.max_attempts"},
      {R"({"schedule": {"cron": "* * * * *"}, "command": {"argv": ["x"]}, "policy": {"max_attempts": -1}})",
       "policy.max_attempts"},
      {R"({"schedule": {"cron": "* * * * *"}, "command": {"argv": ["x"]}, "policy": {"timeout": "0s"}})",
       "policy.timeout"},
      {R"({"schedule": {"cron": "* * * * *"}, "command": {"argv": ["x"]}, "policy": {"timeout": "5min"}})",
       "policy.timeout"},
      {R"({"schedule": {"cron": "* * * * *"}, "command": {"argv": ["x"]}, "policy": {"misfire": "later"}})",
       "policy.misfire"},
      {R"({"schedule": {"cron": "* * * * *"}, "command": {"argv": ["x"]}, "policy": {"nope": 1}})",
       "policy.nope"},
      {R"({"schedule": {"cron": "* * * * *"}, "command": {"argv": ["x"]}, "policy": []})",
       "policy"},
  };
  for (const Bad& b : cases) {
    auto spec = decode_job_spec(b.body);
    ASSERT_FALSE(spec.ok()) << b.body;
    EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument) << b.body;
    EXPECT_EQ(error_field(spec.status()), b.field) << b.body << " -> " << spec.status();
    const json::object e = error_body(spec.status());
    EXPECT_EQ(e.at("error").at("code").as_string(), "invalid_argument");
    EXPECT_EQ(e.at("error").at("field").as_string(), b.field);
  }
}

TEST(JobJson, MalformedTextNamesNoField) {
  for (const char* text : {"", "{", "[1,2", "{\"id\": }", "nul", "{} {}", "\"x\""}) {
    auto spec = decode_job_spec(text);
    ASSERT_FALSE(spec.ok()) << text;
    EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  }
  std::string deep(100, '[');
  EXPECT_FALSE(decode_job_spec(deep + std::string(100, ']')).ok());
}

TEST(JobJson, StatusOfAnInputIsIgnored) {
  auto spec = decode_job_spec(
      R"({"id": "s", "schedule": {"cron": "* * * * *"}, "command": {"argv": ["x"]},
          "status": {"state": "whatever", "anything": [1, 2]}})");
  EXPECT_TRUE(spec.ok()) << spec.status();
}

TEST(JobJson, MergePatchFollowsRfc7396) {
  const json::value target = json::parse(R"({"a": "b", "c": {"d": "e", "f": "g"}})");
  const json::value patch = json::parse(R"({"a": "z", "c": {"f": null}, "n": [1]})");
  EXPECT_EQ(merge_patch(target, patch), json::parse(R"({"a": "z", "c": {"d": "e"}, "n": [1]})"));
  EXPECT_EQ(merge_patch(target, json::parse("[1]")), json::parse("[1]"));
  EXPECT_EQ(merge_patch(json::parse("[1]"), json::parse(R"({"a": 1})")),
            json::parse(R"({"a": 1})"));
  EXPECT_EQ(merge_patch(target, json::parse("{}")), target);
}

TEST(JobJson, PatchingAJobChangesOnlyTheGivenFields) {
  auto spec = decode_job_spec(kCronJob);
  ASSERT_TRUE(spec.ok());
  const json::value patched = merge_patch(json::value(job_spec_to_json(*spec)),
                                          json::parse(R"({"policy": {"priority": 2}})"));
  auto back = job_spec_from_json(patched);
  ASSERT_TRUE(back.ok()) << back.status();
  JobSpec expected = *spec;
  expected.policy.priority = 2;
  EXPECT_EQ(*back, expected);
}

TEST(JobJson, StatusCodesMapToTheContract) {
  EXPECT_EQ(http_status(absl::StatusCode::kInvalidArgument), 400);
  EXPECT_EQ(http_status(absl::StatusCode::kNotFound), 404);
  EXPECT_EQ(http_status(absl::StatusCode::kAlreadyExists), 409);
  EXPECT_EQ(http_status(absl::StatusCode::kFailedPrecondition), 412);
  EXPECT_EQ(http_status(absl::StatusCode::kUnavailable), 503);
  EXPECT_EQ(http_status(absl::StatusCode::kInternal), 500);
  EXPECT_EQ(http_status(absl::StatusCode::kDataLoss), 500);
  const json::object e = error_body(absl::NotFoundError("job 'x' not found"));
  EXPECT_FALSE(e.at("error").as_object().contains("field"));
}

TEST(JobJson, RunAndLedgerEncode) {
  RunRecord run;
  run.id = {"j", 1, absl::FromUnixSeconds(60)};
  run.state = RunState::kSucceeded;
  run.outcome = RunStatus::kSucceeded;
  run.attempts.push_back({1, 7, "w1", absl::FromUnixSeconds(61), absl::FromUnixSeconds(62),
                          AttemptEnd::kSucceeded, 0});
  const json::object r = run_to_json(run);
  EXPECT_EQ(r.at("id").as_string(), "j/1/60000000");
  EXPECT_EQ(r.at("outcome").as_string(), "succeeded");
  EXPECT_EQ(r.at("attempts").as_array().at(0).at("token").to_number<std::uint64_t>(), 7u);
  EXPECT_EQ(r.at("attempts").as_array().at(0).at("worker").as_string(), "w1");
  LedgerRecord l;
  l.nominal = l.through = l.fire_at = absl::FromUnixSeconds(60);
  l.outcome = LedgerOutcome::kCoalesced;
  EXPECT_EQ(ledger_to_json(l).at("outcome").as_string(), "coalesced");
  EXPECT_TRUE(ledger_to_json(l).at("run_nominal").is_null());
}

}  // namespace
}  // namespace kairos::api
