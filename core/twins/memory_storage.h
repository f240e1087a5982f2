// MemoryStorage: the in-memory twin of the durable stores.
//
// Purpose. Core unit tests run against it, the simulator wraps it as its store
// service, and it defines by example what the storage contract (core/ports/storage.h)
// means: the conformance suite in tests/storage runs it beside LMDB.
//
// Semantics. Bodies run one at a time, synchronously, inside transact() (or
// run()); writes go straight into an ordered map with an undo log, so a body
// that returns an error leaves no trace. A hash index over the map's nodes
// serves point reads and writes in one hash probe instead of a tree walk over
// keys with long shared prefixes; it is only ever probed, never iterated, so
// its order cannot reach any result (scans walk the ordered map). That makes every execution
// trivially serializable: kConflict never arises here (the simulator's fault wrapper injects it).
//
// Durability model (for crash simulation). By default a commit is durable at
// once. With set_deferred_sync(true) a commit is applied but *unsynced*: its
// `done` is held back until sync() (group commit: one sync covers all pending
// commits), and lose_unsynced() rolls back every unsynced commit, newest
// first, and drops their callbacks, as a crash before the sync would. Nothing
// acknowledged is ever lost.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "core/ports/clock.h"
#include "core/ports/storage.h"
#include "core/ports/timers.h"

namespace kairos {

class MemoryStorage final : public Storage {
 public:
  // `clock` is the store's clock (Txn::now()). `loop` delivers results.
  MemoryStorage(const Clock& clock, Timers& loop) : clock_(clock), loop_(loop) {}

  void transact(TxnBody body, TxnDone done, TxnMode mode = TxnMode::kReadWrite) override;

  // Runs `body` now and returns its outcome (committed or aborted). With
  // deferred sync, a committed result here is applied but not yet synced.
  TxnResult run(const TxnBody& body, TxnMode mode = TxnMode::kReadWrite);

  void set_deferred_sync(bool deferred) { deferred_ = deferred; }
  // Makes every applied commit durable and delivers the held results.
  void sync();
  // Rolls back every unsynced commit and drops the held results.
  void lose_unsynced();
  std::size_t unsynced_count() const { return unsynced_.size(); }
  // Drops every record and every unsynced commit with its held result, as
  // if the store were new (the simulator frees a finished run's store when
  // its checker does not read it).
  void clear();

  // Read access for tests and the simulator's checker.
  using Map = std::map<std::string, std::string, std::less<>>;
  const Map& contents() const { return data_; }
  std::uint64_t commit_count() const { return commits_; }

 private:
  friend class MemoryTxn;
  // Old state of a key before a transaction first touched it.
  struct Undo {
    std::string key;
    std::optional<std::string> old_value;
  };
  struct Unsynced {
    std::vector<Undo> undo;
    TxnDone done;  // may be empty (run())
  };
  // data_ and index_ together: every write goes through these three.
  Map::iterator find(std::string_view key) const;
  Map::iterator insert(std::string_view key, std::string_view value);
  void erase(Map::iterator it);
  TxnResult run_collect(const TxnBody& body, TxnMode mode, std::vector<Undo>* undo_out);
  void roll_back(std::vector<Undo>& undo);

  const Clock& clock_;
  Timers& loop_;
  Map data_;
  // Every key of data_ (viewing the node's own key, stable while the node
  // lives) to its node. Probed only; never iterated.
  absl::flat_hash_map<absl::string_view, Map::iterator> index_;
  bool deferred_ = false;
  std::vector<Unsynced> unsynced_;
  std::uint64_t commits_ = 0;
};

}  // namespace kairos
