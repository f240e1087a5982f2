#include "prod/api/next_fires.h"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <charconv>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "core/base/duration.h"
#include "core/base/rfc3339.h"
#include "core/base/text.h"
#include "core/schedule/cron_schedule.h"
#include "core/schedule/explain.h"
#include "core/schedule/schedule_text.h"
#include "prod/api/job_json.h"

namespace kairos::api {
namespace json = boost::json;

namespace {

constexpr std::size_t kMaxCount = 100;

http::Response json_answer(int status, const json::value& body) {
  http::Response r;
  r.status = status;
  r.body = serialize(body);
  return r;
}

http::Response bad(std::string_view field, std::string_view message) {
  return json_answer(400, error_body("invalid_argument", message, field));
}

}  // namespace

std::string describe_schedule(const ScheduleSpec& spec, std::string_view job_id) {
  switch (spec.kind) {
    case ScheduleSpec::Kind::kCron: {
      auto e = cron::CronExpr::parse(spec.cron, job_id);
      const std::string words = e.ok() ? cron::describe(*e) : spec.cron;
      return absl::StrCat(words, " (", spec.zone, ")");
    }
    case ScheduleSpec::Kind::kOnce:
      return absl::StrCat("once at ", format_rfc3339_utc(spec.at));
    case ScheduleSpec::Kind::kInterval: {
      std::string out = absl::StrCat("every ", format_duration(spec.every));
      if (spec.start != absl::UnixEpoch())
        absl::StrAppend(&out, " from ", format_rfc3339_utc(spec.start));
      if (spec.end != absl::InfiniteFuture())
        absl::StrAppend(&out, " until ", format_rfc3339_utc(spec.end));
      return out;
    }
  }
  return "?";
}

http::Handler next_fires_handler(SchedulerNode& node) {
  return [&node](const http::Request& r, http::Reply reply) {
    std::size_t count = 10;
    std::optional<absl::Time> from;
    for (const auto& [name, value] : r.query) {
      if (name == "count") {
        const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), count);
        if (ec != std::errc() || ptr != value.data() + value.size() || count < 1 ||
            count > kMaxCount)
          return reply(bad("count", absl::StrCat("must be an integer in [1, ", kMaxCount,
                                                 "], got '", excerpt(value), "'")));
      } else if (name == "from") {
        auto t = parse_rfc3339(value);
        if (!t.ok()) return reply(bad("from", std_sv(t.status().message())));
        from = *t;
      } else {
        return reply(bad(name, "unknown query parameter"));
      }
    }
    const std::string id = r.params.at("id");
    node.get_job(id, [reply, id, count, from](absl::StatusOr<std::optional<JobRecord>> result) {
      if (!result.ok())
        return reply(
            json_answer(503, error_body("unavailable", std_sv(result.status().message()))));
      if (!*result)
        return reply(json_answer(
            404, error_body("not_found", absl::StrCat("job '", excerpt(id), "' not found"))));
      const JobRecord& job = **result;
      const ScheduleSpec& spec = job.spec.schedule;
      json::object body;
      body["job_id"] = job.spec.id;
      body["description"] = describe_schedule(spec, job.spec.id);
      json::array explain_lines;
      std::optional<cron::CronSchedule> cron_schedule;
      if (spec.kind == ScheduleSpec::Kind::kCron) {
        auto c = cron::CronSchedule::create(spec.cron, spec.zone, spec.dst_gap, spec.dst_fold,
                                            job.spec.id);
        if (c.ok()) cron_schedule = std::move(*c);
      }
      json::array fires;
      auto schedule = Schedule::compile(spec, job.spec.id);
      // Default start: just before the next occurrence the scheduler will take.
      std::optional<absl::Time> start = from;
      if (!start && job.next_nominal != absl::InfinitePast())
        start = job.next_nominal - absl::Nanoseconds(1);
      if (cron_schedule)
        for (std::string& line :
             cron::explain(*cron_schedule, spec.zone, start.value_or(job.updated_at)))
          explain_lines.emplace_back(std::move(line));
      if (schedule.ok() && start && job.state == JobState::kActive) {
        absl::Time t = *start;
        for (std::size_t i = 0; i < count; ++i) {
          const auto f = schedule->next_after(t);
          if (!f) break;
          t = f->nominal;
          json::object o;
          o["at"] = format_rfc3339_utc(f->at);
          o["nominal"] = format_rfc3339_utc(f->nominal);
          o["local"] = cron_schedule ? format_rfc3339_local(f->at, cron_schedule->zone())
                                     : format_rfc3339_utc(f->at);
          o["note"] = cron_schedule ? cron::note(*f, *cron_schedule) : std::string();
          fires.emplace_back(std::move(o));
        }
      }
      body["explain"] = std::move(explain_lines);
      body["fires"] = std::move(fires);
      reply(json_answer(200, body));
    });
  };
}

}  // namespace kairos::api
