#include "core/schedule/cron_schedule.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "core/base/check.h"
#include "core/base/text.h"

namespace kairos::cron {
namespace {

// Instants the engine works with: 0001-01-02 .. 9999-12-30 (UTC), so that
// local times (offsets are under a day) stay inside years 1..9999.
constexpr std::int64_t kMinInstant = kLocalBegin + 86400;
constexpr std::int64_t kMaxInstant = kLocalEnd - 2 * 86400;

std::int64_t unix_seconds(const absl::CivilSecond& c) { return to_local_seconds(c); }

}  // namespace

bool is_zone_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxZoneNameBytes) return false;
  int parts = 0;
  std::size_t start = 0;
  while (start <= name.size()) {
    std::size_t end = name.find('/', start);
    if (end == std::string_view::npos) end = name.size();
    const std::string_view part = name.substr(start, end - start);
    if (part.empty() || ++parts > kMaxZoneNameParts) return false;
    const auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
    if (!letter(part[0])) return false;
    for (const char c : part) {
      if (!letter(c) && !(c >= '0' && c <= '9') && c != '_' && c != '+' && c != '-') return false;
    }
    start = end + 1;
  }
  return true;
}

absl::StatusOr<absl::TimeZone> load_zone(std::string_view name) {
  if (name.empty())
    return absl::InvalidArgumentError(
        "time zone is empty (expected an IANA name such as Europe/Berlin, or UTC)");
  if (name == "localtime") {
    return absl::InvalidArgumentError(
        "time zone \"localtime\" is not allowed: schedules never use the server's local zone; name "
        "an IANA zone such as Europe/Berlin, or UTC");
  }
  // The grammar comes first: the zone loader also accepts file paths, and a
  // name chosen by a client must never make the server open a file outside
  // the zone database (nor block on a FIFO or a device).
  if (!is_zone_name(name)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "time zone \"", excerpt(name),
        "\" is not an IANA zone name (expected names such as Europe/Berlin, America/Argentina/"
        "Buenos_Aires or UTC: letters, digits, '_', '+' and '-' in parts separated by '/'; file "
        "paths are not accepted)"));
  }
  absl::TimeZone tz;
  if (!absl::LoadTimeZone(absl_sv(name), &tz)) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown time zone \"", excerpt(name),
                     "\" (expected an IANA name such as Europe/Berlin, or UTC)"));
  }
  return tz;
}

absl::StatusOr<CronSchedule> CronSchedule::create(std::string_view expr, std::string_view zone_name,
                                                  DstGap gap, DstFold fold,
                                                  std::string_view job_id) {
  KAIROS_ASSIGN_OR_RETURN(CronExpr e, CronExpr::parse(expr, job_id));
  KAIROS_ASSIGN_OR_RETURN(absl::TimeZone tz, load_zone(zone_name));
  return CronSchedule(std::move(e), tz, gap, fold);
}

CronSchedule::CronSchedule(CronExpr expr, absl::TimeZone zone, DstGap gap, DstFold fold)
    : expr_(std::move(expr)), zone_(zone), gap_(gap), fold_(fold) {
  absl::TimeZone::CivilTransition tr;
  if (!zone_.NextTransition(absl::InfinitePast(), &tr)) {
    fixed_offset_ = true;
    fixed_off_ = zone_.At(absl::UnixEpoch()).offset;
  }
}

CronSchedule::Segment CronSchedule::segment_at(std::int64_t x) const {
  if (fixed_offset_) return {kNoBegin, kNoEnd, fixed_off_, fixed_off_, fixed_off_};
  Segment s;
  const absl::Time tx = absl::FromUnixSeconds(x);
  s.off = zone_.At(tx).offset;
  absl::TimeZone::CivilTransition tr;
  if (zone_.NextTransition(tx, &tr)) {
    s.end = absl::ToUnixSeconds(zone_.At(tr.to).trans);
    s.next_off = unix_seconds(tr.to) - s.end;
  } else {
    s.end = kNoEnd;
    s.next_off = s.off;
  }
  if (zone_.PrevTransition(absl::FromUnixSeconds(x + 1), &tr)) {
    s.begin = absl::ToUnixSeconds(zone_.At(tr.to).trans);
    s.prev_off = unix_seconds(tr.from) - s.begin;
  } else {
    s.begin = kNoBegin;
    s.prev_off = s.off;
  }
  return s;
}

CronSchedule::Segment CronSchedule::segment_from(const Segment& prev) const {
  KAIROS_CHECK(prev.end != kNoEnd);
  Segment s;
  s.begin = prev.end;
  s.prev_off = prev.off;
  s.off = prev.next_off;
  absl::TimeZone::CivilTransition tr;
  if (zone_.NextTransition(absl::FromUnixSeconds(prev.end), &tr)) {
    s.end = absl::ToUnixSeconds(zone_.At(tr.to).trans);
    s.next_off = unix_seconds(tr.to) - s.end;
  } else {
    s.end = kNoEnd;
    s.next_off = s.off;
  }
  return s;
}

Fire CronSchedule::natural(LocalSeconds local, const Segment& s) const {
  Fire f;
  f.nominal = absl::FromUnixSeconds(local - s.off);
  f.at = f.nominal;
  f.local = from_local_seconds(local);
  f.utc_offset = absl::Seconds(s.off);
  if (s.end != kNoEnd && s.next_off < s.off && local >= s.end + s.next_off) {
    f.note = DstNote::kFoldFirst;
  } else if (s.begin != kNoBegin && s.prev_off > s.off && local < s.begin + s.prev_off) {
    f.note = DstNote::kFoldSecond;
  }
  return f;
}

std::optional<Fire> CronSchedule::next_after(absl::Time t) const {
  if (t >= absl::FromUnixSeconds(kMaxInstant)) return std::nullopt;
  std::int64_t x = t < absl::FromUnixSeconds(kMinInstant) ? kMinInstant : absl::ToUnixSeconds(t);
  const bool fixed = fixed_time();
  Segment s = segment_at(x);
  // Each pass moves to the next offset transition; the year-9999 limit ends
  // the walk for an expression that no longer fires.
  while (true) {
    LocalSeconds lo = x + 1 + s.off;
    LocalSeconds hi = s.end == kNoEnd ? kLocalEnd : s.end + s.off;
    if (fixed && fold_ == DstFold::kFirst && s.begin != kNoBegin && s.prev_off > s.off &&
        dst_sized(s.prev_off - s.off)) {
      lo = std::max(lo, s.begin + s.prev_off);  // second pass of the fold
    }
    if (fixed && fold_ == DstFold::kLast && s.end != kNoEnd && s.next_off < s.off &&
        dst_sized(s.off - s.next_off)) {
      hi = std::min(hi, s.end + s.next_off);  // first pass of the next fold
    }
    if (const auto c = expr_.next(lo, hi)) return natural(*c, s);
    if (s.end == kNoEnd || s.end >= kMaxInstant) return std::nullopt;
    if (fixed && gap_ == DstGap::kShift && s.next_off > s.off && dst_sized(s.next_off - s.off)) {
      const LocalSeconds gap_end = s.end + s.next_off;
      if (const auto c = expr_.next(s.end + s.off, gap_end); c && !expr_.matches(gap_end)) {
        Fire f;
        f.nominal = f.at = absl::FromUnixSeconds(s.end);
        f.local = from_local_seconds(*c);
        f.utc_offset = absl::Seconds(s.next_off);
        f.note = DstNote::kGapShifted;
        return f;
      }
    }
    x = s.end - 1;
    s = segment_from(s);
  }
}

std::optional<Fire> CronSchedule::prev_before(absl::Time t) const {
  if (t <= absl::FromUnixSeconds(kMinInstant)) return std::nullopt;
  std::int64_t u = 0;
  if (t > absl::FromUnixSeconds(kMaxInstant)) {
    u = kMaxInstant;
  } else {
    u = absl::ToUnixSeconds(t);
    if (absl::FromUnixSeconds(u) == t) --u;
  }
  const bool fixed = fixed_time();
  while (true) {
    const Segment s = segment_at(u);
    LocalSeconds hi = u + s.off;
    LocalSeconds lo = s.begin == kNoBegin ? kLocalBegin : s.begin + s.off;
    if (fixed && fold_ == DstFold::kFirst && s.begin != kNoBegin && s.prev_off > s.off &&
        dst_sized(s.prev_off - s.off)) {
      lo = std::max(lo, s.begin + s.prev_off);
    }
    if (fixed && fold_ == DstFold::kLast && s.end != kNoEnd && s.next_off < s.off &&
        dst_sized(s.off - s.next_off)) {
      hi = std::min(hi, s.end + s.next_off - 1);
    }
    if (const auto c = expr_.prev(hi, lo)) return natural(*c, s);
    if (s.begin == kNoBegin || s.begin <= kMinInstant) return std::nullopt;
    if (fixed && gap_ == DstGap::kShift && s.off > s.prev_off && dst_sized(s.off - s.prev_off)) {
      const LocalSeconds gap_end = s.begin + s.off;
      if (const auto c = expr_.next(s.begin + s.prev_off, gap_end); c && !expr_.matches(gap_end)) {
        Fire f;
        f.nominal = f.at = absl::FromUnixSeconds(s.begin);
        f.local = from_local_seconds(*c);
        f.utc_offset = absl::Seconds(s.off);
        f.note = DstNote::kGapShifted;
        return f;
      }
    }
    u = s.begin - 1;
  }
}

bool CronSchedule::matches(absl::Time t) const {
  const auto f = next_after(t - absl::Seconds(1));
  return f.has_value() && f->nominal == t;
}

std::vector<Fire> CronSchedule::fires_between(absl::Time from, absl::Time to,
                                              std::size_t max_count) const {
  std::vector<Fire> out;
  absl::Time t = from;
  while (out.size() < max_count) {
    auto f = next_after(t);
    if (!f || f->nominal > to) break;
    KAIROS_CHECK(f->nominal > t);
    t = f->nominal;
    out.push_back(*f);
  }
  return out;
}

}  // namespace kairos::cron
