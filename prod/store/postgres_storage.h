// PostgresStorage: the shared durable store (core/ports/storage.h over
// PostgreSQL through libpq), for several `kairos server` nodes on one database.
//
// Purpose. Every transaction body runs inside one SERIALIZABLE PostgreSQL
// transaction over a table of byte-string keys and values (bytea; the
// primary key's B-tree orders bytea bytewise, memcmp then length, which is
// the contract's order). Reads and writes go to the database statement by
// statement with binary parameters (prepared once per connection), so the
// database itself gives read-your-writes and serializability.
//
// Threads. A small bounded pool of store threads (PostgresOptions::threads),
// each with its own connection, takes queued transactions and runs each body
// on its thread with blocking libpq calls: bodies stay synchronous, as the
// contract requires, and the caller's event loop never blocks. Results are
// handed back with Timers::post() (which must be callable from another
// thread, as AsioTimers::post is); `done` runs on the loop, never inside
// transact(). Bodies run concurrently with each other and must not touch
// state the loop mutates.
//
// Outcomes.
//   kCommitted   COMMIT returned "COMMIT" (with synchronous_commit at least
//                on, which every connection enforces: the commit is flushed,
//                or replicated as the server is configured).
//   kConflict    SQLSTATE 40001 (serialization failure) or 40P01 (deadlock)
//                at any statement or at COMMIT: rolled back. The adapter does
//                not re-run the body itself: the kernel's callers retry
//                conflicts with backoff (SchedulerNode::transact_retrying, the
//                claim loop), so one retry policy governs every adapter.
//   kUnavailable definitely not applied: no connection (refused, lost before
//                COMMIT was sent, reconnect backoff pending), a statement
//                timeout before COMMIT, or any other error before or at
//                COMMIT, whose message names the SQLSTATE. A read-only
//                transaction whose COMMIT goes unanswered is kUnavailable too:
//                it applies nothing either way.
//   kUnknown     a read-write COMMIT was sent but its answer never came: the
//                connection broke, the client-side deadline passed, or the
//                server answered 57014/57P0x/08xxx (canceled, shut down,
//                connection failure) — it may have committed.
//   kAborted     the body returned an error; the transaction is rolled back.
//   The first database error inside a body dooms it (later reads return
//   nothing, later writes are dropped) and decides the outcome as above,
//   whatever the body returns.
//
// Claims. With PostgresOptions::skip_locked_claims, Txn::scan_claimable is
// SELECT ... ORDER BY key LIMIT n FOR UPDATE SKIP LOCKED over the key index,
// still inside the SERIALIZABLE transaction: the rows returned are locked, so
// concurrent claimers take disjoint rows instead of all reading the same head
// of the queue and all but one failing at their writes. A row changed and
// committed by another transaction since this one's snapshot fails the
// statement with 40001 (kConflict) rather than being skipped or returned
// stale, and serializable checking still covers every read and write (the
// rows passed over included), so claims still conflict and are retried.
// Measured, that costs as much as it saves, hence off by default: the plain
// scan, which is equally correct.
//
// Read-only transactions run as SERIALIZABLE READ ONLY (not DEFERRABLE, so
// they never wait for a safe snapshot): under snapshot isolation alone
// (REPEATABLE READ) a read-only transaction can observe a state no serial
// order produces (the read-only anomaly); SERIALIZABLE rules that out, and
// its rare 40001 at such a COMMIT is a kConflict the caller retries.
//
// Time. Txn::now() is the database's clock: statement_timestamp() read by the
// statement that follows BEGIN, once per body run, constant during it. Tests
// may substitute a Clock (PostgresOptions::clock).
//
// Connections. libpq URIs (postgresql://, postgres://) and key=value strings,
// validated with PQconninfoParse (ValidatePostgresConninfo). Every connection
// gets connect_timeout (unless the string sets one), statement_timeout, and
// fallback_application_name=kairos. A thread whose connection broke
// reconnects on its next transaction; a failed connect backs off (jittered,
// doubling up to reconnect_max) and transactions in the meantime end
// kUnavailable at once. Every statement also has a client-side deadline
// (statement_timeout plus a margin), so a silent server cannot hang a thread.
// Error messages never contain the password (RedactConninfo).
//
// Schema. Two tables in one PostgreSQL schema (PostgresOptions::schema,
// default "kairos"): kairos_meta (a format marker and the schema version) and
// kairos_data. They are created and upgraded only by Migrate() (`kairos
// migrate --store postgresql://...`), in one transaction; Open() checks the
// version and refuses a missing, older (naming `kairos migrate`) or newer
// schema.
//
// Shutdown. The destructor stops accepting work, lets the threads finish
// every queued transaction (results are posted), joins them and closes the
// connections. Calling transact() during or after destruction is a bug.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/ports/clock.h"
#include "core/ports/storage.h"
#include "core/ports/timers.h"

namespace kairos {

// The schema this binary writes and understands.
inline constexpr std::uint32_t kPostgresSchemaVersion = 1;
inline constexpr std::string_view kPostgresFormatValue = "kairos-postgres-store";
inline constexpr const char* kPostgresDefaultSchema = "kairos";

struct PostgresOptions {
  std::string conninfo;                                  // a libpq URI or key=value string
  std::string schema = kPostgresDefaultSchema;           // [a-z_][a-z0-9_]{0,62}
  std::size_t threads = 4;                               // connections, one per store thread
  absl::Duration connect_timeout = absl::Seconds(5);     // unless conninfo sets one
  absl::Duration statement_timeout = absl::Seconds(10);  // server side, per statement
  absl::Duration reconnect_min = absl::Milliseconds(50);
  absl::Duration reconnect_max = absl::Seconds(5);
  // Txn::scan_claimable as SELECT ... FOR UPDATE SKIP LOCKED (concurrent
  // claimers take disjoint rows) instead of the plain scan, the generic path
  // every store has. Off by default: under SERIALIZABLE the rows a claim
  // passes over still count as read, so claimers conflict as often or more
  // (docs/PERFORMANCE.md, "PostgreSQL claim (SKIP LOCKED)"); tests and the
  // benchmark compare the two.
  bool skip_locked_claims = false;
  // Tests only: Txn::now() from this clock instead of the database's.
  const Clock* clock = nullptr;
  // Tests only: called on the store thread just before a read-write COMMIT
  // is sent, with the backend's pid (to terminate it from another connection
  // and provoke kUnknown).
  std::function<void(int backend_pid)> before_commit;
};

// What Migrate() found and did.
struct PostgresMigrationReport {
  std::uint32_t from = 0;  // 0: no Kairos schema yet
  std::uint32_t to = 0;
  std::vector<std::string> steps;  // "v0 -> v1: what", in order
  bool written = false;            // false: up to date, or a dry run
};

// PQconninfoParse's verdict on `conninfo`: OK, or an error naming what is
// wrong (with the password redacted).
absl::Status ValidatePostgresConninfo(std::string_view conninfo);
// `conninfo` with any password replaced by "***" (URI userinfo, the
// password= key and the password query parameter), for messages and logs.
std::string RedactConninfo(std::string_view conninfo);

class PostgresStorage final : public Storage {
 public:
  // Connects (one connection, to check the schema), then starts the threads.
  // Errors: an invalid conninfo or schema name (kInvalidArgument), no server
  // (kUnavailable), no Kairos schema or another version (kFailedPrecondition,
  // naming `kairos migrate` where it helps).
  static absl::StatusOr<std::unique_ptr<PostgresStorage>> Open(const PostgresOptions& options,
                                                               Timers& loop);
  // Creates or upgrades the schema to this binary's in one transaction
  // (holding an advisory lock, so migrations never interleave); with `dry_run` only reports the
  // plan. Refuses a newer schema and a foreign kairos_meta (kFailedPrecondition).
  static absl::StatusOr<PostgresMigrationReport> Migrate(const PostgresOptions& options,
                                                         bool dry_run);
  // Tests only: overwrites the stored schema version.
  static absl::Status SetSchemaVersionForTest(const PostgresOptions& options,
                                              std::uint32_t version);

  ~PostgresStorage() override;
  PostgresStorage(const PostgresStorage&) = delete;
  PostgresStorage& operator=(const PostgresStorage&) = delete;

  void transact(TxnBody body, TxnDone done, TxnMode mode = TxnMode::kReadWrite) override;

  // The conninfo with the password redacted, and the schema: for logs.
  std::string describe() const;
  std::uint32_t schema_version() const { return kPostgresSchemaVersion; }

 private:
  struct Request {
    TxnBody body;
    TxnDone done;
    TxnMode mode;
  };
  PostgresStorage(PostgresOptions options, Timers& loop);
  void thread_main();

  const PostgresOptions options_;
  Timers& loop_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Request> queue_;  // guarded by mu_
  bool stopping_ = false;      // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace kairos
