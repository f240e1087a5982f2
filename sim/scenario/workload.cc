#include "sim/scenario/workload.h"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "core/base/check.h"
#include "core/kernel/scheduler_node.h"
#include "core/schedule/schedule.h"
#include "sim/scenario/client_events.h"
#include "sim/world/cluster.h"
#include "sim/world/world.h"

namespace kairos::sim {

namespace {

// The longest one attempt of a job with `policy` and run profile `run` may
// execute: its longest simulated duration (plus the runner's tail), the
// sink's wait, capped at the job's timeout (the timeout itself when runs may
// hang).
absl::Duration longest_run(const Scenario& s, const JobRunProfile& run, const JobPolicy& policy) {
  const RunnerConfig c = apply_run_profile(job_payload(run), s.runner);
  absl::Duration d =
      on_grid(c.max_duration + (c.tail_permille != 0 ? c.tail_max : absl::ZeroDuration()),
              s.timing.quantum) +
      s.sink.timeout;
  if (c.hang_permille != 0 || d > policy.timeout) d = policy.timeout;
  return d;
}

// Appends the occurrences of `schedule` with lo < fire time < hi (lo
// inclusive when `lo_inclusive`), fire time <= until.
void append_fires(const JobTimeline& job, const Schedule& schedule, std::optional<Fire> f,
                  absl::Time lo, bool lo_inclusive, absl::Time hi, absl::Time until,
                  std::vector<Occurrence>& out) {
  for (; f && f->at < hi && f->at <= until; f = schedule.next_after(f->nominal)) {
    if (f->at < lo || (!lo_inclusive && f->at == lo)) continue;
    out.push_back({job.id, job.incarnation, f->nominal, f->at});
  }
}

// The job's current generation named by a generation_mismatch() error
// (none for other errors, or when the job does not exist).
std::optional<std::uint64_t> mismatch_generation(const absl::Status& status) {
  if (!is_generation_mismatch(status)) return std::nullopt;
  const auto payload = status.GetPayload(absl_sv(kGenerationMismatchPayload));
  std::uint64_t g = 0;
  if (!payload || !absl::SimpleAtoi(std::string(*payload), &g)) return std::nullopt;
  return g;
}

}  // namespace

std::vector<Occurrence> expected_occurrences(const JobTimeline& job, absl::Time until,
                                             bool pauses_cut) {
  std::vector<Occurrence> out;
  // Nothing at or after `cut` is certain.
  absl::Time cut = absl::InfiniteFuture();
  for (const auto& p : job.pauses)
    if (!p.resumed && pauses_cut) cut = std::min(cut, p.sent - kControlMargin);
  std::vector<JobTimeline::Reschedule> changes = job.reschedules;
  std::stable_sort(changes.begin(), changes.end(),
                   [](const auto& a, const auto& b) { return a.sent < b.sent; });

  // The creation schedule: the first fire as the job API defines it
  // (docs/ARCHITECTURE.md): a one-off fires once even if created late; others
  // from their creation on.
  auto first = Schedule::compile(job.schedule, job.id);
  KAIROS_CHECK(first.ok());
  const Schedule* current = &*first;
  std::optional<Fire> f = job.schedule.kind == ScheduleSpec::Kind::kOnce
                              ? first->next_after(absl::InfinitePast())
                              : first->next_after(job.created_at - absl::Microseconds(1));
  absl::Time lo = absl::InfinitePast();
  bool lo_inclusive = true;
  std::vector<Schedule> compiled;  // keeps the later schedules alive
  compiled.reserve(changes.size());
  for (const auto& c : changes) {
    const absl::Time hi = std::min(cut, c.sent - kControlMargin);
    append_fires(job, *current, f, lo, lo_inclusive, hi, until, out);
    if (!c.acked) return out;  // nothing later is certain
    auto next = Schedule::compile(c.schedule, job.id);
    KAIROS_CHECK(next.ok());
    compiled.push_back(*std::move(next));
    current = &compiled.back();
    lo = *c.acked + kControlMargin;
    lo_inclusive = false;
    // Start well before lo: a fire time may precede its nominal time by a
    // DST shift; append_fires skips what is not after lo.
    f = current->next_after(lo - absl::Hours(3));
  }
  append_fires(job, *current, f, lo, lo_inclusive, cut, until, out);
  return out;
}

Workload::Workload(const Scenario& s, absl::Time start, Random random)
    : reads_(s.reads),
      inputs_(s.inputs),
      queries_(s.queries),
      batches_(s.batches),
      updates_(s.updates),
      start_(start),
      random_(random) {
  const absl::Duration quantum = s.timing.quantum;  // zero: every time as drawn
  std::vector<std::size_t> recurring;
  for (std::size_t spec_i = 0; spec_i < s.jobs.size(); ++spec_i) {
    const JobSpec& spec = s.jobs[spec_i];
    for (std::uint32_t i = 0; i < spec.count; ++i) {
      PlannedJob j;
      j.line = spec_i;
      j.spec.payload = job_payload(spec.run);
      ScheduleSpec& sch = j.spec.schedule;
      switch (spec.kind) {
        case JobSpec::Kind::kCron:
          j.spec.id = absl::StrCat("cron-", spec_i, "-", i);
          sch.kind = ScheduleSpec::Kind::kCron;
          sch.cron = spec.expr;
          sch.zone = spec.zone;
          j.create_at =
              on_grid(random_.duration_between(absl::ZeroDuration(), absl::Seconds(30)), quantum);
          j.recurring = true;
          break;
        case JobSpec::Kind::kInterval:
          j.spec.id = absl::StrCat("every-", spec_i, "-", i);
          sch.kind = ScheduleSpec::Kind::kInterval;
          sch.every = spec.every;
          j.create_at =
              on_grid(random_.duration_between(absl::ZeroDuration(), absl::Seconds(30)), quantum);
          // First due within one interval of its creation, at least a
          // second after it (or one interval, for a sub-second interval).
          sch.start =
              start + j.create_at +
              on_grid(random_.duration_between(std::min(absl::Seconds(1), spec.every), spec.every),
                      quantum);
          j.recurring = true;
          break;
        case JobSpec::Kind::kOnce: {
          j.spec.id = absl::StrCat("once-", spec_i, "-", i);
          sch.kind = ScheduleSpec::Kind::kOnce;
          const absl::Duration due =
              on_grid(random_.duration_between(absl::ZeroDuration(), spec.within), quantum);
          sch.at = start + due;
          j.create_at = std::max(
              absl::ZeroDuration(),
              due - on_grid(random_.duration_between(absl::ZeroDuration(), absl::Minutes(10)),
                            quantum));
          break;
        }
      }
      // A priority range draws one per job (nothing drawn for a single value,
      // so plans without ranges are unchanged).
      const std::int32_t priority =
          spec.priority_min == spec.priority_max
              ? spec.priority_min
              : static_cast<std::int32_t>(random_.between(spec.priority_min, spec.priority_max));
      j.spec.policy = job_policy(spec, s.timing, priority);
      j.longest_run = longest_run(s, spec.run, j.spec.policy);
      if (j.recurring) recurring.push_back(jobs_.size());
      jobs_.push_back(std::move(j));
    }
  }
  const std::vector<std::size_t> all_recurring = recurring;
  for (const auto& c : s.cancels) {
    for (std::uint32_t i = 0; i < c.count; ++i) {
      // Among the recurring jobs not cancelled yet (of job line c.job); with
      // no line, the pool is all of them and the draw is below(size).
      std::vector<std::size_t> pool;
      for (std::size_t k = 0; k < recurring.size(); ++k)
        if (c.job == 0 || jobs_[recurring[k]].line + 1 == c.job) pool.push_back(k);
      if (pool.empty()) break;
      const std::size_t k = pool[random_.below(pool.size())];
      cancels_.push_back({c.at, recurring[k]});
      cancels_.back().recreate_after = c.recreate_after;
      jobs_[recurring[k]].cancel_requested = true;
      recurring.erase(recurring.begin() + static_cast<std::ptrdiff_t>(k));
    }
  }
  for (const auto& c : s.controls) {
    std::vector<std::size_t> candidates;
    for (std::size_t k : all_recurring)
      if (c.job == 0 || jobs_[k].line + 1 == c.job) candidates.push_back(k);
    for (std::uint32_t i = 0; i < c.count && !candidates.empty(); ++i) {
      const std::size_t k = random_.below(candidates.size());
      PlannedControl p;
      p.at = c.at;
      p.job = candidates[k];
      candidates.erase(candidates.begin() + static_cast<std::ptrdiff_t>(k));
      switch (c.op) {
        case ControlSpec::Op::kPause:
          p.op = Op::kPause;
          break;
        case ControlSpec::Op::kTrigger:
          p.op = Op::kTrigger;
          p.force = c.force;
          break;
        case ControlSpec::Op::kReschedule:
          p.op = Op::kReschedule;
          if (c.expr.empty()) {
            // An interval starting one period after the reschedule time.
            p.schedule.kind = ScheduleSpec::Kind::kInterval;
            p.schedule.every = c.every;
            p.schedule.start = start + c.at + c.every;
          } else {
            p.schedule.kind = ScheduleSpec::Kind::kCron;
            p.schedule.cron = c.expr;
            p.schedule.zone = c.zone;
          }
          break;
      }
      controls_.push_back(p);
      for (std::uint32_t n = 1; n < c.repeat; ++n) {
        PlannedControl again = p;
        again.at = c.at + c.spacing * static_cast<std::int64_t>(n);
        controls_.push_back(again);
      }
      if (c.op == ControlSpec::Op::kPause && c.resume_after) {
        PlannedControl r;
        r.op = Op::kResume;
        r.at = c.at + *c.resume_after;
        r.job = p.job;
        r.pause = controls_.size() - 1;
        controls_.push_back(r);
      }
    }
  }
  if (updates_.every > absl::ZeroDuration()) plan_updates(s, all_recurring);
  if (queries_.every > absl::ZeroDuration()) label_jobs_for_queries();
  if (inputs_.every > absl::ZeroDuration()) config_scenario_ = std::make_shared<Scenario>(s);
}

std::string_view Workload::name(Op op) {
  switch (op) {
    case Op::kPause:
      return "pause";
    case Op::kResume:
      return "resume";
    case Op::kReschedule:
      return "reschedule";
    case Op::kTrigger:
      return "trigger";
    case Op::kUpdate:
      return "update";
  }
  return "?";
}

namespace {
enum class UpdateKind : std::uint8_t { kChange, kStale, kNoop, kRename };
UpdateKind update_kind(std::uint64_t n) {
  switch (n % 6) {
    case 1:
      return UpdateKind::kStale;
    case 3:
      return UpdateKind::kNoop;
    case 5:
      return UpdateKind::kRename;
    default:
      return UpdateKind::kChange;
  }
}
std::string_view update_kind_name(UpdateKind k) {
  switch (k) {
    case UpdateKind::kChange:
      return "change";
    case UpdateKind::kStale:
      return "stale";
    case UpdateKind::kNoop:
      return "noop";
    case UpdateKind::kRename:
      return "rename";
  }
  return "?";
}
}  // namespace

void Workload::plan_updates(const Scenario& s, const std::vector<std::size_t>& recurring) {
  std::vector<std::size_t> pool;
  for (std::size_t k : recurring)
    if (!jobs_[k].cancel_requested) pool.push_back(k);
  if (pool.empty()) return;
  const absl::Duration last = s.duration - s.quiet_tail - kControlMargin;
  std::uint64_t n = 0;
  for (absl::Duration at = updates_.every; at <= last; at += updates_.every) {
    PlannedControl p;
    p.op = Op::kUpdate;
    p.at = at;
    p.job = pool[random_.below(pool.size())];
    p.update = n++;
    controls_.push_back(std::move(p));
  }
}

void Workload::send_update(std::size_t index, SchedulerNode& node) {
  PlannedControl& c = controls_[index];
  const PlannedJob& j = jobs_[c.job];
  const UpdateKind kind = update_kind(c.update);
  if (!c.target) {  // the first send fixes what it asks for
    c.known = j.generation;
    kairos::JobSpec t = j.current;
    switch (kind) {
      case UpdateKind::kChange:
      case UpdateKind::kStale:
        t.policy.priority = (t.policy.priority + 1) % (kMaxPriority + 1);
        t.labels["rev"] = absl::StrCat(c.update);
        if (c.update % 6 == 4) t.ns = "updated";
        break;
      case UpdateKind::kNoop:
        break;
      case UpdateKind::kRename:
        t.id += "-renamed";
        break;
    }
    c.target = std::move(t);
    // A stale If-Match: one below what the client knows (generations start
    // at 1 and never go back). A no-op is accepted whatever the generation.
    if (kind == UpdateKind::kStale) c.expected = *c.known - 1;
    if (kind == UpdateKind::kNoop) c.expected = *c.known + 1000;
  }
  const kairos::JobSpec target = *c.target;
  SpecMutation mutate = [target](kairos::JobSpec& s) {
    s.id = target.id;
    s.ns = target.ns;
    s.labels = target.labels;
    s.policy.priority = target.policy.priority;
    return absl::OkStatus();
  };
  node.update_job(j.spec.id, std::move(mutate), c.expected,
                  [this, index](absl::StatusOr<ControlResult> r) { update_answered(index, r); });
}

void Workload::update_answered(std::size_t index, const absl::StatusOr<ControlResult>& r) {
  PlannedControl& c = controls_[index];
  const absl::Status status = r.status();
  if (c.state == State::kPending && status.code() != absl::StatusCode::kUnavailable) {
    PlannedJob& j = jobs_[c.job];
    const UpdateKind kind = update_kind(c.update);
    Event e;
    e.at = ctx_->clock.now();
    e.kind = client_events::kUpdateAnswered;
    e.with("job", j.spec.id)
        .with("incarnation", known_incarnation(c.job))
        .with("kind", std::string(update_kind_name(kind)))
        .with("if_match", c.expected.value_or(0))
        .with("known", c.known.value_or(0))
        .with("code", absl::StatusCodeToString(status.code()))
        .with("mismatch", static_cast<std::uint64_t>(is_generation_mismatch(status)))
        .with("want", spec_digest(*c.target))
        .with("before", spec_digest(j.current));
    if (r.ok()) {
      e.with("generation", r->job.generation)
          .with("changed", static_cast<std::uint64_t>(r->changed))
          .with("got", spec_digest(r->job.spec));
      if (kind != UpdateKind::kRename) j.current = *c.target;
      ctx_->world.mark(r->changed ? "client.update-applied" : "client.update-unchanged");
    }
    if (is_generation_mismatch(status)) ctx_->world.mark("client.update-stale-refused");
    ctx_->log.record(std::move(e));
  }
  answered(index, status, r.ok() ? r->job.incarnation : 0,
           r.ok() ? std::optional<std::uint64_t>(r->job.generation) : std::nullopt, std::nullopt);
}

std::size_t Workload::created() const {
  std::size_t n = 0;
  for (const auto& j : jobs_) n += j.acked.has_value();
  return n;
}

std::size_t Workload::controls_acked() const {
  std::size_t n = 0;
  for (const auto& c : controls_) n += c.state == State::kAcked;
  return n;
}

std::size_t Workload::controls_refused() const {
  std::size_t n = 0;
  for (const auto& c : controls_) n += c.state == State::kRefused;
  return n;
}

void Workload::start(NodeContext& ctx) {
  ctx_ = &ctx;
  ++generation_;
  const absl::Duration elapsed = ctx.world.elapsed();
  for (std::size_t i = 0; i < jobs_.size(); ++i) {
    if (jobs_[i].acked) continue;
    const std::uint64_t gen = generation_;
    ctx.timers.after(std::max(absl::ZeroDuration(), jobs_[i].create_at - elapsed), [this, i, gen] {
      if (gen == generation_) create(i);
    });
  }
  for (std::size_t i = 0; i < cancels_.size(); ++i) {
    if (cancels_[i].acked) {
      if (cancels_[i].recreate_after && !cancels_[i].again) arm_recreate(i);
      continue;
    }
    const std::uint64_t gen = generation_;
    ctx.timers.after(std::max(absl::ZeroDuration(), cancels_[i].at - elapsed), [this, i, gen] {
      if (gen == generation_) cancel(i);
    });
  }
  for (std::size_t i = 0; i < controls_.size(); ++i) {
    if (controls_[i].state != State::kPending) continue;
    const std::uint64_t gen = generation_;
    ctx.timers.after(std::max(absl::ZeroDuration(), controls_[i].at - elapsed), [this, i, gen] {
      if (gen == generation_) control(i);
    });
  }
  if (reads_.every > absl::ZeroDuration()) arm_reads();
  if (inputs_.every > absl::ZeroDuration()) arm_inputs();
  if (queries_.every > absl::ZeroDuration()) arm_queries();
  if (batches_.every > absl::ZeroDuration()) arm_batches();
}

void Workload::create(std::size_t i) {
  PlannedJob& j = jobs_[i];
  if (j.acked) return;
  ++j.attempts;
  const std::uint64_t gen = generation_;
  NodeContext& ctx = *ctx_;
  // Retry unless answered meanwhile (the answer may never come).
  ctx.timers.after(kRetryAfter, [this, i, gen] {
    if (gen == generation_ && !jobs_[i].acked) create(i);
  });
  SchedulerNode* node = ctx.cluster.pick_scheduler(random_);
  if (node == nullptr) return;
  node->create_job(j.spec, [this, i](absl::StatusOr<CreateResult> r) {
    PlannedJob& job = jobs_[i];
    if (!r.ok() || job.acked) return;  // errors: the retry timer sends it again
    job.acked = r->job;
    job.generation = r->job.generation;
    job.current = job.spec;
    client_jobs_.push_back({job.spec.id, r->job.incarnation, r->job.created_at, job.spec.policy,
                            job.recurring, job.longest_run});
    Event e;
    e.at = ctx_->clock.now();
    e.kind = client_events::kJobCreated;
    e.with("job", job.spec.id)
        .with("incarnation", r->job.incarnation)
        .with("created_at", r->job.created_at);
    if (queries_.every > absl::ZeroDuration())
      e.with("namespace", job.spec.ns).with("labels", client_events::label_text(job.spec.labels));
    ctx_->log.record(std::move(e));
  });
}

void Workload::cancel(std::size_t index) {
  PlannedCancel& c = cancels_[index];
  if (c.acked) return;
  const std::uint64_t gen = generation_;
  NodeContext& ctx = *ctx_;
  ctx.timers.after(kRetryAfter, [this, index, gen] {
    if (gen == generation_ && !cancels_[index].acked) cancel(index);
  });
  if (!jobs_[c.job].acked) return;  // not created yet: try again later
  SchedulerNode* node = ctx.cluster.pick_scheduler(random_);
  if (node == nullptr) return;
  node->cancel_job(jobs_[c.job].spec.id, [this, index](absl::StatusOr<CancelResult> r) {
    PlannedCancel& c = cancels_[index];
    if (!r.ok()) note_undecodable(jobs_[c.job].spec.id, "cancel", r.status());
    if (!r.ok() || c.acked) return;
    c.acked = true;
    c.acked_at = ctx_->world.now();
    const std::string& id = jobs_[c.job].spec.id;
    jobs_[c.job].cancel_generation = r->job.generation;
    acked_cancels_.push_back({id, r->job.incarnation, ctx_->world.now()});
    Event e;
    e.at = ctx_->clock.now();
    e.kind = client_events::kCancelAcked;
    e.with("job", id).with("incarnation", r->job.incarnation);
    ctx_->log.record(std::move(e));
    if (c.recreate_after) arm_recreate(index);
  });
}

void Workload::note_undecodable(const std::string& job, std::string_view op,
                                const absl::Status& status) {
  if (status.code() != absl::StatusCode::kDataLoss) return;
  ctx_->world.mark("client.request-undecodable");
  Event e;
  e.at = ctx_->clock.now();
  e.kind = client_events::kRequestUndecodable;
  e.with("job", job).with("op", std::string(op)).with("error", std::string(status.message()));
  ctx_->log.record(std::move(e));
}

void Workload::arm_recreate(std::size_t index) {
  const PlannedCancel& c = cancels_[index];
  const std::uint64_t gen = generation_;
  const absl::Duration wait =
      std::max(absl::ZeroDuration(), c.acked_at + *c.recreate_after - ctx_->world.now());
  ctx_->timers.after(wait, [this, index, gen] {
    if (gen == generation_) recreate(index);
  });
}

// The cancelled job created again under its id with its spec: the kernel
// makes a new incarnation over the tombstone (its token counter and ledger
// go on), while the old incarnation's leased runs may still be executing.
void Workload::recreate(std::size_t index) {
  PlannedCancel& c = cancels_[index];
  if (c.again) return;
  const std::uint64_t gen = generation_;
  NodeContext& ctx = *ctx_;
  ctx.timers.after(kRetryAfter, [this, index, gen] {
    if (gen == generation_ && !cancels_[index].again) recreate(index);
  });
  SchedulerNode* node = ctx.cluster.pick_scheduler(random_);
  if (node == nullptr) return;
  node->create_job(jobs_[c.job].spec, [this, index](absl::StatusOr<CreateResult> r) {
    PlannedCancel& c = cancels_[index];
    if (!r.ok()) note_undecodable(jobs_[c.job].spec.id, "create", r.status());
    if (!r.ok() || c.again) return;  // errors: the retry timer sends it again
    c.again = r->job;
    PlannedJob& job = jobs_[c.job];
    job.generation = r->job.generation;
    job.current = job.spec;
    client_jobs_.push_back({job.spec.id, r->job.incarnation, r->job.created_at, job.spec.policy,
                            job.recurring, job.longest_run});
    Event e;
    e.at = ctx_->clock.now();
    e.kind = client_events::kJobCreated;
    e.with("job", job.spec.id)
        .with("incarnation", r->job.incarnation)
        .with("created_at", r->job.created_at);
    if (queries_.every > absl::ZeroDuration())
      e.with("namespace", job.spec.ns).with("labels", client_events::label_text(job.spec.labels));
    ctx_->log.record(std::move(e));
  });
}

void Workload::control(std::size_t index) {
  PlannedControl& c = controls_[index];
  if (c.state != State::kPending) return;
  const std::uint64_t gen = generation_;
  NodeContext& ctx = *ctx_;
  ctx.timers.after(kRetryAfter, [this, index, gen] {
    if (gen == generation_ && controls_[index].state == State::kPending) control(index);
  });
  if (!jobs_[c.job].acked) return;  // not created yet: try again later
  // One request per job at a time, but forced triggers: they carry no
  // If-Match and the overlap policy does not hold them back.
  if (!c.force && waits_for_earlier(index)) return;
  if (c.op == Op::kResume && controls_[c.pause].state != State::kAcked) {
    c.state = State::kDropped;  // the pause was refused: nothing to resume
    return;
  }
  SchedulerNode* node = ctx.cluster.pick_scheduler(random_);
  if (node == nullptr) return;
  if (!c.sent) {
    c.sent = ctx.world.now();
    if (c.op != Op::kTrigger) c.expected = jobs_[c.job].generation;
    if (c.force)
      for (ClientJob& cj : client_jobs_)
        if (cj.id == jobs_[c.job].spec.id && cj.incarnation == jobs_[c.job].acked->incarnation)
          cj.forced = true;
  }
  const std::string& id = jobs_[c.job].spec.id;
  auto on_control = [this, index](absl::StatusOr<ControlResult> r) {
    answered(index, r.status(), r.ok() ? r->job.incarnation : 0,
             r.ok() ? std::optional<std::uint64_t>(r->job.generation) : std::nullopt, std::nullopt);
  };
  switch (c.op) {
    case Op::kPause:
      node->pause_job(id, c.expected, std::move(on_control));
      return;
    case Op::kResume:
      node->resume_job(id, c.expected, std::move(on_control));
      return;
    case Op::kReschedule:
      node->reschedule_job(id, c.schedule, c.expected, std::move(on_control));
      return;
    case Op::kTrigger:
      node->trigger_job(id, c.force, [this, index](absl::StatusOr<TriggerResult> r) {
        answered(index, r.status(), r.ok() ? r->run.id.incarnation : 0, std::nullopt,
                 r.ok() ? std::optional<absl::Time>(r->run.id.nominal) : std::nullopt);
      });
      return;
    case Op::kUpdate:
      send_update(index, *node);
      return;
  }
}

bool Workload::waits_for_earlier(std::size_t index) const {
  const PlannedControl& c = controls_[index];
  for (std::size_t k = 0; k < controls_.size(); ++k) {
    const PlannedControl& o = controls_[k];
    if (k == index || o.job != c.job || o.state != State::kPending) continue;
    if (o.at < c.at || (o.at == c.at && k < index)) return true;
  }
  return false;
}

void Workload::answered(std::size_t index, const absl::Status& status, std::uint64_t incarnation,
                        std::optional<std::uint64_t> generation,
                        std::optional<absl::Time> run_nominal) {
  PlannedControl& c = controls_[index];
  if (c.state != State::kPending) {
    // A copy that waited in a stalled scheduler arrives after the request
    // was answered: If-Match kept it from undoing what came after.
    if (is_generation_mismatch(status)) ctx_->world.mark("client.stale-control-refused");
    return;
  }
  // "Outcome unknown after retries": no answer; the retry timer re-sends.
  if (status.code() == absl::StatusCode::kUnavailable) return;
  c.state = status.ok() ? State::kAcked : State::kRefused;
  c.answered = ctx_->world.now();
  if (generation) jobs_[c.job].generation = *generation;
  // A refusal naming the job's current generation: what a client learns
  // from a 412, so its next request carries it.
  if (auto current = mismatch_generation(status)) jobs_[c.job].generation = *current;
  if (c.op == Op::kReschedule && status.ok()) jobs_[c.job].current.schedule = c.schedule;
  if (c.op == Op::kUpdate) return;  // update_answered recorded it
  const std::string& id = jobs_[c.job].spec.id;
  Event e;
  e.at = ctx_->clock.now();
  if (!status.ok()) {
    note_undecodable(id, name(c.op), status);
    e.kind = client_events::kControlRefused;
    e.with("job", id)
        .with("op", std::string(name(c.op)))
        .with("error", std::string(status.message()));
  } else {
    switch (c.op) {
      case Op::kPause:
        e.kind = client_events::kPaused;
        break;
      case Op::kResume:
        e.kind = client_events::kResumed;
        break;
      case Op::kReschedule:
        e.kind = client_events::kRescheduled;
        break;
      case Op::kTrigger:
        e.kind = client_events::kTriggered;
        break;
      case Op::kUpdate:
        break;
    }
    e.with("job", id).with("incarnation", incarnation);
    if (run_nominal) e.with("nominal", *run_nominal);
  }
  ctx_->log.record(std::move(e));
}

void Workload::arm_reads() {
  const std::uint64_t gen = generation_;
  ctx_->timers.after(reads_.every, [this, gen] {
    if (gen != generation_) return;
    read_once();
    arm_reads();
  });
}

void Workload::read_once() {
  std::vector<std::size_t> known;
  for (std::size_t i = 0; i < jobs_.size(); ++i)
    if (jobs_[i].acked) known.push_back(i);
  if (known.empty()) return;
  const std::size_t job = known[random_.below(known.size())];
  switch (random_.below(5)) {
    case 0:
      read_job(job);
      return;
    case 1:
      read_list();
      return;
    case 2:
      read_ledger(job);
      return;
    case 3:
      read_runs(job);
      return;
    default: {
      SchedulerNode* node = ctx_->cluster.pick_scheduler(random_);
      if (node == nullptr) return;
      node->get_cluster([this](absl::StatusOr<ClusterView> r) {
        if (r.ok()) ctx_->world.mark("client.read-checked");
      });
      return;
    }
  }
}

void Workload::read_anomaly(std::string_view op, std::string_view job, std::string detail) {
  Event e;
  e.at = ctx_->clock.now();
  e.kind = client_events::kReadAnomaly;
  e.with("op", std::string(op)).with("job", std::string(job)).with("detail", std::move(detail));
  ctx_->log.record(std::move(e));
}

void Workload::read_job(std::size_t i) {
  SchedulerNode* node = ctx_->cluster.pick_scheduler(random_);
  if (node == nullptr) return;
  // What the client had been told when it sent the read.
  const PlannedJob& j = jobs_[i];
  const std::uint64_t floor = std::max(j.generation, j.cancel_generation);
  bool cancelled = false;
  std::uint64_t incarnation = j.acked->incarnation;
  for (const PlannedCancel& c : cancels_) {
    if (c.job != i || !c.acked) continue;
    cancelled = !c.again.has_value();
    if (c.again) incarnation = std::max(incarnation, c.again->incarnation);
  }
  node->get_job(j.spec.id, [this, i, floor, cancelled,
                            incarnation](absl::StatusOr<std::optional<JobRecord>> r) {
    if (!r.ok()) return;
    const std::string& id = jobs_[i].spec.id;
    ctx_->world.mark("client.read-checked");
    if (!r->has_value()) {
      read_anomaly("get", id, "a job whose create was acknowledged is not found");
      return;
    }
    const JobRecord& rec = **r;
    if (rec.generation < floor)
      read_anomaly("get", id,
                   absl::StrCat("generation ", rec.generation, " is older than ", floor,
                                ", which an acknowledged request had already made"));
    if (rec.incarnation < incarnation)
      read_anomaly("get", id,
                   absl::StrCat("incarnation ", rec.incarnation, " is older than ", incarnation,
                                ", which an acknowledged create had made"));
    if (cancelled && rec.state != JobState::kCancelled && rec.incarnation <= incarnation)
      read_anomaly("get", id, "active although its cancel was acknowledged");
  });
}

void Workload::read_list() {
  struct Listing {
    std::vector<std::string> must_see;  // acknowledged before the first page was asked
    std::map<std::string, int> seen;
    std::size_t pages = 0;
  };
  auto l = std::make_shared<Listing>();
  for (const PlannedJob& j : jobs_)
    if (j.acked) l->must_see.push_back(j.spec.id);
  auto page = std::make_shared<std::function<void(std::string)>>();
  *page = [this, l, page](std::string token) {
    SchedulerNode* node = ctx_->cluster.pick_scheduler(random_);
    if (node == nullptr) return;  // abandoned: not judged
    node->list_jobs(std::move(token), reads_.page, [this, l, page](absl::StatusOr<ListResult> r) {
      if (!r.ok()) return;
      ++l->pages;
      if (r->jobs.size() > reads_.page)
        read_anomaly(
            "list", "",
            absl::StrCat("a page holds ", r->jobs.size(), " jobs, above its size ", reads_.page));
      for (const JobRecord& rec : r->jobs) ++l->seen[rec.spec.id];
      if (!r->next_page_token.empty()) {
        (*page)(r->next_page_token);
        return;
      }
      ctx_->world.mark("client.read-checked");
      if (l->pages > 1) ctx_->world.mark("client.list-paged");
      for (const auto& [id, n] : l->seen)
        if (n > 1) read_anomaly("list", id, absl::StrCat("listed ", n, " times in one listing"));
      for (const std::string& id : l->must_see)
        if (!l->seen.contains(id))
          read_anomaly("list", id, "an acknowledged job is missing from a full listing");
      *page = nullptr;  // breaks the cycle through the capture
    });
  };
  (*page)(std::string());
}

void Workload::read_ledger(std::size_t i) {
  SchedulerNode* node = ctx_->cluster.pick_scheduler(random_);
  if (node == nullptr) return;
  LedgerQuery q;
  q.job_id = jobs_[i].spec.id;
  q.limit = reads_.page;
  node->get_ledger(q, [this, i, limit = q.limit](absl::StatusOr<LedgerResult> r) {
    if (!r.ok()) return;
    const std::string& id = jobs_[i].spec.id;
    ctx_->world.mark("client.read-checked");
    if (r->records.size() > limit)
      read_anomaly("ledger", id,
                   absl::StrCat(r->records.size(), " records, above the limit ", limit));
    // Per incarnation, the records' occurrence ranges [nominal, through]
    // must not meet: an occurrence has one outcome.
    std::vector<const LedgerRecord*> recs;
    for (const LedgerRecord& rec : r->records) recs.push_back(&rec);
    std::sort(recs.begin(), recs.end(), [](const LedgerRecord* a, const LedgerRecord* b) {
      return std::tie(a->incarnation, a->nominal) < std::tie(b->incarnation, b->nominal);
    });
    for (std::size_t k = 1; k < recs.size(); ++k)
      if (recs[k]->incarnation == recs[k - 1]->incarnation &&
          recs[k]->nominal <= recs[k - 1]->through)
        read_anomaly(
            "ledger", id,
            absl::StrCat("occurrence ", absl::FormatTime(recs[k]->nominal), " is recorded twice"));
  });
}

void Workload::read_runs(std::size_t i) {
  SchedulerNode* node = ctx_->cluster.pick_scheduler(random_);
  if (node == nullptr) return;
  RunsQuery q;
  q.job_id = jobs_[i].spec.id;
  q.limit = reads_.page;
  node->list_runs(q, [this, i, limit = q.limit](absl::StatusOr<RunsResult> r) {
    if (!r.ok()) return;
    const std::string& id = jobs_[i].spec.id;
    ctx_->world.mark("client.read-checked");
    if (r->runs.size() > limit)
      read_anomaly("runs", id, absl::StrCat(r->runs.size(), " runs, above the limit ", limit));
    std::set<std::pair<std::uint64_t, absl::Time>> seen;
    for (const RunRecord& run : r->runs)
      if (!seen.insert({run.id.incarnation, run.id.nominal}).second)
        read_anomaly("runs", id,
                     absl::StrCat("run ", absl::FormatTime(run.id.nominal), " listed twice"));
  });
}

JobTimeline Workload::timeline(std::size_t i) const {
  const PlannedJob& j = jobs_[i];
  JobTimeline t;
  t.id = j.spec.id;
  t.incarnation = j.acked->incarnation;
  t.schedule = j.spec.schedule;
  t.created_at = j.acked->created_at;
  for (std::size_t k = 0; k < controls_.size(); ++k) {
    const PlannedControl& c = controls_[k];
    if (c.job != i || !c.sent) continue;  // never sent: no effect
    if (c.op == Op::kReschedule) {
      t.reschedules.push_back(
          {*c.sent, c.state == State::kAcked ? c.answered : std::nullopt, c.schedule});
    } else if (c.op == Op::kPause) {
      bool resumed = false;
      for (const auto& r : controls_)
        if (r.op == Op::kResume && r.pause == k && r.state == State::kAcked) resumed = true;
      t.pauses.push_back({*c.sent, resumed});
    }
  }
  return t;
}

std::vector<PauseWindow> Workload::pause_windows() const {
  std::vector<PauseWindow> out;
  for (std::size_t k = 0; k < controls_.size(); ++k) {
    const PlannedControl& c = controls_[k];
    if (c.op != Op::kPause || !c.sent || !jobs_[c.job].acked) continue;
    PauseWindow w{jobs_[c.job].spec.id, jobs_[c.job].acked->incarnation, *c.sent,
                  absl::InfiniteFuture()};
    for (const auto& r : controls_)
      if (r.op == Op::kResume && r.pause == k && r.state == State::kAcked) w.to = *r.answered;
    out.push_back(std::move(w));
  }
  return out;
}

std::vector<Occurrence> Workload::cancelled_due() const {
  std::vector<Occurrence> out;
  for (const PlannedCancel& c : cancels_) {
    if (!c.acked || !jobs_[c.job].acked) continue;
    std::vector<Occurrence> mine =
        expected_occurrences(timeline(c.job), c.acked_at, /*pauses_cut=*/false);
    out.insert(out.end(), std::make_move_iterator(mine.begin()),
               std::make_move_iterator(mine.end()));
  }
  return out;
}

std::vector<Occurrence> Workload::expected(absl::Time until) const {
  std::vector<Occurrence> out;
  for (std::size_t i = 0; i < jobs_.size(); ++i) {
    const PlannedJob& j = jobs_[i];
    if (!j.acked || j.cancel_requested) continue;
    std::vector<Occurrence> mine = expected_occurrences(timeline(i), until);
    out.insert(out.end(), std::make_move_iterator(mine.begin()),
               std::make_move_iterator(mine.end()));
  }
  // A re-created job's new incarnation, from its creation on (when no
  // control request was sent to the job: which incarnation it met is not
  // known).
  for (const PlannedCancel& c : cancels_) {
    if (!c.again) continue;
    JobTimeline t = timeline(c.job);
    if (!t.reschedules.empty() || !t.pauses.empty()) continue;
    t.incarnation = c.again->incarnation;
    t.created_at = c.again->created_at;
    std::vector<Occurrence> mine = expected_occurrences(t, until);
    out.insert(out.end(), std::make_move_iterator(mine.begin()),
               std::make_move_iterator(mine.end()));
  }
  return out;
}

}  // namespace kairos::sim
