#include "sim/workload.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/check.h"
#include "core/schedule.h"
#include "core/scheduler_node.h"
#include "sim/cluster.h"

namespace kairos::sim {

Workload::Workload(const Scenario& s, absl::Time start, Random random) : random_(random) {
  std::vector<std::size_t> recurring;
  for (std::size_t spec_i = 0; spec_i < s.jobs.size(); ++spec_i) {
    const JobSpec& spec = s.jobs[spec_i];
    for (std::uint32_t i = 0; i < spec.count; ++i) {
      PlannedJob j;
      j.spec.payload = CommandPayload{{"sim-job"}, {}, {}};
      j.spec.policy.timeout = s.timing.job_timeout;
      j.spec.policy.max_attempts = s.timing.max_attempts;
      ScheduleSpec& sch = j.spec.schedule;
      switch (spec.kind) {
        case JobSpec::Kind::kCron:
          j.spec.id = absl::StrCat("cron-", spec_i, "-", i);
          sch.kind = ScheduleSpec::Kind::kCron;
          sch.cron = spec.expr;
          sch.zone = spec.zone;
          j.create_at = random_.duration_between(absl::ZeroDuration(), absl::Seconds(30));
          j.recurring = true;
          break;
        case JobSpec::Kind::kInterval:
          j.spec.id = absl::StrCat("every-", spec_i, "-", i);
          sch.kind = ScheduleSpec::Kind::kInterval;
          sch.every = spec.every;
          j.create_at = random_.duration_between(absl::ZeroDuration(), absl::Seconds(30));
          sch.start = start + j.create_at + random_.duration_between(absl::Seconds(1), spec.every);
          j.recurring = true;
          break;
        case JobSpec::Kind::kOnce: {
          j.spec.id = absl::StrCat("once-", spec_i, "-", i);
          sch.kind = ScheduleSpec::Kind::kOnce;
          const absl::Duration due = random_.duration_between(absl::ZeroDuration(), spec.within);
          sch.at = start + due;
          j.create_at = std::max(absl::ZeroDuration(),
                                 due - random_.duration_between(absl::ZeroDuration(), absl::Minutes(10)));
          break;
        }
      }
      if (j.recurring) recurring.push_back(jobs_.size());
      jobs_.push_back(std::move(j));
    }
  }
  for (const auto& c : s.cancels) {
    for (std::uint32_t i = 0; i < c.count && !recurring.empty(); ++i) {
      const std::size_t k = random_.below(recurring.size());
      cancels_.push_back({c.at, recurring[k]});
      jobs_[recurring[k]].cancel_requested = true;
      recurring.erase(recurring.begin() + static_cast<std::ptrdiff_t>(k));
    }
  }
}

std::size_t Workload::created() const {
  std::size_t n = 0;
  for (const auto& j : jobs_) n += j.acked.has_value();
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
    if (cancels_[i].acked) continue;
    const std::uint64_t gen = generation_;
    ctx.timers.after(std::max(absl::ZeroDuration(), cancels_[i].at - elapsed), [this, i, gen] {
      if (gen == generation_) cancel(i);
    });
  }
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
    Event e;
    e.at = ctx_->clock.now();
    e.kind = "client.job_created";
    e.with("job", job.spec.id).with("incarnation", r->job.incarnation).with("created_at", r->job.created_at);
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
    if (!r.ok() || c.acked) return;
    c.acked = true;
    const std::string& id = jobs_[c.job].spec.id;
    acked_cancels_.push_back({id, r->job.incarnation, ctx_->world.now()});
    Event e;
    e.at = ctx_->clock.now();
    e.kind = "client.cancel_acked";
    e.with("job", id).with("incarnation", r->job.incarnation);
    ctx_->log.record(std::move(e));
  });
}

std::vector<Occurrence> Workload::expected(absl::Time until) const {
  std::vector<Occurrence> out;
  for (const auto& j : jobs_) {
    if (!j.acked || j.cancel_requested) continue;
    auto schedule = Schedule::compile(j.spec.schedule, j.spec.id);
    KAIROS_CHECK(schedule.ok());
    // The first fire as the job API defines it (docs/ARCHITECTURE.md): a one-off
    // fires once even if created late; others from their creation on.
    std::optional<Fire> f = j.spec.schedule.kind == ScheduleSpec::Kind::kOnce
                                ? schedule->next_after(absl::InfinitePast())
                                : schedule->next_after(j.acked->created_at - absl::Microseconds(1));
    for (; f && f->at <= until; f = schedule->next_after(f->nominal))
      out.push_back({j.spec.id, j.acked->incarnation, f->nominal, f->at});
  }
  return out;
}

}  // namespace kairos::sim
