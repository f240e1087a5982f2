#include "bench/load/load_plan.h"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include "absl/strings/str_cat.h"
#include "core/base/duration.h"
#include "core/base/rfc3339.h"

namespace kairos::load {
namespace json = boost::json;

namespace {

json::value job_body(const std::string& id, const std::string& tag, json::object schedule) {
  return json::object{{"id", id},
                      {"labels", json::object{{"kairos-load", tag}}},
                      {"schedule", std::move(schedule)},
                      {"command", json::object{{"argv", json::array{"/bin/true"}}}}};
}

}  // namespace

std::string JobPlan::id(std::uint32_t i) const { return absl::StrCat(prefix, i); }

std::string JobPlan::stored_id(std::uint32_t i) const { return absl::StrCat(prefix, "stored-", i); }

absl::Time JobPlan::first_of(std::uint32_t i) const {
  if (rate == 0) return first_due;
  return first_due + absl::Microseconds(static_cast<std::int64_t>(i) * 1000000 / rate);
}

absl::Time JobPlan::last_due() const {
  return jobs == 0 ? first_due : nominal(jobs - 1, occurrences - 1);
}

json::value JobPlan::job(std::uint32_t i) const {
  const absl::Time first = first_of(i);
  if (every == absl::ZeroDuration())
    return job_body(id(i), tag, json::object{{"at", format_rfc3339_utc(first)}});
  // The job's runs are its occurrences only: overlap allow (up to 100 runs
  // of the job at once) instead of a skip when one is still running as the
  // next comes due, so none is dropped unless the server falls 100
  // occurrences behind (overlap queue holds only one waiting run).
  json::value body =
      job_body(id(i), tag,
               json::object{{"every", format_duration(every)},
                            {"start", format_rfc3339_utc(first)},
                            {"end", format_rfc3339_utc(nominal(i, occurrences - 1))}});
  body.as_object()["policy"] = json::object{{"overlap", "allow"}, {"max_concurrent", 100}};
  return body;
}

json::value JobPlan::stored_job(std::uint32_t i) const {
  return job_body(stored_id(i), tag,
                  json::object{{"at", format_rfc3339_utc(first_due + absl::Hours(24 * 365))}});
}

std::optional<std::string> JobPlan::check_runs(std::uint32_t i, const json::value& body) const {
  const json::object* o = body.if_object();
  const json::value* runs = o != nullptr ? o->if_contains("runs") : nullptr;
  if (runs == nullptr || !runs->is_array()) return "no \"runs\" array";
  const json::array& a = runs->get_array();
  if (a.size() != occurrences)
    return absl::StrCat(a.size(), " runs, expected ", occurrences, " (one per occurrence)");
  for (std::uint32_t k = 0; k < occurrences; ++k) {
    const json::object* run = a[k].if_object();
    if (run == nullptr) return "a run that is not an object";
    auto text = [&](std::string_view key) -> std::string {
      const json::value* v = run->if_contains(key);
      return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string("null");
    };
    const std::string expected = format_rfc3339_utc(nominal(i, k));
    if (text("kind") != "scheduled" || text("nominal") != expected)
      return absl::StrCat("a ", text("kind"), " run of ", text("nominal"),
                          ", expected the scheduled run of ", expected);
    if (text("state") != "succeeded" || text("outcome") != "succeeded")
      return absl::StrCat("the run of ", expected, ": state ", text("state"), ", outcome ",
                          text("outcome"));
    const json::value* attempts = run->if_contains("attempts");
    if (attempts == nullptr || !attempts->is_array() || attempts->get_array().size() != 1)
      return absl::StrCat(
          "the run of ", expected, ": ",
          attempts != nullptr && attempts->is_array() ? attempts->get_array().size() : 0,
          " attempts");
  }
  return std::nullopt;
}

}  // namespace kairos::load
