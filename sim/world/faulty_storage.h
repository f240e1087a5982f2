// FaultyStorage: a fault-injecting wrapper around any Storage.
//
// Purpose. The core must stay correct when the store answers badly: a lost
// race (conflict), a refused request (unavailable), and above all a lost
// reply (unknown) in both directions. FaultyStorage wraps a clean adapter
// (usually MemoryStorage, but any Storage) and, for each transaction, draws
// from its own seeded Random whether to inject a fault; the inner adapter
// stays clean and knows nothing about faults.
//
// Faults (each a rate in per-mille of transactions; one draw per call):
//   conflict             kConflict; the body is not run, nothing applied.
//   unavailable          kUnavailable; the body is not run, nothing applied.
//   unknown_applied      the inner store runs and commits the transaction,
//                        but the reply says kUnknown (the reply was lost).
//                        If the inner outcome is not kCommitted it is passed
//                        through unchanged.
//   unknown_not_applied  kUnknown; the body is not run, nothing applied (the
//                        request was lost, or timed out before arriving).
// Read-only transactions draw too (an unknown read means the answer was
// lost). Injected results are posted to `loop`, never delivered re-entrantly.
//
// Crashes. "Lose what was not yet synced" belongs to the inner store:
// MemoryStorage::set_deferred_sync()/lose_unsynced(). Reach it through the
// MemoryStorage you wrapped; this wrapper keeps no durable state of its own.
//
// Determinism. The sequence of injected faults is a pure function of the
// Random's seed and the sequence of transact() calls.
#pragma once

#include <cstdint>

#include "core/ports/random.h"
#include "core/ports/storage.h"
#include "core/ports/timers.h"

namespace kairos {

struct StorageFaultRates {
  std::uint32_t conflict = 0;             // per mille
  std::uint32_t unavailable = 0;          // per mille
  std::uint32_t unknown_applied = 0;      // per mille
  std::uint32_t unknown_not_applied = 0;  // per mille
  std::uint32_t total() const {
    return conflict + unavailable + unknown_applied + unknown_not_applied;
  }
};

class FaultyStorage final : public Storage {
 public:
  // `inner` and `loop` must outlive this object. rates.total() <= 1000.
  FaultyStorage(Storage& inner, Timers& loop, Random random, StorageFaultRates rates);

  void transact(TxnBody body, TxnDone done, TxnMode mode = TxnMode::kReadWrite) override;

  // Changes the rates from the next transaction on (e.g. to heal the store).
  void set_rates(StorageFaultRates rates);
  const StorageFaultRates& rates() const { return rates_; }
  Storage& inner() { return inner_; }

  struct Counts {
    std::uint64_t transactions = 0;
    std::uint64_t conflict = 0;
    std::uint64_t unavailable = 0;
    std::uint64_t unknown_applied = 0;
    std::uint64_t unknown_not_applied = 0;
  };
  const Counts& counts() const { return counts_; }

 private:
  Storage& inner_;
  Timers& loop_;
  Random random_;
  StorageFaultRates rates_;
  Counts counts_;
};

}  // namespace kairos
