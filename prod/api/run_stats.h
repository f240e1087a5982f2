// Run statistics: per-minute run counts and firing lateness of one node,
// served read-only at GET /v1/stats (the dashboard's overview chart).
//
// Purpose. The node counts what happens in its events (run.dispatched,
// run.completed, run.retry_scheduled); /metrics exports running totals, but a
// chart of "runs per minute over the last hour" and lateness percentiles need
// the totals per minute. RunStats keeps a ring of one bucket per minute
// (default 60) filled from those events as the node records them:
// StatsEventLog is an EventLog that hands every event to RunStats and then to
// the real log, so nothing else in the node changes.
//
// Guarantees.
// - Bounded memory: a fixed number of buckets of fixed size; a bucket older
//   than the ring is reused (its counts dropped).
// - An event is placed by its own time (Event::at, the node's clock); an event
//   older than the ring is ignored; time going backwards never corrupts a
//   bucket (a bucket is reset only when a newer minute claims it).
// - Lateness is the dispatch lateness of scheduled runs (manual triggers are
//   not late by definition), in a fixed histogram; a percentile is reported
//   as the upper bound of the bucket it falls in, the maximum exactly.
// - Workers: the ids named by run.claimed, run.renewed and run.completed
//   events, with the last time each was seen (at most kMaxWorkers, the
//   longest unseen forgotten first); to_json lists those seen within the
//   last 5 minutes (the node has no registry of connections; a worker
//   waiting for work shows once it has claimed).
// - to_json() is a pure function of the recorded events and `now`.
//
// Threading: the node's loop only (where events are recorded and requests
// are answered).
#pragma once

#include <boost/json/object.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "core/ports/event_log.h"
#include "prod/http/http_server.h"

namespace kairos::api {

class RunStats {
 public:
  explicit RunStats(std::size_t minutes = 60);

  void observe(const Event& event);

  // {"now", "minutes": [{"start", "dispatched", "succeeded", "failed",
  //  "cancelled", "retried"}] oldest first (the ring's length, zero-filled),
  //  "lateness": {"count", "p50", "p90", "p99", "max", "buckets": [{"le", "count"}]},
  //  "workers": [{"id", "last_seen"}]}
  boost::json::object to_json(absl::Time now) const;

  // Upper bounds of the lateness histogram (a +Inf bucket follows).
  static const std::vector<absl::Duration>& lateness_bounds();
  static constexpr std::size_t kMaxWorkers = 256;

 private:
  struct Bucket {
    std::int64_t minute = -1;  // minutes since the epoch; -1: unused
    std::uint64_t dispatched = 0, succeeded = 0, failed = 0, cancelled = 0, retried = 0;
    std::vector<std::uint64_t> lateness;  // per histogram bucket
    absl::Duration max_lateness = absl::ZeroDuration();
  };
  Bucket* bucket_for(absl::Time at);

  std::vector<Bucket> ring_;
  std::map<std::string, absl::Time> workers_;  // id -> last seen
};

// Hands every event to `stats`, then to `next`.
class StatsEventLog final : public EventLog {
 public:
  StatsEventLog(EventLog& next, RunStats& stats) : next_(next), stats_(stats) {}
  void record(Event event) override;

 private:
  EventLog& next_;
  RunStats& stats_;
};

// GET /v1/stats: `stats` may be null (a node without a ring: every minute
// empty); `now` supplies the node's time.
http::Handler stats_handler(const RunStats* stats, std::function<absl::Time()> now);

}  // namespace kairos::api
