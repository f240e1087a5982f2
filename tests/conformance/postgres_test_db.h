// A private PostgreSQL schema per test, on the server named by the
// environment variable KAIROS_TEST_PG (a libpq conninfo; scripts/test.sh
// starts a throw-away server with scripts/pg-server.sh and exports it).
//
// Each PgTestSchema has a unique name (pid, counter, random bits), so tests
// run in parallel on one database; the destructor drops the schema with
// everything in it. An admin connection of its own runs SQL for the test
// (terminating a store's backend, inspecting tables) apart from the store's.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "prod/store/postgres_storage.h"

namespace kairos::storage_test {

// The conninfo in KAIROS_TEST_PG, or nullopt when it is unset or empty.
std::optional<std::string> test_pg_conninfo();
// The message for GTEST_SKIP when KAIROS_TEST_PG is unset.
inline constexpr const char* kNoTestPg =
    "KAIROS_TEST_PG is not set: run `scripts/pg-server.sh start DIR` (as root or the postgres "
    "user) and export KAIROS_TEST_PG to the conninfo it prints";

class PgTestSchema {
 public:
  // Creates nothing yet: Migrate() (or the test) creates the schema.
  explicit PgTestSchema(std::string conninfo);
  ~PgTestSchema();
  PgTestSchema(const PgTestSchema&) = delete;
  PgTestSchema& operator=(const PgTestSchema&) = delete;

  const std::string& name() const { return name_; }
  const std::string& conninfo() const { return conninfo_; }
  // Options for a store in this schema.
  PostgresOptions options() const;
  // Runs `sql` on the admin connection; the first row's first value ("" when
  // none), or the error. Thread-safe.
  absl::StatusOr<std::string> exec(const std::string& sql);
  // Terminates the backend `pid` and waits (bounded) until it is gone.
  void terminate_backend(int pid);

 private:
  std::string conninfo_;
  std::string name_;
  std::mutex mu_;
  struct Conn;
  std::unique_ptr<Conn> conn_;  // guarded by mu_
};

}  // namespace kairos::storage_test
