#include "core/schedule/cron_cli.h"

#include <cstdint>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/base/absl_compat.h"
#include "core/base/text.h"
#include "core/schedule/cron_schedule.h"
#include "core/schedule/explain.h"
#include "core/schedule/schedule_text.h"

namespace kairos::cron {
namespace {

constexpr const char* kUsage =
    "usage: kairos cron next [--tz ZONE] [--from RFC3339] [-n N] [--id JOB_ID]\n"
    "                        [--dst-gap shift|skip] [--dst-fold first|last|both] EXPR\n"
    "       kairos cron explain [--tz ZONE] [--from RFC3339] [--id JOB_ID]\n"
    "                        [--dst-gap shift|skip] [--dst-fold first|last|both] EXPR\n"
    "\n"
    "  next      print the next N fires (default 5) strictly after --from (default now):\n"
    "            UTC instant <TAB> local time with offset [<TAB> DST note]\n"
    "  explain   describe the expression and warn about DST transitions and rare fires\n"
    "\n"
    "  --tz ZONE         IANA time zone (default UTC; never the machine's local zone)\n"
    "  --from RFC3339    start instant with offset, e.g. 2026-03-28T00:00:00Z\n"
    "  -n N              number of fires, 1-100000\n"
    "  --id JOB_ID       job id that seeds H fields\n"
    "  --dst-gap         fixed-time schedules: shift (default) or skip nonexistent local times\n"
    "  --dst-fold        fixed-time schedules: first (default), last or both passes of repeated "
    "times\n"
    "EXPR is 5 fields (minute hour day-of-month month day-of-week), 6 with a leading second,\n"
    "or a macro (@hourly, @daily, ...); see docs/SCHEDULES.md.\n";

CliResult usage_error(std::string_view cmd, std::string_view msg) {
  CliResult r;
  r.exit_code = 2;
  r.err =
      absl::StrCat("kairos cron", cmd.empty() ? "" : " ", absl_sv(cmd), ": ", absl_sv(msg), "\n");
  return r;
}

}  // namespace

CliResult run_cron_cli(const std::vector<std::string>& args, absl::Time now) {
  if (args.empty()) return {2, "", kUsage};
  const std::string& cmd = args[0];
  if (cmd == "--help" || cmd == "-h" || cmd == "help") return {0, kUsage, ""};
  if (cmd != "next" && cmd != "explain") {
    return usage_error("", absl::StrCat("unknown subcommand '", excerpt(cmd),
                                        "' (expected next or explain; see kairos cron --help)"));
  }
  std::string zone = "UTC", id;
  absl::Time from = now;
  std::int64_t count = 5;
  DstGap gap = DstGap::kShift;
  DstFold fold = DstFold::kFirst;
  std::vector<std::string> positional;
  bool flags_done = false;
  for (std::size_t i = 1; i < args.size(); ++i) {
    std::string a = args[i];
    if (flags_done || a.empty() || a[0] != '-' || a == "-") {
      positional.push_back(a);
      continue;
    }
    if (a == "--") {
      flags_done = true;
      continue;
    }
    if (a == "--help" || a == "-h") return {0, kUsage, ""};
    std::string name = a, value;
    bool has_value = false;
    if (const auto eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
      name = a.substr(0, eq);
      value = a.substr(eq + 1);
      has_value = true;
    }
    const bool known = name == "--tz" || name == "--from" || name == "-n" || name == "--id" ||
                       name == "--dst-gap" || name == "--dst-fold";
    if (!known || (cmd == "explain" && name == "-n")) {
      // "-1 * * * *" or "-5" looks like a flag; say how to pass it as EXPR.
      const bool looks_like_field = name.size() > 1 && name[1] >= '0' && name[1] <= '9';
      return usage_error(
          cmd, absl::StrCat("unknown flag '", excerpt(name), "' (see kairos cron --help",
                            looks_like_field ? "; to pass an expression that starts with '-', put "
                                               "-- before it: kairos cron next -- '-1 * * * *')"
                                             : ")"));
    }
    if (!has_value) {
      if (i + 1 >= args.size()) return usage_error(cmd, absl::StrCat(name, " needs a value"));
      value = args[++i];
    }
    if (name == "--tz") {
      zone = value;
    } else if (name == "--id") {
      id = value;
    } else if (name == "--from") {
      auto t = parse_rfc3339(value);
      if (!t.ok()) return usage_error(cmd, absl::StrCat("--from: ", t.status().message()));
      from = *t;
    } else if (name == "-n") {
      std::int64_t n = 0;
      bool ok = !value.empty() && value.size() <= 7;
      for (char c : value) ok = ok && c >= '0' && c <= '9';
      if (ok) {
        for (char c : value) n = n * 10 + (c - '0');
      }
      if (!ok || n < 1 || n > 100000) {
        return usage_error(
            cmd, absl::StrCat("-n: '", excerpt(value), "' is not a number from 1 to 100000"));
      }
      count = n;
    } else if (name == "--dst-gap") {
      if (value == "shift")
        gap = DstGap::kShift;
      else if (value == "skip")
        gap = DstGap::kSkip;
      else
        return usage_error(cmd,
                           absl::StrCat("--dst-gap: '", excerpt(value), "' is not shift or skip"));
    } else if (name == "--dst-fold") {
      if (value == "first")
        fold = DstFold::kFirst;
      else if (value == "last")
        fold = DstFold::kLast;
      else if (value == "both")
        fold = DstFold::kBoth;
      else
        return usage_error(
            cmd, absl::StrCat("--dst-fold: '", excerpt(value), "' is not first, last or both"));
    }
  }
  if (positional.empty())
    return usage_error(cmd, "missing EXPR (a cron expression, e.g. '30 2 * * *')");
  const std::string expr = absl::StrJoin(positional, " ");
  auto e = CronExpr::parse(expr, id);
  if (!e.ok()) {
    return usage_error(cmd, absl::StrCat("invalid cron expression \"", excerpt(expr),
                                         "\": ", e.status().message()));
  }
  auto tz = load_zone(zone);
  if (!tz.ok()) return usage_error(cmd, absl::StrCat("--tz: ", tz.status().message()));
  const CronSchedule sched(*std::move(e), *tz, gap, fold);

  CliResult r;
  if (cmd == "explain") {
    for (const std::string& line : explain(sched, zone, from)) absl::StrAppend(&r.out, line, "\n");
    return r;
  }
  absl::Time t = from;
  for (std::int64_t i = 0; i < count; ++i) {
    const auto f = sched.next_after(t);
    if (!f) {
      absl::StrAppend(&r.err, "kairos cron next: no further fires before year 10000\n");
      break;
    }
    t = f->nominal;
    absl::StrAppend(&r.out, format_rfc3339_utc(f->at), "\t", format_rfc3339_local(f->at, *tz));
    const std::string n = note(*f, sched);
    if (!n.empty()) absl::StrAppend(&r.out, "\t", n);
    absl::StrAppend(&r.out, "\n");
  }
  return r;
}

}  // namespace kairos::cron
