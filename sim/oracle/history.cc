#include "sim/oracle/history.h"

#include "core/base/absl_compat.h"
#include "core/base/check.h"
#include "core/base/key_codec.h"
#include "core/kernel/event_kinds.h"
#include "core/kernel/keyspace.h"

namespace kairos::sim {

std::uint32_t Interner::id(std::string_view s) {
  auto it = ids_.find(absl_sv(s));
  if (it != ids_.end()) return it->second;
  const auto id = static_cast<std::uint32_t>(names_.size());
  const std::string& name = names_.emplace_back(s);
  ids_.emplace(absl::string_view(name.data(), name.size()), id);
  return id;
}

std::uint32_t Interner::find(std::string_view s) const {
  auto it = ids_.find(absl_sv(s));
  return it == ids_.end() ? kNone : it->second;
}

std::string_view to_string(WriteFact::Kind kind) {
  switch (kind) {
    case WriteFact::Kind::kCompleted:
      return event_kinds::kRunCompleted;
    case WriteFact::Kind::kRenewed:
      return event_kinds::kRunRenewed;
    case WriteFact::Kind::kReleased:
      return event_kinds::kRunReleased;
  }
  return "?";
}

void FactRecorder::observe_event(const Event& e, absl::Time at) {
  if (e.kind == event_kinds::kLedgerRecorded) {
    const auto* job = e.find("job");
    const auto* inc = e.find("incarnation");
    const auto* from = e.find("nominal");
    const auto* through = e.find("through");
    const auto* outcome = e.find("outcome");
    const auto* run = e.find("run_nominal");
    if (!job || !inc || !from || !through || !outcome) return;
    LedgerFact l;
    l.job = strings_.id(std::get<std::string>(*job));
    l.incarnation = std::get<std::uint64_t>(*inc);
    l.from = std::get<absl::Time>(*from);
    l.through = std::get<absl::Time>(*through);
    l.outcome = strings_.id(std::get<std::string>(*outcome));
    if (run) l.run_nominal = std::get<absl::Time>(*run);
    ledger_.push_back(l);
    return;
  }
  if (e.kind == event_kinds::kRecordUndecodable) {
    auto text = [&](std::string_view name) {
      const auto* v = e.find(name);
      return v && std::get_if<std::string>(v) ? std::get<std::string>(*v) : std::string();
    };
    undecodables_.push_back(
        {strings_.id(text("job")), strings_.id(text("op")), strings_.id(text("key")), at});
    return;
  }
  if (e.kind == event_kinds::kWriteRejectedStaleEpoch) {
    const auto* node = e.find("node");
    const auto* shard = e.find("shard");
    const auto* epoch = e.find("epoch");
    if (!node || !shard || !epoch || !std::get_if<std::string>(node) ||
        !std::get_if<std::uint64_t>(shard) || !std::get_if<std::uint64_t>(epoch))
      return;
    stale_epochs_.push_back({strings_.id(std::get<std::string>(*node)),
                             static_cast<std::uint32_t>(std::get<std::uint64_t>(*shard)),
                             std::get<std::uint64_t>(*epoch), at});
    return;
  }
  if (e.kind == event_kinds::kWorkerLeaseDeadline) {
    const auto* job = e.find("job");
    const auto* inc = e.find("incarnation");
    const auto* nominal = e.find("nominal");
    const auto* token = e.find("token");
    if (!job || !inc || !nominal || !token) return;
    DeadlineFact d;
    d.run = strings_.id(
        idempotency_key(RunId{std::get<std::string>(*job), std::get<std::uint64_t>(*inc),
                              std::get<absl::Time>(*nominal)}));
    d.token = std::get<std::uint64_t>(*token);
    d.at = at;
    d.local = e.at;
    deadlines_.push_back(d);
    return;
  }
  if (e.kind == event_kinds::kWorkerLeaseLost || e.kind == event_kinds::kWorkerRunTimeout) {
    const auto* job = e.find("job");
    const auto* inc = e.find("incarnation");
    const auto* nominal = e.find("nominal");
    const auto* token = e.find("token");
    if (!job || !inc || !nominal || !token) return;
    StopFact s;
    s.kind = e.kind == event_kinds::kWorkerLeaseLost ? StopFact::Kind::kLeaseLost
                                                     : StopFact::Kind::kTimedOut;
    s.run = strings_.id(
        idempotency_key(RunId{std::get<std::string>(*job), std::get<std::uint64_t>(*inc),
                              std::get<absl::Time>(*nominal)}));
    s.token = std::get<std::uint64_t>(*token);
    s.at = at;
    stops_.push_back(s);
    return;
  }
  if (e.kind == event_kinds::kWorkerReportAccepted ||
      e.kind == event_kinds::kWorkerReportRejected || e.kind == event_kinds::kWorkerReportDropped ||
      e.kind == event_kinds::kWorkerReportAbandoned) {
    const auto* job = e.find("job");
    const auto* inc = e.find("incarnation");
    const auto* nominal = e.find("nominal");
    const auto* token = e.find("token");
    if (!job || !inc || !nominal || !token) return;
    ReportSettledFact r;
    r.run = strings_.id(
        idempotency_key(RunId{std::get<std::string>(*job), std::get<std::uint64_t>(*inc),
                              std::get<absl::Time>(*nominal)}));
    r.token = std::get<std::uint64_t>(*token);
    r.kind = e.kind == event_kinds::kWorkerReportAccepted   ? ReportSettledFact::Kind::kAccepted
             : e.kind == event_kinds::kWorkerReportRejected ? ReportSettledFact::Kind::kRejected
             : e.kind == event_kinds::kWorkerReportDropped  ? ReportSettledFact::Kind::kDropped
                                                            : ReportSettledFact::Kind::kAbandoned;
    if (const auto* reason = e.find("reason"); reason && std::get_if<std::string>(reason)) {
      r.has_reason = true;
      r.reason = strings_.id(std::get<std::string>(*reason));
    }
    r.at = at;
    settled_.push_back(r);
    return;
  }
  WriteFact w;
  if (e.kind == event_kinds::kRunCompleted)
    w.kind = WriteFact::Kind::kCompleted;
  else if (e.kind == event_kinds::kRunRenewed)
    w.kind = WriteFact::Kind::kRenewed;
  else if (e.kind == event_kinds::kRunReleased)
    w.kind = WriteFact::Kind::kReleased;
  else
    return;
  const auto* job = e.find("job");
  const auto* inc = e.find("incarnation");
  const auto* nominal = e.find("nominal");
  const auto* token = e.find("token");
  const auto* worker = e.find("worker");
  if (!job || !inc || !nominal || !token || !worker) return;
  const std::string& job_id = std::get<std::string>(*job);
  w.job = strings_.id(job_id);
  w.worker = strings_.id(std::get<std::string>(*worker));
  w.run = strings_.id(idempotency_key(
      RunId{job_id, std::get<std::uint64_t>(*inc), std::get<absl::Time>(*nominal)}));
  w.token = std::get<std::uint64_t>(*token);
  w.at = at;
  writes_.push_back(w);
}

void FactRecorder::observe_ledger_erase(std::uint64_t commit, std::int64_t store_us,
                                        std::string_view key) {
  KeyReader r(key);
  KAIROS_CHECK(r.tag().ok());
  auto job = r.str();
  auto nominal = r.time();
  auto incarnation = r.u64();
  KAIROS_CHECK_MSG(job.ok() && nominal.ok() && incarnation.ok(),
                   "the store erased a ledger key Kairos does not write");
  LedgerOp o;
  o.commit = commit;
  o.erase = true;
  o.job = strings_.id(*job);
  o.nominal = *nominal;
  o.incarnation = *incarnation;
  o.store_us = store_us;
  ledger_ops_.push_back(o);
}

void FactRecorder::observe(const StoreCommit& commit, const std::vector<WriteOp>& ops) {
  const std::int64_t store_us = absl::ToUnixMicros(commit.store_time);
  const std::size_t ledger_ops_before = ledger_ops_.size();
  std::vector<std::pair<std::uint32_t, std::uint64_t>> counts;  // job writes: (job, ledger count)
  for (const WriteOp& op : ops) {
    if (op.kind == WriteOp::Kind::kErase && !op.key.empty() && op.key[0] == 'H') {
      observe_ledger_erase(commit.index, store_us, op.key);
      continue;
    }
    if (op.kind == WriteOp::Kind::kErase && !op.key.empty() && op.key[0] == 'R') {
      KeyReader r(op.key);
      KAIROS_CHECK(r.tag().ok());
      auto job = r.str();
      auto incarnation = r.u64();
      auto nominal = r.time();
      KAIROS_CHECK_MSG(job.ok() && incarnation.ok() && nominal.ok(),
                       "the store erased a run key Kairos does not write");
      run_erases_.emplace_back(commit.index,
                               strings_.id(idempotency_key(RunId{*job, *incarnation, *nominal})));
      continue;
    }
    if (op.kind != WriteOp::Kind::kPut || op.key.empty()) continue;
    if (op.key[0] == 'R') {
      auto run = decode_run(op.value);
      KAIROS_CHECK_MSG(run.ok(), "the store holds a run record Kairos did not write");
      RunFact f;
      f.commit = commit.index;
      f.run = strings_.id(idempotency_key(run->id));
      f.job = strings_.id(run->id.job_id);
      f.owner = strings_.id(run->owner);
      f.client = commit.client;
      f.state = run->state;
      f.shard = run->shard;
      f.attempt = run->attempt;
      f.incarnation = run->id.incarnation;
      f.token = run->token;
      f.store_us = store_us;
      f.due_us = absl::ToUnixMicros(run->due_at);
      f.lease_expiry_us =
          run->state == RunState::kLeased ? absl::ToUnixMicros(run->lease_expiry) : 0;
      f.ready_us = absl::ToUnixMicros(run->ready_at);
      f.priority = static_cast<std::int8_t>(run->priority);
      f.manual = run->kind == RunKind::kManual;
      if (!run->attempts.empty()) {
        const AttemptRecord& last = run->attempts.back();
        f.last_end = last.end;
        if (last.end == AttemptEnd::kSucceeded || last.end == AttemptEnd::kFailed ||
            last.end == AttemptEnd::kFailedPermanent || last.end == AttemptEnd::kTimedOut ||
            last.end == AttemptEnd::kReleased) {
          f.reported_end = static_cast<std::uint32_t>(reported_ends_.size());
          reported_ends_.push_back(
              {last.token, last.exit_code, run->outcome, run->exit_code, strings_.id(run->detail)});
        }
      }
      runs_.push_back(f);
    } else if (op.key[0] == keys::kJob) {
      auto job = decode_job(op.value);
      if (!job.ok()) continue;  // a corrupted record (corrupt-record fault)
      const std::uint32_t id = strings_.id(job->spec.id);
      auto [it, first] = job_state_.try_emplace(id);
      JobState& last = it->second;
      const bool same_incarnation = !first && last.incarnation == job->incarnation;
      const bool schedule_changed = same_incarnation && !(last.schedule == job->spec.schedule);
      const bool paused_with_due =
          job->state == kairos::JobState::kActive && job->paused && job->next_due_at.has_value();
      const bool spec_changed = !same_incarnation || !(last.spec == job->spec);
      if (!same_incarnation || schedule_changed || last.paused != job->paused ||
          last.generation != job->generation || paused_with_due || spec_changed)
        job_changes_.push_back(
            {commit.index, id, job->incarnation, job->generation, job->paused, schedule_changed,
             paused_with_due, spec_digest(job->spec), job->spec.policy.priority,
             job->state == kairos::JobState::kCancelled, store_us,
             job->next_due_at ? absl::ToUnixMicros(*job->next_due_at) : JobFact::kNoDue});
      counts.emplace_back(id, job->ledger_count);
      last.incarnation = job->incarnation;
      last.generation = job->generation;
      last.paused = job->paused;
      if (schedule_changed || !same_incarnation) last.schedule = job->spec.schedule;
      if (spec_changed) last.spec = job->spec;
    } else if (op.key[0] == 'H') {
      KeyReader r(op.key);
      KAIROS_CHECK(r.tag().ok());
      auto job = r.str();
      auto rec = decode_ledger(op.value);
      KAIROS_CHECK_MSG(job.ok() && rec.ok(),
                       "the store holds a ledger record Kairos did not write");
      LedgerFact l;
      l.commit = commit.index;
      l.job = strings_.id(*job);
      l.incarnation = rec->incarnation;
      l.from = rec->nominal;
      l.through = rec->through;
      l.outcome = strings_.id(to_string(rec->outcome));
      if (rec->run_nominal != absl::InfinitePast()) l.run_nominal = rec->run_nominal;
      l.fire_at = rec->fire_at;
      l.store_us = store_us;
      l.detail = strings_.id(rec->detail);
      ledger_.push_back(l);
      LedgerOp o;
      o.commit = commit.index;
      o.job = l.job;
      o.nominal = rec->nominal;
      o.incarnation = rec->incarnation;
      o.outcome = rec->outcome;
      o.run_nominal = rec->run_nominal;
      o.recorded_at = rec->recorded_at;
      o.store_us = store_us;
      ledger_ops_.push_back(o);
    } else if (op.key[0] == keys::kNode) {
      auto rec = decode_node(op.value);
      KAIROS_CHECK_MSG(rec.ok(), "the store holds a node record Kairos did not write");
      // An announcement extends the record; a departure ends it now.
      if (rec->expiry <= commit.store_time)
        departs_.push_back({commit.index, strings_.id(rec->id), store_us, 0});
    } else if (op.key[0] == 'L') {
      KeyReader r(op.key);
      KAIROS_CHECK(r.tag().ok());
      auto shard = r.u32();
      auto rec = decode_leader(op.value);
      KAIROS_CHECK_MSG(shard.ok() && rec.ok(),
                       "the store holds a leader record Kairos did not write");
      LeaderFact f;
      f.commit = commit.index;
      f.shard = *shard;
      f.holder = strings_.id(rec->holder);
      f.epoch = rec->epoch;
      f.store_us = store_us;
      f.expiry_us = absl::ToUnixMicros(rec->expiry);
      leaders_.push_back(f);
    }
  }
  for (const auto& [job, count] : counts) {
    JobState& st = job_state_[job];
    bool touched = false;
    for (std::size_t i = ledger_ops_before; i < ledger_ops_.size() && !touched; ++i)
      touched = ledger_ops_[i].job == job;
    if (!st.counted || st.ledger_count != count || touched)
      ledger_counts_.push_back({commit.index, job, count});
    st.counted = true;
    st.ledger_count = count;
  }
}

}  // namespace kairos::sim
