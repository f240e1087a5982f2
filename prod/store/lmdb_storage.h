// LmdbStorage: the embedded durable store (core/ports/storage.h over LMDB).
//
// Purpose. `kairos server` keeps all of its state in one LMDB environment in
// its data directory. This adapter implements the storage contract with
// LMDB's serializable single-writer transactions, and amortises the cost of a
// durable commit over many transactions (group commit).
//
// Threads. transact() is called on the owner's event loop. A dedicated writer
// thread runs every body: bodies therefore run on that thread, must not touch
// state the loop mutates, and may capture output slots by reference (written
// before `done` is posted; read by the caller in `done`). Results are handed
// back with Timers::post(), which must be callable from another thread
// (AsioTimers::post is); `done` runs on the loop, never inside transact().
//
// Group commit. The writer takes every queued transaction (up to
// max_batch), opens ONE parent write transaction and runs each read-write
// body against it with its writes buffered (reads see them): a body that
// returns OK has its writes applied to the parent, in key order; a body that
// fails (kAborted with the body's status) leaves no trace, so its siblings
// are not disturbed. A body whose read fails, or whose writes cannot be
// applied, ends kUnavailable and the group is run again without it (the
// parent may hold part of its writes). Then the parent commits,
// which fsyncs (the environment is opened without MDB_NOSYNC), and only then
// is every `done` posted. Read-only bodies of the same batch run afterwards on
// a read snapshot, so they never observe unsynced data. One sync thus covers
// the whole batch: with max_batch = 1 every transaction pays its own sync.
//
// Outcomes. kCommitted (synced), kAborted (the body's error), kUnavailable
// (definitely not applied: a read error inside the body, which dooms it, or
// a write error such as a transaction too large for LMDB, or the map at
// max_map_size). kConflict never arises: LMDB serialises writers and every
// body runs on a consistent state. kUnknown never arises either: the store is
// in-process. A failed commit of the parent (the sync) stops the process with
// KAIROS_CHECK naming the LMDB error: what is on disk is then unknowable.
//
// Map size. LMDB needs its maximum size up front. The map starts at
// initial_map_size and doubles whenever a batch hits MDB_MAP_FULL: the batch
// is aborted, the map grown, and every body of the batch run again (the
// contract allows re-running bodies). With max_map_size set, a transaction
// that still does not fit ends kUnavailable.
//
// Data directory. One environment per directory. Store metadata lives in a
// named LMDB database (kMetaDbName) apart from the data database
// (kDataDbName), so the whole byte-string key space belongs to the caller.
// The meta database holds a format marker and the schema version (keys below,
// defined only here). Open() refuses a directory that holds something else
// (other files, or an LMDB environment without our marker) and a store with a
// newer or an older schema version, each with an error that says so (the
// older one names `kairos migrate --data-dir DIR`).
//
// Schema migrations. The schema (LmdbSchema) is a version and the ordered
// list of steps that bring an older store up to it, each step upgrading one
// version to the next. Migrate() is the only way a version changes: it opens
// the store as Open() does (lock, directory and file checks), and runs every
// step from the store's version on, then writes the new version record, all
// in ONE write transaction: a failing step leaves the store as it was. A
// store at the current version is reported up to date and not written; a
// newer one, or one older than the first step, is refused; a dry run reports
// the plan and writes nothing. Migrate() never creates a store.
//
// New stores only where there was none. Open() creates a store only in a
// missing directory or one with no trace of a store. A directory with a
// trace (lock.mdb, or a kLmdbLockFile it did not just create) whose data.mdb
// is missing, or whose data.mdb is empty, is refused (kDataLoss) naming the
// file: the history is gone, and starting empty would hide that. Creating is
// all or nothing: when Open() fails before the new store's format marker
// commits, it removes the files and directories it created.
//
// Damaged files. Before LMDB maps an existing data.mdb, CheckLmdbDataFile
// (lmdb_file_check.h) reads it with plain reads and refuses (kDataLoss or
// kFailedPrecondition, naming the file) one that is shorter than its meta
// pages claim, has no valid meta page, or has a reachable page whose
// structure would make LMDB read outside the file. LMDB errors that mean
// damage met later (MDB_CORRUPTED, MDB_PAGE_NOTFOUND, MDB_PANIC, MDB_INVALID)
// come back as kDataLoss naming the directory and saying to restore from a
// backup; a commit that fails on a damaged page is kUnavailable (LMDB writes
// nothing visible before its meta page), not a crash.
//
// One process per directory. Open() takes flock(LOCK_EX | LOCK_NB) on
// kLmdbLockFile in the directory and writes its pid there; the lock is held
// until the store is destroyed. A second Open() of the same directory, in
// this or another process, fails (kFailedPrecondition) naming the directory
// and the holder's pid. (LMDB's lock.mdb admits several writers' processes;
// this lock does not.) Readers such as mdb_copy do not take it.
//
// Crash recovery. LMDB's copy-on-write pages and double meta page make a
// committed-and-synced transaction survive kill -9 or power loss; after a
// crash the store opens on the last synced commit (stale reader slots of the
// dead process are cleared at open).
//
// Shutdown. The destructor stops accepting work, lets the writer finish every
// transaction already queued (they commit durably and their results are
// posted), joins the writer and closes the environment. The Timers must
// outlive the store; results posted after the loop stopped are dropped by it.
// Calling transact() during or after destruction is a bug.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/ports/clock.h"
#include "core/ports/storage.h"
#include "core/ports/timers.h"

struct MDB_env;
struct MDB_txn;

namespace kairos {

namespace lmdb_internal {
class OverlayArena;  // the writer's scratch memory for a body's buffered writes
}  // namespace lmdb_internal

// The schema this binary writes and understands.
inline constexpr std::uint32_t kLmdbSchemaVersion = 1;
// Named databases inside the environment, and the meta records.
inline constexpr const char* kMetaDbName = "kairos.meta";
inline constexpr const char* kDataDbName = "kairos.data";
inline constexpr std::string_view kMetaFormatKey = "format";
inline constexpr std::string_view kMetaFormatValue = "kairos-lmdb-store";
inline constexpr std::string_view kMetaSchemaVersionKey = "schema_version";  // decimal text
// The directory lock file (see "One process per directory").
inline constexpr const char* kLmdbLockFile = "kairos.lock";
// The server's records of running job process groups (prod/runners/
// job_records.h) live in this subdirectory of the data directory; like
// lock.mdb it is a trace of a store, never a foreign file.
inline constexpr const char* kJobRecordsDir = "running";
// The smallest initial map size `kairos server --map-size` accepts: far above
// the few pages creating a store needs. Open() itself accepts smaller maps
// (tests use them); a new store that does not fit is not left behind.
inline constexpr std::size_t kLmdbMinMapSize = std::size_t{1} << 20;

// One migration step: upgrades a store at version `from` to from + 1. It
// runs inside the migration's write transaction on the meta and data
// databases (MDB_dbi handles); an error abandons the whole migration.
struct LmdbMigrationStep {
  std::uint32_t from = 0;
  std::string_view what;  // one line for the plan `kairos migrate` prints
  absl::Status (*apply)(MDB_txn* txn, unsigned meta_dbi, unsigned data_dbi) = nullptr;
};

// A schema: the version a binary writes and the steps up to it, in order,
// consecutive, the last one's from + 1 == version (checked: a schema that
// breaks this is a bug).
struct LmdbSchema {
  std::uint32_t version = 0;
  std::span<const LmdbMigrationStep> steps;
};

// This binary's schema: kLmdbSchemaVersion, and its steps (none yet: version
// 1 is the first schema; a step is added here with every new version).
const LmdbSchema& CurrentLmdbSchema();

// What Migrate() found and did.
struct LmdbMigrationReport {
  std::uint32_t from = 0;          // the store's version before
  std::uint32_t to = 0;            // the version after (= from when up to date)
  std::vector<std::string> steps;  // "v1 -> v2: what", in order
  bool written = false;            // false: up to date, or a dry run
};

struct LmdbOptions {
  std::string path;  // the data directory
  // The schema to serve or migrate to; null: CurrentLmdbSchema(). Tests
  // give other schemas to exercise migrations.
  const LmdbSchema* schema = nullptr;
  std::size_t initial_map_size = std::size_t{64} << 20;
  std::size_t max_map_size = 0;  // 0: grow without limit
  std::size_t max_batch = 4096;  // transactions per sync; 1 = sync per commit
};

// Maps an LMDB (or errno) return code to a Status naming the operation, e.g.
// "lmdb: mdb_put in transaction: MDB_MAP_FULL (...)". `rc` must be non-zero.
absl::Status LmdbError(std::string_view operation, int rc);

class LmdbStorage final : public Storage {
 public:
  // Opens (creating if needed, see "Data directory") the store in
  // options.path and holds the directory lock until destroyed. `clock` is read on
  // the writer thread for Txn::now() and must be thread-safe there (it is
  // read only while a body runs; SystemClock is). `loop` receives results.
  static absl::StatusOr<std::unique_ptr<LmdbStorage>> Open(const LmdbOptions& options,
                                                           const Clock& clock, Timers& loop);
  // Upgrades the store in options.path to options.schema (see "Schema
  // migrations"); with `dry_run`, only reports the plan. Errors: no store
  // there (kNotFound), a newer or too old version (kFailedPrecondition), and
  // Open()'s errors; a failing step's error names the step.
  static absl::StatusOr<LmdbMigrationReport> Migrate(const LmdbOptions& options, bool dry_run);
  // Tests only: overwrites the store's schema version record, whatever it
  // was, to make a store of another version.
  static absl::Status SetSchemaVersionForTest(const LmdbOptions& options, std::uint32_t version);

  ~LmdbStorage() override;
  LmdbStorage(const LmdbStorage&) = delete;
  LmdbStorage& operator=(const LmdbStorage&) = delete;

  void transact(TxnBody body, TxnDone done, TxnMode mode = TxnMode::kReadWrite) override;

  const std::string& path() const { return options_.path; }
  std::uint32_t schema_version() const {
    return options_.schema != nullptr ? options_.schema->version : kLmdbSchemaVersion;
  }

  struct Stats {
    std::uint64_t transactions = 0;  // bodies finished (any outcome)
    std::uint64_t syncs = 0;         // parent commits (each one fsync)
    std::uint64_t map_growths = 0;
    std::size_t map_size = 0;
  };
  Stats stats() const;

 private:
  struct Request {
    TxnBody body;
    TxnDone done;
    TxnMode mode;
    TxnResult result;
    bool finished = false;
  };
  class Env;
  // Why the environment is opened: to serve (the version must be the
  // schema's), to plan or run a migration, or to set the version (tests).
  struct Purpose {
    enum Kind { kServe, kPlan, kMigrate, kSetVersion } kind = kServe;
    std::uint32_t set_version = 0;          // kSetVersion
    LmdbMigrationReport* report = nullptr;  // kPlan, kMigrate
  };

  LmdbStorage(LmdbOptions options, const Clock& clock, Timers& loop, std::unique_ptr<Env> env);
  static absl::StatusOr<std::unique_ptr<Env>> OpenDirectory(const LmdbOptions& options,
                                                            const Purpose& purpose);
  static absl::Status OpenEnv(const LmdbOptions& options, const Purpose& purpose, Env& env);
  void writer_main();
  void run_batch(std::vector<Request>& batch);
  // Runs the unfinished read-write requests from `begin` on in one parent
  // transaction and syncs it; returns the index of the first request it did
  // not get to (writes.size() when all ran).
  std::size_t run_write_group(std::vector<Request*>& writes, std::size_t begin);
  void run_read(Request& request);
  bool grow_map();

  const LmdbOptions options_;
  const Clock& clock_;
  Timers& loop_;
  std::unique_ptr<Env> env_;
  std::unique_ptr<lmdb_internal::OverlayArena> arena_;  // writer thread only

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Request> queue_;  // guarded by mu_
  bool stopping_ = false;      // guarded by mu_
  Stats stats_;                // guarded by mu_ (written by the writer)
  std::thread writer_;
};

}  // namespace kairos
