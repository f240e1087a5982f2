// PostgresStorage against a real server (KAIROS_TEST_PG; skipped when
// unset): the outcome mapping (conflict from two concurrent serializable
// transactions, unavailable before COMMIT and with no server, unknown when
// the connection dies at COMMIT), the database clock, bytea order, the
// schema (migrate then open, dry run, newer and missing schemas refused),
// and connection strings validated and never showing a password.
#include "prod/store/postgres_storage.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <latch>
#include <optional>

#include "prod/runtime/asio_runtime.h"
#include "tests/conformance/postgres_test_db.h"

namespace kairos {
namespace {

using storage_test::PgTestSchema;

class PostgresStorageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto conninfo = storage_test::test_pg_conninfo();
    if (!conninfo) GTEST_SKIP() << storage_test::kNoTestPg;
    schema_ = std::make_unique<PgTestSchema>(*conninfo);
  }
  void TearDown() override {
    store_.reset();
    io_.poll();
    schema_.reset();
  }
  // Migrates the schema and opens a store on it.
  PostgresStorage& open(PostgresOptions options) {
    auto migrated = PostgresStorage::Migrate(options, false);
    EXPECT_TRUE(migrated.ok()) << migrated.status();
    auto opened = PostgresStorage::Open(options, timers_);
    EXPECT_TRUE(opened.ok()) << opened.status();
    store_ = std::move(opened).value();
    return *store_;
  }
  PostgresStorage& open() { return open(schema_->options()); }
  // Opens a store with one thread (so one connection), commits a probe and
  // returns the pid of that connection's backend.
  int open_one_connection() {
    PostgresOptions options = schema_->options();
    options.threads = 1;
    auto pid = std::make_shared<std::atomic<int>>(0);
    options.before_commit = [pid](int p) { *pid = p; };
    open(options);
    EXPECT_TRUE(run([](Txn& t) {
                  t.put("probe", "x");
                  return absl::OkStatus();
                }).committed());
    return pid->load();
  }

  TxnResult run(TxnBody body, TxnMode mode = TxnMode::kReadWrite) {
    std::optional<TxnResult> result;
    store_->transact(
        std::move(body), [&](TxnResult r) { result = std::move(r); }, mode);
    while (!result) EXPECT_GT(io_.run_one_for(std::chrono::seconds(60)), 0u);
    return *result;
  }

  std::unique_ptr<PgTestSchema> schema_;
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_ =
      boost::asio::make_work_guard(io_);
  AsioTimers timers_{io_};
  std::unique_ptr<PostgresStorage> store_;
};

TEST_F(PostgresStorageTest, TwoConcurrentSerializableWritersOneConflicts) {
  open();
  ASSERT_TRUE(run([](Txn& t) {
                t.put("counter", "0");
                return absl::OkStatus();
              }).committed());
  // Both bodies read before either writes (each on its own store thread),
  // then both write what they read plus one: serializable lets one commit.
  std::latch both_read(2);
  std::vector<TxnResult> results;
  for (int i = 0; i < 2; ++i)
    store_->transact(
        [&both_read](Txn& t) {
          const int v = std::stoi(t.get("counter").value_or("0"));
          both_read.arrive_and_wait();
          t.put("counter", std::to_string(v + 1));
          return absl::OkStatus();
        },
        [&results](TxnResult r) { results.push_back(std::move(r)); });
  while (results.size() < 2) ASSERT_GT(io_.run_one_for(std::chrono::seconds(60)), 0u);
  std::vector<CommitOutcome> outcomes{results[0].outcome, results[1].outcome};
  std::sort(outcomes.begin(), outcomes.end());
  EXPECT_EQ(outcomes,
            (std::vector<CommitOutcome>{CommitOutcome::kCommitted, CommitOutcome::kConflict}))
      << results[0].status << " / " << results[1].status;
  const TxnResult& lost = results[0].committed() ? results[1] : results[0];
  EXPECT_NE(lost.status.message().find("40001"), absl::string_view::npos) << lost.status;
  std::optional<std::string> counter;
  ASSERT_TRUE(run(
                  [&](Txn& t) {
                    counter = t.get("counter");
                    return absl::OkStatus();
                  },
                  TxnMode::kReadOnly)
                  .committed());
  EXPECT_EQ(counter, "1");
}

TEST_F(PostgresStorageTest, ConnectionLostInsideTheBodyIsUnavailableAndNothingApplied) {
  const int pid = open_one_connection();
  const TxnResult r = run([&](Txn& t) {
    t.put("lost", "1");
    schema_->terminate_backend(pid);
    t.put("lost2", "2");  // the connection is gone: dooms the body
    return absl::OkStatus();
  });
  EXPECT_EQ(r.outcome, CommitOutcome::kUnavailable) << r.status;
  // The thread reconnects for the next transaction; nothing was applied.
  std::optional<std::string> lost;
  ASSERT_TRUE(run([&](Txn& t) {
                lost = t.get("lost");
                return absl::OkStatus();
              }).committed());
  EXPECT_EQ(lost, std::nullopt);
}

// The contract promises a body a consistent snapshot: once a statement failed
// the database answers nothing more, so the body must not go on and read
// "absent" for a record that exists (a kernel body would act on it or stop
// the process on a broken invariant). The failed read ends the body.
TEST_F(PostgresStorageTest, AFailedReadEndsTheBodyRatherThanShowingAFalseAbsence) {
  const int pid = open_one_connection();
  bool went_on = false;
  std::optional<std::string> seen;
  const TxnResult r = run([&](Txn& t) {
    schema_->terminate_backend(pid);
    seen = t.get("probe");  // exists, but the connection is gone
    went_on = true;
    return absl::OkStatus();
  });
  EXPECT_EQ(r.outcome, CommitOutcome::kUnavailable) << r.status;
  EXPECT_FALSE(went_on) << "the body ran on after a failed read and saw "
                        << (seen ? *seen : "nothing");
  std::optional<std::string> probe;
  ASSERT_TRUE(run([&](Txn& t) {
                probe = t.get("probe");
                return absl::OkStatus();
              }).committed());
  EXPECT_EQ(probe, "x");
}

TEST_F(PostgresStorageTest, ConnectionLostAtCommitIsUnknown) {
  PostgresOptions options = schema_->options();
  options.threads = 1;
  std::atomic<bool> kill{false};
  options.before_commit = [&](int pid) {
    if (kill.exchange(false)) schema_->terminate_backend(pid);
  };
  open(options);
  kill = true;
  const TxnResult r = run([](Txn& t) {
    t.put("k", "v");
    return absl::OkStatus();
  });
  EXPECT_EQ(r.outcome, CommitOutcome::kUnknown) << r.status;
  EXPECT_TRUE(r.maybe_applied());
  // Read-only bodies never pass through the hook; the store recovers.
  EXPECT_TRUE(run([](Txn&) { return absl::OkStatus(); }, TxnMode::kReadOnly).committed());
}

TEST_F(PostgresStorageTest, ConnectionThatDiedWhileIdleIsReplacedTransparently) {
  const int pid = open_one_connection();
  schema_->terminate_backend(pid);  // between transactions: nothing was in flight
  const TxnResult r = run([](Txn& t) {
    t.put("b", "2");
    return absl::OkStatus();
  });
  EXPECT_TRUE(r.committed()) << r.status;
}

TEST_F(PostgresStorageTest, BodyErrorIsAbortedAndWritesNothing) {
  open();
  const TxnResult r = run([](Txn& t) {
    t.put("a", "1");
    return absl::NotFoundError("the body's own error");
  });
  EXPECT_EQ(r.outcome, CommitOutcome::kAborted);
  EXPECT_EQ(r.status, absl::NotFoundError("the body's own error"));
  EXPECT_EQ(schema_->exec("SELECT count(*) FROM \"" + schema_->name() + "\".kairos_data").value(),
            "0");
}

TEST_F(PostgresStorageTest, NowIsTheDatabaseClockConstantDuringARun) {
  open();
  absl::Time a, b, c;
  ASSERT_TRUE(run([&](Txn& t) {
                a = t.now();
                // A statement in between: the clock must not move.
                t.get("x");
                b = t.now();
                return absl::OkStatus();
              }).committed());
  ASSERT_TRUE(run(
                  [&](Txn& t) {
                    c = t.now();
                    return absl::OkStatus();
                  },
                  TxnMode::kReadOnly)
                  .committed());
  EXPECT_EQ(a, b);
  EXPECT_GE(c, a);
  // Same machine: the database clock is the system clock (generous bound).
  EXPECT_LT(absl::AbsDuration(absl::Now() - a), absl::Minutes(1));
}

TEST_F(PostgresStorageTest, ByteaOrderIsBytewiseMemcmpOrder) {
  open();
  std::vector<std::string> keys = {std::string("\x00", 1),
                                   std::string("\x00\x00", 2),
                                   std::string("\x00\xff", 2),
                                   "\x01",
                                   "a",
                                   std::string("a\x00", 2),
                                   "a\x7f",
                                   "a\x80",
                                   "a\xff",
                                   "ab",
                                   "\x7f",
                                   "\x80",
                                   "\xfe\xff",
                                   "\xff",
                                   "\xff\xff"};
  ASSERT_TRUE(run([&](Txn& t) {
                for (const auto& k : keys) t.put(k, k);
                return absl::OkStatus();
              }).committed());
  std::sort(keys.begin(), keys.end());  // std::string order is unsigned bytewise
  std::vector<std::string> forward, reverse;
  ASSERT_TRUE(run(
                  [&](Txn& t) {
                    forward.clear();
                    reverse.clear();
                    for (auto& kv : t.scan("", "", 100)) forward.push_back(kv.key);
                    for (auto& kv : t.scan("", "", 100, Direction::kReverse))
                      reverse.push_back(kv.key);
                    return absl::OkStatus();
                  },
                  TxnMode::kReadOnly)
                  .committed());
  EXPECT_EQ(forward, keys);
  std::reverse(reverse.begin(), reverse.end());
  EXPECT_EQ(reverse, keys);
}

TEST_F(PostgresStorageTest, MigrateThenOpenAndDryRunWritesNothing) {
  const PostgresOptions options = schema_->options();
  // No schema yet: the server refuses and names `kairos migrate`.
  auto refused = PostgresStorage::Open(options, timers_);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("kairos migrate --store"), absl::string_view::npos)
      << refused.status();
  auto plan = PostgresStorage::Migrate(options, true);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->from, 0u);
  EXPECT_EQ(plan->to, kPostgresSchemaVersion);
  EXPECT_EQ(plan->steps.size(), 1u);
  EXPECT_FALSE(plan->written);
  EXPECT_FALSE(PostgresStorage::Open(options, timers_).ok());  // the dry run wrote nothing
  auto done = PostgresStorage::Migrate(options, false);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_TRUE(done->written);
  auto again = PostgresStorage::Migrate(options, false);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->from, again->to);
  EXPECT_FALSE(again->written);
  EXPECT_TRUE(PostgresStorage::Open(options, timers_).ok());
}

TEST_F(PostgresStorageTest, NewerSchemaIsRefusedByOpenAndMigrate) {
  const PostgresOptions options = schema_->options();
  ASSERT_TRUE(PostgresStorage::Migrate(options, false).ok());
  ASSERT_TRUE(PostgresStorage::SetSchemaVersionForTest(options, kPostgresSchemaVersion + 1).ok());
  for (const absl::Status& s : {PostgresStorage::Open(options, timers_).status(),
                                PostgresStorage::Migrate(options, false).status()}) {
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
    EXPECT_NE(s.message().find("newer"), absl::string_view::npos) << s;
  }
}

TEST_F(PostgresStorageTest, ForeignMetaTableIsRefused) {
  const std::string s = "\"" + schema_->name() + "\"";
  ASSERT_TRUE(schema_->exec("CREATE SCHEMA " + s).ok());
  ASSERT_TRUE(schema_->exec("CREATE TABLE " + s + ".kairos_meta (key text, value text)").ok());
  const absl::Status st = PostgresStorage::Migrate(schema_->options(), false).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition) << st;
  EXPECT_NE(st.message().find("not a Kairos store"), absl::string_view::npos) << st;
}

TEST_F(PostgresStorageTest, NoServerIsUnavailableAndNamesTheSocketWithoutThePassword) {
  PostgresOptions options = schema_->options();
  options.conninfo = "host=/nonexistent/kairos-socket dbname=x user=u password=sekret42";
  const absl::Status s = PostgresStorage::Open(options, timers_).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_NE(s.message().find("/nonexistent/kairos-socket"), absl::string_view::npos) << s;
  EXPECT_EQ(s.message().find("sekret42"), absl::string_view::npos) << s;
  EXPECT_EQ(PostgresStorage::Migrate(options, false).status().code(),
            absl::StatusCode::kUnavailable);
}

TEST_F(PostgresStorageTest, BadSchemaNameIsRefused) {
  PostgresOptions options = schema_->options();
  options.schema = "x\"; DROP TABLE y; --";
  EXPECT_EQ(PostgresStorage::Open(options, timers_).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Without a server: parsing and redaction.
TEST(PostgresConninfo, ValidatesAndNamesWhatIsWrongWithoutThePassword) {
  EXPECT_TRUE(ValidatePostgresConninfo("postgresql://u:p@h:5432/db").ok());
  EXPECT_TRUE(ValidatePostgresConninfo("postgres://h1,h2/db?target_session_attrs=read-write").ok());
  EXPECT_TRUE(ValidatePostgresConninfo("host=/run/postgresql dbname=kairos").ok());
  const absl::Status bad = ValidatePostgresConninfo("postgresql://u:sekret42@h/db?bogus=1");
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("bogus"), absl::string_view::npos) << bad;
  EXPECT_EQ(bad.message().find("sekret42"), absl::string_view::npos) << bad;
  const absl::Status kv = ValidatePostgresConninfo("host=h password=sekret42 nonsense");
  EXPECT_EQ(kv.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(kv.message().find("sekret42"), absl::string_view::npos) << kv;
  EXPECT_FALSE(ValidatePostgresConninfo(std::string("host=h\0x", 8)).ok());
}

TEST(PostgresConninfo, RedactsEveryPassword) {
  EXPECT_EQ(RedactConninfo("postgresql://u:pw@h/db"), "postgresql://u:***@h/db");
  EXPECT_EQ(RedactConninfo("postgres://u@h/db?password=pw&sslmode=require"),
            "postgres://u@h/db?password=***&sslmode=require");
  EXPECT_EQ(RedactConninfo("host=h password='a b\\' c' dbname=d"), "host=h password=*** dbname=d");
  EXPECT_EQ(RedactConninfo("host=h dbname=d"), "host=h dbname=d");
}

}  // namespace
}  // namespace kairos
