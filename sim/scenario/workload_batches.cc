// The workload's batches (`batches every=D`; sim/scenario/workload.h,
// "Batches"): jobs:batch requests (SchedulerNode::apply_jobs) and
// conditional applies (apply_job with If-Match) on jobs of the client's own,
// valid and invalid at and past each documented limit. The client records
// what it sent and what it was answered as "client.batch_answered"; the
// checker judges them (sim/oracle/batch_checks.cc). Nothing here runs unless
// the directive is given, so scenarios without it draw and send exactly as
// before.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/kernel/job_store.h"
#include "core/kernel/scheduler_node.h"
#include "sim/scenario/client_events.h"
#include "sim/scenario/workload.h"
#include "sim/world/cluster.h"
#include "sim/world/world.h"

namespace kairos::sim {

namespace {

// The cycle of requests, one per tick.
enum class BatchProbe : std::uint8_t {
  kCreate,           // three fresh creates at documented limits: accepted
  kOneBad,           // one bad item (priority 10) among good ones: refused
  kSeveralBad,       // bad namespace, schedule and label count: every one named
  kDuplicate,        // an id twice: the second named
  kDuplicateOfBad,   // an id twice, its first item invalid: both named
  kMixed,            // updates of kCreate's jobs, one unchanged, and a create
  kMixedBad,         // updates of kCreate's jobs and one bad id: nothing stored
  kEmpty,            // no item: refused, naming "jobs"
  kOversize,         // kMaxBatchSize + 1 items: refused, naming "jobs"
  kAtLimit,          // kMaxBatchSize fresh creates: accepted
  kApplyMatch,       // apply with the known generation: accepted, generation + 1
  kApplyStale,       // apply with a generation below it: refused, nothing stored
  kApplyAbsent,      // apply of an absent id with If-Match: refused
  kApplyRecreate,    // cancel a job, apply over its tombstone's generation: re-created
  kApplyInvalid,     // apply of a spec past a limit: refused before the store
  kUpdateAbsent,     // update of an id that never existed: NotFound
  kUpdateCancelled,  // cancel a job, update it with its tombstone's generation: refused
  kTombstoneStale,   // cancel a job, apply below its tombstone's generation: refused
  kCount,
};

std::string_view batch_probe_name(BatchProbe p) {
  switch (p) {
    case BatchProbe::kCreate:
      return "batch-create";
    case BatchProbe::kOneBad:
      return "batch-one-bad-item";
    case BatchProbe::kSeveralBad:
      return "batch-several-bad-items";
    case BatchProbe::kDuplicate:
      return "batch-duplicate-id";
    case BatchProbe::kDuplicateOfBad:
      return "batch-duplicate-of-invalid-item";
    case BatchProbe::kMixed:
      return "batch-creates-and-updates";
    case BatchProbe::kMixedBad:
      return "batch-updates-and-a-bad-item";
    case BatchProbe::kEmpty:
      return "batch-empty";
    case BatchProbe::kOversize:
      return "batch-past-size-limit";
    case BatchProbe::kAtLimit:
      return "batch-at-size-limit";
    case BatchProbe::kApplyMatch:
      return "apply-if-match";
    case BatchProbe::kApplyStale:
      return "apply-stale-if-match";
    case BatchProbe::kApplyAbsent:
      return "apply-absent-if-match";
    case BatchProbe::kApplyRecreate:
      return "apply-over-tombstone";
    case BatchProbe::kApplyInvalid:
      return "apply-invalid-spec";
    case BatchProbe::kUpdateAbsent:
      return "update-absent-job";
    case BatchProbe::kUpdateCancelled:
      return "update-cancelled-job";
    case BatchProbe::kTombstoneStale:
      return "apply-stale-over-tombstone";
    case BatchProbe::kCount:
      break;
  }
  return "?";
}

// What one request sends and what the client expects of its answer.
struct Request {
  BatchProbe probe = BatchProbe::kCreate;
  std::vector<kairos::JobSpec> specs;
  std::vector<std::optional<std::uint64_t>> want;  // per item: the generation expected
  std::vector<std::size_t> planted;                // the items made invalid
  std::string field;                               // what the first of them breaks
  std::optional<std::uint64_t> if_match;           // apply and update only
  std::string answered_errors;                     // the refusal's failing items
  // One job's request: "apply" (SchedulerNode::apply_job) or "update"
  // (update_job to the spec sent), and the answer the contract gives it:
  // "ok", "mismatch" (a generation mismatch), "invalid", "cancelled"
  // (FailedPrecondition, not a mismatch) or "not-found". "batch" otherwise.
  std::string op = "batch";
  std::string expect;
  // Cancel the job first (a setup step, not judged), then send with
  // If-Match = the tombstone's generation + tombstone_delta.
  bool cancel_first = false;
  int tombstone_delta = 0;
};

template <typename T>
std::string join(const std::vector<T>& v) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) absl::StrAppend(&out, i == 0 ? "" : ",", v[i]);
  return out;
}

}  // namespace

void Workload::forget_in_flight() {
  for (const std::string& id : batch_ids_in_flight_) batch_jobs_.erase(id);
  batch_ids_in_flight_.clear();
}

void Workload::arm_batches() {
  const std::uint64_t gen = generation_;
  ctx_->timers.after(batches_.every, [this, gen] {
    if (gen != generation_) return;
    send_batch();
    arm_batches();
  });
}

void Workload::send_batch() {
  // One request at a time; one left without an answer for three periods
  // (its scheduler crashed or was cut off) is abandoned, and its jobs are
  // not relied on.
  if (batch_in_flight_ && ctx_->world.now() - batch_sent_at_ < 3 * batches_.every) return;
  if (batch_in_flight_) forget_in_flight();
  batch_in_flight_ = false;
  const std::uint64_t k = batches_sent_++;
  const auto probe = static_cast<BatchProbe>(k % static_cast<std::uint64_t>(BatchProbe::kCount));
  const std::uint64_t round = k / static_cast<std::uint64_t>(BatchProbe::kCount);
  SchedulerNode* node = ctx_->cluster.pick_scheduler(random_);
  if (node == nullptr) return;
  auto fresh = [&](std::string_view name) {
    kairos::JobSpec spec;
    spec.id = absl::StrCat("batch-", round, "-", std::string(name));
    spec.ns = "batches";
    spec.schedule.kind = ScheduleSpec::Kind::kInterval;
    spec.schedule.every = absl::Hours(24);
    spec.schedule.start = start_ + absl::Hours(24 * 30);
    if (!jobs_.empty()) spec.payload = jobs_.front().spec.payload;
    return spec;
  };
  // The jobs kCreate made this round (absent when its answer never came).
  auto known = [&](std::string_view name) -> const BatchJob* {
    auto it = batch_jobs_.find(absl::StrCat("batch-", round, "-", std::string(name)));
    return it == batch_jobs_.end() ? nullptr : &it->second;
  };
  auto r = std::make_shared<Request>();
  r->probe = probe;
  auto add = [&](kairos::JobSpec spec, std::optional<std::uint64_t> want) {
    r->specs.push_back(std::move(spec));
    r->want.push_back(want);
  };
  const std::string tag = absl::StrCat(k);  // makes every requested spec unique
  switch (probe) {
    case BatchProbe::kCreate: {
      kairos::JobSpec a = fresh("a");  // every upper bound of the policy at once
      a.policy.priority = kMaxPriority;
      a.policy.max_attempts = 100;
      a.policy.timeout = absl::Hours(24 * 7);
      a.policy.catch_up_max = 1000;
      a.policy.max_concurrent = 100;
      a.ns = std::string(kMaxNamespaceSize, 'n');
      kairos::JobSpec b = fresh("b");  // the lower bounds, and every label allowed
      b.policy.priority = kMinPriority;
      b.policy.max_attempts = 1;
      for (std::size_t i = 0; i < kMaxLabels; ++i) b.labels[absl::StrCat("k", i)] = "v";
      kairos::JobSpec c = fresh("c");  // sub-microsecond parts: stored truncated
      c.policy.timeout = absl::Seconds(30) + absl::Nanoseconds(500);
      c.schedule.start += absl::Nanoseconds(999);
      c.labels["long"] = std::string(kMaxLabelValueSize, 'v');
      add(std::move(a), std::nullopt);
      add(std::move(b), std::nullopt);
      add(std::move(c), std::nullopt);
      break;
    }
    case BatchProbe::kOneBad: {
      for (int i = 0; i < 3; ++i) {
        kairos::JobSpec s = fresh(absl::StrCat("d", i));
        if (i == 1) s.policy.priority = kMaxPriority + 1;
        add(std::move(s), std::nullopt);
      }
      r->planted = {1};
      r->field = "policy.priority";
      break;
    }
    case BatchProbe::kSeveralBad: {
      for (int i = 0; i < 4; ++i) {
        kairos::JobSpec s = fresh(absl::StrCat("e", i));
        if (i == 0) s.ns = std::string(kMaxNamespaceSize + 1, 'n');
        if (i == 2) {
          s.schedule = {};
          s.schedule.kind = ScheduleSpec::Kind::kCron;
          s.schedule.cron = "61 * * * *";
          s.schedule.zone = "UTC";
        }
        if (i == 3)
          for (std::size_t l = 0; l <= kMaxLabels; ++l) s.labels[absl::StrCat("k", l)] = "v";
        add(std::move(s), std::nullopt);
      }
      r->planted = {0, 2, 3};
      r->field = "namespace";
      break;
    }
    case BatchProbe::kDuplicate: {
      add(fresh("f0"), std::nullopt);
      add(fresh("f1"), std::nullopt);
      kairos::JobSpec again = fresh("f0");
      again.policy.priority = 1;
      add(std::move(again), std::nullopt);
      r->planted = {2};
      r->field = "id";
      break;
    }
    case BatchProbe::kDuplicateOfBad: {
      kairos::JobSpec bad = fresh("i0");
      bad.policy.priority = kMinPriority - 1;
      add(std::move(bad), std::nullopt);
      add(fresh("i1"), std::nullopt);
      add(fresh("i0"), std::nullopt);
      r->planted = {0, 2};
      r->field = "policy.priority";
      break;
    }
    case BatchProbe::kMixed: {
      const BatchJob* a = known("a");
      const BatchJob* b = known("b");
      const BatchJob* c = known("c");
      if (a == nullptr || b == nullptr || c == nullptr) return;
      kairos::JobSpec ua = a->spec;
      ua.policy.priority = kMaxPriority - 1;
      ua.labels["rev"] = tag;
      kairos::JobSpec uc = c->spec;
      uc.labels["rev"] = tag;
      add(std::move(ua), a->generation + 1);
      add(b->spec, b->generation);  // unchanged: nothing written, same generation
      add(std::move(uc), c->generation + 1);
      add(fresh("g"), std::nullopt);
      break;
    }
    case BatchProbe::kMixedBad: {
      const BatchJob* a = known("a");
      const BatchJob* b = known("b");
      if (a == nullptr || b == nullptr) return;
      kairos::JobSpec ua = a->spec;
      ua.labels["rev"] = tag;
      kairos::JobSpec ub = b->spec;
      ub.policy.priority = 3;
      ub.labels["k0"] = tag;  // b holds kMaxLabels labels: a value changed, none added
      add(std::move(ua), std::nullopt);
      add(std::move(ub), std::nullopt);
      kairos::JobSpec bad = fresh("h[");
      add(std::move(bad), std::nullopt);
      r->planted = {2};
      r->field = "id";
      break;
    }
    case BatchProbe::kEmpty:
      r->field = "jobs";
      break;
    case BatchProbe::kOversize:
      for (std::size_t i = 0; i <= kMaxBatchSize; ++i)
        add(fresh(absl::StrCat("o", i)), std::nullopt);
      r->field = "jobs";
      break;
    case BatchProbe::kAtLimit:
      for (std::size_t i = 0; i < kMaxBatchSize; ++i)
        add(fresh(absl::StrCat("l", i)), std::nullopt);
      break;
    case BatchProbe::kApplyMatch:
    case BatchProbe::kApplyStale: {
      const BatchJob* a = known("a");
      if (a == nullptr) return;
      kairos::JobSpec ua = a->spec;
      ua.labels["rev"] = tag;
      const bool stale = probe == BatchProbe::kApplyStale;
      r->op = "apply";
      r->expect = stale ? "mismatch" : "ok";
      r->if_match = stale ? a->generation - 1 : a->generation;
      add(std::move(ua), stale ? std::nullopt : std::optional<std::uint64_t>(a->generation + 1));
      break;
    }
    case BatchProbe::kApplyAbsent:
      r->op = "apply";
      r->expect = "mismatch";
      r->if_match = 1;
      add(fresh("z"), std::nullopt);
      break;
    case BatchProbe::kApplyInvalid: {
      kairos::JobSpec bad = fresh("y");
      bad.policy.max_concurrent = 101;
      r->op = "apply";
      r->expect = "invalid";
      add(std::move(bad), std::nullopt);
      break;
    }
    case BatchProbe::kUpdateAbsent:
      r->op = "update";
      r->expect = "not-found";
      r->if_match = 1;
      add(fresh("x"), std::nullopt);
      break;
    case BatchProbe::kApplyRecreate:
    case BatchProbe::kUpdateCancelled:
    case BatchProbe::kTombstoneStale: {
      const char* name = probe == BatchProbe::kApplyRecreate     ? "c"
                         : probe == BatchProbe::kUpdateCancelled ? "g"
                                                                 : "a";
      const BatchJob* j = known(name);
      if (j == nullptr) return;
      kairos::JobSpec again = j->spec;
      again.labels["rev"] = tag;
      add(std::move(again), std::nullopt);
      r->cancel_first = true;
      r->op = probe == BatchProbe::kUpdateCancelled ? "update" : "apply";
      r->expect = probe == BatchProbe::kApplyRecreate     ? "ok"
                  : probe == BatchProbe::kUpdateCancelled ? "cancelled"
                                                          : "mismatch";
      r->tombstone_delta = probe == BatchProbe::kTombstoneStale ? -1 : 0;
      break;
    }
    case BatchProbe::kCount:
      return;
  }
  batch_in_flight_ = true;
  batch_ids_in_flight_.clear();
  for (const kairos::JobSpec& spec : r->specs) batch_ids_in_flight_.push_back(spec.id);
  batch_request_ = k;
  batch_sent_at_ = ctx_->world.now();
  const std::uint64_t request = k;
  // The answer: recorded once, then what the client learned.
  auto answered = [this, r, request](const absl::Status& status,
                                     const std::vector<ControlResult>& items) {
    if (batch_request_ != request || !batch_in_flight_) return;  // abandoned
    if (status.code() == absl::StatusCode::kUnavailable) {
      forget_in_flight();  // outcome unknown: not judged, and its jobs no longer known
      batch_in_flight_ = false;
      return;
    }
    batch_in_flight_ = false;
    const bool apply = r->op != "batch";
    std::vector<std::string> ids, want, got;
    std::vector<std::uint64_t> sent, got_spec, changed;
    for (std::size_t i = 0; i < r->specs.size(); ++i) {
      ids.push_back(r->specs[i].id);
      sent.push_back(spec_digest(r->specs[i]));
      want.push_back(r->want[i] ? absl::StrCat(*r->want[i]) : std::string("-"));
      if (i < items.size()) {
        got.push_back(absl::StrCat(items[i].job.generation));
        got_spec.push_back(spec_digest(items[i].job.spec));
        changed.push_back(items[i].changed ? 1 : 0);
      }
    }
    Event e;
    e.at = ctx_->clock.now();
    e.kind = client_events::kBatchAnswered;
    e.with("probe", std::string(batch_probe_name(r->probe)))
        .with("op", r->op)
        .with("expect", r->expect)
        .with("code", absl::StatusCodeToString(status.code()))
        .with("message", std::string(status.message()))
        .with("errors", r->answered_errors)
        .with("planted", join(r->planted))
        .with("field", r->field)
        .with("ids", join(ids))
        .with("sent", join(sent))
        .with("want", join(want))
        .with("got", join(got))
        .with("got_spec", join(got_spec))
        .with("changed", join(changed));
    if (apply) {
      e.with("if_match", r->if_match ? absl::StrCat(*r->if_match) : std::string("-"))
          .with("mismatch", static_cast<std::uint64_t>(is_generation_mismatch(status)));
      if (is_generation_mismatch(status)) ctx_->world.mark("client.apply-mismatch");
    }
    if (!status.ok()) ctx_->world.mark("client.batch-refused");
    if (status.ok()) {
      bool any = false;
      for (std::uint64_t c : changed) any = any || c != 0;
      if (any && !apply) ctx_->world.mark("client.batch-applied");
      if (r->specs.size() == kMaxBatchSize) ctx_->world.mark("client.batch-at-limit");
      // What the client learned. The size-limit batch's jobs are not kept:
      // nothing later refers to them.
      if (r->specs.size() < kMaxBatchSize)
        for (std::size_t i = 0; i < items.size() && i < r->specs.size(); ++i)
          batch_jobs_[r->specs[i].id] = {items[i].job.spec, items[i].job.generation,
                                         items[i].job.incarnation};
    }
    ctx_->log.record(std::move(e));
  };
  // One job's request, sent to `n`.
  auto send_one = [r, answered](SchedulerNode& n) {
    auto done = [answered](absl::StatusOr<ControlResult> a) {
      answered(a.status(), a.ok() ? std::vector<ControlResult>{*a} : std::vector<ControlResult>{});
    };
    const kairos::JobSpec spec = r->specs.front();
    if (r->op == "update") {
      n.update_job(
          spec.id,
          [spec](kairos::JobSpec& s) {
            s = spec;
            return absl::OkStatus();
          },
          r->if_match, std::move(done));
    } else {
      n.apply_job(spec, r->if_match, std::move(done));
    }
  };
  if (r->cancel_first) {
    const std::string id = r->specs.front().id;
    node->cancel_job(id, [this, r, request, send_one, id](absl::StatusOr<CancelResult> c) {
      if (batch_request_ != request || !batch_in_flight_) return;
      if (!c.ok()) {
        forget_in_flight();
        batch_in_flight_ = false;
        return;
      }
      batch_jobs_.erase(id);
      r->if_match = c->job.generation + r->tombstone_delta;
      // Re-created over the tombstone: a new incarnation, one generation on.
      if (r->expect == "ok") r->want[0] = c->job.generation + 1;
      SchedulerNode* again = ctx_->cluster.pick_scheduler(random_);
      if (again == nullptr) {
        batch_in_flight_ = false;
        return;
      }
      send_one(*again);
    });
    return;
  }
  if (r->op != "batch") {
    send_one(*node);
    return;
  }
  node->apply_jobs(r->specs, [answered, r](absl::Status status, BatchResult result) {
    if (!status.ok()) {
      // The answer's failing items, as the client reads them.
      std::vector<std::size_t> errors;
      for (const BatchItemError& err : result.errors) errors.push_back(err.index);
      r->answered_errors = join(errors);
    }
    answered(status, result.items);
  });
}

}  // namespace kairos::sim
