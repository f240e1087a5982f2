#include "core/kernel/scheduler_node.h"

#include <algorithm>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/base/absl_compat.h"
#include "core/base/check.h"
#include "core/kernel/event_kinds.h"
#include "core/kernel/keyspace.h"
#include "core/kernel/node_metrics.h"
#include "core/kernel/node_support.h"

namespace kairos {

absl::Status validate(const SchedulerNodeConfig& c) {
  if (c.node_id.empty() || c.node_id.size() > kMaxWorkerIdSize)
    return absl::InvalidArgumentError("node.node_id: must be 1..200 bytes");
  if (c.shard_count < 1 || c.shard_count > keys::kMaxShards)
    return absl::InvalidArgumentError(absl::StrCat("node.shard_count: must be in [1, ",
                                                   keys::kMaxShards, "], got ", c.shard_count));
  if (c.poll_interval <= absl::ZeroDuration() || c.poll_interval > absl::Minutes(1))
    return absl::InvalidArgumentError("node.poll_interval: must be in (0, 1m]");
  if (c.poll_interval > c.lease.leader_renew_period)
    return absl::InvalidArgumentError(
        "node.poll_interval: must not exceed lease.leader_renew_period (renewals ride on ticks)");
  KAIROS_RETURN_IF_ERROR(validate(c.lease));
  if (c.dispatch_batch < 1 || c.dispatch_batch > 100'000)
    return absl::InvalidArgumentError("node.dispatch_batch: must be in [1, 100000]");
  if (c.reap_batch < 1 || c.reap_batch > 100'000)
    return absl::InvalidArgumentError("node.reap_batch: must be in [1, 100000]");
  if (c.max_claim_batch < 1 || c.max_claim_batch > wire::kMaxBatch)
    return absl::InvalidArgumentError(
        absl::StrCat("node.max_claim_batch: must be in [1, ", wire::kMaxBatch, "]"));
  if (c.max_claim_wait < absl::ZeroDuration() || c.max_claim_wait > absl::Hours(1))
    return absl::InvalidArgumentError("node.max_claim_wait: must be in [0, 1h]");
  if (c.max_txn_attempts < 1 || c.max_txn_attempts > 100)
    return absl::InvalidArgumentError("node.max_txn_attempts: must be in [1, 100]");
  if (c.retry_backoff_base <= absl::ZeroDuration() || c.retry_backoff_max < c.retry_backoff_base)
    return absl::InvalidArgumentError(
        "node.retry_backoff_base: must be positive and <= node.retry_backoff_max");
  KAIROS_RETURN_IF_ERROR(validate(c.policy));
  if (c.max_clock_skew <= absl::ZeroDuration() || c.max_clock_skew > absl::Hours(24))
    return absl::InvalidArgumentError("node.max_clock_skew: must be in (0, 24h]");
  return absl::OkStatus();
}

SchedulerNode::SchedulerNode(const Clock& clock, Timers& timers, Storage& storage,
                             Transport& transport, Random& random, EventLog& events,
                             Metrics& metrics, SchedulerNodeConfig config)
    : clock_(clock),
      timers_(timers),
      storage_(storage),
      transport_(transport),
      random_(random),
      events_(events),
      metrics_(metrics),
      config_(std::move(config)),
      store_(config_.shard_count, config_.bugs, config_.policy),
      alive_(std::make_shared<bool>(true)),
      shards_(config_.shard_count) {
  const absl::Status s = validate(config_);
  KAIROS_CHECK_MSG(s.ok(), std::string(s.message()).c_str());
  check_lease_invariants(config_.lease);
  KAIROS_CHECK(shards_.size() == config_.shard_count);
  node_metrics::describe_node_metrics(metrics_, config_.shard_count);
}

SchedulerNode::~SchedulerNode() { stop(); }

void SchedulerNode::start() {
  KAIROS_CHECK(!started_);
  started_ = true;
  Alive alive = alive_;
  transport_.set_handler([this, alive](PeerId from, std::string_view bytes) {
    if (*alive) on_message(from, bytes);
  });
  Event e;
  e.kind = event_kinds::kNodeStarted;
  record(std::move(e));
  tick_timer_ = timers_.after(absl::ZeroDuration(), [this, alive] {
    if (!*alive) return;
    tick_timer_.reset();
    tick();
    schedule_tick();
  });
}

void SchedulerNode::stop() {
  if (stopped_ || !started_) {
    stopped_ = true;
    *alive_ = false;
    return;
  }
  stopped_ = true;
  *alive_ = false;
  if (tick_timer_) timers_.cancel(*tick_timer_);
  tick_timer_.reset();
  for (const ShardState& st : shards_)
    if (st.wake_timer) timers_.cancel(*st.wake_timer);
  transport_.set_handler([](PeerId, std::string_view) {});
  parked_.clear();
  shards_.assign(shards_.size(), ShardState{});
  live_nodes_ = 0;
  for (std::uint32_t s = 0; s < shards_.size(); ++s) set_backlog(s, 0);
}

void SchedulerNode::schedule_tick() {
  Alive alive = alive_;
  tick_timer_ = timers_.after(config_.poll_interval, [this, alive] {
    if (!*alive) return;
    tick_timer_.reset();
    tick();
    schedule_tick();
  });
}

bool SchedulerNode::leads(std::uint32_t shard) const {
  KAIROS_CHECK(shard < shards_.size());
  return shards_[shard].leader && clock_.now() < shards_[shard].leading_until;
}

std::uint64_t SchedulerNode::epoch(std::uint32_t shard) const {
  return leads(shard) ? shards_[shard].epoch : 0;
}

void SchedulerNode::record(Event event) {
  if (auto outcome = node_metrics::run_outcome(event)) run_outcome_counters_.of(*outcome).add();
  record_event(std::move(event), clock_.now(), "node", config_.node_id, events_, event_counters_);
}

void SchedulerNode::record_all(std::vector<Event>& events) {
  for (auto& e : events) record(std::move(e));
  events.clear();
}

void SchedulerNode::count_txn(std::string_view op, const TxnResult& result) {
  metrics_
      .counter(absl::StrCat("kairos_txn_total{op=\"", absl_sv(op), "\",outcome=\"",
                            absl_sv(to_string(result.outcome)), "\"}"))
      .add();
}

void SchedulerNode::observe_fire_lateness(const std::vector<Grant>& grants) {
  Histogram& lateness = metrics_.histogram(node_metrics::kFireLateness, lateness_buckets_us());
  for (const Grant& g : grants)
    if (g.run.attempts.size() == 1)  // the run's first grant: it fires now
      node_metrics::observe_duration(lateness, g.run.claimed_at - g.run.due_at);
}

absl::Duration SchedulerNode::backoff(std::uint32_t attempt) {
  return retry_backoff(random_, config_.retry_backoff_base, config_.retry_backoff_max, attempt);
}

void SchedulerNode::set_backlog(std::uint32_t shard, std::int64_t due) {
  metrics_.gauge(node_metrics::shard_series(node_metrics::kDueBacklog, shard)).set(due);
}

void SchedulerNode::transact_once(std::string_view op, TxnBody body,
                                  std::function<void(TxnResult)> done, TxnMode mode) {
  Alive alive = alive_;
  const absl::Time sent = clock_.now();
  storage_.transact(
      std::move(body),
      [this, alive, op_name = std::string(op), done = std::move(done), sent](TxnResult result) {
        if (!*alive) return;
        if (!op_name.empty()) {
          count_txn(op_name, result);
          node_metrics::observe_duration(
              metrics_.histogram(node_metrics::op_series(node_metrics::kTxnDuration, op_name),
                                 latency_buckets_us()),
              clock_.now() - sent);
        }
        done(std::move(result));
      },
      mode);
}

void SchedulerNode::transact_retrying(std::string_view op, TxnBody body,
                                      std::function<void(TxnResult)> done, TxnMode mode,
                                      std::uint32_t attempt) {
  KAIROS_CHECK(!op.empty());
  KAIROS_CHECK(attempt >= 1 && attempt <= config_.max_txn_attempts);
  TxnBody body_copy = body;
  transact_once(
      op, std::move(body_copy),
      [this, op_name = std::string(op), body = std::move(body), done = std::move(done), mode,
       attempt](TxnResult result) mutable {
        const bool definite = result.outcome == CommitOutcome::kCommitted ||
                              result.outcome == CommitOutcome::kAborted;
        if (definite || attempt >= config_.max_txn_attempts) {
          done(std::move(result));
          return;
        }
        Alive alive = alive_;
        timers_.after(backoff(attempt), [this, alive, op_name, body = std::move(body),
                                         done = std::move(done), mode, attempt]() mutable {
          if (!*alive) return;
          transact_retrying(op_name, std::move(body), std::move(done), mode, attempt + 1);
        });
      },
      mode);
}

// ---------------------------------------------------------------------------
// Tick: leadership, dispatch, reaper, parked claims.

void SchedulerNode::tick() {
  if (!running()) return;
  if (!initialized_) {
    if (init_txn_) return;
    init_txn_ = true;
    transact_once(
        "init", [this](Txn& txn) { return store_.init(txn); },
        [this](TxnResult r) {
          init_txn_ = false;
          if (r.committed()) {
            initialized_ = true;
            tick();
          } else if (r.outcome == CommitOutcome::kAborted) {
            Event e;
            e.kind = event_kinds::kNodeInitFailed;
            e.with("error", std::string(r.status.message()));
            record(std::move(e));
          }
        });
    return;
  }
  probe_clock();
  if (leaving_) {
    // No announcement, acquisition or renewal: only the releases go on.
    for (std::uint32_t s = 0; s < shards_.size(); ++s) release_step(s);
    finish_leave();
    serve_parked();
    return;
  }
  if (clock_skewed_) {
    serve_parked();  // answered with an error: this node does not claim now
    return;
  }
  announce();
  reset_acquire_budget();
  // Free shards first: a probe of a held one (its backoff over) would
  // otherwise take the budget, a tick per held shard below the free one.
  acquire_free_shards();
  for (std::uint32_t s = 0; s < shards_.size(); ++s) {
    if (shards_[s].release_epoch != 0) {
      release_step(s);
      continue;
    }
    leadership_step(s);
    ShardState& st = shards_[s];
    if (st.leader && clock_.now() >= st.leading_until)
      lose_leadership(s, "local lease deadline passed");
    if (st.leader) {
      if (!st.dispatch_txn) run_dispatch(s);
      if (!st.reap_txn) run_reap(s);
    }
  }
  serve_parked();
}

void SchedulerNode::probe_clock() {
  if (clock_probe_txn_) return;
  clock_probe_txn_ = true;
  auto store_now = std::make_shared<absl::Time>();
  const absl::Time sent = clock_.now();
  transact_once(
      kUncounted,
      [store_now](Txn& txn) {
        *store_now = txn.now();
        return absl::OkStatus();
      },
      [this, store_now, sent](TxnResult r) {
        clock_probe_txn_ = false;
        if (!r.committed()) return;  // no reading: keep the last verdict
        const absl::Time received = clock_.now();
        const absl::Duration bound = config_.max_clock_skew;
        const bool skewed = *store_now < sent - bound || *store_now > received + bound;
        // Estimated offset of the store clock from this node's (midpoint).
        const absl::Duration offset = *store_now - (sent + (received - sent) / 2);
        if (skewed == clock_skewed_) return;
        clock_skewed_ = skewed;
        Event e;
        e.kind = skewed ? event_kinds::kNodeClockSkew : event_kinds::kNodeClockOk;
        e.with("offset", offset)
            .with("bound", bound)
            .with("rtt", received - sent)
            .with("store_now", *store_now);
        record(std::move(e));
        if (skewed)
          for (std::uint32_t s = 0; s < shards_.size(); ++s) lose_leadership(s, "clock skew");
      },
      TxnMode::kReadOnly);
}

void SchedulerNode::lose_leadership(std::uint32_t shard, std::string_view reason) {
  ShardState& st = shards_[shard];
  if (!st.leader) return;
  Event e;
  e.kind = event_kinds::kLeaderLost;
  e.with("shard", static_cast<std::uint64_t>(shard))
      .with("epoch", st.epoch)
      .with("reason", std::string(reason));
  st.leader = false;
  st.epoch = 0;
  set_backlog(shard, 0);
  record(std::move(e));
}

void SchedulerNode::leadership_step(std::uint32_t shard) {
  ShardState& st = shards_[shard];
  const absl::Time now = clock_.now();
  if (st.leader_txn) return;
  if (st.leader && now < st.renew_at) return;
  // (A wait longer than a whole leader lease means this clock stepped back:
  // try now rather than wait out the step.)
  if (!st.leader && now < st.acquire_at && st.acquire_at - now <= config_.lease.leader_ttl) return;
  if (!st.leader) {
    // Acquire only below the fair share (none before the first announcement).
    if (acquire_budget_ == 0) return;
    --acquire_budget_;
    st.known_free = false;  // the attempt tells: acquired, or held by another
  }
  st.leader_txn = true;
  const std::uint64_t known = st.leader ? st.epoch : st.pending_epoch;
  auto out = std::make_shared<LeadershipResult>();
  const absl::Time sent = now;
  const absl::Duration ttl = config_.lease.leader_ttl;
  transact_once(
      "leader",
      [this, shard, known, ttl, out](Txn& txn) {
        return store_.acquire_or_renew(txn, shard, config_.node_id, known, ttl, out.get());
      },
      [this, shard, known, out, sent](TxnResult r) {
        ShardState& st = shards_[shard];
        st.leader_txn = false;
        if (leaving_) {
          // Leaving while this was in flight: do not lead; release what it
          // wrote (a renewal extended the store's lease: release it too).
          if (r.committed() && out->kind != LeadershipResult::Kind::kHeldByOther) {
            if (out->kind == LeadershipResult::Kind::kAcquired) record_all(out->events);
            st.release_epoch = out->record.epoch;
            st.highest_epoch = std::max(st.highest_epoch, out->record.epoch);
            st.leading_until = lease_deadline(sent, config_.lease.leader_ttl,
                                              config_.lease.max_drift_ppm, config_.lease.margin);
          }
          release_step(shard);
          finish_leave();
          return;
        }
        if (st.release_epoch != 0) {
          // Given up (rebalancing) while this renewal was in flight: do not
          // lead; the release follows, under the epoch this wrote.
          if (r.committed() && out->kind == LeadershipResult::Kind::kAcquired) {
            record_all(out->events);
            st.release_epoch = out->record.epoch;
            st.highest_epoch = std::max(st.highest_epoch, out->record.epoch);
          }
          return;
        }
        if (r.outcome == CommitOutcome::kUnknown) {
          // It may have applied: remember the epoch so the next attempt can
          // adopt it instead of bumping again. Leadership is not extended.
          if (out->kind != LeadershipResult::Kind::kHeldByOther)
            st.pending_epoch = out->record.epoch;
          return;
        }
        if (r.outcome == CommitOutcome::kAborted) on_failed(shard, "leader", r.status);
        if (!r.committed()) return;
        st.pending_epoch = 0;
        if (clock_skewed_) {
          // The clock went out of bound while this was in flight: do not
          // lead (the store lease, if taken, simply lapses).
          lose_leadership(shard, "clock skew");
          return;
        }
        if (out->kind == LeadershipResult::Kind::kHeldByOther) {
          lose_leadership(
              shard, absl::StrCat("held by ", out->record.holder, " epoch ", out->record.epoch));
          // Back off until the holder's lease would lapse: a non-leader
          // otherwise writes nothing but reads the record every tick. (A
          // clock running slow delays the takeover by its drift share.)
          // A contested shard is probed every tick until its over-share
          // holder releases it; once another node holds it, it is no longer
          // ours to wait for, and the acquire budget goes to other shards.
          if (st.contested && out->record.holder != st.contested_by) st.contested = false;
          st.acquire_at = st.contested ? clock_.now() : clock_.now() + out->held_for;
          // Lost a race for a free shard: another free one need not wait
          // for the next tick.
          if (!leaving_ && !clock_skewed_) {
            reset_acquire_budget();
            acquire_free_shards();
          }
          return;
        }
        if (out->kind == LeadershipResult::Kind::kAcquired && crashed_at("leader-after-elect"))
          return;
        record_all(out->events);
        if (out->kind == LeadershipResult::Kind::kAcquired && st.leader &&
            st.epoch != out->record.epoch)
          lose_leadership(shard, "re-acquired under a new epoch");
        KAIROS_CHECK(out->record.holder == config_.node_id && out->record.epoch > 0);
        KAIROS_CHECK_MSG(
            out->kind != LeadershipResult::Kind::kRenewed || out->record.epoch == known,
            "a renewal keeps the epoch it renewed");
        KAIROS_CHECK_MSG(out->record.epoch >= st.highest_epoch,
                         "the epochs a node leads a shard under only grow");
        st.leader = true;
        st.epoch = out->record.epoch;
        st.highest_epoch = st.epoch;
        st.leading_until = lease_deadline(sent, config_.lease.leader_ttl,
                                          config_.lease.max_drift_ppm, config_.lease.margin);
        st.renew_at = sent + config_.lease.leader_renew_period;
        KAIROS_CHECK_MSG(
            within_lease(sent, st.leading_until, config_.lease.leader_ttl, config_.lease.margin),
            "the leadership deadline must end a margin inside the leader lease");
        KAIROS_CHECK_MSG(sent < st.renew_at && st.renew_at < st.leading_until,
                         "a leader renews before its leadership deadline");
        if (!st.dispatch_txn) run_dispatch(shard);
      });
}

std::uint32_t SchedulerNode::fair_share() const {
  if (live_nodes_ == 0) return 0;
  return (config_.shard_count + live_nodes_ - 1) / live_nodes_;
}

void SchedulerNode::acquire_free_shards() {
  for (std::uint32_t s = 0; s < shards_.size(); ++s)
    if (shards_[s].known_free && shards_[s].release_epoch == 0) leadership_step(s);
}

std::uint32_t SchedulerNode::held_shards() const {
  std::uint32_t held = 0;
  for (const ShardState& st : shards_)
    if (st.release_epoch == 0 && (st.leader || st.leader_txn)) ++held;
  return held;
}

void SchedulerNode::reset_acquire_budget() {
  const std::uint32_t fair = fair_share(), held = held_shards();
  acquire_budget_ = fair > held ? fair - held : 0;
}

void SchedulerNode::announce() {
  if (announce_txn_ || clock_.now() < announce_at_) return;
  announce_txn_ = true;
  auto out = std::make_shared<MembershipResult>();
  const absl::Time sent = clock_.now();
  const bool first = !announced_;
  const absl::Duration ttl = config_.lease.leader_ttl;
  transact_once(
      "announce",
      [this, first, ttl, out](Txn& txn) {
        return store_.announce(txn, config_.node_id, first, ttl, out.get());
      },
      [this, out, sent](TxnResult r) {
        announce_txn_ = false;
        if (r.outcome == CommitOutcome::kAborted) {
          ++health_.failed_txns;
          Event e;
          e.kind = event_kinds::kTxnFailed;
          e.with("op", std::string("announce"))
              .with("code", std::string(absl::StatusCodeToString(r.status.code())))
              .with("error", std::string(r.status.message()));
          record(std::move(e));
        }
        if (!r.committed()) return;  // tried again next tick
        const bool first_view = live_nodes_ == 0;
        announced_ = true;
        announce_at_ = sent + config_.lease.leader_renew_period;
        KAIROS_CHECK(out->live >= 1);
        live_nodes_ = out->live;
        metrics_.gauge(node_metrics::kLiveNodes).set(live_nodes_);
        record_all(out->events);
        for (ShardState& st : shards_) st.known_free = false;
        for (std::uint32_t shard : out->free_shards)
          if (!shards_[shard].leader) {
            shards_[shard].acquire_at = absl::InfinitePast();
            shards_[shard].known_free = true;
          }
        // The shards each over-share node gives up: its highest-numbered.
        const std::uint32_t fair = fair_share();
        std::map<std::string, std::vector<std::uint32_t>> by_holder;
        for (const auto& [shard, holder] : out->held)
          if (holder != config_.node_id) by_holder[holder].push_back(shard);
        for (ShardState& st : shards_) st.contested = false;
        for (const auto& [holder, held] : by_holder)
          for (std::size_t i = fair; i < held.size(); ++i) {
            shards_[held[i]].contested = true;
            shards_[held[i]].contested_by = holder;
            shards_[held[i]].acquire_at = absl::InfinitePast();
          }
        rebalance();
        // Acquire now rather than a poll later: at the first view, and when
        // a free shard is below this node's share (a holder left or lapsed).
        if (first_view || (!out->free_shards.empty() && held_shards() < fair)) tick();
      });
}

void SchedulerNode::rebalance() {
  const std::uint32_t fair = fair_share();
  if (fair == 0) return;
  std::uint32_t led = 0;
  for (const ShardState& st : shards_)
    if (st.leader) ++led;
  // The highest-numbered shards go first: a choice every node makes alike.
  for (std::uint32_t s = config_.shard_count; s-- > 0 && led > fair;) {
    ShardState& st = shards_[s];
    if (!st.leader) continue;
    KAIROS_CHECK(st.release_epoch == 0 && st.epoch > 0);
    const std::uint64_t epoch = st.epoch;
    // Stop dispatching first; the record is released once nothing of the
    // shard is in flight (release_step).
    lose_leadership(s, absl::StrCat("rebalance: leads ", led, " shards, fair share ", fair, " of ",
                                    live_nodes_, " live nodes"));
    st.release_epoch = epoch;
    --led;
    release_step(s);
  }
  KAIROS_CHECK(led <= fair);
}

void SchedulerNode::release_step(std::uint32_t shard) {
  ShardState& st = shards_[shard];
  if (st.release_epoch == 0 || st.release_txn) return;
  if (st.leader_txn || st.dispatch_txn || st.reap_txn) {
    // Wait for them, but not a whole poll: the shard is led by nobody now.
    if (!st.release_retry) {
      st.release_retry = true;
      Alive alive = alive_;
      timers_.after(config_.retry_backoff_base, [this, alive, shard] {
        if (!*alive) return;
        shards_[shard].release_retry = false;
        release_step(shard);
      });
    }
    return;
  }
  KAIROS_CHECK_MSG(!st.leader, "a shard is released only after its dispatching stopped");
  if (clock_.now() >= st.leading_until) {
    st.release_epoch = 0;  // the lease lapses by itself
    return;
  }
  st.release_txn = true;
  const std::uint64_t epoch = st.release_epoch;
  auto released = std::make_shared<bool>(false);
  auto events = std::make_shared<std::vector<Event>>();
  transact_once(
      "release",
      [this, shard, epoch, released, events](Txn& txn) {
        events->clear();
        return store_.release_leadership(txn, shard, LeaderToken{config_.node_id, epoch},
                                         released.get(), events.get());
      },
      [this, shard, epoch, events](TxnResult r) {
        ShardState& st = shards_[shard];
        st.release_txn = false;
        if (st.release_epoch != epoch) return;
        if (r.outcome == CommitOutcome::kAborted) {
          on_failed(shard, "release", r.status);
          st.release_epoch = 0;  // the lease lapses by itself
          return;
        }
        if (!r.committed()) return;  // tried again next tick
        st.release_epoch = 0;
        record_all(*events);
        finish_leave();
      });
}

void SchedulerNode::leave(std::function<void()> done) {
  KAIROS_CHECK_MSG(started_ && !stopped_ && !leaving_, "leave() once, on a running node");
  KAIROS_CHECK(done);
  leaving_ = true;
  leave_done_ = std::move(done);
  for (std::uint32_t s = 0; s < shards_.size(); ++s) {
    ShardState& st = shards_[s];
    if (!st.leader) continue;
    const std::uint64_t epoch = st.epoch;
    lose_leadership(s, "leaving");
    if (st.release_epoch == 0) st.release_epoch = epoch;
  }
  for (std::uint32_t s = 0; s < shards_.size(); ++s) release_step(s);
  finish_leave();
}

void SchedulerNode::finish_leave() {
  if (!leaving_ || !leave_done_ || depart_txn_) return;
  for (const ShardState& st : shards_)
    if (st.release_epoch != 0 || st.release_txn || st.leader_txn) return;
  if (!announced_) {
    // Never announced: no record of ours counts this node as live.
    auto done = std::move(leave_done_);
    leave_done_ = nullptr;
    done();
    return;
  }
  depart_txn_ = true;
  auto departed = std::make_shared<bool>(false);
  auto events = std::make_shared<std::vector<Event>>();
  transact_once(
      "depart",
      [this, departed, events](Txn& txn) {
        events->clear();
        return store_.depart(txn, config_.node_id, departed.get(), events.get());
      },
      [this, events](TxnResult r) {
        depart_txn_ = false;
        if (r.outcome == CommitOutcome::kAborted) {
          ++health_.failed_txns;
          Event e;
          e.kind = event_kinds::kTxnFailed;
          e.with("op", std::string("depart"))
              .with("code", std::string(absl::StatusCodeToString(r.status.code())))
              .with("error", std::string(r.status.message()));
          record(std::move(e));
        }
        if (r.committed()) record_all(*events);
        // Not committed: the record lapses by itself within a leader lease.
        auto done = std::move(leave_done_);
        leave_done_ = nullptr;
        if (done) done();
      });
}

void SchedulerNode::on_stale_epoch(std::uint32_t shard, std::uint64_t epoch, std::string_view op,
                                   const absl::Status& status) {
  KAIROS_CHECK(shard < shards_.size());
  Event e;
  e.kind = event_kinds::kWriteRejectedStaleEpoch;
  e.with("shard", static_cast<std::uint64_t>(shard))
      .with("epoch", epoch)
      .with("op", std::string(op))
      .with("error", std::string(status.message()));
  record(std::move(e));
  // Only the leadership the refused write was made under is stale: one this
  // node acquired since, under a newer epoch, stands.
  const ShardState& st = shards_[shard];
  if (st.leader && st.epoch == epoch) lose_leadership(shard, "stale epoch");
}

void SchedulerNode::on_failed(std::uint32_t shard, std::string_view op,
                              const absl::Status& status) {
  ++health_.failed_txns;
  Event e;
  e.kind = event_kinds::kTxnFailed;
  e.with("shard", static_cast<std::uint64_t>(shard))
      .with("op", std::string(op))
      .with("code", std::string(absl::StatusCodeToString(status.code())))
      .with("error", std::string(status.message()));
  record(std::move(e));
}

void SchedulerNode::on_undecodable(std::uint32_t shard, std::string_view op,
                                   const DispatchResult::Undecodable& bad) {
  if (!undecodable_keys_.insert(bad.key).second) return;  // recorded already
  ++health_.undecodable_records;
  health_.degraded = true;
  health_.reason = absl::StrCat("undecodable record \"", absl::CHexEscape(bad.key), "\" (job ",
                                absl::CHexEscape(bad.job_id), "): ", bad.error);
  Event e;
  e.kind = event_kinds::kRecordUndecodable;
  e.with("shard", static_cast<std::uint64_t>(shard))
      .with("op", std::string(op))
      .with("job", bad.job_id)
      .with("key", absl::CHexEscape(bad.key))
      .with("error", bad.error);
  record(std::move(e));
}

void SchedulerNode::report_undecodable(std::string_view op,
                                       const std::vector<DispatchResult::Undecodable>& bad) {
  for (const auto& b : bad) on_undecodable(store_.shard_of(b.job_id), op, b);
}

void SchedulerNode::run_dispatch(std::uint32_t shard) {
  ShardState& st = shards_[shard];
  if (!st.leader || st.dispatch_txn || clock_.now() >= st.leading_until || clock_skewed_) return;
  if (crashed_at("dispatch-before-commit")) return;
  KAIROS_CHECK_MSG(st.epoch > 0 && st.epoch <= st.highest_epoch,
                   "a leader writes only under an epoch it acquired");
  st.dispatch_txn = true;
  const LeaderToken token{config_.node_id, st.epoch};
  const std::size_t limit = config_.dispatch_batch;
  auto out = std::make_shared<DispatchResult>();
  // The body gets its own copy: the store may run it off the node's loop.
  std::shared_ptr<const std::set<std::string>> skip;
  if (!st.skip_jobs.empty()) skip = std::make_shared<const std::set<std::string>>(st.skip_jobs);
  transact_once(
      "dispatch",
      [this, shard, token, limit, out, skip](Txn& txn) {
        return store_.dispatch(txn, shard, token, limit, out.get(), skip.get());
      },
      [this, shard, token, out](TxnResult r) {
        ShardState& st = shards_[shard];
        st.dispatch_txn = false;
        if (r.outcome == CommitOutcome::kAborted) {
          if (r.status.code() == absl::StatusCode::kFailedPrecondition) {
            on_stale_epoch(shard, token.epoch, "dispatch", r.status);
          } else if (out->poisoned) {
            // One job's record does not decode: pass that job over and serve
            // the rest of the shard now. Each retry passes over one more job.
            const bool added = st.skip_jobs.insert(out->poisoned->job_id).second;
            KAIROS_CHECK_MSG(added, "a job passed over is never dispatched");
            on_undecodable(shard, "dispatch", *out->poisoned);
            run_dispatch(shard);
          } else {
            on_failed(shard, "dispatch", r.status);
          }
          return;
        }
        if (r.outcome == CommitOutcome::kUnknown && config_.bugs.unknown_as_failure &&
            !out->dispatched.empty()) {
          planted_redispatch_after_unknown(shard, token, out->dispatched);
          return;
        }
        if (!r.committed()) return;  // the next tick re-reads the due index
        if (!out->dispatched.empty() && crashed_at("dispatch-after-commit-before-reply")) return;
        record_all(out->events);
        set_backlog(shard, out->scanned);
        Histogram& lateness =
            metrics_.histogram(node_metrics::kDispatchLateness, lateness_buckets_us());
        for (const RunRecord& run : out->dispatched)
          node_metrics::observe_duration(lateness, run.dispatched_at - run.due_at);
        for (const auto& bad : out->undecodable) on_undecodable(shard, "dispatch", bad);
        if (config_.bugs.non_atomic_dispatch && !out->to_create.empty())
          planted_create_runs_separately(shard, token, out->to_create);
        if (!out->dispatched.empty()) serve_parked();
        if (out->more) {
          run_dispatch(shard);
        } else if (out->next_due_in && *out->next_due_in < config_.poll_interval) {
          wake_for_due(shard, *out->next_due_in);
        }
      });
}

void SchedulerNode::planted_redispatch_after_unknown(std::uint32_t shard, const LeaderToken& token,
                                                     const std::vector<RunRecord>& dispatched) {
  // Planted bug (unknown_as_failure): take "unknown" as "not applied" and
  // create the runs again without the idempotency check.
  KAIROS_CHECK(config_.bugs.unknown_as_failure);
  auto runs = std::make_shared<std::vector<RunRecord>>(dispatched);
  auto again = std::make_shared<DispatchResult>();
  transact_once(
      kUncounted,
      [this, shard, token, runs, again](Txn& txn) {
        return store_.create_runs(txn, shard, token, *runs, /*idempotent=*/false, again.get());
      },
      [this, again](TxnResult r) {
        if (r.committed()) record_all(again->events);
      });
}

void SchedulerNode::planted_create_runs_separately(std::uint32_t shard, const LeaderToken& token,
                                                   const std::vector<RunRecord>& to_create) {
  // Planted bug (non_atomic_dispatch): the runs are created in a second
  // transaction, after the due entry already moved on.
  KAIROS_CHECK(config_.bugs.non_atomic_dispatch);
  auto runs = std::make_shared<std::vector<RunRecord>>(to_create);
  auto second = std::make_shared<DispatchResult>();
  transact_once(
      kUncounted,
      [this, shard, token, runs, second](Txn& txn) {
        return store_.create_runs(txn, shard, token, *runs, /*idempotent=*/true, second.get());
      },
      [this, second](TxnResult r) {
        if (r.committed()) {
          record_all(second->events);
          serve_parked();
        }
      });
}

void SchedulerNode::wake_for_due(std::uint32_t shard, absl::Duration in) {
  KAIROS_CHECK(in < config_.poll_interval);  // otherwise the next tick comes first
  ShardState& st = shards_[shard];
  if (st.wake_timer) timers_.cancel(*st.wake_timer);
  // At least 1ms: a store clock a hair behind this node's would otherwise
  // find the entry not yet due and ask again at once.
  Alive alive = alive_;
  st.wake_timer = timers_.after(std::max(in, absl::Milliseconds(1)), [this, alive, shard] {
    if (!*alive) return;
    shards_[shard].wake_timer.reset();
    run_dispatch(shard);
  });
}

void SchedulerNode::run_reap(std::uint32_t shard) {
  ShardState& st = shards_[shard];
  if (!st.leader || st.reap_txn || clock_.now() >= st.leading_until || clock_skewed_) return;
  KAIROS_CHECK_MSG(st.epoch > 0 && st.epoch <= st.highest_epoch,
                   "a leader writes only under an epoch it acquired");
  st.reap_txn = true;
  const LeaderToken token{config_.node_id, st.epoch};
  const std::size_t limit = config_.reap_batch;
  auto out = std::make_shared<ReapResult>();
  transact_once(
      "reap",
      [this, shard, token, limit, out](Txn& txn) {
        return store_.reap(txn, shard, token, limit, out.get());
      },
      [this, shard, epoch = token.epoch, out](TxnResult r) {
        shards_[shard].reap_txn = false;
        if (r.outcome == CommitOutcome::kAborted) {
          if (r.status.code() == absl::StatusCode::kFailedPrecondition) {
            on_stale_epoch(shard, epoch, "reap", r.status);
          } else {
            on_failed(shard, "reap", r.status);
          }
          return;
        }
        if (!r.committed()) return;
        record_all(out->events);
        for (const auto& bad : out->undecodable) on_undecodable(shard, "reap", bad);
        if (!out->requeued.empty()) serve_parked();
        if (out->more) run_reap(shard);
      });
}

// ---------------------------------------------------------------------------
// Worker requests.

void SchedulerNode::send(PeerId to, const wire::Message& message) {
  transport_.send(to, wire::encode(message));
}

void SchedulerNode::on_message(PeerId from, std::string_view bytes) {
  if (!running()) return;
  auto decoded = wire::decode(bytes);
  if (!decoded.ok()) {
    Event e;  // counted as kairos_wire_malformed_total by record()
    e.kind = event_kinds::kWireMalformed;
    e.with("peer", static_cast<std::uint64_t>(from))
        .with("error", std::string(decoded.status().message()));
    record(std::move(e));
    return;
  }
  wire::Message& m = *decoded;
  if (auto* c = std::get_if<wire::ClaimRequest>(&m); c != nullptr && !c->reports.empty()) {
    handle_claim_with_reports(from, std::move(*c));
  } else if (c != nullptr) {
    for (const auto& [k, p] : parked_)
      if (p.peer == from && p.request.request_id == c->request_id) return;  // duplicate
    Parked p;
    p.peer = from;
    p.request = std::move(*c);
    if (p.request.max_runs > config_.max_claim_batch) p.request.max_runs = config_.max_claim_batch;
    if (p.request.wait > config_.max_claim_wait) p.request.wait = config_.max_claim_wait;
    KAIROS_CHECK(p.request.max_runs >= 1 && p.request.max_runs <= config_.max_claim_batch);
    KAIROS_CHECK(p.request.wait >= absl::ZeroDuration() &&
                 p.request.wait <= config_.max_claim_wait);
    p.deadline = clock_.now() + p.request.wait;
    const std::uint64_t key = next_parked_++;
    parked_.emplace(key, std::move(p));
    if (initialized_) try_claim(key);
  } else if (auto* rq = std::get_if<wire::RenewRequest>(&m)) {
    handle_renew(from, std::move(*rq));
  } else if (auto* cq = std::get_if<wire::CompleteRequest>(&m)) {
    handle_complete(from, std::move(*cq));
  }
  // Responses and errors are not addressed to a node; ignore them.
}

void SchedulerNode::forget_peer(PeerId peer) {
  for (auto it = parked_.begin(); it != parked_.end();) {
    if (it->second.peer == peer && !it->second.in_flight)
      it = parked_.erase(it);
    else
      ++it;
  }
}

void SchedulerNode::serve_parked() {
  if (!initialized_) return;
  std::vector<std::uint64_t> keys;
  for (const auto& [k, p] : parked_)
    if (!p.in_flight) keys.push_back(k);
  for (std::uint64_t k : keys) try_claim(k);
}

void SchedulerNode::try_claim(std::uint64_t key) {
  auto it = parked_.find(key);
  if (it == parked_.end() || it->second.in_flight) return;
  Parked& p = it->second;
  if (clock_skewed_) {
    send(p.peer, wire::ErrorMessage{p.request.request_id,
                                    static_cast<std::uint32_t>(absl::StatusCode::kUnavailable),
                                    "node clock outside the tolerated skew; not claiming"});
    parked_.erase(it);
    return;
  }
  if (clock_.now() > p.deadline && p.request.wait > absl::ZeroDuration()) {
    send(p.peer, wire::ClaimResponse{p.request.request_id, {}});
    parked_.erase(it);
    return;
  }
  p.in_flight = true;
  ClaimArgs args;
  args.worker = p.request.worker_id;
  args.max_runs = p.request.max_runs;
  args.ttl = config_.lease.lease_ttl;
  args.first_shard = claim_rotation_++ % config_.shard_count;
  args.accepts = p.request.accepts;
  auto out = std::make_shared<ClaimResult>();
  transact_once(
      "claim", [this, args, out](Txn& txn) { return store_.claim(txn, args, out.get()); },
      [this, key, out](TxnResult r) {
        auto it = parked_.find(key);
        if (it == parked_.end()) return;
        Parked& p = it->second;
        p.in_flight = false;
        const bool expired = clock_.now() >= p.deadline;
        if (r.committed()) {
          if (!out->grants.empty() && crashed_at("claim-after-commit")) return;
          check_grants(out->grants, p.request.max_runs, p.request.worker_id);
          record_all(out->events);
          report_undecodable("claim", out->undecodable);
          observe_fire_lateness(out->grants);
          if (!out->grants.empty() || expired) {
            wire::ClaimResponse resp;
            resp.request_id = p.request.request_id;
            resp.grants = wire_grants(out->grants);
            send(p.peer, resp);
            parked_.erase(it);
          }
          return;
        }
        if (r.outcome == CommitOutcome::kAborted) {
          send(p.peer,
               wire::ErrorMessage{p.request.request_id, static_cast<std::uint32_t>(r.status.code()),
                                  std::string(r.status.message())});
          parked_.erase(it);
          return;
        }
        // Conflict, unavailable or unknown: never hand out these grants (an
        // unknown claim's leases lapse). Stay parked until the deadline.
        if (expired) {
          send(p.peer, wire::ClaimResponse{p.request.request_id, {}});
          parked_.erase(it);
        } else if (r.outcome == CommitOutcome::kConflict) {
          Alive a = alive_;
          timers_.after(backoff(1), [this, a, key] {
            if (*a) try_claim(key);
          });
        }
      });
}

void SchedulerNode::handle_renew(PeerId from, wire::RenewRequest request) {
  auto items = std::make_shared<std::vector<RenewItem>>(std::move(request.items));
  auto out = std::make_shared<RenewResult>();
  const std::string worker = request.worker_id;
  const absl::Duration ttl = config_.lease.lease_ttl;
  const std::uint64_t request_id = request.request_id;
  transact_retrying(
      "renew",
      [this, worker, items, ttl, out](Txn& txn) {
        return store_.renew(txn, worker, *items, ttl, out.get());
      },
      [this, from, request_id, items, out, ttl](TxnResult r) {
        if (!r.committed()) {
          send(from, wire::ErrorMessage{
                         request_id, static_cast<std::uint32_t>(absl::StatusCode::kUnavailable),
                         absl::StrCat("renew not recorded: ", absl_sv(to_string(r.outcome)))});
          return;
        }
        KAIROS_CHECK_MSG(out->verdicts.size() == items->size(), "one renew verdict per item");
        record_all(out->events);
        report_undecodable("renew", out->undecodable);
        wire::RenewResponse resp;
        resp.request_id = request_id;
        for (auto& v : out->verdicts)
          resp.results.push_back(wire::WireVerdict{
              v.verdict, v.verdict == WriteVerdict::kAccepted ? ttl : absl::ZeroDuration(),
              std::move(v.reason)});
        send(from, resp);
      });
}

void SchedulerNode::handle_complete(PeerId from, wire::CompleteRequest request) {
  serve_reports(from, request.request_id, std::move(request.worker_id), std::move(request.items),
                std::nullopt);
}

void SchedulerNode::handle_claim_with_reports(PeerId from, wire::ClaimRequest request) {
  // The worker's reports and its next claim in one transaction, reports
  // first (a run they finish frees its job's overlap slot for the claim),
  // retried like a completion and answered at once: the reports need their
  // verdicts now, so this claim is never parked. An unknown outcome retried
  // may have leased runs whose grants are never sent; their leases lapse, as
  // for any claim whose outcome is unknown. While the node may not claim
  // (not initialized yet, or its clock outside the tolerated skew) the
  // reports are still recorded and the answer grants nothing.
  const bool claiming = initialized_ && !clock_skewed_;
  ClaimArgs args;
  args.worker = request.worker_id;
  args.max_runs = claiming ? std::min(request.max_runs, config_.max_claim_batch) : 0;
  args.ttl = config_.lease.lease_ttl;
  args.first_shard = claiming ? claim_rotation_++ % config_.shard_count : 0;
  args.accepts = request.accepts;
  serve_reports(from, request.request_id, std::move(request.worker_id), std::move(request.reports),
                std::move(args));
}

void SchedulerNode::serve_reports(PeerId from, std::uint64_t request_id, std::string worker,
                                  std::vector<CompleteItem> reports,
                                  std::optional<ClaimArgs> claim) {
  auto items = std::make_shared<std::vector<CompleteItem>>(std::move(reports));
  auto completed = std::make_shared<CompleteResult>();
  auto claimed = std::make_shared<ClaimResult>();
  const bool claims = claim.has_value();
  // The answer: a CompleteResponse to a completion, a ClaimResponse to a
  // claim that carried the reports.
  auto answer = [this, from, request_id, claims](std::vector<wire::WireVerdict> results,
                                                 std::vector<wire::WireGrant> grants) {
    if (claims) {
      send(from, wire::ClaimResponse{request_id, std::move(grants), std::move(results)});
    } else {
      KAIROS_CHECK(grants.empty());
      send(from, wire::CompleteResponse{request_id, std::move(results)});
    }
  };
  TxnBody body = [this, worker, claim, items, completed, claimed](Txn& txn) {
    KAIROS_RETURN_IF_ERROR(store_.complete(txn, worker, *items, completed.get()));
    return claim ? store_.claim(txn, *claim, claimed.get()) : absl::OkStatus();
  };
  auto reply = [this, from, request_id, claim, items, completed, claimed, answer](TxnResult r) {
    if (!r.committed()) {
      send(from, wire::ErrorMessage{
                     request_id, static_cast<std::uint32_t>(absl::StatusCode::kUnavailable),
                     absl::StrCat("completion not recorded: ", absl_sv(to_string(r.outcome)))});
      return;
    }
    if (!claimed->grants.empty() && crashed_at("claim-after-commit")) return;
    if (crashed_at("complete-after-commit-before-ack")) return;
    KAIROS_CHECK_MSG(completed->verdicts.size() == items->size(),
                     "one completion verdict per item");
    record_all(completed->events);
    report_undecodable("complete", completed->undecodable);
    if (claim) {
      check_grants(claimed->grants, claim->max_runs, claim->worker);
      record_all(claimed->events);
      report_undecodable("claim", claimed->undecodable);
      observe_fire_lateness(claimed->grants);
    }
    answer(wire_verdicts(completed->verdicts), wire_grants(claimed->grants));
  };
  if (config_.bugs.unknown_as_failure) {
    planted_complete_unknown_as_failure(
        std::move(body), std::move(reply),
        [answer, n = items->size()] { answer(planted_failed_verdicts(n), {}); });
    return;
  }
  transact_retrying("complete", std::move(body), std::move(reply));
}

void SchedulerNode::check_grants(const std::vector<Grant>& grants, std::uint32_t max_runs,
                                 std::string_view worker) const {
  KAIROS_CHECK_MSG(grants.size() <= max_runs, "a claim grants at most the runs asked for");
  for (const Grant& g : grants)
    KAIROS_CHECK_MSG(g.run.state == RunState::kLeased && g.run.token > 0 && g.run.owner == worker,
                     "a grant is a run leased to the claiming worker under a token");
}

std::vector<wire::WireGrant> SchedulerNode::wire_grants(std::vector<Grant>& grants) const {
  std::vector<wire::WireGrant> out;
  out.reserve(grants.size());
  for (auto& g : grants) {
    wire::WireGrant wg;
    wg.run = g.run.id;
    wg.attempt = g.run.attempt;
    wg.token = g.run.token;
    wg.lease_ttl = config_.lease.lease_ttl;
    wg.payload = std::move(g.payload);
    wg.timeout = g.timeout;
    wg.late_by = g.run.lateness;
    wg.occurrences = g.run.stands_for;
    out.push_back(std::move(wg));
  }
  return out;
}

std::vector<wire::WireVerdict> SchedulerNode::wire_verdicts(
    std::vector<CompleteVerdict>& verdicts) {
  std::vector<wire::WireVerdict> out;
  out.reserve(verdicts.size());
  for (auto& v : verdicts)
    out.push_back(wire::WireVerdict{v.verdict, absl::ZeroDuration(), std::move(v.reason)});
  return out;
}

std::vector<wire::WireVerdict> SchedulerNode::planted_failed_verdicts(std::size_t n) {
  return std::vector<wire::WireVerdict>(
      n, wire::WireVerdict{WriteVerdict::kNotLeased, absl::ZeroDuration(), "commit failed"});
}

void SchedulerNode::planted_complete_unknown_as_failure(TxnBody body,
                                                        std::function<void(TxnResult)> reply,
                                                        std::function<void()> answer_failed) {
  // Planted bug (unknown_as_failure): one attempt, and "unknown" taken as
  // "not applied" and answered as failed, so the worker runs it again.
  KAIROS_CHECK(config_.bugs.unknown_as_failure);
  transact_once("complete", std::move(body),
                [reply = std::move(reply), answer_failed = std::move(answer_failed)](TxnResult r) {
                  if (r.outcome != CommitOutcome::kUnknown) {
                    reply(std::move(r));
                    return;
                  }
                  answer_failed();
                });
}

// ---------------------------------------------------------------------------
// Job API.

void SchedulerNode::create_job(JobSpec spec,
                               std::function<void(absl::StatusOr<CreateResult>)> done) {
  if (spec.id.empty()) spec.id = absl::StrFormat("job-%016x", random_.next_u64());
  if (auto s = validate_job_spec(spec); !s.ok()) {
    Alive alive = alive_;
    timers_.post([alive, done = std::move(done), s] {
      if (*alive) done(s);
    });
    return;
  }
  auto shared_spec = std::make_shared<JobSpec>(std::move(spec));
  run_control<CreateResult>(
      "create",
      [this, shared_spec](Txn& txn, CreateResult* out) {
        return store_.create(txn, *shared_spec, out);
      },
      std::move(done), /*read_only=*/false);
}

void SchedulerNode::get_job(std::string id,
                            std::function<void(absl::StatusOr<std::optional<JobRecord>>)> done) {
  auto sid = std::make_shared<std::string>(std::move(id));
  run_control<std::optional<JobRecord>>(
      "get",
      [this, sid](Txn& txn, std::optional<JobRecord>* out) { return store_.get(txn, *sid, out); },
      std::move(done), /*read_only=*/true);
}

void SchedulerNode::list_jobs(std::string page_token, std::size_t limit,
                              std::function<void(absl::StatusOr<ListResult>)> done) {
  auto token = std::make_shared<std::string>(std::move(page_token));
  run_control<ListResult>(
      "list",
      [this, token, limit](Txn& txn, ListResult* out) {
        return store_.list(txn, *token, limit, out);
      },
      std::move(done), /*read_only=*/true);
}

void SchedulerNode::cancel_job(std::string id,
                               std::function<void(absl::StatusOr<CancelResult>)> done) {
  cancel_job(std::move(id), std::nullopt, std::move(done));
}

void SchedulerNode::cancel_job(std::string id, std::optional<std::uint64_t> expected_generation,
                               std::function<void(absl::StatusOr<CancelResult>)> done) {
  auto sid = std::make_shared<std::string>(std::move(id));
  run_control<CancelResult>(
      "cancel",
      [this, sid, expected_generation](Txn& txn, CancelResult* out) {
        return store_.cancel(txn, *sid, out, expected_generation);
      },
      std::move(done), /*read_only=*/false);
}

// ---------------------------------------------------------------------------
// Job control.

template <typename R>
void SchedulerNode::run_control(std::string_view op, std::function<absl::Status(Txn&, R*)> body,
                                std::function<void(absl::StatusOr<R>)> done, bool read_only) {
  auto out = std::make_shared<R>();
  const std::string name(op);
  transact_retrying(
      op, [body = std::move(body), out](Txn& txn) { return body(txn, out.get()); },
      [self = this, out, name, done = std::move(done)](TxnResult r) {
        (void)self;  // used only when R carries events
        if (r.committed()) {
          if constexpr (requires { out->events; }) self->record_all(out->events);
          done(std::move(*out));
        } else if (r.outcome == CommitOutcome::kAborted) {
          done(r.status);
        } else {
          done(absl::UnavailableError(
              absl::StrCat(name, ": outcome ", absl_sv(to_string(r.outcome)),
                           " after retries; retrying the same request is safe")));
        }
      },
      read_only ? TxnMode::kReadOnly : TxnMode::kReadWrite);
}

void SchedulerNode::list_jobs(std::string page_token, std::size_t limit, JobFilter filter,
                              std::function<void(absl::StatusOr<ListResult>)> done) {
  auto token = std::make_shared<std::string>(std::move(page_token));
  auto f = std::make_shared<JobFilter>(std::move(filter));
  run_control<ListResult>(
      "list",
      [this, token, limit, f](Txn& t, ListResult* o) {
        return store_.list(t, *token, limit, *f, o);
      },
      std::move(done), /*read_only=*/true);
}

void SchedulerNode::pause_job(std::string id,
                              std::function<void(absl::StatusOr<ControlResult>)> done) {
  pause_job(std::move(id), std::nullopt, std::move(done));
}

void SchedulerNode::pause_job(std::string id, std::optional<std::uint64_t> expected_generation,
                              std::function<void(absl::StatusOr<ControlResult>)> done) {
  auto sid = std::make_shared<std::string>(std::move(id));
  run_control<ControlResult>(
      "pause",
      [this, sid, expected_generation](Txn& t, ControlResult* o) {
        return store_.pause(t, *sid, o, expected_generation);
      },
      std::move(done));
}

void SchedulerNode::resume_job(std::string id,
                               std::function<void(absl::StatusOr<ControlResult>)> done) {
  resume_job(std::move(id), std::nullopt, std::move(done));
}

void SchedulerNode::resume_job(std::string id, std::optional<std::uint64_t> expected_generation,
                               std::function<void(absl::StatusOr<ControlResult>)> done) {
  auto sid = std::make_shared<std::string>(std::move(id));
  run_control<ControlResult>(
      "resume",
      [this, sid, expected_generation](Txn& t, ControlResult* o) {
        return store_.resume(t, *sid, o, expected_generation);
      },
      std::move(done));
}

void SchedulerNode::update_job(std::string id, SpecMutation mutate,
                               std::optional<std::uint64_t> expected_generation,
                               std::function<void(absl::StatusOr<ControlResult>)> done) {
  auto sid = std::make_shared<std::string>(std::move(id));
  auto m = std::make_shared<SpecMutation>(std::move(mutate));
  run_control<ControlResult>(
      "update",
      [this, sid, m, expected_generation](Txn& t, ControlResult* o) {
        return store_.update(t, *sid, *m, o, expected_generation);
      },
      std::move(done));
}

void SchedulerNode::reschedule_job(std::string id, ScheduleSpec schedule,
                                   std::function<void(absl::StatusOr<ControlResult>)> done) {
  reschedule_job(std::move(id), std::move(schedule), std::nullopt, std::move(done));
}

void SchedulerNode::reschedule_job(std::string id, ScheduleSpec schedule,
                                   std::optional<std::uint64_t> expected_generation,
                                   std::function<void(absl::StatusOr<ControlResult>)> done) {
  auto sid = std::make_shared<std::string>(std::move(id));
  auto sched = std::make_shared<ScheduleSpec>(std::move(schedule));
  run_control<ControlResult>(
      "reschedule",
      [this, sid, sched, expected_generation](Txn& t, ControlResult* o) {
        return store_.update(
            t, *sid,
            [sched](JobSpec& s) {
              s.schedule = *sched;
              return absl::OkStatus();
            },
            o, expected_generation);
      },
      std::move(done));
}

void SchedulerNode::update_policy(std::string id, JobPolicy policy,
                                  std::function<void(absl::StatusOr<ControlResult>)> done) {
  auto sid = std::make_shared<std::string>(std::move(id));
  run_control<ControlResult>(
      "update",
      [this, sid, policy](Txn& t, ControlResult* o) {
        return store_.update(
            t, *sid,
            [policy](JobSpec& s) {
              s.policy = policy;
              return absl::OkStatus();
            },
            o);
      },
      std::move(done));
}

void SchedulerNode::apply_job(JobSpec spec,
                              std::function<void(absl::StatusOr<ControlResult>)> done) {
  apply_job(std::move(spec), std::nullopt, std::move(done));
}

void SchedulerNode::apply_job(JobSpec spec, std::optional<std::uint64_t> expected_generation,
                              std::function<void(absl::StatusOr<ControlResult>)> done) {
  if (auto s = validate_job_spec(spec); !s.ok()) {
    Alive alive = alive_;
    timers_.post([alive, done = std::move(done), s] {
      if (*alive) done(s);
    });
    return;
  }
  auto sp = std::make_shared<JobSpec>(std::move(spec));
  run_control<ControlResult>(
      "apply",
      [this, sp, expected_generation](Txn& t, ControlResult* o) {
        return store_.apply(t, *sp, o, expected_generation);
      },
      std::move(done));
}

void SchedulerNode::apply_jobs(std::vector<JobSpec> specs,
                               std::function<void(absl::Status, BatchResult)> done) {
  auto out = std::make_shared<BatchResult>();
  if (auto s = validate_batch(specs, &out->errors); !s.ok()) {
    Alive alive = alive_;
    timers_.post([alive, done = std::move(done), s, out] {
      if (*alive) done(s, std::move(*out));
    });
    return;
  }
  auto sp = std::make_shared<std::vector<JobSpec>>(std::move(specs));
  transact_retrying(
      "apply_batch", [this, sp, out](Txn& txn) { return store_.apply_batch(txn, *sp, out.get()); },
      [this, out, done = std::move(done)](TxnResult r) {
        if (r.committed()) {
          record_all(out->events);
          done(absl::OkStatus(), std::move(*out));
        } else if (r.outcome == CommitOutcome::kAborted) {
          out->items.clear();
          out->events.clear();
          done(r.status, std::move(*out));
        } else {
          done(absl::UnavailableError(absl::StrCat(
                   "apply_batch: outcome ", absl_sv(to_string(r.outcome)),
                   " after retries; the batch may have been applied; retrying it is safe")),
               BatchResult{});
        }
      });
}

void SchedulerNode::get_cluster(std::function<void(absl::StatusOr<ClusterView>)> done) {
  run_control<ClusterView>(
      "cluster",
      [this](Txn& t, ClusterView* o) {
        o->shard_count = store_.shard_count();
        o->now = t.now();
        KAIROS_RETURN_IF_ERROR(store_.nodes(t, &o->nodes));
        o->backlog.assign(o->shard_count, {});
        for (std::uint32_t s = 0; s < o->shard_count; ++s)
          store_.due_backlog(t, s, ClusterView::kBacklogCap, &o->backlog[s].due,
                             &o->backlog[s].capped);
        return store_.leaders(t, &o->leaders);
      },
      std::move(done), /*read_only=*/true);
}

void SchedulerNode::trigger_job(std::string id, bool force,
                                std::function<void(absl::StatusOr<TriggerResult>)> done) {
  auto args = std::make_shared<TriggerArgs>();
  args->job_id = std::move(id);
  args->trigger_id = random_.next_u64() | 1;  // never 0
  args->requested_at = clock_.now();
  args->force = force;
  run_control<TriggerResult>(
      "trigger", [this, args](Txn& t, TriggerResult* o) { return store_.trigger(t, *args, o); },
      [this, done = std::move(done)](absl::StatusOr<TriggerResult> r) {
        if (r.ok() && r->created) serve_parked();
        done(std::move(r));
      });
}

void SchedulerNode::get_ledger(LedgerQuery query,
                               std::function<void(absl::StatusOr<LedgerResult>)> done) {
  auto q = std::make_shared<LedgerQuery>(std::move(query));
  run_control<LedgerResult>(
      "ledger", [this, q](Txn& t, LedgerResult* o) { return store_.ledger(t, *q, o); },
      std::move(done),
      /*read_only=*/true);
}

void SchedulerNode::list_runs(RunsQuery query,
                              std::function<void(absl::StatusOr<RunsResult>)> done) {
  auto q = std::make_shared<RunsQuery>(std::move(query));
  run_control<RunsResult>(
      "runs", [this, q](Txn& t, RunsResult* o) { return store_.runs(t, *q, o); }, std::move(done),
      /*read_only=*/true);
}

}  // namespace kairos
