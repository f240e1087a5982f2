// Store harnesses for the storage conformance suite: each one owns an adapter
// (plus its clock and event loop) and knows how to drive the loop until a
// result arrives. The suite's checks (conformance.h) see only this interface.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "core/ports/clock.h"
#include "core/ports/storage.h"
#include "core/ports/timers.h"
#include "core/twins/manual_clock.h"

namespace kairos::storage_test {

class StoreHarness {
 public:
  virtual ~StoreHarness() = default;
  virtual std::string name() const = 0;
  virtual Storage& store() = 0;
  // The store's clock (Txn::now()). Change it only while no transaction runs.
  virtual ManualClock& clock() = 0;
  // The caller's event loop, on which results are delivered.
  virtual Timers& loop() = 0;
  // Runs the caller's event loop until `pred` holds. Fails loudly (rather
  // than hanging) when no progress is possible.
  virtual void run_until(const std::function<bool()>& pred) = 0;
  // True when the store may answer kConflict / kUnavailable / kUnknown on its
  // own (a fault wrapper): checks then retry and accept either state.
  virtual bool faulty() const { return false; }
  // Crash support: lose everything not yet synced (acknowledged commits must
  // survive). Only harnesses whose store defers syncs support it.
  virtual bool can_crash() const { return false; }
  virtual void crash() {}
};

using HarnessFactory = std::function<std::unique_ptr<StoreHarness>()>;

// MemoryStorage on a ManualLoop (synced at once).
std::unique_ptr<StoreHarness> make_memory_harness();
// MemoryStorage with deferred sync: the loop syncs whenever it goes idle, so
// results arrive a group at a time; crash() loses unsynced commits.
std::unique_ptr<StoreHarness> make_memory_deferred_harness();
// LmdbStorage in a fresh temporary directory, on an io_context.
std::unique_ptr<StoreHarness> make_lmdb_harness();
// PostgresStorage in a fresh schema of the server named by KAIROS_TEST_PG,
// on an io_context; nullptr when KAIROS_TEST_PG is unset (tests then skip).
// With `kill_every` > 0, every kill_every-th read-write COMMIT finds its
// backend terminated (pg_terminate_backend), so it ends kUnknown (not
// applied) through the adapter's real connection-loss path. With
// `skip_locked_claims` false, Txn::scan_claimable is the generic plain scan.
std::unique_ptr<StoreHarness> make_postgres_harness(int kill_every = 0,
                                                    bool skip_locked_claims = true);
// `inner` wrapped in FaultyStorage with moderate rates of every fault.
std::unique_ptr<StoreHarness> make_faulty_harness(std::unique_ptr<StoreHarness> inner,
                                                  std::uint64_t seed);
// `inner` with its store replaced by `wrap(inner.store())` (broken adapters).
std::unique_ptr<StoreHarness> make_wrapped_harness(
    std::unique_ptr<StoreHarness> inner, std::string name,
    std::function<std::unique_ptr<Storage>(StoreHarness&)> wrap);

// A fresh temporary directory, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace kairos::storage_test
