// LMDB schema migrations (LmdbStorage::Migrate): a store of an older version
// is refused by Open() with a message naming `kairos migrate --data-dir DIR`,
// and Migrate() upgrades it step by step in one write transaction, keeping
// the data; a failing step leaves the store as it was; the current version
// is up to date and not written; a newer one and one older than the first
// step are refused; a dry run plans and writes nothing; Migrate() never
// creates a store. Test schemas (version 3, steps from 1) stand in for
// future versions; the version record is set with the test hook.
#include <gtest/gtest.h>
#include <lmdb.h>

#include <filesystem>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "prod/store/lmdb_storage.h"
#include "tests/support/lmdb_rig.h"
#include "tests/support/temp_dir.h"

namespace kairos {
namespace {

using test_support::LmdbRig;
using test_support::TempDir;

int g_applied = 0;  // steps run, in order: 10 * previous + from

absl::Status mark(MDB_txn* txn, unsigned meta, std::string_view key) {
  MDB_val k{key.size(), const_cast<char*>(key.data())};
  MDB_val v{1, const_cast<char*>("1")};
  const int rc = mdb_put(txn, meta, &k, &v, 0);
  return rc == 0 ? absl::OkStatus() : LmdbError("mdb_put (test step)", rc);
}
absl::Status step1(MDB_txn* txn, unsigned meta, unsigned) {
  g_applied = g_applied * 10 + 1;
  return mark(txn, meta, "step1");
}
absl::Status step2(MDB_txn* txn, unsigned meta, unsigned) {
  g_applied = g_applied * 10 + 2;
  return mark(txn, meta, "step2");
}
absl::Status failing_step(MDB_txn*, unsigned, unsigned) {
  return absl::DataLossError("record x cannot be converted");
}

constexpr LmdbMigrationStep kSteps[] = {{1, "add the first test marker", step1},
                                        {2, "add the second test marker", step2}};
constexpr LmdbMigrationStep kFailingSteps[] = {{1, "add the first test marker", step1},
                                               {2, "a step that fails", failing_step}};
const LmdbSchema kV3{3, kSteps};
const LmdbSchema kV3Failing{3, kFailingSteps};
const LmdbSchema kV3FromTwo{3, std::span<const LmdbMigrationStep>(kSteps).subspan(1)};

LmdbOptions options(const TempDir& dir, const LmdbSchema* schema = nullptr) {
  LmdbOptions o;
  o.path = dir.path().string();
  o.schema = schema;
  return o;
}

// Creates a store (current schema) holding one record.
void make_store(const TempDir& dir) {
  LmdbRig rig(options(dir));
  ASSERT_TRUE(rig.open().ok());
  ASSERT_TRUE(rig.run([](Txn& t) {
                   t.put("job/a", "kept");
                   return absl::OkStatus();
                 })
                  .committed());
}

TEST(LmdbMigrate, CurrentSchemaIsUpToDateAndHasNoSteps) {
  EXPECT_EQ(CurrentLmdbSchema().version, kLmdbSchemaVersion);
  EXPECT_TRUE(CurrentLmdbSchema().steps.empty()) << "version 1 is the first schema";
  TempDir dir;
  make_store(dir);
  const auto r = LmdbStorage::Migrate(options(dir), /*dry_run=*/false);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->from, kLmdbSchemaVersion);
  EXPECT_EQ(r->to, kLmdbSchemaVersion);
  EXPECT_TRUE(r->steps.empty());
  EXPECT_FALSE(r->written);
  LmdbRig rig(options(dir));
  ASSERT_TRUE(rig.open().ok()) << "the server opens it as before";
  EXPECT_EQ(rig.get("job/a"), "kept");
}

TEST(LmdbMigrate, OlderStoreIsRefusedByOpenAndUpgradedStepByStep) {
  TempDir dir;
  make_store(dir);  // version 1; this test's binary has schema 3
  {
    LmdbRig rig(options(dir, &kV3));
    const absl::Status s = rig.open();
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_TRUE(absl::StrContains(s.message(),
                                  "schema version 1, older than this kairos "
                                  "binary's (3)"))
        << s;
    EXPECT_TRUE(absl::StrContains(s.message(),
                                  absl::StrCat("kairos migrate --data-dir ", dir.path().string())))
        << s;
  }
  g_applied = 0;
  const auto plan = LmdbStorage::Migrate(options(dir, &kV3), /*dry_run=*/true);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->from, 1u);
  EXPECT_EQ(plan->to, 3u);
  ASSERT_EQ(plan->steps.size(), 2u);
  EXPECT_EQ(plan->steps[0], "v1 -> v2: add the first test marker");
  EXPECT_EQ(plan->steps[1], "v2 -> v3: add the second test marker");
  EXPECT_FALSE(plan->written);
  EXPECT_EQ(g_applied, 0) << "a dry run runs no step";
  EXPECT_EQ(LmdbRig(options(dir, &kV3)).open().code(), absl::StatusCode::kFailedPrecondition)
      << "a dry run writes nothing";

  const auto r = LmdbStorage::Migrate(options(dir, &kV3), /*dry_run=*/false);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->from, 1u);
  EXPECT_EQ(r->to, 3u);
  EXPECT_EQ(r->steps, plan->steps);
  EXPECT_TRUE(r->written);
  EXPECT_EQ(g_applied, 12) << "both steps, in order";

  LmdbRig rig(options(dir, &kV3));
  ASSERT_TRUE(rig.open().ok());
  EXPECT_EQ(rig.store().schema_version(), 3u);
  EXPECT_EQ(rig.get("job/a"), "kept") << "the data survives the migration";
  rig.close();

  g_applied = 0;
  const auto again = LmdbStorage::Migrate(options(dir, &kV3), /*dry_run=*/false);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->from, 3u);
  EXPECT_FALSE(again->written) << "up to date";
  EXPECT_EQ(g_applied, 0);

  // This binary (schema 1) now meets a newer store.
  const absl::Status newer = LmdbRig(options(dir)).open();
  EXPECT_TRUE(absl::StrContains(newer.message(), "newer than this kairos binary")) << newer;
  const auto down = LmdbStorage::Migrate(options(dir), /*dry_run=*/false);
  EXPECT_EQ(down.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(down.status().message(), "schema version 3, newer"))
      << down.status();
}

TEST(LmdbMigrate, AStoreDowngradedByTheHookRunsOnlyTheRemainingSteps) {
  TempDir dir;
  {
    LmdbRig rig(options(dir, &kV3));  // a new store gets the schema's version
    ASSERT_TRUE(rig.open().ok());
  }
  ASSERT_TRUE(LmdbStorage::SetSchemaVersionForTest(options(dir), 2).ok());
  EXPECT_EQ(LmdbRig(options(dir, &kV3)).open().code(), absl::StatusCode::kFailedPrecondition);
  g_applied = 0;
  const auto r = LmdbStorage::Migrate(options(dir, &kV3), /*dry_run=*/false);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->from, 2u);
  ASSERT_EQ(r->steps.size(), 1u);
  EXPECT_EQ(g_applied, 2);
  EXPECT_TRUE(LmdbRig(options(dir, &kV3)).open().ok());
}

TEST(LmdbMigrate, AFailingStepLeavesTheStoreUnchanged) {
  TempDir dir;
  make_store(dir);
  g_applied = 0;
  const auto r = LmdbStorage::Migrate(options(dir, &kV3Failing), /*dry_run=*/false);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(absl::StrContains(r.status().message(),
                                "migration step v2 -> v3: a step that fails failed: record x "
                                "cannot be converted; the store is unchanged (still version 1)"))
      << r.status();
  EXPECT_EQ(g_applied, 1) << "the first step ran, inside the transaction that was abandoned";
  // Still version 1, without the first step's marker: the proper schema migrates it whole.
  g_applied = 0;
  const auto ok = LmdbStorage::Migrate(options(dir, &kV3), /*dry_run=*/false);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->from, 1u);
  EXPECT_EQ(g_applied, 12);
}

TEST(LmdbMigrate, OlderThanTheFirstStepIsRefused) {
  TempDir dir;
  make_store(dir);  // version 1; the schema migrates only from 2
  const auto r = LmdbStorage::Migrate(options(dir, &kV3FromTwo), /*dry_run=*/true);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(r.status().message(),
                                "schema version 1, older than the oldest this kairos binary "
                                "migrates from (2)"))
      << r.status();
}

TEST(LmdbMigrate, NeverCreatesAStore) {
  TempDir dir;
  const std::filesystem::path missing = dir.path() / "missing";
  LmdbOptions o;
  o.path = missing.string();
  const auto r = LmdbStorage::Migrate(o, /*dry_run=*/false);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(absl::StrContains(r.status().message(), "does not exist")) << r.status();
  EXPECT_FALSE(std::filesystem::exists(missing));

  const auto empty = LmdbStorage::Migrate(options(dir), /*dry_run=*/false);
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(absl::StrContains(empty.status().message(), "holds no Kairos store"))
      << empty.status();
  EXPECT_TRUE(std::filesystem::is_empty(dir.path())) << "no trace left behind";
}

TEST(LmdbMigrate, AStoreInUseIsRefused) {
  TempDir dir;
  make_store(dir);
  LmdbRig serving(options(dir));
  ASSERT_TRUE(serving.open().ok());
  const auto r = LmdbStorage::Migrate(options(dir), /*dry_run=*/false);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
}

}  // namespace
}  // namespace kairos
