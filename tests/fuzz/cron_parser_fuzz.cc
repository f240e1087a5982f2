// libFuzzer target for the cron parser and engine: arbitrary bytes must never
// crash, hang or trip a sanitizer. Input: the first byte picks a zone, a DST
// policy and an instant; the rest is the expression. Accepted expressions are
// printed, re-parsed (must round-trip) and asked for a few fires in both
// directions, which must be strictly ordered.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/base/check.h"
#include "core/base/duration.h"
#include "core/schedule/cron_schedule.h"
#include "core/schedule/schedule_text.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0 || size > 512) return 0;
  const std::uint8_t sel = data[0];
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);

  // The other parsers that take user text.
  (void)kairos::parse_duration(text);
  (void)kairos::parse_rfc3339(text);
  (void)kairos::parse_schedule_text(text, absl::FromUnixSeconds(1774746000));

  auto e = kairos::cron::CronExpr::parse(text, "fuzz-job");
  if (!e.ok()) return 0;
  const std::string printed = e->to_string();
  auto again = kairos::cron::CronExpr::parse(printed, "other");
  KAIROS_CHECK(again.ok());
  KAIROS_CHECK(*again == *e);

  static const char* const kZones[] = {
      "UTC",          "Europe/Berlin",  "America/Sao_Paulo", "Australia/Lord_Howe",
      "Pacific/Apia", "Asia/Kathmandu", "America/New_York",  "Etc/GMT+5"};
  absl::TimeZone tz;
  if (!absl::LoadTimeZone(kZones[sel & 7], &tz)) return 0;
  const kairos::DstGap gap = (sel & 8) ? kairos::DstGap::kSkip : kairos::DstGap::kShift;
  const kairos::DstFold fold = static_cast<kairos::DstFold>((sel >> 4) % 3);
  const kairos::cron::CronSchedule s(*std::move(e), tz, gap, fold);
  // Instants from 1900 to 2100 and the far ends of the range.
  const std::int64_t base[] = {-2208988800, 0, 1774746000, 4102444800, 253402200000};
  absl::Time t = absl::FromUnixSeconds(base[(sel >> 6) % 5]);
  for (int i = 0; i < 4; ++i) {
    const auto f = s.next_after(t);
    if (!f) break;
    KAIROS_CHECK(f->nominal > t);
    const auto p = s.prev_before(f->nominal);
    KAIROS_CHECK(!p || p->nominal < f->nominal);
    t = f->nominal;
  }
  return 0;
}
