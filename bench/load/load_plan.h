// What kairos-load creates and what it must find afterwards: the job plan.
//
// Purpose. One place says which jobs a load run creates, when each of their
// occurrences is due, and what the server's record of a job's runs must be
// for the run to count as exactly once. The creating loop, the workers'
// expected count and the check read the same plan, so they cannot disagree.
//
// The jobs. `jobs` measured jobs, id PREFIX + i. Job i's first occurrence
// is due at `first_due` + i / `rate` (all at `first_due` when rate is 0).
// A one-off job (`every` zero) has that one occurrence; a recurring job
// (`every` > 0, an `every` schedule from its first occurrence with an
// inclusive `end`, overlap allow up to 100 at once) has `occurrences` of them, `every` apart.
// Besides those, `stored` jobs, id PREFIX + "stored-" + i, are one-off jobs due a year after
// `first_due`: they only fill the store, and none may run.
//
// The check. A measured job's runs (GET /v1/jobs/{id}/runs, oldest first)
// must be exactly its occurrences in order: each the scheduled run of that
// nominal time, succeeded, with exactly one attempt. Anything else (a manual
// or extra run, a missing occurrence, a retry) is a problem named with the
// job and the occurrence.
#pragma once

#include <boost/json/value.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/time/time.h"

namespace kairos::load {

struct JobPlan {
  std::string prefix;  // "load-TAG-"
  std::string tag;     // the label value every created job carries
  std::uint32_t jobs = 0;
  std::uint32_t rate = 0;  // first occurrences per second; 0: all at first_due
  absl::Time first_due;
  absl::Duration every = absl::ZeroDuration();  // zero: one-off jobs
  std::uint32_t occurrences = 1;                // per measured job (1 when one-off)
  std::uint32_t stored = 0;

  std::string id(std::uint32_t i) const;
  std::string stored_id(std::uint32_t i) const;
  absl::Time first_of(std::uint32_t i) const;
  absl::Time nominal(std::uint32_t i, std::uint32_t k) const { return first_of(i) + every * k; }
  // The last occurrence of any measured job.
  absl::Time last_due() const;
  std::uint64_t total_runs() const { return std::uint64_t{jobs} * occurrences; }
  // The job's JSON for POST /v1/jobs:batch.
  boost::json::value job(std::uint32_t i) const;
  boost::json::value stored_job(std::uint32_t i) const;
  // nullopt when the runs of job i (a GET /v1/jobs/{id}/runs body) are
  // exactly its occurrences; otherwise what differs.
  std::optional<std::string> check_runs(std::uint32_t i, const boost::json::value& body) const;
};

}  // namespace kairos::load
