// Shared by the tests that run jobs through the real job shim (the `kairos`
// binary re-executed as `kairos __job-shim`): one request builder and one
// runner configuration. Include only from a target that defines
// KAIROS_BINARY (the path of the built `kairos`).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "core/kernel/records.h"
#include "core/ports/clock.h"
#include "core/ports/runner.h"
#include "prod/runners/process_runner.h"
#include "tests/support/temp_dir.h"

namespace kairos::test_support {

// The names of the entries of `dir`, in directory order.
inline std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    out.push_back(e.path().filename().string());
  return out;
}

// Run `argv` as attempt `attempt` of job-1 (incarnation 2) at `nominal`,
// with fencing token 42 and a deadline five minutes from now.
inline RunRequest shim_request(const Clock& clock, std::vector<std::string> argv,
                               absl::Time nominal, std::uint32_t attempt) {
  RunRequest r;
  r.job_id = "job-1";
  r.incarnation = 2;
  r.nominal_time = nominal;
  r.attempt = attempt;
  r.fencing_token = 42;
  r.idempotency_key = idempotency_key(RunId{r.job_id, r.incarnation, r.nominal_time});
  r.payload = CommandPayload{std::move(argv), {}, {}};
  r.deadline = clock.now() + absl::Minutes(5);
  return r;
}

// A ProcessRunner that starts every attempt through the shim and keeps its
// job-group records in `records`.
inline ProcessRunnerOptions shim_options(const std::string& records) {
  ProcessRunnerOptions o;
  o.kill_grace = absl::Milliseconds(500);
  o.job_shim = KAIROS_BINARY;
  o.record_dir = records;
  return o;
}

}  // namespace kairos::test_support
