// JobStore, leases: claims (the priority queue with its no-starvation rule),
// renewals and completions fenced by the run's token, the reaper that makes
// runs whose lease lapsed claimable again, and the fenced hand-back of runs
// whose holder is known to be over (the same lapse, without the wait).
#include <array>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "core/base/check.h"
#include "core/kernel/event_kinds.h"
#include "core/kernel/job_store.h"
#include "core/kernel/keyspace.h"
#include "core/kernel/run_lifecycle.h"
#include "core/schedule/schedule.h"

namespace kairos {

using namespace job_store_internal;  // the bodies' shared helpers

namespace {
// Whether `s` is a record of `job_id` under `key` that does not decode
// (records.h: DataLoss); if so it is reported in `out`.
bool undecodable(const absl::Status& s, const std::string& job_id, const std::string& key,
                 std::vector<DispatchResult::Undecodable>& out) {
  if (s.code() != absl::StatusCode::kDataLoss) return false;
  out.push_back({job_id, key, std::string(s.message())});
  return true;
}

// renew and complete judge each item alone: when the item's run record does
// not decode, the item is refused (kUnknownRun, nothing written for it) and
// reported, and the body goes on with the next one.
template <typename Verdict>
bool refused_undecodable_run(const absl::Status& s, const RunId& run, const std::string& key,
                             std::vector<DispatchResult::Undecodable>& out,
                             std::vector<Verdict>& verdicts) {
  if (!undecodable(s, run.job_id, key, out)) return false;
  Verdict v;
  v.verdict = WriteVerdict::kUnknownRun;
  v.reason = absl::StrCat("the record of run ", idempotency_key(run), " does not decode");
  verdicts.push_back(std::move(v));
  return true;
}
}  // namespace

absl::Status JobStore::reap(Txn& txn, std::uint32_t shard, const LeaderToken& leader,
                            std::size_t limit, ReapResult* out) const {
  *out = {};
  KAIROS_CHECK(limit > 0);
  KAIROS_RETURN_IF_ERROR(leader_gate(txn, shard, leader));
  if (planted_reaper_off()) return absl::OkStatus();
  const absl::Time now = txn.now();
  const keys::Range range = keys::expiry_until(shard, now);
  // Up to `limit` lapsed leases are taken back. A run whose own record or
  // whose job record does not decode cannot be judged (its attempts are in
  // the one, its policy in the other): it stays leased, is reported and
  // passed over, and the scan goes on past it, so bad records never hold the
  // shard's other leases back.
  std::string begin = range.begin;
  for (std::size_t want = limit;;) {
    const auto entries = txn.scan(begin, range.end, want);
    std::size_t passed = 0;
    for (const auto& kv : entries) {
      ++out->scanned;
      absl::Time expiry;
      KAIROS_ASSIGN_OR_RETURN(RunId rid, keys::parse_expiry(kv.key, &expiry));
      const std::string run_key = keys::run(rid);
      auto read_run = read<RunRecord>(txn, run_key, decode_run);
      if (undecodable(read_run.status(), rid.job_id, run_key, out->undecodable)) {
        ++passed;
        continue;
      }
      KAIROS_ASSIGN_OR_RETURN(auto run, std::move(read_run));
      // write_run keeps the expiry index exact: the entry names a leased run
      // with exactly this expiry.
      KAIROS_CHECK_MSG(run && run->state == RunState::kLeased && run->lease_expiry == expiry,
                       "a lease-expiry entry names a run that is not leased until then");
      KAIROS_CHECK(expiry <= now);
      const std::string job_key = keys::job(rid.job_id);
      if (auto job = read<JobRecord>(txn, job_key, decode_job);
          !job.ok() && job.status().code() == absl::StatusCode::kDataLoss) {
        out->undecodable.push_back({rid.job_id, job_key, std::string(job.status().message())});
        ++passed;
        continue;
      }
      KAIROS_RETURN_IF_ERROR(lapse(txn, *run, now, {}, out->events));
      if (run->state == RunState::kReady) out->requeued.push_back(rid);
    }
    if (entries.size() < want) break;  // the lapsed range ends here
    if (passed == 0) {
      out->more = true;  // the scan hit its limit; call again
      break;
    }
    begin = entries.back().key + '\0';  // past the last one scanned
    want = passed;
  }
  return sweep_cancelled(txn, shard, out);
}

absl::Status JobStore::lapse(Txn& txn, RunRecord& run, absl::Time now, std::string_view reason,
                             std::vector<Event>& events) const {
  KAIROS_CHECK(run.state == RunState::kLeased);
  KAIROS_ASSIGN_OR_RETURN(auto job, read<JobRecord>(txn, keys::job(run.id.job_id), decode_job));
  if (!job_accepts(job, run.id)) {
    withdraw(txn, run, now, events, "lease lapsed after cancel");
    return absl::OkStatus();
  }
  const std::string owner = run.owner;
  const std::uint64_t token = run.token;
  const absl::Time expiry = run.lease_expiry;
  KAIROS_RETURN_IF_ERROR(requeue_or_fail(txn, job, run, now, AttemptEnd::kLapsed,
                                         job->spec.policy.max_attempts, events));
  KAIROS_CHECK(run.state == RunState::kReady || run.state == RunState::kFailed);
  Event e = run_event(event_kinds::kRunLeaseLapsed, run)
                .with("worker", owner)
                .with("lapsed_token", token)
                .with("expiry", expiry)
                .with("state", std::string(to_string(run.state)));
  if (!reason.empty()) e.with("reason", std::string(reason));
  events.push_back(std::move(e));
  return absl::OkStatus();
}

absl::Status JobStore::release_abandoned(Txn& txn, const RunId& id, std::uint64_t token,
                                         std::string_view reason, ReleaseResult* out) const {
  *out = {};
  KAIROS_ASSIGN_OR_RETURN(auto run, read<RunRecord>(txn, keys::run(id), decode_run));
  if (!run) {
    out->verdict = WriteVerdict::kUnknownRun;
    out->reason = absl::StrCat("no run ", idempotency_key(id));
    return absl::OkStatus();
  }
  out->state = run->state;
  if (run->token != token) {
    out->verdict = WriteVerdict::kStaleToken;
    out->reason = absl::StrCat("token ", token, " is not current; current token is ", run->token);
    return absl::OkStatus();
  }
  if (run->state != RunState::kLeased) {
    out->verdict = WriteVerdict::kNotLeased;
    out->reason = absl::StrCat("run is ", absl_sv(to_string(run->state)));
    return absl::OkStatus();
  }
  KAIROS_RETURN_IF_ERROR(lapse(txn, *run, txn.now(), reason, out->events));
  out->verdict = WriteVerdict::kAccepted;
  out->state = run->state;
  return absl::OkStatus();
}

absl::Status JobStore::claim(Txn& txn, const ClaimArgs& args, ClaimResult* out) const {
  *out = {};
  if (args.max_runs == 0) return absl::OkStatus();
  KAIROS_CHECK(args.ttl > absl::ZeroDuration());
  KAIROS_CHECK_MSG(args.accepts >= 1 && args.accepts <= kAcceptAll,
                   "a claim accepts at least one payload kind");
  const bool filtered = args.accepts != kAcceptAll;
  std::uint32_t skip_left = filtered ? kClaimSkipBudget : 0;
  // How many queue entries a band scan reads: exactly the runs wanted when
  // unfiltered; with a filter, also what is left of the skip budget.
  auto scan_limit = [&](std::size_t want) { return want + skip_left; };
  const absl::Time now = txn.now();
  constexpr std::int32_t kBands = kMaxPriority - kMinPriority + 1;
  // Grants the run behind queue entry `key` (write_run keeps the queue exact:
  // the entry names a ready run under exactly this key). True when the entry
  // was passed over: a record it needs does not decode (reported; nothing
  // written: every read comes before the first write).
  auto take = [&](const std::string& key) -> absl::StatusOr<bool> {
    KAIROS_ASSIGN_OR_RETURN(RunId rid, keys::parse_ready(key));
    const std::string run_key = keys::run(rid);
    auto read_run = read<RunRecord>(txn, run_key, decode_run);
    if (undecodable(read_run.status(), rid.job_id, run_key, out->undecodable)) return true;
    KAIROS_ASSIGN_OR_RETURN(auto run, std::move(read_run));
    KAIROS_CHECK_MSG(run && run->state == RunState::kReady &&
                         keys::ready(run->shard, run->priority, run->ready_at, run->id) == key,
                     "a ready-queue entry names a run that is not ready under that key");
    const RunRecord old = *run;
    const std::string job_key = keys::job(rid.job_id);
    auto read_job = read<JobRecord>(txn, job_key, decode_job);
    if (undecodable(read_job.status(), rid.job_id, job_key, out->undecodable)) return true;
    KAIROS_ASSIGN_OR_RETURN(auto job, std::move(read_job));
    if (!job_accepts(job, rid)) {
      withdraw(txn, *run, now, out->events, "job no longer active");
      return false;
    }
    if ((accept_bit(job->spec.payload) & args.accepts) == 0) {
      // Not a kind this worker runs: left ready, untouched, for another.
      KAIROS_CHECK(filtered && skip_left > 0);
      --skip_left;
      return false;
    }
    auto granted = grant_token(txn, *run);  // reads the counters, then writes them
    if (undecodable(granted.status(), rid.job_id, keys::counters(rid.job_id), out->undecodable))
      return true;
    KAIROS_ASSIGN_OR_RETURN(const GrantToken grant, std::move(granted));
    const std::uint64_t token = grant.token;
    const absl::Duration waited = now - run->ready_at;
    run->state = RunState::kLeased;
    run->owner = args.worker;
    run->token = token;
    run->lease_expiry = now + args.ttl;
    run->claimed_at = now;
    if (run->attempts.size() < 1000) {
      AttemptRecord a;
      a.attempt = run->attempt;
      a.token = token;
      a.worker = args.worker;
      a.claimed_at = now;
      run->attempts.push_back(std::move(a));
    }
    write_run(txn, old, *run);
    // The grant: leased, under the job's newest token, until after now.
    KAIROS_CHECK(run->state == RunState::kLeased && run->lease_expiry > now);
    KAIROS_CHECK_MSG(grant.reused || run->token == grant.high_water,
                     "a grant carries the job's token high-water mark");
    out->events.push_back(run_event(event_kinds::kRunClaimed, *run)
                              .with("worker", args.worker)
                              .with("lease_expiry", run->lease_expiry)
                              .with("priority", static_cast<std::int64_t>(run->priority))
                              .with("ready_at", run->ready_at)
                              .with("waited", waited));
    out->grants.push_back(Grant{*run, job->spec.payload, job->spec.policy.timeout});
    return false;
  };
  for (std::uint32_t i = 0; i < shard_count_ && out->grants.size() < args.max_runs; ++i) {
    const std::uint32_t shard = (args.first_shard + i) % shard_count_;
    // One probe finds the shard's first non-empty band (or that it has no
    // ready run at all): the band scans below start there.
    const keys::Range all = keys::ready_of(shard);
    const auto probe = txn.scan(all.begin, all.end, 1);
    if (probe.empty()) continue;
    KAIROS_ASSIGN_OR_RETURN(const std::uint8_t first_band, keys::parse_ready_band(probe[0].key));
    // The shard's other non-empty bands, in order: one probe finds the next
    // one (or that there is none). A claim only takes entries off the queue,
    // never adds one, so a band empty now stays empty for the rest of this
    // body and the passes below need not scan it.
    std::array<std::uint8_t, kBands> bands{};
    std::size_t band_count = 0;
    if (first_band < kBands) bands[band_count++] = first_band;
    while (band_count > 0 && bands[band_count - 1] + 1 < kBands) {
      const auto after = static_cast<std::uint8_t>(bands[band_count - 1] + 1);
      const auto next = txn.scan(keys::ready_until(shard, after, now).begin, all.end, 1);
      if (next.empty()) break;
      KAIROS_ASSIGN_OR_RETURN(const std::uint8_t band, keys::parse_ready_band(next[0].key));
      KAIROS_CHECK(band >= after);  // the scan starts at that band
      if (band >= kBands) break;    // no band of a priority: never scanned
      bands[band_count++] = band;
    }
    // Pass 1, the no-starvation rule: runs ready for at least
    // starvation_bound are served first, oldest ready_at first, whatever
    // their band.
    {
      const std::size_t want = args.max_runs - out->grants.size();
      std::vector<std::pair<std::pair<absl::Time, std::string>, std::string>> starved;
      for (std::size_t b = 0; b < band_count; ++b) {
        const keys::Range range =
            keys::ready_until(shard, bands[b], now - options_.starvation_bound);
        // Entries whose run record does not decode have no ready_at to
        // order by: reported and passed over, and the scan goes on past
        // them so they take no starved run's place.
        std::string begin = range.begin;
        for (std::size_t limit = scan_limit(want);;) {
          const auto entries = txn.scan(begin, range.end, limit);
          std::size_t passed = 0;
          for (const auto& kv : entries) {
            KAIROS_ASSIGN_OR_RETURN(RunId rid, keys::parse_ready(kv.key));
            const std::string run_key = keys::run(rid);
            auto run = read<RunRecord>(txn, run_key, decode_run);
            if (undecodable(run.status(), rid.job_id, run_key, out->undecodable)) {
              ++passed;
              continue;
            }
            KAIROS_RETURN_IF_ERROR(run.status());
            KAIROS_CHECK_MSG(run->has_value(), "a ready-queue entry names no run");
            starved.push_back({{(*run)->ready_at, kv.key}, kv.key});
          }
          if (entries.size() < limit || passed == 0) break;
          begin = entries.back().key + '\0';  // past the last one scanned
          limit = passed;
        }
      }
      std::sort(starved.begin(), starved.end());
      for (const auto& s : starved) {
        if (out->grants.size() >= args.max_runs || (filtered && skip_left == 0)) break;
        KAIROS_RETURN_IF_ERROR(take(s.second).status());
      }
    }
    // Pass 2: higher priority first among due runs, FIFO within a band.
    for (std::size_t b = 0; b < band_count; ++b) {
      const std::size_t want = args.max_runs - out->grants.size();
      if (want == 0) break;
      const keys::Range range = keys::ready_until(shard, bands[b], now);
      // Any ready run of the band will do (FIFO is the store's best effort):
      // a store may pass over entries a concurrent claim holds. Entries
      // passed over for an undecodable record do not count: the scan goes
      // on past them for as many entries again.
      std::string begin = range.begin;
      for (std::size_t limit = scan_limit(want);;) {
        const auto entries = txn.scan_claimable(begin, range.end, limit);
        std::size_t passed = 0;
        bool done = false;
        for (const auto& kv : entries) {
          if (out->grants.size() >= args.max_runs || (filtered && skip_left == 0)) {
            done = true;
            break;
          }
          KAIROS_ASSIGN_OR_RETURN(const bool passed_over, take(kv.key));
          if (passed_over) ++passed;
        }
        if (done || entries.size() < limit || passed == 0) break;
        begin = entries.back().key + '\0';  // past the last one scanned
        limit = passed;
      }
    }
  }
  return absl::OkStatus();
}

absl::Status JobStore::renew(Txn& txn, std::string_view worker, const std::vector<RenewItem>& items,
                             absl::Duration ttl, RenewResult* out) const {
  *out = {};
  KAIROS_CHECK(items.empty() || ttl > absl::ZeroDuration());
  const absl::Time now = txn.now();
  for (const RenewItem& item : items) {
    const std::string run_key = keys::run(item.run);
    auto read_run = read<RunRecord>(txn, run_key, decode_run);
    if (refused_undecodable_run(read_run.status(), item.run, run_key, out->undecodable,
                                out->verdicts))
      continue;
    RenewVerdict v;
    KAIROS_ASSIGN_OR_RETURN(auto run, std::move(read_run));
    if (!run) {
      v.verdict = WriteVerdict::kUnknownRun;
      v.reason = absl::StrCat("no run ", idempotency_key(item.run));
    } else if (token_refused(run->token, item.token)) {
      v.verdict = WriteVerdict::kStaleToken;
      v.reason = absl::StrCat("stale token ", item.token, "; current token is ", run->token);
      out->events.push_back(run_event(event_kinds::kWriteRejectedStaleToken, *run)
                                .with("worker", std::string(worker))
                                .with("stale_token", item.token)
                                .with("op", std::string("renew")));
    } else if (run->state != RunState::kLeased) {
      v.verdict = WriteVerdict::kNotLeased;
      v.reason = absl::StrCat("run is ", absl_sv(to_string(run->state)));
    } else if (run->lease_expiry <= now) {
      v.verdict = WriteVerdict::kLeaseLapsed;
      v.reason = "lease lapsed before the renewal arrived";
    } else {
      // The fence held: only the run's current token renews its lease.
      KAIROS_CHECK(run->token == item.token || planted_ignores_fencing());
      const RunRecord old = *run;
      run->lease_expiry = now + ttl;
      KAIROS_CHECK(run->lease_expiry > now);
      write_run(txn, old, *run);
      v.verdict = WriteVerdict::kAccepted;
      v.lease_expiry = run->lease_expiry;
      out->events.push_back(run_event(event_kinds::kRunRenewed, *run)
                                .with("worker", std::string(worker))
                                .with("lease_expiry", run->lease_expiry));
    }
    out->verdicts.push_back(std::move(v));
  }
  return absl::OkStatus();
}

absl::Status JobStore::complete(Txn& txn, std::string_view worker,
                                const std::vector<CompleteItem>& items, CompleteResult* out) const {
  *out = {};
  const absl::Time now = txn.now();
  for (const CompleteItem& item : items) {
    const std::string run_key = keys::run(item.run);
    auto read_run = read<RunRecord>(txn, run_key, decode_run);
    if (refused_undecodable_run(read_run.status(), item.run, run_key, out->undecodable,
                                out->verdicts))
      continue;
    CompleteVerdict v;
    KAIROS_ASSIGN_OR_RETURN(auto run, std::move(read_run));
    const bool releasing = item.outcome == RunStatus::kStopped;
    if (!run) {
      v.verdict = WriteVerdict::kUnknownRun;
      v.reason = absl::StrCat("no run ", idempotency_key(item.run));
      out->verdicts.push_back(std::move(v));
      continue;
    }
    const bool token_ok = run->token == item.token;
    // The attempt this token was granted for, if it already ended.
    const AttemptRecord* ended = nullptr;
    for (const AttemptRecord& a : run->attempts)
      if (a.token == item.token && a.end != AttemptEnd::kRunning) ended = &a;
    if (is_terminal(run->state) && token_ok && run->state != RunState::kCancelled &&
        run->outcome == item.outcome) {
      v.verdict = WriteVerdict::kAccepted;  // a retry of a recorded completion
      v.reason = "already recorded";
    } else if (token_ok && ended && ended->end == attempt_end(item.outcome) &&
               (run->state == RunState::kReady || (releasing && run->state == RunState::kFailed))) {
      // A retried report whose first copy was applied: the run is already
      // re-queued (released, or waiting for its retry), or the release
      // ended its last attempt and failed it (its outcome is the failure,
      // not the report's `stopped`, so the check above does not see it).
      v.verdict = WriteVerdict::kAccepted;
      v.reason = releasing ? "already released" : "already recorded; retry scheduled";
    } else if (token_refused(run->token, item.token)) {
      v.verdict = WriteVerdict::kStaleToken;
      v.reason = absl::StrCat("stale token ", item.token, "; current token is ", run->token);
      out->events.push_back(run_event(event_kinds::kWriteRejectedStaleToken, *run)
                                .with("worker", std::string(worker))
                                .with("stale_token", item.token)
                                .with("op", std::string("complete")));
    } else if (run->state != RunState::kLeased && !planted_completes_requeued(*run)) {
      v.verdict =
          run->state == RunState::kReady ? WriteVerdict::kStaleToken : WriteVerdict::kNotLeased;
      v.reason = absl::StrCat(
          "run is ", absl_sv(to_string(run->state)),
          run->state == RunState::kReady ? " (its lease lapsed and it was re-queued)" : "");
      out->events.push_back(run_event(event_kinds::kWriteRejectedStaleToken, *run)
                                .with("worker", std::string(worker))
                                .with("stale_token", item.token)
                                .with("op", std::string("complete")));
    } else {
      // Accepted: the token is current (the token, not the clock, is the
      // fence: until the reaper re-queues the run nobody else can hold it).
      KAIROS_CHECK_MSG((token_ok && run->state == RunState::kLeased) || planted_ignores_fencing(),
                       "a completion was accepted without the current token of a leased run");
      // Without its job's policy the report cannot be judged (retry or not):
      // refused like an undecodable run, before anything is written for it.
      const std::string job_key = keys::job(run->id.job_id);
      auto read_job = read<JobRecord>(txn, job_key, decode_job);
      if (undecodable(read_job.status(), run->id.job_id, job_key, out->undecodable)) {
        v.verdict = WriteVerdict::kUnknownRun;
        v.reason = absl::StrCat("the record of job ", run->id.job_id, " does not decode");
        out->verdicts.push_back(std::move(v));
        continue;
      }
      KAIROS_ASSIGN_OR_RETURN(auto job, std::move(read_job));
      const JobPolicy policy = job_accepts(job, run->id) ? job->spec.policy : JobPolicy{};
      const bool job_live = job_accepts(job, run->id);
      // A ready run gets here only under the ignore_fencing planted bug (a
      // stale holder's report on a re-queued run): not a legal transition.
      const Legality legality =
          planted_completes_requeued(*run) ? Legality::kPlantedBug : Legality::kChecked;
      if (releasing) {
        // The worker gave the run back (stopped at its lease deadline).
        const std::uint32_t max = job_live ? policy.max_attempts : run->attempt;
        KAIROS_RETURN_IF_ERROR(requeue_or_fail(txn, job, *run, now, AttemptEnd::kReleased, max,
                                               out->events, legality));
        v.verdict = WriteVerdict::kAccepted;
        out->events.push_back(run_event(event_kinds::kRunReleased, *run)
                                  .with("worker", std::string(worker))
                                  .with("state", std::string(to_string(run->state))));
        out->verdicts.push_back(std::move(v));
        continue;
      }
      const RunRecord old = *run;
      close_attempt(*run, attempt_end(item.outcome), now, item.exit_code);
      if (!run->attempts.empty() && run->attempts.back().token == item.token)
        run->attempts.back().output = item.output.substr(0, kMaxRunOutputSize);
      v.verdict = WriteVerdict::kAccepted;
      const bool retry = job_live && retryable(item.outcome) && run->attempt < policy.max_attempts;
      if (retry) {
        // The next attempt of the same run (same idempotency key), after the
        // backoff; its claim takes a higher token.
        const absl::Duration delay = retry_backoff(policy, *run);
        const std::uint32_t failed = run->attempt;
        run->state = RunState::kReady;
        run->outcome = item.outcome;
        run->exit_code = item.exit_code;
        run->detail = item.detail.substr(0, kMaxDetailSize);
        run->owner.clear();
        run->lease_expiry = absl::InfinitePast();
        run->attempt += 1;
        run->ready_at = now + delay;
        run->last_retry_delay = delay;
        KAIROS_CHECK(run->ready_at >= now && run->attempt == failed + 1);
        write_run(txn, old, *run, legality);
        out->events.push_back(
            run_event(event_kinds::kRunRetryScheduled, *run)
                .with("worker", std::string(worker))
                .with("failed_attempt", static_cast<std::uint64_t>(failed))
                .with("status", static_cast<std::uint64_t>(item.outcome))
                .with("delay", delay)
                .with("delay_min", retry_lower_bound(policy, failed))
                .with("delay_max", retry_base_delay(policy, failed))
                .with("ready_at", run->ready_at)
                .with("max_attempts", static_cast<std::uint64_t>(policy.max_attempts)));
      } else {
        std::string detail = item.detail.substr(0, kMaxDetailSize);
        KAIROS_RETURN_IF_ERROR(finish_run(
            txn, job, old, *run,
            item.outcome == RunStatus::kSucceeded ? RunState::kSucceeded : RunState::kFailed,
            item.outcome, item.exit_code, std::move(detail), now, worker, out->events, legality));
      }
    }
    out->verdicts.push_back(std::move(v));
  }
  return absl::OkStatus();
}

}  // namespace kairos
