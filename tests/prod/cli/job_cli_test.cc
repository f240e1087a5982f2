// The job CLI without a server: flags -> JobSpec through the API codec (so the
// CLI refuses exactly what the server refuses, naming the flag and field),
// the human tables, and the apply plan.
#include "prod/cli/job_cli.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/rfc3339.h"
#include "core/schedule/schedule_text.h"
#include "prod/api/job_json.h"
#include "prod/cli/api_client.h"

namespace kairos::cli {
namespace {

namespace json = boost::json;

const absl::Time kNow = absl::FromUnixSeconds(1796083200);  // 2026-12-01T00:00:00Z

JobAddArgs every_10s() {
  JobAddArgs a;
  a.every = "10s";
  a.program = {"/bin/echo", "hi"};
  return a;
}

TEST(JobAddSpec, CronWithEveryPolicyFlag) {
  JobAddArgs a;
  a.id = "nightly";
  a.cron = "30 2 * * *";
  a.tz = "Europe/Berlin";
  a.dst_gap = "skip";
  a.dst_fold = "both";
  a.program = {"/usr/bin/backup", "--full"};
  a.env = {"MODE=full"};
  a.labels = {"team=data", "tier=gold"};
  a.ns = "ops";
  a.retries = "4";
  a.backoff = "5s:1m";
  a.timeout = "20m";
  a.misfire = "catch-up";
  a.overlap = "allow:3";
  a.priority = "7";
  auto spec = job_add_spec(a, kNow, "job-unused");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->id, "nightly");
  EXPECT_EQ(spec->ns, "ops");
  EXPECT_EQ(spec->labels, (std::map<std::string, std::string>{{"team", "data"}, {"tier", "gold"}}));
  EXPECT_EQ(spec->schedule.kind, ScheduleSpec::Kind::kCron);
  EXPECT_EQ(spec->schedule.cron, "30 2 * * *");
  EXPECT_EQ(spec->schedule.zone, "Europe/Berlin");
  EXPECT_EQ(spec->schedule.dst_gap, DstGap::kSkip);
  EXPECT_EQ(spec->schedule.dst_fold, DstFold::kBoth);
  const auto& cmd = std::get<CommandPayload>(spec->payload);
  EXPECT_EQ(cmd.argv, (std::vector<std::string>{"/usr/bin/backup", "--full"}));
  EXPECT_EQ(cmd.env, (std::vector<std::pair<std::string, std::string>>{{"MODE", "full"}}));
  EXPECT_EQ(spec->policy.max_attempts, 5u);
  EXPECT_EQ(spec->policy.retry_initial, absl::Seconds(5));
  EXPECT_EQ(spec->policy.retry_max, absl::Minutes(1));
  EXPECT_EQ(spec->policy.timeout, absl::Minutes(20));
  EXPECT_EQ(spec->policy.misfire, MisfirePolicy::kCatchUp);
  EXPECT_EQ(spec->policy.overlap, OverlapPolicy::kAllow);
  EXPECT_EQ(spec->policy.max_concurrent, 3u);
  EXPECT_EQ(spec->policy.priority, 7);
  // What the CLI sends decodes, on the server, to the same spec.
  auto back = api::job_spec_from_json(json::value(api::job_spec_to_json(*spec)));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, *spec);
}

TEST(JobAddSpec, DefaultsAndGeneratedId) {
  auto spec = job_add_spec(every_10s(), kNow, "job-0123456789abcdef");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->id, "job-0123456789abcdef");
  EXPECT_EQ(spec->ns, "default");
  EXPECT_EQ(spec->schedule.kind, ScheduleSpec::Kind::kInterval);
  EXPECT_EQ(spec->schedule.every, absl::Seconds(10));
  EXPECT_EQ(spec->schedule.start, absl::UnixEpoch());
  EXPECT_EQ(spec->policy, JobPolicy());
}

TEST(JobAddSpec, InIsNowPlusTheDurationAndAtIsParsed) {
  JobAddArgs a = every_10s();
  a.every.clear();
  a.in = "90s";
  auto in = job_add_spec(a, kNow, "job-a");
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_EQ(in->schedule.kind, ScheduleSpec::Kind::kOnce);
  EXPECT_EQ(in->schedule.at, kNow + absl::Seconds(90));
  a.in.clear();
  a.at = "2026-12-01T10:00:00+01:00";
  auto at = job_add_spec(a, kNow, "job-a");
  ASSERT_TRUE(at.ok()) << at.status();
  EXPECT_EQ(format_rfc3339_utc(at->schedule.at), "2026-12-01T09:00:00Z");
}

TEST(JobAddSpec, ShellAndHttpPayloads) {
  JobAddArgs a = every_10s();
  a.program.clear();
  a.shell = "echo $HOME | wc -c";
  auto sh = job_add_spec(a, kNow, "job-a");
  ASSERT_TRUE(sh.ok()) << sh.status();
  EXPECT_EQ(std::get<CommandPayload>(sh->payload).argv,
            (std::vector<std::string>{"/bin/sh", "-c", "echo $HOME | wc -c"}));
  a.shell.clear();
  a.http_url = "http://hooks.internal/ping";
  a.http_method = "PUT";
  a.headers = {"X-Team: data", "Content-Type:text/plain"};
  a.body = "hello";
  auto http = job_add_spec(a, kNow, "job-a");
  ASSERT_TRUE(http.ok()) << http.status();
  const auto& h = std::get<HttpPayload>(http->payload);
  EXPECT_EQ(h.url, "http://hooks.internal/ping");
  EXPECT_EQ(h.method, "PUT");
  EXPECT_EQ(h.headers, (std::vector<std::pair<std::string, std::string>>{
                           {"X-Team", "data"}, {"Content-Type", "text/plain"}}));
  EXPECT_EQ(h.body, "hello");
}

// Refusals: kInvalidArgument (exit 2), the flag and the contract's field named.
void expect_refused(const JobAddArgs& a, std::string_view flag, std::string_view field = {}) {
  auto spec = job_add_spec(a, kNow, "job-a");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(exit_code(spec.status()), kExitUsage) << spec.status();
  EXPECT_NE(std::string(spec.status().message()).find(flag), std::string::npos) << spec.status();
  if (!field.empty()) {
    EXPECT_EQ(api::error_field(spec.status()), field) << spec.status();
  }
}

TEST(JobAddSpec, RefusesWhatTheServerRefusesNamingFlagAndField) {
  JobAddArgs a = every_10s();
  a.every.clear();
  a.cron = "61 * * * *";
  expect_refused(a, "flag --cron (schedule.cron): ", "schedule.cron");
  a.cron = "0 * * * *";
  a.tz = "Mars/Olympus";
  expect_refused(a, "flag --tz", "schedule.zone");
  a = every_10s();
  a.priority = "12";
  expect_refused(a, "flag --priority", "policy.priority");
  a.priority = "high";
  expect_refused(a, "flag --priority");
  a = every_10s();
  a.every = "10 seconds";
  expect_refused(a, "flag --every", "schedule.every");
  a = every_10s();
  a.misfire = "sometimes";
  expect_refused(a, "flag --misfire", "policy.misfire");
  a = every_10s();
  a.backoff = "soon";
  expect_refused(a, "flag --backoff", "policy.retry_initial");
  a = every_10s();
  a.overlap = "skip:2";
  expect_refused(a, "flag --overlap");
  a = every_10s();
  a.labels = {"a=1", "a=2"};
  expect_refused(a, "flag --label");
  a = every_10s();
  a.labels = {"novalue"};
  expect_refused(a, "flag --label");
  a = every_10s();
  a.id = "bad id with spaces";
  expect_refused(a, "flag --id", "id");
  a = every_10s();
  a.tz = "UTC";
  expect_refused(a, "flag --tz");  // only with --cron
  a = every_10s();
  a.in = "5m";
  expect_refused(a, "exactly one");
  a = every_10s();
  a.every.clear();
  expect_refused(a, "--cron, --at, --in or --every");
  a = every_10s();
  a.shell = "true";
  expect_refused(a, "exactly one of");
  a = every_10s();
  a.http_method = "GET";
  expect_refused(a, "flag --http-method");
  a = every_10s();
  a.every.clear();
  a.in = "-5m";
  expect_refused(a, "flag --in");
  a = every_10s();
  a.every.clear();
  a.at = "tomorrow";
  expect_refused(a, "flag --at", "schedule.at");
}

TEST(JobAddSpec, GeneratedIdsHaveTheContractShape) {
  EXPECT_EQ(job_id_from_random(0x0123456789abcdefULL), "job-0123456789abcdef");
  EXPECT_EQ(job_id_from_random(0), "job-0000000000000000");
}

JobRecord record(const JobSpec& spec) {
  JobRecord r;
  r.spec = spec;
  r.incarnation = 1;
  r.generation = 3;
  r.created_at = kNow;
  r.updated_at = kNow;
  r.next_due_at = kNow + absl::Seconds(10);
  r.next_nominal = kNow + absl::Seconds(10);
  return r;
}

TEST(Render, TablesAreAlignedAndShowTheStatus) {
  EXPECT_EQ(format_table({{"A", "BB"}, {"ccc", "d"}}), "A    BB\nccc  d\n");
  JobAddArgs a = every_10s();
  a.id = "tick";
  JobRecord r = record(*job_add_spec(a, kNow, ""));
  r.paused = true;
  json::array jobs = {json::value(api::job_to_json(r))};
  EXPECT_EQ(render_jobs(jobs),
            "ID    NAMESPACE  SCHEDULE   STATE   NEXT DUE              GEN\n"
            "tick  default    every 10s  paused  2026-12-01T00:00:10Z  3\n");
  const std::string one = render_job(jobs[0]);
  EXPECT_NE(one.find("work:          command /bin/echo hi\n"), std::string::npos) << one;
  EXPECT_NE(one.find("generation:    3\n"), std::string::npos) << one;
}

TEST(Render, LedgerShowsOutcomeAndDetailPerOccurrence) {
  LedgerRecord fired;
  fired.incarnation = 1;
  fired.nominal = kNow;
  fired.through = kNow;
  fired.fire_at = kNow;
  fired.run_nominal = kNow;
  fired.outcome = LedgerOutcome::kFired;
  LedgerRecord skipped = fired;
  skipped.nominal = kNow + absl::Hours(1);
  skipped.through = kNow + absl::Hours(3);
  skipped.count = 3;
  skipped.outcome = LedgerOutcome::kSkippedMisfire;
  skipped.run_nominal = absl::InfinitePast();
  skipped.detail = "misfire skip: 2h late";
  const std::string out = render_ledger(json::array{json::value(api::ledger_to_json(fired)),
                                                    json::value(api::ledger_to_json(skipped))});
  EXPECT_NE(out.find("2026-12-01T00:00:00Z  1 "), std::string::npos) << out;
  EXPECT_NE(out.find("3 (to 2026-12-01T03:00:00Z)"), std::string::npos) << out;
  EXPECT_NE(out.find("misfire skip: 2h late"), std::string::npos) << out;
  EXPECT_NE(out.find(std::string(to_string(LedgerOutcome::kSkippedMisfire))), std::string::npos);
}

TEST(Render, ClusterObjectsBecomeTables) {
  auto v = api::parse_json(
      R"({"node":"n1","shards":[{"shard":0,"leader":"n1","epoch":4},{"shard":1,"leader":null,"epoch":0}]})");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(render_object(v->get_object()),
            "node:  n1\n\nshards:\nSHARD  LEADER  EPOCH\n0      n1      4\n1      -       0\n");
}

TEST(Render, PrettyJsonParsesBack) {
  auto v = api::parse_json(R"({"a":[1,{"b":"x"}],"c":{},"d":null})");
  ASSERT_TRUE(v.ok());
  const std::string text = pretty_json(*v);
  EXPECT_NE(text.find("\n  \"a\": [\n    1,"), std::string::npos) << text;
  EXPECT_EQ(*api::parse_json(text), *v);
}

// ---- apply -------------------------------------------------------------------

std::string job_text(const std::string& id, const std::string& every,
                     const std::string& ns = "default") {
  return absl::StrCat(R"({"id":")", id, R"(","namespace":")", ns, R"(","schedule":{"every":")",
                      every, R"("},"command":{"argv":["/bin/true"]}})");
}

TEST(Apply, FileShapesAndRefusals) {
  auto two = read_apply_file(
      absl::StrCat("{\"jobs\":[", job_text("a", "10s"), ",", job_text("b", "1m"), "]}"));
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ(two->size(), 2u);
  auto array = read_apply_file(absl::StrCat("[", job_text("a", "10s"), "]"));
  ASSERT_TRUE(array.ok()) << array.status();

  auto no_id = read_apply_file(R"([{"schedule":{"every":"1s"},"command":{"argv":["x"]}}])");
  EXPECT_EQ(api::error_field(no_id.status()), "jobs[0].id") << no_id.status();
  auto twice =
      read_apply_file(absl::StrCat("[", job_text("a", "1s"), ",", job_text("a", "2s"), "]"));
  EXPECT_EQ(api::error_field(twice.status()), "jobs[1].id") << twice.status();
  auto bad =
      read_apply_file(absl::StrCat("[", job_text("a", "1s"), ",", job_text("b", "1 s"), "]"));
  EXPECT_EQ(api::error_field(bad.status()), "jobs[1].schedule.every") << bad.status();
  EXPECT_EQ(exit_code(bad.status()), kExitUsage);
  EXPECT_FALSE(read_apply_file(R"({"job":[]})").ok());
  EXPECT_FALSE(read_apply_file("not json").ok());
}

TEST(Apply, PlanCreatesChangesKeepsAndPrunes) {
  auto wanted = read_apply_file(absl::StrCat(
      "[", job_text("new", "10s"), ",", job_text("same", "1m"), ",", job_text("moved", "5m"), "]"));
  ASSERT_TRUE(wanted.ok()) << wanted.status();
  auto current = [](const std::string& id, const std::string& every, const std::string& ns) {
    JobRecord r = record(read_apply_file(absl::StrCat("[", job_text(id, every, ns), "]"))->at(0));
    return json::value(api::job_to_json(r));
  };
  std::vector<json::value> remote = {
      current("same", "1m", "default"), current("moved", "1m", "default"),
      current("stale", "1h", "default"), current("elsewhere", "1h", "other")};
  auto plan = plan_apply(*wanted, remote, /*prune=*/true);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->size(), 4u);
  EXPECT_EQ((*plan)[0].kind, PlanStep::Kind::kCreate);
  EXPECT_EQ((*plan)[1].kind, PlanStep::Kind::kUnchanged);
  EXPECT_EQ((*plan)[2].kind, PlanStep::Kind::kChange);
  EXPECT_EQ((*plan)[2].diff, (std::vector<std::string>{R"(schedule.every: "1m" -> "5m")"}));
  EXPECT_EQ((*plan)[2].generation, 3u);
  EXPECT_EQ((*plan)[3].kind, PlanStep::Kind::kCancel);  // "elsewhere" is another namespace
  EXPECT_EQ((*plan)[3].id, "stale");
  EXPECT_EQ(render_plan(*plan),
            "create new (namespace default)\n"
            "unchanged same (namespace default)\n"
            "change moved (namespace default)\n"
            "    schedule.every: \"1m\" -> \"5m\"\n"
            "cancel stale (namespace default)\n"
            "1 to create, 1 to change, 1 unchanged, 1 to cancel\n");
  auto no_prune = plan_apply(*wanted, remote, /*prune=*/false);
  EXPECT_EQ(no_prune->size(), 3u);
}

// ---- command-line plumbing ---------------------------------------------------

TEST(CommandLine, RepeatableFlagsAreCollectedInOrderUntilTheDashes) {
  std::vector<std::string> labels;
  std::string every;
  FlagTable table("kairos job add", "s", "d");
  table.add({"every", "D", "", "", set_string(&every)});
  table.allow_positional();
  std::vector<std::string> args = {"add",         "--label", "a=1",  "--every", "10s",
                                   "--label=b=2", "--",      "prog", "--label", "c=3"};
  std::vector<char*> argv;
  for (auto& s : args) argv.push_back(s.data());
  auto code = parse_command_line(table, static_cast<int>(argv.size()), argv.data(),
                                 {{"label", "K=V", "", "", append_to(&labels)}});
  EXPECT_FALSE(code.has_value());
  EXPECT_EQ(labels, (std::vector<std::string>{"a=1", "b=2"}));
  EXPECT_EQ(every, "10s");
  EXPECT_EQ(table.positional(), (std::vector<std::string>{"prog", "--label", "c=3"}));
}

}  // namespace
}  // namespace kairos::cli
