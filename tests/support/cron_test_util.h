// Helpers shared by the cron tests: RFC 3339 in, RFC 3339 out.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "core/base/check.h"
#include "core/schedule/cron_schedule.h"
#include "core/schedule/schedule_text.h"

namespace kairos::test_support {

inline absl::Time T(std::string_view rfc3339) {
  auto t = parse_rfc3339(rfc3339);
  KAIROS_CHECK_MSG(t.ok(), "bad time literal in test");
  return *t;
}

inline std::string Z(absl::Time t) { return format_rfc3339_utc(t); }

inline cron::CronSchedule Sched(std::string_view expr, std::string_view zone,
                                DstGap gap = DstGap::kShift, DstFold fold = DstFold::kFirst,
                                std::string_view id = {}) {
  auto s = cron::CronSchedule::create(expr, zone, gap, fold, id);
  KAIROS_CHECK_MSG(s.ok(), std::string(s.status().message()).c_str());
  return *std::move(s);
}

// The next `n` fires after `from`, as "UTC-instant[ note]" strings where note
// is " gap", " fold1" or " fold2".
inline std::vector<std::string> Fires(const cron::CronSchedule& s, std::string_view from, int n) {
  std::vector<std::string> out;
  absl::Time t = T(from);
  for (int i = 0; i < n; ++i) {
    auto f = s.next_after(t);
    if (!f) break;
    std::string line = Z(f->at);
    switch (f->note) {
      case DstNote::kNone:
        break;
      case DstNote::kGapShifted:
        line += " gap";
        break;
      case DstNote::kFoldFirst:
        line += " fold1";
        break;
      case DstNote::kFoldSecond:
        line += " fold2";
        break;
    }
    out.push_back(line);
    t = f->nominal;
  }
  return out;
}

}  // namespace kairos::test_support
