// Test helpers for the kernel: a scripted fault wrapper around MemoryStorage,
// small builders for jobs, and readers of a MemoryStorage's contents. The
// rigs built on them are job_store_fixture.h (transaction bodies) and
// node_world.h (nodes and workers).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "core/kernel/job_store.h"
#include "core/kernel/keyspace.h"
#include "core/kernel/records.h"
#include "core/ports/storage.h"
#include "core/ports/timers.h"
#include "core/twins/memory_storage.h"

namespace kairos::test_support {

// What the next transact() does.
enum class Fault : std::uint8_t {
  kNone,               // run normally
  kUnknownApplied,     // applied, reported kUnknown
  kUnknownNotApplied,  // not applied, reported kUnknown
  kConflict,           // not applied, reported kConflict
  kUnavailable,        // not applied, reported kUnavailable
};

// Wraps a MemoryStorage; faults come from a script (FIFO) and, when the script
// is empty, from `fallback` (by default none).
class ScriptedStorage final : public Storage {
 public:
  ScriptedStorage(MemoryStorage& inner, Timers& loop) : inner_(inner), loop_(loop) {}

  void push(Fault f, int times = 1) {
    for (int i = 0; i < times; ++i) script_.push_back(f);
  }
  void set_fault_fn(std::function<Fault()> fn) { fault_fn_ = std::move(fn); }
  std::size_t calls() const { return calls_; }

  void transact(TxnBody body, TxnDone done, TxnMode mode = TxnMode::kReadWrite) override {
    ++calls_;
    Fault f = Fault::kNone;
    if (!script_.empty()) {
      f = script_.front();
      script_.pop_front();
    } else if (fault_fn_) {
      f = fault_fn_();
    }
    TxnResult result;
    switch (f) {
      case Fault::kNone:
        result = inner_.run(body, mode);
        break;
      case Fault::kUnknownApplied:
        result = inner_.run(body, mode);
        if (result.committed())
          result = {CommitOutcome::kUnknown, absl::UnavailableError("reply lost")};
        break;
      case Fault::kUnknownNotApplied:
      case Fault::kConflict:
      case Fault::kUnavailable: {
        // Run the body (so output slots are filled, as a real store may) and
        // roll it back.
        inner_.run(
            [&](Txn& t) -> absl::Status {
              (void)body(t);
              return absl::CancelledError("rolled back by the fault wrapper");
            },
            mode);
        const CommitOutcome o = f == Fault::kUnknownNotApplied ? CommitOutcome::kUnknown
                                : f == Fault::kConflict        ? CommitOutcome::kConflict
                                                               : CommitOutcome::kUnavailable;
        result = {o, absl::UnavailableError("injected")};
        break;
      }
    }
    loop_.post([done = std::move(done), result]() mutable { done(std::move(result)); });
  }

 private:
  MemoryStorage& inner_;
  Timers& loop_;
  std::deque<Fault> script_;
  std::function<Fault()> fault_fn_;
  std::size_t calls_ = 0;
};

inline absl::Time T0() { return absl::FromUnixSeconds(1'800'000'000); }

inline JobSpec interval_job(std::string id, absl::Duration every = absl::Minutes(1),
                            absl::Time start = T0()) {
  JobSpec s;
  s.id = std::move(id);
  s.schedule.kind = ScheduleSpec::Kind::kInterval;
  s.schedule.every = every;
  s.schedule.start = start;
  s.payload = CommandPayload{{"/bin/true"}, {}, ""};
  return s;
}

// Every run record in the store, decoded, in key order.
inline std::vector<RunRecord> stored_runs(const MemoryStorage& mem) {
  std::vector<RunRecord> out;
  for (const auto& [k, v] : mem.contents())
    if (k[0] == keys::kRun) out.push_back(*decode_run(v));
  return out;
}

// How many keys in the store carry the tag (keys::kJob, keys::kDue, ...).
inline std::size_t count_keys(const MemoryStorage& mem, std::uint8_t tag) {
  std::size_t n = 0;
  for (const auto& [k, v] : mem.contents()) n += static_cast<std::uint8_t>(k[0]) == tag;
  return n;
}

inline JobSpec once_job(std::string id, absl::Time at) {
  JobSpec s;
  s.id = std::move(id);
  s.schedule.kind = ScheduleSpec::Kind::kOnce;
  s.schedule.at = at;
  s.payload = CommandPayload{{"/bin/true"}, {}, ""};
  return s;
}

}  // namespace kairos::test_support
