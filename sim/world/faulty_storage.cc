#include "sim/world/faulty_storage.h"

#include <utility>

#include "core/base/check.h"

namespace kairos {

FaultyStorage::FaultyStorage(Storage& inner, Timers& loop, Random random, StorageFaultRates rates)
    : inner_(inner), loop_(loop), random_(random), rates_(rates) {
  KAIROS_CHECK_MSG(rates_.total() <= 1000, "fault rates add up to more than 1000 per mille");
}

void FaultyStorage::set_rates(StorageFaultRates rates) {
  KAIROS_CHECK_MSG(rates.total() <= 1000, "fault rates add up to more than 1000 per mille");
  rates_ = rates;
}

void FaultyStorage::transact(TxnBody body, TxnDone done, TxnMode mode) {
  ++counts_.transactions;
  std::uint64_t draw = random_.below(1000);
  auto inject = [&](CommitOutcome outcome, const char* what) {
    loop_.post([done = std::move(done), outcome, what]() mutable {
      done({outcome,
            absl::Status(outcome == CommitOutcome::kConflict ? absl::StatusCode::kAborted
                                                             : absl::StatusCode::kUnavailable,
                         what)});
    });
  };
  if (draw < rates_.conflict) {
    ++counts_.conflict;
    return inject(CommitOutcome::kConflict, "injected fault: conflict (not applied)");
  }
  draw -= rates_.conflict;
  if (draw < rates_.unavailable) {
    ++counts_.unavailable;
    return inject(CommitOutcome::kUnavailable, "injected fault: store unavailable (not applied)");
  }
  draw -= rates_.unavailable;
  if (draw < rates_.unknown_not_applied) {
    ++counts_.unknown_not_applied;
    return inject(CommitOutcome::kUnknown, "injected fault: request lost (not applied)");
  }
  draw -= rates_.unknown_not_applied;
  if (draw < rates_.unknown_applied) {
    ++counts_.unknown_applied;
    inner_.transact(
        std::move(body),
        [done = std::move(done)](TxnResult result) {
          if (result.committed())
            result = {CommitOutcome::kUnknown,
                      absl::UnavailableError("injected fault: reply lost (applied)")};
          done(std::move(result));
        },
        mode);
    return;
  }
  inner_.transact(std::move(body), std::move(done), mode);
}

}  // namespace kairos
