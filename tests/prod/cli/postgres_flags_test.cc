// `--store` naming PostgreSQL for `kairos server`: URIs and key=value
// connection strings are recognised and validated (errors name --store and
// never show the password); the server then needs --data-dir for its job
// records, and the LMDB-only --map-size is refused.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "prod/cli/server_flags.h"
#include "tests/support/server_flags_parse.h"

namespace kairos::cli {
namespace {

using flags_test_support::parse;
using flags_test_support::Parsed;

TEST(PostgresStoreFlag, RecognisesUrisAndKeyValueStrings) {
  EXPECT_TRUE(is_postgres_store("postgresql://u@h/db"));
  EXPECT_TRUE(is_postgres_store("postgres://h1:5432,h2:5432/db?target_session_attrs=read-write"));
  EXPECT_TRUE(is_postgres_store("host=/run/postgresql dbname=kairos"));
  EXPECT_FALSE(is_postgres_store("lmdb:/var/lib/kairos"));
  EXPECT_FALSE(is_postgres_store("lmdb:/dir=with=equals"));
  EXPECT_FALSE(is_postgres_store(""));
}

TEST(PostgresStoreFlag, ServerTakesAPostgresStoreWithADataDir) {
  for (const std::string store :
       {"postgresql://kairos@db.example/kairos", "host=/run/postgresql dbname=kairos"}) {
    Parsed p = parse({"--store", store, "--data-dir", "/var/lib/kairos"});
    EXPECT_FALSE(p.code.has_value()) << p.err;
    EXPECT_EQ(p.flags.postgres, store);
    EXPECT_EQ(p.flags.lmdb_dir, "");
    EXPECT_EQ(p.flags.data_dir, "/var/lib/kairos");
  }
}

TEST(PostgresStoreFlag, UsageErrorsNameTheFlagAndHideThePassword) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--store", "postgresql://h/db"}, "--data-dir"},
      {{"--store", "postgresql://u:sekret42@h/db?bogus=1", "--data-dir", "/d"}, "bogus"},
      {{"--store", "host=h password=sekret42 junk", "--data-dir", "/d"}, "--store"},
      {{"--store", "postgresql://h/db", "--data-dir", "/d", "--map-size", "1G"}, "--map-size"},
      {{"--store", "mysql://u:sekret42@h/db", "--data-dir", "/d"}, "--store"},
  };
  for (const auto& [args, needle] : cases) {
    Parsed p = parse(args);
    ASSERT_TRUE(p.code.has_value()) << needle;
    EXPECT_EQ(*p.code, 2) << needle;
    EXPECT_NE(p.err.find(needle), std::string::npos) << needle << ": " << p.err;
    EXPECT_EQ(p.err.find("sekret42"), std::string::npos) << p.err;
  }
}

}  // namespace
}  // namespace kairos::cli
