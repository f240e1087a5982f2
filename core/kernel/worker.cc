#include "core/kernel/worker.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "core/base/check.h"
#include "core/kernel/event_kinds.h"
#include "core/kernel/job_store.h"
#include "core/kernel/node_metrics.h"
#include "core/kernel/node_support.h"

namespace kairos {

absl::Status validate(const WorkerConfig& c) {
  if (c.worker_id.empty() || c.worker_id.size() > kMaxWorkerIdSize)
    return absl::InvalidArgumentError("worker.worker_id: must be 1..200 bytes");
  if (c.nodes.empty())
    return absl::InvalidArgumentError("worker.nodes: at least one scheduler node is required");
  if (c.max_concurrent < 1 || c.max_concurrent > wire::kMaxBatch)
    return absl::InvalidArgumentError(absl::StrCat("worker.max_concurrent: must be in [1, ",
                                                   wire::kMaxBatch, "], got ", c.max_concurrent));
  if (c.claim_wait < absl::ZeroDuration() || c.claim_wait > absl::Hours(1))
    return absl::InvalidArgumentError("worker.claim_wait: must be in [0, 1h]");
  KAIROS_RETURN_IF_ERROR(validate(c.lease));
  // A long-poll claim answered at the end of its wait leaves the worker only
  // lease_deadline(sent) - answer of its lease (the deadline counts from the
  // send): with a wait near the lease, grants arrive already lapsing.
  if (c.claim_wait > c.lease.lease_ttl / 2)
    return absl::InvalidArgumentError(
        absl::StrCat("worker.claim_wait: must be at most half of lease.lease_ttl (",
                     absl::FormatDuration(c.lease.lease_ttl / 2), "), got ",
                     absl::FormatDuration(c.claim_wait)));
  if (c.accepts == 0 || c.accepts > kAcceptAll)
    return absl::InvalidArgumentError(absl::StrCat(
        "worker.accepts: must name at least one payload kind (1 command, 2 http, 3 both), got ",
        c.accepts));
  if (c.max_report_attempts < 1 || c.max_report_attempts > 1000)
    return absl::InvalidArgumentError("worker.max_report_attempts: must be in [1, 1000]");
  if (c.retry_backoff_base <= absl::ZeroDuration() || c.retry_backoff_max < c.retry_backoff_base)
    return absl::InvalidArgumentError(
        "worker.retry_backoff_base: must be positive and <= worker.retry_backoff_max");
  return absl::OkStatus();
}

Worker::Worker(const Clock& clock, Timers& timers, Transport& transport, Runner& runner,
               Random& random, EventLog& events, Metrics& metrics, WorkerConfig config)
    : clock_(clock),
      timers_(timers),
      transport_(transport),
      runner_(runner),
      random_(random),
      events_(events),
      metrics_(metrics),
      config_(std::move(config)),
      alive_(std::make_shared<bool>(true)) {
  const absl::Status s = validate(config_);
  KAIROS_CHECK_MSG(s.ok(), std::string(s.message()).c_str());
  check_lease_invariants(config_.lease);
  KAIROS_CHECK(config_.claim_wait * 2 <= config_.lease.lease_ttl);
  node_metrics::describe_node_metrics(metrics_);
}

Worker::~Worker() { stop(); }

void Worker::start() {
  KAIROS_CHECK(!started_);
  started_ = true;
  // Request ids start at a random point so a restarted worker's ids do not
  // collide with its previous life's (deterministic given the Random).
  next_request_id_ = (random_.next_u64() >> 2) + 1;
  Alive alive = alive_;
  transport_.set_handler([this, alive](PeerId from, std::string_view bytes) {
    if (*alive) on_message(from, bytes);
  });
  heartbeat_timer_ = timers_.after(config_.lease.heartbeat_period, [this, alive] {
    if (*alive) heartbeat();
  });
  Event e;
  e.kind = event_kinds::kWorkerStarted;
  record(std::move(e));
  maybe_claim();
}

void Worker::stop() {
  if (stopped_) return;
  stopped_ = true;
  *alive_ = false;
  if (!started_) return;
  transport_.set_handler([](PeerId, std::string_view) {});
  auto cancel = [this](std::optional<TimerId>& t) {
    if (t) timers_.cancel(*t);
    t.reset();
  };
  cancel(claim_retry_timer_);
  cancel(heartbeat_timer_);
  cancel(flush_timer_);
  if (claim_) timers_.cancel(claim_->timer);
  if (complete_) timers_.cancel(complete_->timer);
  for (auto& [id, a] : active_) {
    if (a.deadline_timer) timers_.cancel(*a.deadline_timer);
    if (a.timeout_timer) timers_.cancel(*a.timeout_timer);
  }
  active_.clear();
  reports_.clear();
  renews_.clear();
}

void Worker::drain(std::function<void()> drained) {
  if (stopped_) return;
  draining_ = true;
  drained_ = std::move(drained);
  // A claim in flight (a parked long-poll) is not waited for; should it
  // still bring grants, on_claim_response hands them straight back.
  if (claim_retry_timer_) {
    timers_.cancel(*claim_retry_timer_);
    claim_retry_timer_.reset();
  }
  check_drained();
}

void Worker::stop_running() {
  if (stopped_) return;
  std::vector<RunHandle> handles;
  for (const auto& [id, a] : active_)
    if (a.started) handles.push_back(a.handle);
  for (RunHandle h : handles) runner_.stop(h);
}

void Worker::check_drained() {
  if (!draining_ || !drained_ || stopped_) return;
  if (!active_.empty() || !reports_.empty() || complete_) return;
  Alive alive = alive_;
  timers_.post([alive, done = std::move(drained_)] {
    if (*alive) done();
  });
  drained_ = nullptr;
}

void Worker::record(Event e) {
  record_event(std::move(e), clock_.now(), "worker", config_.worker_id, events_, event_counters_);
}

absl::Duration Worker::backoff(std::uint32_t attempt) {
  return retry_backoff(random_, config_.retry_backoff_base, config_.retry_backoff_max, attempt);
}

void Worker::rotate_node() { node_index_ = (node_index_ + 1) % config_.nodes.size(); }

void Worker::send(const wire::Message& m) {
  KAIROS_CHECK(node_index_ < config_.nodes.size());
  transport_.send(config_.nodes[node_index_], wire::encode(m));
}

void Worker::on_message(PeerId, std::string_view bytes) {
  auto decoded = wire::decode(bytes);
  if (!decoded.ok()) {
    metrics_.counter("kairos_wire_malformed_total").add();
    return;
  }
  if (auto* c = std::get_if<wire::ClaimResponse>(&*decoded)) {
    on_claim_response(std::move(*c));
  } else if (auto* r = std::get_if<wire::RenewResponse>(&*decoded)) {
    on_renew_response(*r);
  } else if (auto* d = std::get_if<wire::CompleteResponse>(&*decoded)) {
    on_complete_response(*d);
  } else if (auto* e = std::get_if<wire::ErrorMessage>(&*decoded)) {
    Alive alive = alive_;
    const bool carried = complete_ && complete_->request_id == e->request_id;
    if (claim_ && claim_->request_id == e->request_id) {
      // The node refused (e.g. its clock is outside the tolerated skew, or
      // the store is unavailable to it): the next claim goes to the next
      // node, or a worker pinned to a refusing node would starve while
      // healthy nodes have work. Reports the claim carried were not
      // recorded: they are sent again after a backoff.
      timers_.cancel(claim_->timer);
      claim_.reset();
      ++claim_failures_;
      rotate_node();
      if (carried) retry_reports_later(/*abandon_exhausted=*/false);
      claim_retry_timer_ = timers_.after(backoff(claim_failures_), [this, alive] {
        if (!*alive) return;
        claim_retry_timer_.reset();
        maybe_claim();
      });
    } else if (carried) {
      timers_.cancel(complete_->timer);
      rotate_node();  // as for a timeout: another node may get it through
      retry_reports_later(/*abandon_exhausted=*/false);
    } else {
      renews_.erase(e->request_id);
    }
  }
}

// ---------------------------------------------------------------------------
// Claims.

bool Worker::can_claim() const {
  return !stopped_ && !draining_ && !claim_ && !claim_retry_timer_ &&
         active_.size() < config_.max_concurrent;
}

void Worker::maybe_claim() {
  if (!can_claim()) return;
  const auto capacity = static_cast<std::uint32_t>(config_.max_concurrent - active_.size());
  KAIROS_CHECK(capacity >= 1 && capacity <= wire::kMaxBatch);  // what the decoder accepts
  wire::ClaimRequest req;
  req.request_id = next_request_id();
  req.worker_id = config_.worker_id;
  req.max_runs = capacity;
  req.wait = config_.claim_wait;
  req.accepts = config_.accepts;
  // Reports waiting and none in flight or backing off: they ride with the
  // claim (one message, one store transaction), which the node then answers
  // at once instead of parking it.
  const bool carries = !complete_ && !flush_timer_ && !reports_.empty();
  if (carries) {
    req.wait = absl::ZeroDuration();
    req.reports = take_reports();
  }
  Alive alive = alive_;
  const std::uint64_t id = req.request_id;
  Outstanding o;
  o.request_id = id;
  o.sent = clock_.now();
  o.timer = timers_.after(req.wait + config_.lease.rpc_timeout, [this, alive, id] {
    if (!*alive || !claim_ || claim_->request_id != id) return;
    // No answer: the claim (and any lease it took) is abandoned; the lease
    // will lapse on the store. Try the next node. Reports it carried are
    // handled as a completion that timed out.
    claim_.reset();
    ++claim_failures_;
    metrics_.counter("kairos_worker_claim_timeouts_total").add();
    rotate_node();
    if (complete_ && complete_->request_id == id) retry_reports_later(/*abandon_exhausted=*/true);
    claim_retry_timer_ = timers_.after(backoff(claim_failures_), [this, alive] {
      if (!*alive) return;
      claim_retry_timer_.reset();
      maybe_claim();
    });
  });
  claim_ = o;
  if (carries) {
    Outstanding c = o;
    c.timer = 0;  // the claim's timer answers for both
    complete_ = c;
  }
  send(req);
}

void Worker::on_claim_response(wire::ClaimResponse response) {
  if (!claim_ || claim_->request_id != response.request_id) {
    metrics_.counter("kairos_worker_stale_responses_total").add();
    return;
  }
  const bool carried = complete_ && complete_->request_id == response.request_id;
  if (carried && response.results.size() != complete_items_.size()) return;  // not an answer
  timers_.cancel(claim_->timer);
  const absl::Time sent = claim_->sent;
  claim_.reset();
  claim_failures_ = 0;
  if (carried) {
    complete_.reset();
    apply_verdicts(response.results);
  }
  if (draining_) {
    // Draining: nothing new is started; each grant is released at once
    // (reported kStopped under its token), so the run is claimable again
    // without waiting for its lease to lapse.
    for (const auto& g : response.grants) {
      if (active_.count(g.run) != 0) continue;
      Report rep;
      rep.item = CompleteItem{g.run, g.token, RunStatus::kStopped, 0, "worker draining", ""};
      queue_report(std::move(rep));
    }
    flush_reports();
    return;
  }
  for (auto& g : response.grants) start_run(std::move(g), sent);
  if (carried) flush_reports();  // reports that finished meanwhile (or claims again)
  if (response.grants.empty() && !carried && clock_.now() - sent < config_.claim_wait / 2) {
    // Answered early with nothing: do not spin.
    Alive alive = alive_;
    claim_retry_timer_ = timers_.after(backoff(2), [this, alive] {
      if (!*alive) return;
      claim_retry_timer_.reset();
      maybe_claim();
    });
    return;
  }
  maybe_claim();
}

void Worker::start_run(wire::WireGrant grant, absl::Time sent) {
  const RunId id = grant.run;
  const absl::Time now = clock_.now();
  const absl::Time deadline =
      lease_deadline(sent, grant.lease_ttl, config_.lease.max_drift_ppm, config_.lease.margin);
  Event e;
  e.kind = event_kinds::kWorkerRunStarted;
  e.with("job", id.job_id)
      .with("incarnation", id.incarnation)
      .with("nominal", id.nominal)
      .with("attempt", static_cast<std::uint64_t>(grant.attempt))
      .with("token", grant.token);
  if (now >= deadline) {
    e.kind = event_kinds::kWorkerGrantExpired;
    record(std::move(e));
    return;
  }
  KAIROS_CHECK_MSG(within_lease(sent, deadline, grant.lease_ttl, config_.lease.margin),
                   "a run deadline must end a margin inside the run lease");
  if (auto it = active_.find(id); it != active_.end()) {
    // A newer grant for a run we still think we hold: our old lease lapsed.
    if (it->second.grant.token >= grant.token) return;  // a replayed grant
    KAIROS_CHECK(grant.token > it->second.grant.token);
    Active old = std::move(it->second);
    active_.erase(it);
    if (old.deadline_timer) timers_.cancel(*old.deadline_timer);
    if (old.timeout_timer) timers_.cancel(*old.timeout_timer);
    if (old.started) runner_.stop(old.handle);
  }
  record(std::move(e));
  RunRequest req;
  req.job_id = id.job_id;
  req.incarnation = id.incarnation;
  req.nominal_time = id.nominal;
  req.attempt = grant.attempt;
  req.fencing_token = grant.token;
  req.idempotency_key = idempotency_key(id);
  req.run_id = req.idempotency_key;
  req.late_by = grant.late_by;
  req.occurrences = grant.occurrences;
  req.payload = grant.payload;
  req.deadline = now + grant.timeout;
  const std::uint64_t token = grant.token;
  Active a;
  a.grant = std::move(grant);
  a.lease_deadline = deadline;
  a.lease_sent = sent;
  a.lease_ttl = a.grant.lease_ttl;
  const bool inserted = active_.emplace(id, std::move(a)).second;
  KAIROS_CHECK_MSG(inserted, "a worker holds at most one token per run");
  arm_deadline(id);
  {
    Alive alive = alive_;
    active_[id].timeout_timer = timers_.after(req.deadline - now, [this, alive, id, token] {
      if (*alive) on_timeout(id, token);
    });
  }
  if (config_.bugs.ack_before_effect) planted_ack_at_start(id, token);
  Alive alive = alive_;
  const RunHandle h = runner_.start(std::move(req), [this, alive, id, token](RunOutcome o) {
    if (*alive) on_run_done(id, token, std::move(o));
  });
  auto it = active_.find(id);
  if (it != active_.end() && it->second.grant.token == token) {
    it->second.handle = h;
    it->second.started = true;
  }
}

void Worker::planted_ack_at_start(const RunId& id, std::uint64_t token) {
  // Planted bug (ack_before_effect): success is reported before the side
  // effect is known; the runner's real outcome is then never reported.
  KAIROS_CHECK(config_.bugs.ack_before_effect);
  auto held = active_.find(id);
  KAIROS_CHECK(held != active_.end() && held->second.grant.token == token);
  Report rep;
  rep.item = CompleteItem{id, token, RunStatus::kSucceeded, 0, "acknowledged at start"};
  queue_report(std::move(rep));
  flush_reports();
}

void Worker::arm_deadline(const RunId& id) {
  auto it = active_.find(id);
  if (it == active_.end()) return;
  Active& a = it->second;
  if (a.deadline_timer) timers_.cancel(*a.deadline_timer);
  Alive alive = alive_;
  a.deadline_timer = timers_.after(a.lease_deadline - clock_.now(), [this, alive, id] {
    if (*alive) on_deadline(id);
  });
}

void Worker::on_deadline(const RunId& id) {
  auto it = active_.find(id);
  if (it == active_.end()) return;
  Active& a = it->second;
  a.deadline_timer.reset();
  if (clock_.now() < a.lease_deadline) {
    arm_deadline(id);
    return;
  }
  if (a.lost) return;
  KAIROS_CHECK(within_lease(a.lease_sent, a.lease_deadline, a.lease_ttl, config_.lease.margin));
  a.lost = true;
  Event e;
  e.kind = event_kinds::kWorkerLeaseDeadline;
  e.with("job", id.job_id)
      .with("incarnation", id.incarnation)
      .with("nominal", id.nominal)
      .with("token", a.grant.token);
  record(std::move(e));
  if (a.started) runner_.stop(a.handle);
}

void Worker::on_timeout(const RunId& id, std::uint64_t token) {
  auto it = active_.find(id);
  if (it == active_.end() || it->second.grant.token != token) return;
  Active& a = it->second;
  a.timeout_timer.reset();
  if (a.lost || a.timed_out) return;
  a.timed_out = true;
  Event e;
  e.kind = event_kinds::kWorkerRunTimeout;
  e.with("job", id.job_id)
      .with("incarnation", id.incarnation)
      .with("nominal", id.nominal)
      .with("token", token)
      .with("timeout", a.grant.timeout);
  record(std::move(e));
  if (a.started) runner_.stop(a.handle);
}

void Worker::on_run_done(const RunId& id, std::uint64_t token, RunOutcome outcome) {
  auto it = active_.find(id);
  if (it == active_.end() || it->second.grant.token != token) return;
  Active a = std::move(it->second);
  active_.erase(it);
  if (a.deadline_timer) timers_.cancel(*a.deadline_timer);
  if (a.timeout_timer) timers_.cancel(*a.timeout_timer);
  if (a.timed_out && outcome.status == RunStatus::kStopped) {
    outcome.status = RunStatus::kTimedOut;  // stopped by the job's own timeout
    outcome.detail = "timed out";
  }
  const bool late = clock_.now() >= a.lease_deadline;
  if (a.lost || late) {
    Event e;
    e.kind = event_kinds::kWorkerReportDropped;
    e.with("job", id.job_id)
        .with("incarnation", id.incarnation)
        .with("nominal", id.nominal)
        .with("token", token)
        .with("reason", std::string(a.lost ? "lease lost" : "past lease deadline"));
    record(std::move(e));
  } else if (!config_.bugs.ack_before_effect) {
    if (crashed_at("effect-before-complete")) return;
    // Reported only while held: the lease not lost, its deadline (a margin
    // inside the lease) not passed, and the token the one granted.
    KAIROS_CHECK_MSG(
        !a.lost && clock_.now() < a.lease_deadline && a.grant.token == token &&
            within_lease(a.lease_sent, a.lease_deadline, a.lease_ttl, config_.lease.margin),
        "a worker reports completion only for a run it holds");
    Report rep;
    rep.item = CompleteItem{id,
                            token,
                            outcome.status,
                            outcome.exit_code,
                            outcome.detail.substr(0, kMaxDetailSize),
                            outcome.output.substr(0, kMaxRunOutputSize)};
    queue_report(std::move(rep));
  }
  flush_soon();
  check_drained();
}

void Worker::flush_soon() {
  // Runs that finish in the same turn of the loop (a batch of quick runs)
  // are reported, and their slots claimed again, in one message.
  if (flush_posted_) return;
  flush_posted_ = true;
  Alive alive = alive_;
  timers_.post([this, alive] {
    if (!*alive) return;
    flush_posted_ = false;
    flush_reports();
    maybe_claim();
  });
}

// ---------------------------------------------------------------------------
// Heartbeats.

void Worker::heartbeat() {
  Alive alive = alive_;
  heartbeat_timer_ = timers_.after(config_.lease.heartbeat_period, [this, alive] {
    if (*alive) heartbeat();
  });
  std::vector<RenewItem> items;
  for (const auto& [id, a] : active_) {
    if (a.lost || items.size() >= wire::kMaxBatch) continue;
    items.push_back({id, a.grant.token});
  }
  if (items.empty()) return;
  KAIROS_CHECK(items.size() <= wire::kMaxBatch);
  wire::RenewRequest req;
  req.request_id = next_request_id();
  req.worker_id = config_.worker_id;
  req.items = items;
  const std::uint64_t rid = req.request_id;
  renews_[rid] = {clock_.now(), std::move(items)};
  timers_.after(config_.lease.rpc_timeout + config_.lease.heartbeat_period, [this, alive, rid] {
    if (*alive) renews_.erase(rid);
  });
  send(req);
}

void Worker::on_renew_response(const wire::RenewResponse& response) {
  auto rit = renews_.find(response.request_id);
  if (rit == renews_.end()) return;
  auto [sent, items] = std::move(rit->second);
  renews_.erase(rit);
  if (response.results.size() != items.size()) return;
  for (std::size_t i = 0; i < items.size(); ++i) {
    auto it = active_.find(items[i].run);
    if (it == active_.end() || it->second.grant.token != items[i].token || it->second.lost)
      continue;
    Active& a = it->second;
    const auto& v = response.results[i];
    if (v.verdict == WriteVerdict::kAccepted) {
      const absl::Time d =
          lease_deadline(sent, v.lease_ttl, config_.lease.max_drift_ppm, config_.lease.margin);
      if (d > a.lease_deadline) {
        KAIROS_CHECK_MSG(within_lease(sent, d, v.lease_ttl, config_.lease.margin),
                         "a renewed run deadline must end a margin inside the renewed lease");
        a.lease_deadline = d;
        a.lease_sent = sent;
        a.lease_ttl = v.lease_ttl;
        arm_deadline(items[i].run);
      }
      metrics_.counter("kairos_worker_renewals_total").add();
    } else {
      a.lost = true;
      Event e;
      e.kind = event_kinds::kWorkerLeaseLost;
      e.with("job", items[i].run.job_id)
          .with("incarnation", items[i].run.incarnation)
          .with("nominal", items[i].run.nominal)
          .with("token", items[i].token)
          .with("reason", std::string(to_string(v.verdict)));
      record(std::move(e));
      if (a.started) runner_.stop(a.handle);
    }
  }
}

// ---------------------------------------------------------------------------
// Completion reports.

void Worker::flush_reports() {
  check_drained();
  if (stopped_ || complete_ || flush_timer_ || reports_.empty()) return;
  if (can_claim()) {
    maybe_claim();  // the reports ride with the claim
    return;
  }
  wire::CompleteRequest req;
  req.request_id = next_request_id();
  req.worker_id = config_.worker_id;
  req.items = take_reports();
  Alive alive = alive_;
  const std::uint64_t rid = req.request_id;
  Outstanding o;
  o.request_id = rid;
  o.sent = clock_.now();
  o.timer = timers_.after(config_.lease.rpc_timeout, [this, alive, rid] {
    if (!*alive || !complete_ || complete_->request_id != rid) return;
    rotate_node();
    retry_reports_later(/*abandon_exhausted=*/true);
  });
  complete_ = o;
  send(req);
}

std::vector<CompleteItem> Worker::take_reports() {
  std::vector<CompleteItem> items;
  complete_items_.clear();
  // Bounded by count and by bytes: with captured output (up to
  // kMaxRunOutputSize per item) a full count would not fit one frame. The
  // rest go in the next request.
  constexpr std::size_t kItemOverhead = 64;
  constexpr std::size_t kByteBudget = wire::kMaxFrameBody / 2;
  static_assert(kByteBudget >= kMaxRunOutputSize + kMaxDetailSize + kMaxJobIdSize + kItemOverhead,
                "one report of the largest size always fits");
  std::size_t bytes = 0;
  for (auto& [id, rep] : reports_) {
    if (items.size() >= wire::kMaxBatch) break;
    const std::size_t size = rep.item.run.job_id.size() + rep.item.detail.size() +
                             rep.item.output.size() + kItemOverhead;
    if (!items.empty() && bytes + size > kByteBudget) break;
    bytes += size;
    ++rep.attempts;
    items.push_back(rep.item);
    complete_items_.push_back({id, rep.item.token});
  }
  KAIROS_CHECK(!items.empty() && items.size() <= wire::kMaxBatch &&
               items.size() == complete_items_.size());
  return items;
}

void Worker::queue_report(Report rep) {
  auto [it, fresh] = reports_.try_emplace(rep.item.run);
  if (!fresh && it->second.item.token != rep.item.token) {
    const RunId& id = it->first;
    Event e;
    e.kind = event_kinds::kWorkerReportDropped;
    e.with("job", id.job_id)
        .with("incarnation", id.incarnation)
        .with("nominal", id.nominal)
        .with("token", it->second.item.token)
        .with("reason", absl::StrCat("superseded by token ", rep.item.token));
    record(std::move(e));
  }
  it->second = std::move(rep);
}

std::map<RunId, Worker::Report>::iterator Worker::waiting_report(const SentReport& sent) {
  auto it = reports_.find(sent.run);
  if (it != reports_.end() && it->second.item.token != sent.token) return reports_.end();
  return it;
}

void Worker::retry_reports_later(bool abandon_exhausted) {
  KAIROS_CHECK(complete_.has_value());
  complete_.reset();
  Alive alive = alive_;
  std::uint32_t worst = 0;
  for (const SentReport& sent : complete_items_) {
    const RunId& id = sent.run;
    auto it = waiting_report(sent);
    if (it == reports_.end()) continue;
    if (abandon_exhausted && it->second.attempts >= config_.max_report_attempts) {
      Event e;
      e.kind = event_kinds::kWorkerReportAbandoned;
      e.with("job", id.job_id)
          .with("incarnation", id.incarnation)
          .with("nominal", id.nominal)
          .with("token", it->second.item.token);
      record(std::move(e));
      reports_.erase(it);
      continue;
    }
    worst = std::max(worst, it->second.attempts);
  }
  flush_timer_ = timers_.after(backoff(worst), [this, alive] {
    if (!*alive) return;
    flush_timer_.reset();
    flush_reports();
  });
}

void Worker::on_complete_response(const wire::CompleteResponse& response) {
  if (!complete_ || complete_->request_id != response.request_id) return;
  if (response.results.size() != complete_items_.size()) return;
  timers_.cancel(complete_->timer);
  complete_.reset();
  apply_verdicts(response.results);
  flush_reports();
}

void Worker::apply_verdicts(const std::vector<wire::WireVerdict>& results) {
  KAIROS_CHECK(results.size() == complete_items_.size());
  for (std::size_t i = 0; i < complete_items_.size(); ++i) {
    const RunId& id = complete_items_[i].run;
    auto it = waiting_report(complete_items_[i]);
    if (it == reports_.end()) continue;
    const auto& v = results[i];
    Event e;
    e.kind = v.verdict == WriteVerdict::kAccepted ? event_kinds::kWorkerReportAccepted
                                                  : event_kinds::kWorkerReportRejected;
    e.with("job", id.job_id)
        .with("incarnation", id.incarnation)
        .with("nominal", id.nominal)
        .with("token", it->second.item.token);
    if (v.verdict != WriteVerdict::kAccepted) e.with("reason", v.reason);
    record(std::move(e));
    reports_.erase(it);
  }
  complete_items_.clear();
}

}  // namespace kairos
