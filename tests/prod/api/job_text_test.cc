// The job text encoder (append_job_json / append_job_spec_json): its text is
// byte for byte what boost::json::serialize writes for the job's JSON value,
// built here member by member as the contract lists them (the reference),
// for jobs of every schedule and payload kind and for strings holding every
// byte a JSON string must escape, non-ASCII text and repeated map keys.
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <random>
#include <string>

#include "absl/time/time.h"
#include "core/base/duration.h"
#include "core/base/rfc3339.h"
#include "prod/api/job_json.h"

namespace kairos::api {
namespace {

namespace json = boost::json;

json::value time_or_null(absl::Time t) {
  if (t == absl::InfinitePast() || t == absl::InfiniteFuture()) return nullptr;
  return json::value(format_rfc3339_utc(t));
}

json::object pairs(const std::vector<std::pair<std::string, std::string>>& kv) {
  json::object o;
  for (const auto& [k, v] : kv) o[k] = v;
  return o;
}

// The contract's job body, built as a JSON value (docs/API.md's order).
json::object reference(const JobRecord& job, bool with_status) {
  const JobSpec& spec = job.spec;
  json::object o;
  if (!spec.id.empty()) o["id"] = spec.id;
  o["namespace"] = spec.ns;
  json::object labels;
  for (const auto& [k, v] : spec.labels) labels[k] = v;
  o["labels"] = std::move(labels);
  const ScheduleSpec& s = spec.schedule;
  json::object schedule;
  if (s.kind == ScheduleSpec::Kind::kCron) {
    schedule["cron"] = s.cron;
    schedule["zone"] = s.zone;
    schedule["dst_gap"] = s.dst_gap == DstGap::kShift ? "shift" : "skip";
    schedule["dst_fold"] = s.dst_fold == DstFold::kFirst  ? "first"
                           : s.dst_fold == DstFold::kLast ? "last"
                                                          : "both";
  } else if (s.kind == ScheduleSpec::Kind::kOnce) {
    schedule["at"] = format_rfc3339_utc(s.at);
  } else {
    schedule["every"] = format_duration(s.every);
    schedule["start"] = format_rfc3339_utc(s.start);
    if (s.end != absl::InfiniteFuture()) schedule["end"] = format_rfc3339_utc(s.end);
  }
  schedule["jitter"] = format_duration(s.jitter);
  o["schedule"] = std::move(schedule);
  if (const auto* c = std::get_if<CommandPayload>(&spec.payload)) {
    json::object command;
    json::array argv;
    for (const auto& a : c->argv) argv.emplace_back(a);
    command["argv"] = std::move(argv);
    command["env"] = pairs(c->env);
    if (!c->working_dir.empty()) command["working_dir"] = c->working_dir;
    o["command"] = std::move(command);
  } else {
    const auto& h = std::get<HttpPayload>(spec.payload);
    o["http"] = json::object{
        {"method", h.method}, {"url", h.url}, {"headers", pairs(h.headers)}, {"body", h.body}};
  }
  const JobPolicy& p = spec.policy;
  const char* misfire = p.misfire == MisfirePolicy::kRunOnce   ? "run-once"
                        : p.misfire == MisfirePolicy::kCatchUp ? "catch-up"
                                                               : "skip";
  const char* overlap = p.overlap == OverlapPolicy::kSkip    ? "skip"
                        : p.overlap == OverlapPolicy::kQueue ? "queue"
                                                             : "allow";
  json::object policy;
  policy["max_attempts"] = p.max_attempts;
  policy["retry_initial"] = format_duration(p.retry_initial);
  policy["retry_multiplier_percent"] = p.retry_multiplier_percent;
  policy["retry_max"] = format_duration(p.retry_max);
  policy["retry_jitter_percent"] = p.retry_jitter_percent;
  policy["timeout"] = format_duration(p.timeout);
  policy["misfire"] = misfire;
  policy["misfire_threshold"] = format_duration(p.misfire_threshold);
  policy["catch_up_max"] = p.catch_up_max;
  policy["catch_up_spacing"] = format_duration(p.catch_up_spacing);
  policy["overlap"] = overlap;
  policy["max_concurrent"] = p.max_concurrent;
  policy["priority"] = p.priority;
  o["policy"] = std::move(policy);
  if (!with_status) return o;
  json::object status;
  status["state"] = job.state == JobState::kActive ? "active" : "cancelled";
  status["paused"] = job.paused;
  status["incarnation"] = job.incarnation;
  status["generation"] = job.generation;
  status["created_at"] = time_or_null(job.created_at);
  status["updated_at"] = time_or_null(job.updated_at);
  status["next_due_at"] = job.next_due_at ? time_or_null(*job.next_due_at) : json::value(nullptr);
  status["next_nominal"] = time_or_null(job.next_nominal);
  status["cancelled_at"] = time_or_null(job.cancelled_at);
  o["status"] = std::move(status);
  return o;
}

// A string of `n` random bytes drawn from those a JSON string escapes,
// printable ASCII and pieces of UTF-8 text.
std::string hostile(std::mt19937& rng, std::size_t n) {
  static const std::vector<std::string> pieces = {
      "\"",   "\\",   "\n", "\t", "\b", "\f", "\r",       std::string(1, '\0'), "\x01",
      "\x1f", "\x7f", "/",  "a",  "Z",  " ",  "\xc3\xa9", "\xe2\x82\xac",       "\xf0\x9f\x98\x80",
      "<",    "&"};
  std::string s;
  for (std::size_t i = 0; i < n; ++i) s += pieces[rng() % pieces.size()];
  return s;
}

JobRecord random_job(std::mt19937& rng) {
  JobRecord job;
  JobSpec& spec = job.spec;
  if (rng() % 4 != 0) spec.id = hostile(rng, rng() % 6);
  spec.ns = hostile(rng, rng() % 4);
  for (int i = 0, n = static_cast<int>(rng() % 3); i < n; ++i)
    spec.labels[hostile(rng, 1 + rng() % 3)] = hostile(rng, rng() % 4);
  const absl::Time base = absl::FromUnixMicros(1'700'000'000'000'000 + rng() % 5'000'000'000);
  switch (rng() % 3) {
    case 0:
      spec.schedule.kind = ScheduleSpec::Kind::kCron;
      spec.schedule.cron = hostile(rng, rng() % 5);
      spec.schedule.zone = hostile(rng, rng() % 3);
      spec.schedule.dst_gap = rng() % 2 ? DstGap::kShift : DstGap::kSkip;
      spec.schedule.dst_fold = static_cast<DstFold>(rng() % 3);
      break;
    case 1:
      spec.schedule.kind = ScheduleSpec::Kind::kOnce;
      spec.schedule.at = base;
      break;
    default:
      spec.schedule.kind = ScheduleSpec::Kind::kInterval;
      spec.schedule.every = absl::Milliseconds(1 + rng() % 100'000'000);
      spec.schedule.start = base - absl::Hours(rng() % 1000);
      if (rng() % 2) spec.schedule.end = base + absl::Hours(rng() % 1000);
  }
  spec.schedule.jitter = absl::Milliseconds(rng() % 3 == 0 ? rng() % 100'000 : 0);
  if (rng() % 2) {
    CommandPayload c;
    for (int i = 0, n = static_cast<int>(rng() % 4); i < n; ++i)
      c.argv.push_back(hostile(rng, rng() % 4));
    // Few distinct keys, so some repeat.
    for (int i = 0, n = static_cast<int>(rng() % 4); i < n; ++i)
      c.env.emplace_back(std::string(1, static_cast<char>('A' + rng() % 2)), hostile(rng, 2));
    if (rng() % 2) c.working_dir = hostile(rng, 3);
    spec.payload = std::move(c);
  } else {
    HttpPayload h;
    h.method = hostile(rng, 2);
    h.url = hostile(rng, 5);
    for (int i = 0, n = static_cast<int>(rng() % 4); i < n; ++i)
      h.headers.emplace_back(std::string(1, static_cast<char>('a' + rng() % 2)), hostile(rng, 2));
    h.body = hostile(rng, rng() % 8);
    spec.payload = std::move(h);
  }
  JobPolicy& p = spec.policy;
  if (rng() % 2) {
    p.max_attempts = static_cast<std::uint32_t>(rng());
    p.retry_initial = absl::Milliseconds(rng() % 1'000'000);
    p.misfire = static_cast<MisfirePolicy>(rng() % 3);
    p.overlap = static_cast<OverlapPolicy>(rng() % 3);
    p.priority = static_cast<std::int32_t>(rng()) % 100;
    p.timeout = rng() % 5 == 0 ? absl::InfiniteDuration() : absl::Seconds(rng() % 100'000);
  }
  job.incarnation = rng() % 3 == 0 ? ~std::uint64_t{0} : rng() % 100;
  job.generation = rng() % 1000;
  job.state = rng() % 3 == 0 ? JobState::kCancelled : JobState::kActive;
  job.paused = rng() % 2;
  job.created_at = rng() % 5 == 0 ? absl::InfinitePast() : base - absl::Seconds(rng() % 100);
  job.updated_at = rng() % 2 ? job.created_at : base;
  if (rng() % 3) job.next_due_at = rng() % 5 == 0 ? absl::InfiniteFuture() : base;
  job.next_nominal = rng() % 3 == 0 ? absl::InfinitePast() : base + absl::Nanoseconds(rng() % 999);
  if (job.state == JobState::kCancelled) job.cancelled_at = base + absl::Seconds(1);
  return job;
}

TEST(JobText, IsWhatSerializeWritesForTheJobsJsonValue) {
  std::mt19937 rng(20261202);
  for (int i = 0; i < 3000; ++i) {
    const JobRecord job = random_job(rng);
    std::string text;
    append_job_json(text, job);
    ASSERT_EQ(text, json::serialize(reference(job, true))) << "job " << i;
    std::string spec_text;
    append_job_spec_json(spec_text, job.spec);
    ASSERT_EQ(spec_text, json::serialize(reference(job, false))) << "job " << i;
    ASSERT_EQ(json::value(job_to_json(job)), json::value(reference(job, true)));
  }
}

TEST(JobText, AppendsAfterWhatIsThere) {
  std::mt19937 rng(7);
  const JobRecord a = random_job(rng), b = random_job(rng);
  std::string text = "[";
  append_job_json(text, a);
  text += ",";
  append_job_json(text, b);
  text += "]";
  EXPECT_EQ(text, json::serialize(json::array{reference(a, true), reference(b, true)}));
}

}  // namespace
}  // namespace kairos::api
