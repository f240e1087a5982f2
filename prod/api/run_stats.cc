#include "prod/api/run_stats.h"

#include <algorithm>
#include <boost/json/array.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "core/base/check.h"
#include "core/base/duration.h"
#include "core/base/rfc3339.h"
#include "core/kernel/event_kinds.h"
#include "prod/api/job_json.h"

namespace kairos::api {
namespace json = boost::json;

namespace {

std::int64_t minute_of(absl::Time t) { return absl::ToUnixSeconds(t) / 60; }

const std::string* string_field(const Event& e, std::string_view name) {
  const EventValue* v = e.find(name);
  return v ? std::get_if<std::string>(v) : nullptr;
}

}  // namespace

const std::vector<absl::Duration>& RunStats::lateness_bounds() {
  static const std::vector<absl::Duration> bounds = {
      absl::Milliseconds(1),   absl::Milliseconds(5),   absl::Milliseconds(10),
      absl::Milliseconds(50),  absl::Milliseconds(100), absl::Milliseconds(250),
      absl::Milliseconds(500), absl::Seconds(1),        absl::Milliseconds(2500),
      absl::Seconds(5),        absl::Seconds(10),       absl::Seconds(30),
      absl::Minutes(1),        absl::Minutes(5),        absl::Minutes(15),
      absl::Hours(1)};
  return bounds;
}

RunStats::RunStats(std::size_t minutes) : ring_(minutes) {
  KAIROS_CHECK_MSG(minutes > 0, "a stats ring needs at least one minute");
  for (Bucket& b : ring_) b.lateness.assign(lateness_bounds().size() + 1, 0);
}

RunStats::Bucket* RunStats::bucket_for(absl::Time at) {
  if (at == absl::InfinitePast() || at == absl::InfiniteFuture() || at < absl::UnixEpoch())
    return nullptr;
  const std::int64_t minute = minute_of(at);
  Bucket& b = ring_[static_cast<std::size_t>(minute) % ring_.size()];
  if (b.minute == minute) return &b;
  if (b.minute > minute) return nullptr;  // older than the ring (or the clock went back)
  b = Bucket{};
  b.minute = minute;
  b.lateness.assign(lateness_bounds().size() + 1, 0);
  return &b;
}

void RunStats::observe(const Event& event) {
  const bool dispatched = event.kind == event_kinds::kRunDispatched;
  const bool completed = event.kind == event_kinds::kRunCompleted;
  const bool retried = event.kind == event_kinds::kRunRetryScheduled;
  if (event.kind == event_kinds::kRunClaimed || event.kind == event_kinds::kRunRenewed || completed)
    if (const std::string* worker = string_field(event, "worker"); worker && !worker->empty()) {
      workers_[*worker] = std::max(workers_[*worker], event.at);
      if (workers_.size() > kMaxWorkers) {
        auto oldest = workers_.begin();
        for (auto it = workers_.begin(); it != workers_.end(); ++it)
          if (it->second < oldest->second) oldest = it;
        workers_.erase(oldest);
      }
    }
  if (!dispatched && !completed && !retried) return;
  Bucket* b = bucket_for(event.at);
  if (b == nullptr) return;
  if (retried) ++b->retried;
  if (completed) {
    const std::string* outcome = string_field(event, "outcome");
    if (outcome && *outcome == "succeeded")
      ++b->succeeded;
    else if (outcome && *outcome == "cancelled")
      ++b->cancelled;
    else
      ++b->failed;
  }
  if (dispatched) {
    ++b->dispatched;
    const std::string* kind = string_field(event, "kind");
    const EventValue* late = event.find("lateness");
    const absl::Duration* d = late ? std::get_if<absl::Duration>(late) : nullptr;
    if (d == nullptr || (kind && *kind == "manual")) return;
    const absl::Duration lateness = *d < absl::ZeroDuration() ? absl::ZeroDuration() : *d;
    const auto& bounds = lateness_bounds();
    std::size_t i = 0;
    while (i < bounds.size() && lateness > bounds[i]) ++i;
    ++b->lateness[i];
    if (lateness > b->max_lateness) b->max_lateness = lateness;
  }
}

json::object RunStats::to_json(absl::Time now) const {
  const std::int64_t last = minute_of(now);
  const std::int64_t n = static_cast<std::int64_t>(ring_.size());
  const auto& bounds = lateness_bounds();
  std::vector<std::uint64_t> lateness(bounds.size() + 1, 0);
  absl::Duration max = absl::ZeroDuration();
  json::array minutes;
  for (std::int64_t m = last - n + 1; m <= last; ++m) {
    const Bucket* b = nullptr;
    if (m >= 0) {
      const Bucket& slot = ring_[static_cast<std::size_t>(m) % ring_.size()];
      if (slot.minute == m) b = &slot;
    }
    json::object o;
    o["start"] = format_rfc3339_utc(absl::FromUnixSeconds(m * 60));
    o["dispatched"] = b ? b->dispatched : 0;
    o["succeeded"] = b ? b->succeeded : 0;
    o["failed"] = b ? b->failed : 0;
    o["cancelled"] = b ? b->cancelled : 0;
    o["retried"] = b ? b->retried : 0;
    minutes.emplace_back(std::move(o));
    if (b == nullptr) continue;
    for (std::size_t i = 0; i < lateness.size(); ++i) lateness[i] += b->lateness[i];
    if (b->max_lateness > max) max = b->max_lateness;
  }
  std::uint64_t count = 0;
  for (std::uint64_t c : lateness) count += c;
  // The upper bound of the bucket holding the q-th quantile (null: +Inf,
  // or no sample).
  auto percentile = [&](std::uint64_t per_mille) -> json::value {
    if (count == 0) return nullptr;
    const std::uint64_t rank = (count * per_mille + 999) / 1000;  // 1-based, ceil
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < lateness.size(); ++i) {
      seen += lateness[i];
      if (seen >= rank) {
        if (i == bounds.size()) return json::value(format_duration(max));
        return json::value(format_duration(std::min(bounds[i], max)));
      }
    }
    return json::value(format_duration(max));
  };
  json::array buckets;
  for (std::size_t i = 0; i < lateness.size(); ++i) {
    json::object o;
    o["le"] = i < bounds.size() ? json::value(format_duration(bounds[i])) : json::value(nullptr);
    o["count"] = lateness[i];
    buckets.emplace_back(std::move(o));
  }
  json::object late;
  late["count"] = count;
  late["p50"] = percentile(500);
  late["p90"] = percentile(900);
  late["p99"] = percentile(990);
  late["max"] = count ? json::value(format_duration(max)) : json::value(nullptr);
  late["buckets"] = std::move(buckets);
  json::object out;
  out["now"] = format_rfc3339_utc(now);
  out["minutes"] = std::move(minutes);
  out["lateness"] = std::move(late);
  json::array workers;
  for (const auto& [id, seen] : workers_) {
    if (seen < now - absl::Minutes(5)) continue;
    json::object w;
    w["id"] = id;
    w["last_seen"] = format_rfc3339_utc(seen);
    workers.emplace_back(std::move(w));
  }
  out["workers"] = std::move(workers);
  return out;
}

void StatsEventLog::record(Event event) {
  stats_.observe(event);
  next_.record(std::move(event));
}

http::Handler stats_handler(const RunStats* stats, std::function<absl::Time()> now) {
  return [stats, now = std::move(now)](const http::Request& r, http::Reply reply) {
    http::Response res;
    if (!r.query.empty()) {
      res.status = 400;
      res.body = serialize(
          error_body("invalid_argument", "unknown query parameter", r.query.begin()->first));
      return reply(std::move(res));
    }
    static const RunStats empty(60);
    res.body = serialize((stats ? *stats : empty).to_json(now()));
    reply(std::move(res));
  };
}

}  // namespace kairos::api
