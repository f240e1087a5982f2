// kairos-load's job plan: the jobs it creates and the check that decides
// "exactly once". A check that accepts a wrong record would let a fast
// wrong answer pass, so each way a job's runs can differ from its
// occurrences must be named.
#include "bench/load/load_plan.h"

#include <gtest/gtest.h>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>

#include "core/base/rfc3339.h"

namespace kairos::load {
namespace {
namespace json = boost::json;

JobPlan recurring() {
  JobPlan p;
  p.prefix = "load-t-";
  p.tag = "t";
  p.jobs = 4;
  p.rate = 2;  // first occurrences half a second apart
  p.first_due = absl::FromUnixSeconds(1'800'000'000);
  p.every = absl::Seconds(1);
  p.occurrences = 3;
  p.stored = 2;
  return p;
}

json::object run(const JobPlan& p, std::uint32_t i, std::uint32_t k) {
  return json::object{{"kind", "scheduled"},
                      {"nominal", format_rfc3339_utc(p.nominal(i, k))},
                      {"state", "succeeded"},
                      {"outcome", "succeeded"},
                      {"attempts", json::array{json::object{{"attempt", 1}}}}};
}

json::value runs_of(const JobPlan& p, std::uint32_t i) {
  json::array a;
  for (std::uint32_t k = 0; k < p.occurrences; ++k) a.push_back(run(p, i, k));
  return json::object{{"runs", std::move(a)}};
}

TEST(LoadPlan, OccurrencesFollowTheRateAndThePeriod) {
  const JobPlan p = recurring();
  EXPECT_EQ(p.first_of(0), p.first_due);
  EXPECT_EQ(p.first_of(3), p.first_due + absl::Milliseconds(1500));
  EXPECT_EQ(p.nominal(3, 2), p.first_due + absl::Milliseconds(3500));
  EXPECT_EQ(p.last_due(), p.nominal(3, 2));
  EXPECT_EQ(p.total_runs(), 12u);
  EXPECT_EQ(p.id(3), "load-t-3");
  EXPECT_EQ(p.stored_id(1), "load-t-stored-1");
}

TEST(LoadPlan, ARecurringJobsScheduleEndsOnItsLastOccurrenceAndAllowsOverlap) {
  const JobPlan p = recurring();
  const json::object j = p.job(1).as_object();
  const json::object& s = j.at("schedule").as_object();
  EXPECT_EQ(s.at("every").as_string(), "1s");
  EXPECT_EQ(s.at("start").as_string(), format_rfc3339_utc(p.nominal(1, 0)));
  EXPECT_EQ(s.at("end").as_string(), format_rfc3339_utc(p.nominal(1, 2)));
  EXPECT_EQ(j.at("policy").as_object().at("overlap").as_string(), "allow");
  EXPECT_EQ(j.at("policy").as_object().at("max_concurrent").as_int64(), 100);
  EXPECT_EQ(j.at("labels").as_object().at("kairos-load").as_string(), "t");
}

TEST(LoadPlan, OneOffAndStoredJobs) {
  JobPlan p = recurring();
  p.every = absl::ZeroDuration();
  p.occurrences = 1;
  const json::object j = p.job(2).as_object();
  EXPECT_EQ(j.at("schedule").as_object().at("at").as_string(), format_rfc3339_utc(p.first_of(2)));
  EXPECT_FALSE(j.contains("policy"));
  const json::object st = p.stored_job(0).as_object();
  EXPECT_EQ(st.at("id").as_string(), "load-t-stored-0");
  EXPECT_EQ(st.at("schedule").as_object().at("at").as_string(),
            format_rfc3339_utc(p.first_due + absl::Hours(24 * 365)));
}

TEST(LoadPlan, TheCheckAcceptsExactlyTheOccurrences) {
  const JobPlan p = recurring();
  EXPECT_EQ(p.check_runs(2, runs_of(p, 2)), std::nullopt);
}

TEST(LoadPlan, TheCheckNamesEveryWayTheRunsDiffer) {
  const JobPlan p = recurring();
  auto with = [&](auto change) {
    json::value body = runs_of(p, 1);
    change(body.as_object()["runs"].as_array());
    return p.check_runs(1, body).value_or("accepted");
  };
  EXPECT_EQ(with([](json::array& a) { a.pop_back(); }), "2 runs, expected 3 (one per occurrence)");
  EXPECT_EQ(with([&](json::array& a) { a.push_back(run(p, 1, 2)); }),
            "4 runs, expected 3 (one per occurrence)");
  const std::string second = format_rfc3339_utc(p.nominal(1, 1));
  EXPECT_EQ(with([](json::array& a) { a[1].as_object()["kind"] = "manual"; }),
            "a manual run of " + second + ", expected the scheduled run of " + second);
  EXPECT_EQ(with([&](json::array& a) { a[1] = run(p, 2, 1); }),
            "a scheduled run of " + format_rfc3339_utc(p.nominal(2, 1)) +
                ", expected the scheduled run of " + second);
  EXPECT_EQ(with([](json::array& a) { a[1].as_object()["outcome"] = "failed"; }),
            "the run of " + second + ": state succeeded, outcome failed");
  EXPECT_EQ(with([](json::array& a) { a[1].as_object()["attempts"].as_array().push_back(1); }),
            "the run of " + second + ": 2 attempts");
  EXPECT_EQ(p.check_runs(1, json::parse(R"({"jobs": []})")).value_or("accepted"),
            "no \"runs\" array");
}

}  // namespace
}  // namespace kairos::load
