#include "tests/conformance/postgres_test_db.h"

#include <libpq-fe.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <random>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"

namespace kairos::storage_test {

std::optional<std::string> test_pg_conninfo() {
  const char* v = getenv("KAIROS_TEST_PG");
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

struct PgTestSchema::Conn {
  PGconn* conn = nullptr;
  ~Conn() {
    if (conn != nullptr) PQfinish(conn);
  }
};

namespace {
std::string unique_schema_name() {
  static std::atomic<int> counter{0};
  std::random_device rd;
  return absl::StrCat("kt_", ::getpid(), "_", counter.fetch_add(1), "_",
                      absl::Hex(static_cast<std::uint32_t>(rd()), absl::kZeroPad8));
}
}  // namespace

PgTestSchema::PgTestSchema(std::string conninfo)
    : conninfo_(std::move(conninfo)), name_(unique_schema_name()), conn_(std::make_unique<Conn>()) {
  conn_->conn = PQconnectdb(conninfo_.c_str());
  KAIROS_CHECK_MSG(PQstatus(conn_->conn) == CONNECTION_OK, PQerrorMessage(conn_->conn));
  PQclear(PQexec(conn_->conn, "SET client_min_messages = warning"));
}

PgTestSchema::~PgTestSchema() {
  (void)exec(absl::StrCat("DROP SCHEMA IF EXISTS \"", name_, "\" CASCADE"));
}

PostgresOptions PgTestSchema::options() const {
  PostgresOptions o;
  o.conninfo = conninfo_;
  o.schema = name_;
  o.threads = 3;
  return o;
}

absl::StatusOr<std::string> PgTestSchema::exec(const std::string& sql) {
  std::lock_guard<std::mutex> lock(mu_);
  PGresult* r = PQexec(conn_->conn, sql.c_str());
  const ExecStatusType st = PQresultStatus(r);
  absl::StatusOr<std::string> out;
  if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK) {
    out = (st == PGRES_TUPLES_OK && PQntuples(r) > 0 && PQnfields(r) > 0)
              ? std::string(PQgetvalue(r, 0, 0), PQgetlength(r, 0, 0))
              : std::string();
  } else {
    out = absl::InternalError(absl::StrCat(sql, ": ", PQerrorMessage(conn_->conn)));
  }
  PQclear(r);
  return out;
}

void PgTestSchema::terminate_backend(int pid) {
  auto r = exec(absl::StrCat("SELECT pg_terminate_backend(", pid, ", 10000)"));
  KAIROS_CHECK_MSG(r.ok(), r.status().ToString().c_str());
}

}  // namespace kairos::storage_test
