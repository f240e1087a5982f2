// Next fires: GET /v1/jobs/{id}/next, a job's upcoming occurrences in words.
//
// Purpose. The dashboard's job page (and any client) shows when a job will
// run next and what the DST rules will do to those fires, the same answer
// `kairos cron next|explain` prints (core/schedule/explain.h), computed from
// the job's stored schedule by the one Schedule code the scheduler uses.
//
// Guarantees.
// - Query: count (1..100, default 10) and from (RFC 3339; default: just
//   before the job's next nominal occurrence, i.e. the fires the scheduler
//   will take next, a due backlog included). Unknown parameters are 400.
// - Body: {"job_id", "description" (the schedule in words), "explain"
//   (lines of `cron explain`; cron schedules only, else empty), "fires":
//   [{"at", "nominal", "local" (wall time in the job's zone, with its
//   offset), "note" (the DST rule's note, "" when none)}]}. A job with no
//   further occurrence (cancelled, a one-off past its instant) has no fires.
// - Read-only: one read of the job, no write.
#pragma once

#include <string>

#include "core/kernel/scheduler_node.h"
#include "core/schedule/schedule.h"
#include "prod/http/http_server.h"

namespace kairos::api {

// The schedule in words: "at 02:30 on every day (Europe/Berlin)",
// "every 30s from 2026-01-01T00:00:00Z", "once at 2026-12-01T10:00:00Z".
std::string describe_schedule(const ScheduleSpec& spec, std::string_view job_id);

// `node` outlives the handler.
http::Handler next_fires_handler(SchedulerNode& node);

}  // namespace kairos::api
