// Words for cron schedules: describe() an expression, explain() a schedule
// (its DST class and warnings about risky cases), note() for one fire.
// Pure functions over CronExpr/CronSchedule; `now` is passed in.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "core/schedule/cron_expr.h"
#include "core/schedule/cron_schedule.h"
#include "core/schedule/schedule.h"

namespace kairos::cron {

// "at 02:30 on every day", "every 15 minutes on Monday through Friday", ...
std::string describe(const CronExpr& e);

// Lines for `kairos cron explain`: the description with its zone, the DST
// class and policy, then warnings (each line starting "warning: "):
// - a fixed-time schedule whose local time falls inside a DST gap or fold of
//   its zone within the next 5 years (the first such date of each kind and
//   what Kairos will do there);
// - an expression that does not fire every calendar year.
std::vector<std::string> explain(const CronSchedule& s, std::string_view zone_name, absl::Time now);

// The note printed after a fire ("" when no DST rule was involved).
std::string note(const Fire& f, const CronSchedule& s);

}  // namespace kairos::cron
