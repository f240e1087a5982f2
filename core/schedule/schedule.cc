// Implements core/schedule/schedule.h on top of the cron engine (cron_schedule.h).
#include "core/schedule/schedule.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "core/base/check.h"
#include "core/base/duration.h"
#include "core/base/rfc3339.h"
#include "core/base/stable_hash.h"
#include "core/schedule/cron_schedule.h"

namespace kairos {

struct Schedule::Compiled {
  absl::TimeZone zone;
  std::optional<cron::CronSchedule> cron;
};

namespace {

Fire plain_fire(absl::Time at, const absl::TimeZone& zone) {
  const absl::TimeZone::CivilInfo ci = zone.At(at);
  Fire f;
  f.at = f.nominal = at;
  f.local = ci.cs;
  f.utc_offset = absl::Seconds(ci.offset);
  return f;
}

}  // namespace

bool in_supported_range(absl::Time t) {
  return t >= absl::FromUnixSeconds(kEarliestUnixSeconds) &&
         t < absl::FromUnixSeconds(kEndUnixSeconds);
}

std::string supported_range_text() {
  return absl::StrCat(format_rfc3339_utc(absl::FromUnixSeconds(kEarliestUnixSeconds)),
                      " to (not including) ",
                      format_rfc3339_utc(absl::FromUnixSeconds(kEndUnixSeconds)));
}

absl::Status check_supported_time(absl::Time t, std::string_view what) {
  if (in_supported_range(t)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(absl_sv(what), " ", format_rfc3339_utc(t),
                                                 " is outside the supported range ",
                                                 supported_range_text()));
}

absl::StatusOr<Schedule> Schedule::compile(const ScheduleSpec& spec, std::string_view job_id) {
  auto compiled = std::make_shared<Compiled>();
  KAIROS_ASSIGN_OR_RETURN(compiled->zone, cron::load_zone(spec.zone));
  if (spec.jitter < absl::ZeroDuration() || spec.jitter == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("jitter ", format_duration(spec.jitter), " must be a finite duration >= 0"));
  }
  switch (spec.kind) {
    case ScheduleSpec::Kind::kCron: {
      if (spec.cron.empty())
        return absl::InvalidArgumentError("cron schedule has an empty expression");
      KAIROS_ASSIGN_OR_RETURN(cron::CronExpr e, cron::CronExpr::parse(spec.cron, job_id));
      compiled->cron.emplace(std::move(e), compiled->zone, spec.dst_gap, spec.dst_fold);
      break;
    }
    case ScheduleSpec::Kind::kOnce:
      if (spec.at == absl::InfinitePast() || spec.at == absl::InfiniteFuture()) {
        return absl::InvalidArgumentError(
            "one-off schedule needs a finite instant (RFC 3339 with an offset)");
      }
      KAIROS_RETURN_IF_ERROR(check_supported_time(spec.at, "one-off instant"));
      break;
    case ScheduleSpec::Kind::kInterval:
      if (spec.every <= absl::ZeroDuration() || spec.every == absl::InfiniteDuration()) {
        return absl::InvalidArgumentError(absl::StrCat("interval ", format_duration(spec.every),
                                                       " must be a positive duration, e.g. 90s"));
      }
      if (spec.start == absl::InfinitePast() || spec.start == absl::InfiniteFuture()) {
        return absl::InvalidArgumentError(
            "interval schedule needs a finite start time (the anchor of 'every')");
      }
      KAIROS_RETURN_IF_ERROR(check_supported_time(spec.start, "interval start"));
      if (spec.end != absl::InfiniteFuture())
        KAIROS_RETURN_IF_ERROR(check_supported_time(spec.end, "interval end"));
      if (spec.end < spec.start) {
        return absl::InvalidArgumentError("interval schedule ends before it starts");
      }
      break;
  }
  Schedule s;
  s.spec_ = spec;
  s.job_id_ = std::string(job_id);
  s.compiled_ = std::move(compiled);
  return s;
}

namespace {

std::optional<Fire> nominal_after(const ScheduleSpec& spec, const Schedule::Compiled& c,
                                  absl::Time t);

}  // namespace

namespace {
std::optional<Fire> nominal_before(const ScheduleSpec& spec, const Schedule::Compiled& c,
                                   absl::Time t);
}  // namespace

std::optional<Fire> Schedule::next_after(absl::Time t) const {
  KAIROS_CHECK(compiled_ != nullptr);
  return with_jitter(nominal_after(spec_, *compiled_, t));
}

std::optional<Fire> Schedule::prev_before(absl::Time t) const {
  KAIROS_CHECK(compiled_ != nullptr);
  return with_jitter(nominal_before(spec_, *compiled_, t));
}

bool Schedule::matches(absl::Time t) const {
  KAIROS_CHECK(compiled_ != nullptr);
  const auto f = nominal_before(spec_, *compiled_, t + absl::Nanoseconds(1));
  return f.has_value() && f->nominal == t;
}

std::optional<Fire> Schedule::with_jitter(std::optional<Fire> f) const {
  if (!f || spec_.jitter == absl::ZeroDuration()) return f;
  std::int64_t cap_ms = absl::ToInt64Milliseconds(spec_.jitter);
  if (const auto following = nominal_after(spec_, *compiled_, f->nominal)) {
    // Strictly before the following occurrence.
    const std::int64_t gap_ms = absl::ToInt64Milliseconds(following->nominal - f->nominal) - 1;
    cap_ms = std::min(cap_ms, gap_ms);
  }
  if (cap_ms <= 0) return f;
  const std::uint64_t h =
      stable_hash(job_id_, static_cast<std::uint64_t>(absl::ToUnixMillis(f->nominal)));
  f->at = f->nominal +
          absl::Milliseconds(static_cast<std::int64_t>(h % static_cast<std::uint64_t>(cap_ms + 1)));
  return f;
}

namespace {

std::optional<Fire> nominal_after(const ScheduleSpec& spec, const Schedule::Compiled& c,
                                  absl::Time t) {
  switch (spec.kind) {
    case ScheduleSpec::Kind::kCron:
      return c.cron->next_after(t);
    case ScheduleSpec::Kind::kOnce:
      if (spec.at > t) return plain_fire(spec.at, c.zone);
      return std::nullopt;
    case ScheduleSpec::Kind::kInterval: {
      absl::Time at = spec.start;
      if (t >= spec.start) {
        absl::Duration rem;
        const std::int64_t k = absl::IDivDuration(t - spec.start, spec.every, &rem);
        if (k == INT64_MAX) return std::nullopt;
        at = spec.start + (k + 1) * spec.every;
      }
      if (at > spec.end || at == absl::InfiniteFuture()) return std::nullopt;
      KAIROS_CHECK(at > t);
      return plain_fire(at, c.zone);
    }
  }
  return std::nullopt;
}

std::optional<Fire> nominal_before(const ScheduleSpec& spec, const Schedule::Compiled& c,
                                   absl::Time t) {
  switch (spec.kind) {
    case ScheduleSpec::Kind::kCron:
      return c.cron->prev_before(t);
    case ScheduleSpec::Kind::kOnce:
      if (spec.at < t) return plain_fire(spec.at, c.zone);
      return std::nullopt;
    case ScheduleSpec::Kind::kInterval: {
      if (t <= spec.start) return std::nullopt;
      const absl::Time last =
          std::min(t, spec.end == absl::InfiniteFuture() ? t : spec.end + absl::Nanoseconds(1));
      absl::Duration rem;
      std::int64_t k = absl::IDivDuration(last - spec.start, spec.every, &rem);
      if (rem == absl::ZeroDuration()) --k;  // strictly before
      if (k < 0) return std::nullopt;
      const absl::Time at = spec.start + k * spec.every;
      KAIROS_CHECK(at < t);
      return plain_fire(at, c.zone);
    }
  }
  return std::nullopt;
}

}  // namespace

}  // namespace kairos
