// LMDB-specific guarantees beyond the conformance suite: durability across
// reopen and kill -9, group commit, map growth, schema/foreign-directory
// errors, and the LMDB error naming.
#include "prod/store/lmdb_storage.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <lmdb.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstring>
#include <fstream>
#include <optional>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "core/base/absl_compat.h"
#include "core/twins/manual_clock.h"
#include "prod/runtime/asio_runtime.h"
#include "tests/conformance/storage_harness.h"
#include "tests/support/lmdb_rig.h"

namespace kairos {
namespace {

using storage_test::TempDir;

using Rig = test_support::LmdbRig;

LmdbOptions options_for(const TempDir& dir) {
  LmdbOptions o;
  o.path = dir.path();
  return o;
}

TxnBody put_body(std::string k, std::string v) {
  return [k, v](Txn& t) {
    t.put(k, v);
    return absl::OkStatus();
  };
}

TEST(LmdbStorage, ReopenKeepsData) {
  TempDir dir;
  {
    Rig rig(options_for(dir));
    ASSERT_TRUE(rig.open().ok());
    EXPECT_TRUE(rig.run(put_body("job/1", "hello")).committed());
  }
  Rig rig(options_for(dir));
  ASSERT_TRUE(rig.open().ok());
  EXPECT_EQ(rig.get("job/1"), "hello");
  EXPECT_EQ(rig.store().schema_version(), kLmdbSchemaVersion);
}

TEST(LmdbStorage, GroupCommitCoversManyTransactionsPerSync) {
  TempDir dir;
  Rig rig(options_for(dir));
  ASSERT_TRUE(rig.open().ok());
  std::vector<TxnBody> bodies;
  for (int i = 0; i < 200; ++i) bodies.push_back(put_body(absl::StrFormat("k%03d", i), "v"));
  // One body fails: its siblings in the same parent transaction still commit.
  bodies.push_back([](Txn& t) {
    t.put("bad", "x");
    return absl::InvalidArgumentError("rejected by the body");
  });
  const auto before = rig.store().stats().syncs;
  auto results = rig.run_all(std::move(bodies));
  for (int i = 0; i < 200; ++i) EXPECT_TRUE(results[static_cast<std::size_t>(i)].committed());
  EXPECT_EQ(results.back().outcome, CommitOutcome::kAborted);
  EXPECT_EQ(results.back().status, absl::InvalidArgumentError("rejected by the body"));
  const auto syncs = rig.store().stats().syncs - before;
  EXPECT_LT(syncs, 100u) << "transactions submitted together should share syncs";
  EXPECT_EQ(rig.get("k199"), "v");
  EXPECT_EQ(rig.get("bad"), std::nullopt);
}

TEST(LmdbStorage, MaxBatchOneSyncsEveryCommit) {
  TempDir dir;
  LmdbOptions o = options_for(dir);
  o.max_batch = 1;
  Rig rig(o);
  ASSERT_TRUE(rig.open().ok());
  std::vector<TxnBody> bodies;
  for (int i = 0; i < 20; ++i) bodies.push_back(put_body(absl::StrFormat("k%03d", i), "v"));
  const auto before = rig.store().stats().syncs;
  for (auto& r : rig.run_all(std::move(bodies))) EXPECT_TRUE(r.committed());
  EXPECT_EQ(rig.store().stats().syncs - before, 20u);
}

TEST(LmdbStorage, MapGrowsPastInitialSizeAndStaysGrownAfterReopen) {
  TempDir dir;
  LmdbOptions o = options_for(dir);
  o.initial_map_size = 256 << 10;
  const std::string value(64 << 10, 'v');
  {
    Rig rig(o);
    ASSERT_TRUE(rig.open().ok());
    // Many transactions in one batch and one transaction bigger than the map.
    std::vector<TxnBody> bodies;
    for (int i = 0; i < 64; ++i) bodies.push_back(put_body(absl::StrFormat("v%03d", i), value));
    bodies.push_back([&](Txn& t) {
      for (int i = 0; i < 32; ++i) t.put(absl::StrFormat("w%03d", i), value);
      return absl::OkStatus();
    });
    for (auto& r : rig.run_all(std::move(bodies))) EXPECT_TRUE(r.committed()) << r.status;
    EXPECT_GT(rig.store().stats().map_growths, 0u);
    EXPECT_GE(rig.store().stats().map_size, std::size_t{6} << 20);
  }
  Rig rig(o);  // the file is larger than initial_map_size: LMDB adopts it
  ASSERT_TRUE(rig.open().ok());
  EXPECT_EQ(rig.get("v063"), value);
  EXPECT_EQ(rig.get("w031"), value);
}

TEST(LmdbStorage, MaxMapSizeFailsOnlyTheTransactionThatDoesNotFit) {
  TempDir dir;
  LmdbOptions o = options_for(dir);
  o.initial_map_size = 256 << 10;
  o.max_map_size = 1 << 20;
  Rig rig(o);
  ASSERT_TRUE(rig.open().ok());
  std::vector<TxnBody> bodies;
  bodies.push_back(put_body("small-1", "x"));
  bodies.push_back([](Txn& t) {
    t.put("too-big", std::string(4 << 20, 'x'));
    return absl::OkStatus();
  });
  bodies.push_back(put_body("small-2", "y"));
  auto results = rig.run_all(std::move(bodies));
  EXPECT_TRUE(results[0].committed());
  EXPECT_EQ(results[1].outcome, CommitOutcome::kUnavailable);
  EXPECT_TRUE(absl::StrContains(results[1].status.message(), "MDB_MAP_FULL")) << results[1].status;
  EXPECT_TRUE(results[2].committed());
  EXPECT_EQ(rig.get("too-big"), std::nullopt);
  EXPECT_EQ(rig.get("small-2"), "y");
}

TEST(LmdbStorage, DestructorFinishesQueuedTransactions) {
  TempDir dir;
  {
    Rig rig(options_for(dir));
    ASSERT_TRUE(rig.open().ok());
    for (int i = 0; i < 50; ++i)
      rig.store().transact(put_body(absl::StrFormat("q%02d", i), "v"), [](TxnResult) {});
  }  // destroyed with work queued
  Rig rig(options_for(dir));
  ASSERT_TRUE(rig.open().ok());
  EXPECT_EQ(rig.get("q49"), "v");
}

// Raw LMDB, to forge directories the store must refuse.
void raw_put(const std::string& path, const char* db, std::string_view key,
             std::string_view value) {
  MDB_env* env;
  ASSERT_EQ(mdb_env_create(&env), 0);
  mdb_env_set_maxdbs(env, 4);
  ASSERT_EQ(mdb_env_open(env, path.c_str(), 0, 0640), 0);
  MDB_txn* txn;
  ASSERT_EQ(mdb_txn_begin(env, nullptr, 0, &txn), 0);
  MDB_dbi dbi;
  ASSERT_EQ(mdb_dbi_open(txn, db, MDB_CREATE, &dbi), 0);
  MDB_val k{key.size(), const_cast<char*>(key.data())};
  MDB_val v{value.size(), const_cast<char*>(value.data())};
  ASSERT_EQ(mdb_put(txn, dbi, &k, &v, 0), 0);
  ASSERT_EQ(mdb_txn_commit(txn), 0);
  mdb_env_close(env);
}

TEST(LmdbStorage, NewerSchemaVersionIsRefusedClearly) {
  TempDir dir;
  {
    Rig rig(options_for(dir));
    ASSERT_TRUE(rig.open().ok());
  }
  raw_put(dir.path(), kMetaDbName, kMetaSchemaVersionKey, "2");
  Rig rig(options_for(dir));
  const absl::Status s = rig.open();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(s.message(),
                                "schema version 2, newer than this kairos binary "
                                "supports (1)"))
      << s;
}

TEST(LmdbStorage, ForeignLmdbEnvironmentIsRefused) {
  TempDir dir;
  raw_put(dir.path(), nullptr, "someone-else", "data");
  Rig rig(options_for(dir));
  const absl::Status s = rig.open();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(s.message(), "not a Kairos store")) << s;
}

TEST(LmdbStorage, LmdbEnvironmentWithoutOurMarkerIsRefused) {
  TempDir dir;
  raw_put(dir.path(), kMetaDbName, "other", "x");  // a meta db but no format marker
  Rig rig(options_for(dir));
  const absl::Status s = rig.open();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(s.message(), "format marker")) << s;
}

TEST(LmdbStorage, NonLmdbDirectoryIsRefused) {
  TempDir dir;
  std::ofstream(dir.path() + "/notes.txt") << "my files";
  Rig rig(options_for(dir));
  const absl::Status s = rig.open();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(s.message(), "not a Kairos store")) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "notes.txt")) << s;
}

TEST(LmdbStorage, GarbageDataFileIsRefused) {
  TempDir dir;
  std::ofstream(dir.path() + "/data.mdb") << std::string(8192, 'g');
  Rig rig(options_for(dir));
  const absl::Status s = rig.open();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(s.message(), "not an LMDB environment")) << s;
}

TEST(LmdbStorage, PathThatIsAFileIsRefused) {
  TempDir dir;
  std::ofstream(dir.path() + "/file") << "x";
  LmdbOptions o;
  o.path = dir.path() + "/file";
  Rig rig(o);
  const absl::Status s = rig.open();
  EXPECT_TRUE(absl::StrContains(s.message(), "not a directory")) << s;
}

TEST(LmdbStorage, CreatesMissingDirectories) {
  TempDir dir;
  LmdbOptions o;
  o.path = dir.path() + "/a/b/data";
  Rig rig(o);
  ASSERT_TRUE(rig.open().ok());
  EXPECT_TRUE(rig.run(put_body("k", "v")).committed());
}

TEST(LmdbStorage, ErrorsNameTheOperationAndTheCode) {
  const absl::Status s = LmdbError("mdb_put in transaction", MDB_MAP_FULL);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(absl::StartsWith(s.message(), "lmdb: mdb_put in transaction: MDB_MAP_FULL (")) << s;
  EXPECT_EQ(LmdbError("mdb_get", MDB_CORRUPTED).code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(LmdbError("mdb_env_open", EACCES).code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(absl::StrContains(LmdbError("mdb_env_open", EACCES).message(), "EACCES"));
}

// ---------------------------------------------------------------- kill -9

// The child: commits transactions forever, several in flight (so they group),
// and reports each id on `fd` only after its kCommitted arrived.
[[noreturn]] void commit_forever(const std::string& path, int fd, std::uint64_t base) {
  boost::asio::io_context io;
  auto work = boost::asio::make_work_guard(io);
  SystemClock clock;
  AsioTimers timers(io);
  LmdbOptions o;
  o.path = path;
  o.initial_map_size = 1 << 20;  // growth happens while we may be killed
  auto store = LmdbStorage::Open(o, clock, timers);
  if (!store.ok()) _exit(3);
  std::uint64_t next = base;
  std::function<void()> submit = [&] {
    const std::uint64_t id = next++;
    (*store)->transact(
        [id](Txn& t) {
          // Two keys per transaction: after recovery both or neither exist.
          t.put(absl::StrFormat("k/%012d", id), std::string(200, 'x'));
          t.put(absl::StrFormat("p/%012d", id), absl::StrFormat("%d", id));
          return absl::OkStatus();
        },
        [&, id](TxnResult r) {
          if (!r.committed()) _exit(4);
          if (write(fd, &id, sizeof id) != sizeof id) _exit(5);
          submit();
        });
  };
  for (int i = 0; i < 64; ++i) submit();
  io.run();
  _exit(6);
}

TEST(LmdbDurability, KillDashNineKeepsEveryReportedCommit) {
  TempDir dir;
  std::set<std::uint64_t> reported;
  const std::uint64_t kill_after[] = {1, 150, 700, 3000};
  for (std::size_t round = 0; round < std::size(kill_after); ++round) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      commit_forever(dir.path(), fds[1], (round + 1) * 1'000'000);
    }
    close(fds[1]);
    std::uint64_t seen = 0, id = 0;
    bool killed = false;
    for (;;) {
      const ssize_t n = read(fds[0], &id, sizeof id);  // whole ids: writes <= PIPE_BUF
      if (n == 0) break;                               // child gone, pipe drained
      ASSERT_EQ(n, static_cast<ssize_t>(sizeof id));
      reported.insert(id);
      if (++seen == kill_after[round] && !killed) {
        ASSERT_EQ(kill(pid, SIGKILL), 0);
        killed = true;
      }
    }
    close(fds[0]);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "child did not die by SIGKILL (exit " << WEXITSTATUS(status) << ")";
    ASSERT_GE(seen, kill_after[round]);

    // Reopen: every reported commit is there, and no transaction is torn.
    Rig rig(options_for(dir));
    ASSERT_TRUE(rig.open().ok());
    std::set<std::uint64_t> k_ids, p_ids;
    ASSERT_TRUE(rig.run(
                       [&](Txn& t) {
                         k_ids.clear();
                         p_ids.clear();
                         for (auto& kv : t.scan("k/", "k0", 1u << 30))
                           k_ids.insert(std::stoull(kv.key.substr(2)));
                         for (auto& kv : t.scan("p/", "p0", 1u << 30))
                           p_ids.insert(std::stoull(kv.value));
                         return absl::OkStatus();
                       },
                       TxnMode::kReadOnly)
                    .committed());
    EXPECT_EQ(k_ids, p_ids) << "a transaction was torn by the crash";
    std::size_t missing = 0;
    for (std::uint64_t r : reported) missing += k_ids.count(r) == 0;
    EXPECT_EQ(missing, 0u) << "reported commits lost after kill -9 in round " << round;
    EXPECT_GE(k_ids.size(), reported.size());
  }
}

}  // namespace
}  // namespace kairos
