#include "prod/store/postgres_storage.h"

#include <libpq-fe.h>
#include <poll.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <optional>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "core/base/absl_compat.h"
#include "core/base/check.h"
#include "core/base/text.h"

namespace kairos {
namespace {

using SteadyTime = std::chrono::steady_clock::time_point;

struct ResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using Result = std::unique_ptr<PGresult, ResultDeleter>;

// ---------------------------------------------------------------- conninfo

// scheme://...: postgresql:// and postgres://, and (for redaction) any other
// URI someone might pass by mistake.
bool is_uri(std::string_view s) {
  const std::size_t colon = s.find("://");
  if (colon == std::string_view::npos || colon == 0) return false;
  for (char c : s.substr(0, colon))
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '+' ||
          c == '-' || c == '.'))
      return false;
  return true;
}

// Replaces the value of every `password` parameter and the URI userinfo's
// password with "***". Best effort on malformed input: it never reveals more
// than it was given, and errs towards redacting.
std::string redact(std::string_view s) {
  std::string out;
  if (is_uri(s)) {
    const std::size_t start = s.find("://") + 3;
    std::size_t auth_end = s.find_first_of("/?", start);
    if (auth_end == std::string_view::npos) auth_end = s.size();
    const std::size_t at = s.substr(0, auth_end).rfind('@');
    out = std::string(s.substr(0, start));
    if (at != std::string_view::npos && at >= start) {
      const std::string_view user = s.substr(start, at - start);
      const std::size_t colon = user.find(':');
      out += colon == std::string_view::npos ? std::string(user)
                                             : absl::StrCat(absl_sv(user.substr(0, colon)), ":***");
      out += s.substr(at, auth_end - at);
    } else {
      out += s.substr(start, auth_end - start);
    }
    // Query parameters: password=VALUE up to the next '&'.
    const std::string_view rest = s.substr(auth_end);
    const std::size_t q = rest.find('?');
    out += rest.substr(0, q);
    if (q == std::string_view::npos) return out;
    out += '?';
    std::string_view query = rest.substr(q + 1);
    for (bool first = true; !query.empty() || first; first = false) {
      const std::size_t amp = query.find('&');
      const std::string_view part = query.substr(0, amp);
      if (!first) out += '&';
      out += part.starts_with("password=") ? std::string_view("password=***") : part;
      if (amp == std::string_view::npos) break;
      query.remove_prefix(amp + 1);
    }
    return out;
  }
  // key = value pairs; values may be 'quoted' with backslash escapes.
  std::size_t i = 0;
  while (i < s.size()) {
    if (s[i] == ' ' || s[i] == '\t' || s[i] == '\n') {
      out += s[i++];
      continue;
    }
    std::size_t k = i;
    while (k < s.size() && s[k] != '=' && s[k] != ' ' && s[k] != '\t') ++k;
    const std::string_view key = s.substr(i, k - i);
    out += key;
    i = k;
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) out += s[i++];
    if (i >= s.size() || s[i] != '=') continue;
    out += s[i++];
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) out += s[i++];
    std::size_t v = i;
    if (v < s.size() && s[v] == '\'') {
      ++v;
      while (v < s.size() && s[v] != '\'') v += (s[v] == '\\' && v + 1 < s.size()) ? 2 : 1;
      if (v < s.size()) ++v;
    } else {
      while (v < s.size() && s[v] != ' ' && s[v] != '\t' && s[v] != '\n') ++v;
    }
    out += key == "password" ? std::string("***") : std::string(s.substr(i, v - i));
    i = v;
  }
  return out;
}

// The password the string carries (parsed by libpq), if any: scrubbed from
// every message that might quote it.
std::string password_of(const std::string& conninfo) {
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(conninfo.c_str(), &err);
  if (err != nullptr) PQfreemem(err);
  std::string password;
  if (opts != nullptr) {
    for (PQconninfoOption* o = opts; o->keyword != nullptr; ++o)
      if (std::strcmp(o->keyword, "password") == 0 && o->val != nullptr) password = o->val;
    PQconninfoFree(opts);
  }
  return password;
}

std::string scrub(std::string message, const std::string& password) {
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
  if (!password.empty()) absl::StrReplaceAll({{password, "***"}}, &message);
  absl::StrReplaceAll({{"\n\t", " "}, {"\n", "; "}}, &message);  // one line per error
  return message;
}

bool valid_schema_name(std::string_view s) {
  if (s.empty() || s.size() > 63 || s.starts_with("pg_")) return false;
  if (!(s[0] == '_' || (s[0] >= 'a' && s[0] <= 'z'))) return false;
  for (char c : s)
    if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) return false;
  return true;
}

std::string millis(absl::Duration d) { return std::to_string(absl::ToInt64Milliseconds(d)); }

// ---------------------------------------------------------------- errors

// What went wrong with one statement.
struct Failure {
  enum Kind {
    kNone,
    kServer,  // the server answered an error (sqlstate set)
    kLost,    // the connection broke, or no connection
    kTimeout  // the client-side deadline passed; the connection is dropped
  } kind = kNone;
  std::string sqlstate;
  std::string message;

  bool failed() const { return kind != kNone; }
  bool conflict() const { return sqlstate == "40001" || sqlstate == "40P01"; }
  // An answer that leaves a COMMIT's fate open: canceled (a statement
  // timeout, or a cancel while waiting for synchronous replication, which
  // commits locally), the server shutting down, a connection failure.
  bool commit_fate_open() const {
    return kind == kLost || kind == kTimeout || sqlstate == "57014" ||
           sqlstate.starts_with("57P") || sqlstate.starts_with("08");
  }
  std::string describe() const {
    switch (kind) {
      case kNone:
        return "ok";
      case kServer:
        return absl::StrCat("SQLSTATE ", sqlstate, ": ", message);
      case kLost:
        return absl::StrCat("connection lost: ", message);
      case kTimeout:
        return absl::StrCat("no answer before the deadline: ", message);
    }
    return "invalid";
  }
};

// One SQL statement's text and the shape of its parameters.
struct Statement {
  const char* name;
  std::string sql;
  int params;
};

}  // namespace

absl::Status ValidatePostgresConninfo(std::string_view conninfo) {
  const std::string text(conninfo);
  if (text.find('\0') != std::string::npos)
    return absl::InvalidArgumentError("PostgreSQL connection string contains a NUL byte");
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(text.c_str(), &err);
  if (opts == nullptr) {
    std::string why = err != nullptr ? std::string(err) : std::string("out of memory");
    if (err != nullptr) PQfreemem(err);
    // libpq may quote part of the string: redact what it quotes.
    std::string message = scrub(why, "");
    const std::string redacted = redact(text);
    if (redacted != text) {
      // The string held a password: never echo libpq's quotation of it.
      const std::string password = password_of(text);
      message = scrub(message, password);
      for (std::size_t pos = 0; (pos = message.find('"', pos)) != std::string::npos;) {
        const std::size_t close = message.find('"', pos + 1);
        if (close == std::string::npos) break;
        const std::string quoted = message.substr(pos + 1, close - pos - 1);
        if (text.find(quoted) != std::string::npos && redacted.find(quoted) == std::string::npos)
          message.replace(pos + 1, close - pos - 1, "***");
        pos = message.find('"', pos + 1) + 1;
        if (pos == 0) break;
      }
    }
    return absl::InvalidArgumentError(absl::StrCat("invalid PostgreSQL connection string '",
                                                   excerpt(redacted, 200),
                                                   "': ", excerpt(message, 200)));
  }
  PQconninfoFree(opts);
  return absl::OkStatus();
}

std::string RedactConninfo(std::string_view conninfo) { return redact(conninfo); }

namespace {

// One connection of a store thread (or of Open/Migrate): connect with
// backoff, prepared statements, statements with a client-side deadline.
class Connection {
 public:
  explicit Connection(const PostgresOptions& options)
      : options_(options),
        password_(password_of(options.conninfo)),
        rng_(std::random_device{}()),
        table_(absl::StrCat("\"", options.schema, "\".kairos_data")) {}
  ~Connection() { close(); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  bool connected() const { return conn_ != nullptr; }
  int backend_pid() const { return conn_ != nullptr ? PQbackendPID(conn_) : 0; }
  const std::string& password() const { return password_; }

  void close() {
    if (conn_ != nullptr) PQfinish(std::exchange(conn_, nullptr));
    prepared_ = false;
  }

  // Connects unless connected; while a failed connect's backoff runs, fails
  // at once (kUnavailable). `prepare`: the data statements too.
  absl::Status ensure(bool prepare) {
    if (conn_ != nullptr && PQstatus(conn_) != CONNECTION_OK) close();
    if (conn_ == nullptr) {
      const SteadyTime now = std::chrono::steady_clock::now();
      if (now < retry_at_)
        return absl::UnavailableError(absl::StrCat(
            "PostgreSQL unreachable (reconnecting in ",
            std::chrono::duration_cast<std::chrono::milliseconds>(retry_at_ - now).count(),
            " ms): ", last_error_));
      if (absl::Status s = connect(); !s.ok()) {
        back_off(std_sv(s.message()));
        return s;
      }
      backoff_ = absl::ZeroDuration();
    }
    if (prepare && !prepared_) {
      for (const Statement& st : statements()) {
        Result r(PQprepare(conn_, st.name, st.sql.c_str(), st.params, nullptr));
        if (PQresultStatus(r.get()) != PGRES_COMMAND_OK) {
          const Failure f = failure_of(r.get());
          if (f.kind == Failure::kLost) close();
          return absl::UnavailableError(
              absl::StrCat("PostgreSQL: preparing ", st.name, ": ", f.describe()));
        }
      }
      prepared_ = true;
    }
    return absl::OkStatus();
  }

  // Runs `sql` (simple protocol, several statements allowed) or the
  // prepared statement `name`; returns the last result, or the failure.
  Result exec(const char* sql, Failure* failure) {
    if (!send_ok(PQsendQuery(conn_, sql), failure)) return nullptr;
    return collect(failure);
  }
  Result exec_prepared(const char* name, int n, const char* const* values, const int* lengths,
                       const int* formats, Failure* failure) {
    if (!send_ok(PQsendQueryPrepared(conn_, name, n, values, lengths, formats, 1), failure))
      return nullptr;
    return collect(failure);
  }

  const std::string& table() const { return table_; }

 private:
  absl::Status connect() {
    const std::string connect_timeout =
        std::to_string(std::max<std::int64_t>(1, absl::ToInt64Seconds(options_.connect_timeout)));
    // Defaults first, then the user's string (expand_dbname): it overrides them.
    const char* keys[] = {"connect_timeout", "fallback_application_name", "dbname", nullptr};
    const char* values[] = {connect_timeout.c_str(), "kairos", options_.conninfo.c_str(), nullptr};
    conn_ = PQconnectdbParams(keys, values, 1);
    if (conn_ == nullptr) return absl::UnavailableError("PostgreSQL: out of memory connecting");
    if (PQstatus(conn_) != CONNECTION_OK) {
      const std::string why = scrub(PQerrorMessage(conn_), password_);
      close();
      return absl::UnavailableError(
          absl::StrCat("cannot connect to PostgreSQL at ", redact(options_.conninfo), ": ", why));
    }
    // Constant settings (numbers from the options; never user text).
    const std::string setup = absl::StrCat(
        "SET statement_timeout = ", millis(options_.statement_timeout),
        "; SET lock_timeout = ", millis(options_.statement_timeout),
        "; SET idle_in_transaction_session_timeout = ", millis(options_.statement_timeout * 3),
        "; SHOW synchronous_commit");
    Failure f;
    Result r = exec(setup.c_str(), &f);
    if (f.failed()) {
      close();
      return absl::UnavailableError(absl::StrCat("PostgreSQL: session setup: ", f.describe()));
    }
    // A commit is durable only with synchronous_commit on (or stronger):
    // a session configured off is raised to on.
    if (PQntuples(r.get()) == 1 && std::string_view(PQgetvalue(r.get(), 0, 0)) == "off") {
      exec("SET synchronous_commit = on", &f);
      if (f.failed()) {
        close();
        return absl::UnavailableError(
            absl::StrCat("PostgreSQL: SET synchronous_commit: ", f.describe()));
      }
    }
    return absl::OkStatus();
  }

  void back_off(std::string_view why) {
    backoff_ = backoff_ == absl::ZeroDuration() ? options_.reconnect_min
                                                : std::min(backoff_ * 2, options_.reconnect_max);
    // Full jitter over [backoff/2, backoff]: threads and nodes spread out.
    const std::int64_t us = absl::ToInt64Microseconds(backoff_);
    std::uniform_int_distribution<std::int64_t> pick(us / 2, std::max<std::int64_t>(us, 1));
    retry_at_ = std::chrono::steady_clock::now() + std::chrono::microseconds(pick(rng_));
    last_error_ = std::string(why);
  }

  std::vector<Statement> statements() const {
    const std::string& t = table_;
    return {
        {"get", absl::StrCat("SELECT value FROM ", t, " WHERE key = $1"), 1},
        {"scan_f",
         absl::StrCat("SELECT key, value FROM ", t, " WHERE key >= $1 ORDER BY key LIMIT $2"), 2},
        {"scan_fe",
         absl::StrCat("SELECT key, value FROM ", t,
                      " WHERE key >= $1 AND key < $2 ORDER BY key LIMIT $3"),
         3},
        {"scan_r",
         absl::StrCat("SELECT key, value FROM ", t, " WHERE key >= $1 ORDER BY key DESC LIMIT $2"),
         2},
        {"scan_re",
         absl::StrCat("SELECT key, value FROM ", t,
                      " WHERE key >= $1 AND key < $2 ORDER BY key DESC LIMIT $3"),
         3},
        // Claims (Txn::scan_claimable): the forward scan, locking each row it
        // returns and passing over rows another transaction holds.
        {"claim_f",
         absl::StrCat("SELECT key, value FROM ", t,
                      " WHERE key >= $1 ORDER BY key LIMIT $2 FOR UPDATE SKIP LOCKED"),
         2},
        {"claim_fe",
         absl::StrCat("SELECT key, value FROM ", t,
                      " WHERE key >= $1 AND key < $2 ORDER BY key LIMIT $3 FOR UPDATE SKIP LOCKED"),
         3},
        {"put",
         absl::StrCat("INSERT INTO ", t,
                      " (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = "
                      "EXCLUDED.value"),
         2},
        {"erase", absl::StrCat("DELETE FROM ", t, " WHERE key = $1"), 1},
        {"erase_r", absl::StrCat("DELETE FROM ", t, " WHERE key >= $1"), 1},
        {"erase_re", absl::StrCat("DELETE FROM ", t, " WHERE key >= $1 AND key < $2"), 2},
    };
  }

  Failure failure_of(PGresult* r) const {
    Failure f;
    const char* state = r != nullptr ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
    if (state != nullptr && PQstatus(conn_) == CONNECTION_OK) {
      f.kind = Failure::kServer;
      f.sqlstate = state;
      f.message = scrub(PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY)
                            ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY)
                            : "",
                        password_);
    } else {
      f.kind = Failure::kLost;
      f.sqlstate = state != nullptr ? state : "";
      f.message = scrub(PQerrorMessage(conn_), password_);
    }
    return f;
  }

  bool send_ok(int sent, Failure* failure) {
    if (sent == 1) return true;
    failure->kind = Failure::kLost;
    failure->message = scrub(PQerrorMessage(conn_), password_);
    close();
    return false;
  }

  // Waits (bounded by the client-side deadline) for every result of the
  // statement sent; the last one is returned, the first error reported.
  Result collect(Failure* failure) {
    const SteadyTime deadline =
        std::chrono::steady_clock::now() +
        std::chrono::milliseconds(absl::ToInt64Milliseconds(options_.statement_timeout) + 5000);
    Result last;
    for (;;) {
      while (PQisBusy(conn_)) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
          failure->kind = Failure::kTimeout;
          failure->message = "the statement took longer than statement_timeout + 5 s";
          close();
          return nullptr;
        }
        pollfd p{PQsocket(conn_), POLLIN, 0};
        const int n = ::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left.count(), 1000)));
        if (n < 0 && errno != EINTR) {
          failure->kind = Failure::kLost;
          failure->message = std::strerror(errno);
          close();
          return nullptr;
        }
        if (PQconsumeInput(conn_) == 0) {
          failure->kind = Failure::kLost;
          failure->message = scrub(PQerrorMessage(conn_), password_);
          close();
          return nullptr;
        }
      }
      Result r(PQgetResult(conn_));
      if (r == nullptr) break;
      const ExecStatusType st = PQresultStatus(r.get());
      if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK && !failure->failed()) {
        *failure = failure_of(r.get());
      }
      last = std::move(r);
    }
    if (PQstatus(conn_) != CONNECTION_OK) {
      if (!failure->failed() || failure->kind == Failure::kServer) {
        if (!failure->failed()) failure->message = scrub(PQerrorMessage(conn_), password_);
        failure->kind = Failure::kLost;
      }
      close();
    }
    return last;
  }

  const PostgresOptions& options_;
  const std::string password_;
  std::mt19937_64 rng_;
  const std::string table_;
  PGconn* conn_ = nullptr;
  bool prepared_ = false;
  absl::Duration backoff_ = absl::ZeroDuration();
  SteadyTime retry_at_{};
  std::string last_error_;
};

// Bytes as a binary parameter (never NULL: an empty string is empty bytea).
const char* param(std::string_view s) { return s.data() != nullptr ? s.data() : ""; }

// Thrown out of a body by the Txn when one of its statements failed. The
// storage contract promises every body a consistent snapshot; once a
// statement failed (a serialization failure on a read, a timeout, a lost
// connection) the database gives no more answers, and a body that went on
// would see "absent" where a record exists and could act on it (or stop the
// process on a broken invariant). So the body is unwound at once and the
// failure becomes its outcome; run_transaction is the only catcher.
struct BodyInterrupted {};

// The Txn a body sees. The first failed statement dooms it and interrupts
// the body (BodyInterrupted).
template <typename Conn>
class PgTxn final : public Txn {
 public:
  PgTxn(Conn& conn, absl::Time now, TxnMode mode, bool skip_locked)
      : conn_(conn), now_(now), mode_(mode), skip_locked_(skip_locked) {}

  absl::Time now() const override { return now_; }

  std::optional<std::string> get(std::string_view key) override {
    check_key_limits(key);
    interrupt_if_doomed();
    const char* v[] = {param(key)};
    const int l[] = {static_cast<int>(key.size())};
    const int f[] = {1};
    Result r = conn_.exec_prepared("get", 1, v, l, f, &failure_);
    interrupt_if_doomed();
    if (PQntuples(r.get()) == 0) return std::nullopt;
    return std::string(PQgetvalue(r.get(), 0, 0), PQgetlength(r.get(), 0, 0));
  }

  std::vector<KeyValue> scan(std::string_view begin, std::string_view end, std::size_t limit,
                             Direction direction) override {
    const bool rev = direction == Direction::kReverse;
    return select_range(rev ? "scan_r" : "scan_f", rev ? "scan_re" : "scan_fe", begin, end, limit);
  }

  // FOR UPDATE SKIP LOCKED over the key index. Safe under SERIALIZABLE: the
  // rows returned are locked by this transaction (a concurrent claimer passes
  // over them instead of queueing behind the lock and then failing), a row
  // another transaction changed and committed since this snapshot is not
  // skipped but fails the statement with 40001 (kConflict), and the SSI
  // checks still see every read and write, so a non-serializable interleaving
  // still ends in kConflict. Read-only transactions cannot lock rows: there
  // it is the plain scan, as the contract allows.
  std::vector<KeyValue> scan_claimable(std::string_view begin, std::string_view end,
                                       std::size_t limit) override {
    if (mode_ == TxnMode::kReadOnly || !skip_locked_)
      return scan(begin, end, limit, Direction::kForward);
    return select_range("claim_f", "claim_fe", begin, end, limit);
  }

  void put(std::string_view key, std::string_view value) override {
    check_write();
    check_key_limits(key, value);
    interrupt_if_doomed();
    const char* v[] = {param(key), param(value)};
    const int l[] = {static_cast<int>(key.size()), static_cast<int>(value.size())};
    const int f[] = {1, 1};
    conn_.exec_prepared("put", 2, v, l, f, &failure_);
    interrupt_if_doomed();
  }

  void erase(std::string_view key) override {
    check_write();
    check_key_limits(key);
    interrupt_if_doomed();
    const char* v[] = {param(key)};
    const int l[] = {static_cast<int>(key.size())};
    const int f[] = {1};
    conn_.exec_prepared("erase", 1, v, l, f, &failure_);
    interrupt_if_doomed();
  }

  void erase_range(std::string_view begin, std::string_view end) override {
    check_write();
    interrupt_if_doomed();
    if (!end.empty() && end <= begin) return;
    const char* v[] = {param(begin), param(end)};
    const int l[] = {static_cast<int>(begin.size()), static_cast<int>(end.size())};
    const int f[] = {1, 1};
    conn_.exec_prepared(end.empty() ? "erase_r" : "erase_re", end.empty() ? 1 : 2, v, l, f,
                        &failure_);
    interrupt_if_doomed();
  }

  bool doomed() const { return failure_.failed(); }
  const Failure& failure() const { return failure_; }

 private:
  // One range SELECT (statement `unbounded` or, with an upper bound,
  // `bounded`), its rows in the order the statement gives.
  std::vector<KeyValue> select_range(const char* unbounded, const char* bounded,
                                     std::string_view begin, std::string_view end,
                                     std::size_t limit) {
    KAIROS_CHECK(limit > 0);
    std::vector<KeyValue> out;
    interrupt_if_doomed();
    if (!end.empty() && end <= begin) return out;
    const std::string lim = std::to_string(limit);
    Result r;
    if (end.empty()) {
      const char* v[] = {param(begin), lim.c_str()};
      const int l[] = {static_cast<int>(begin.size()), 0};
      const int f[] = {1, 0};
      r = conn_.exec_prepared(unbounded, 2, v, l, f, &failure_);
    } else {
      const char* v[] = {param(begin), param(end), lim.c_str()};
      const int l[] = {static_cast<int>(begin.size()), static_cast<int>(end.size()), 0};
      const int f[] = {1, 1, 0};
      r = conn_.exec_prepared(bounded, 3, v, l, f, &failure_);
    }
    interrupt_if_doomed();
    const int n = PQntuples(r.get());
    out.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i)
      out.push_back({std::string(PQgetvalue(r.get(), i, 0), PQgetlength(r.get(), i, 0)),
                     std::string(PQgetvalue(r.get(), i, 1), PQgetlength(r.get(), i, 1))});
    return out;
  }

  void check_write() const {
    KAIROS_CHECK_MSG(mode_ == TxnMode::kReadWrite, "write in a read-only transaction");
  }
  void interrupt_if_doomed() const {
    if (doomed()) throw BodyInterrupted{};
  }

  Conn& conn_;
  absl::Time now_;
  TxnMode mode_;
  bool skip_locked_;
  Failure failure_;
};

TxnResult outcome(CommitOutcome o, std::string_view what, const Failure& f) {
  const absl::StatusCode code =
      o == CommitOutcome::kConflict ? absl::StatusCode::kAborted : absl::StatusCode::kUnavailable;
  return {o, absl::Status(code, absl::StrCat("postgresql: ", absl_sv(what), ": ", f.describe()))};
}

// A failure before COMMIT: nothing was applied.
TxnResult before_commit(std::string_view what, const Failure& f) {
  return outcome(f.conflict() ? CommitOutcome::kConflict : CommitOutcome::kUnavailable, what, f);
}

absl::StatusOr<absl::Time> parse_micros(PGresult* r) {
  if (r == nullptr || PQntuples(r) != 1 || PQnfields(r) < 1)
    return absl::InternalError("postgresql: the clock query returned no row");
  const std::string_view text(PQgetvalue(r, 0, 0), PQgetlength(r, 0, 0));
  std::int64_t us = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), us);
  if (ec != std::errc() || ptr != text.data() + text.size())
    return absl::InternalError(absl::StrCat("postgresql: unreadable clock '", absl_sv(text), "'"));
  return absl::FromUnixMicros(us);
}

constexpr const char* kBeginReadWrite =
    "BEGIN ISOLATION LEVEL SERIALIZABLE READ WRITE; "
    "SELECT (extract(epoch from statement_timestamp()) * 1000000)::int8";
constexpr const char* kBeginReadOnly =
    "BEGIN ISOLATION LEVEL SERIALIZABLE READ ONLY NOT DEFERRABLE; "
    "SELECT (extract(epoch from statement_timestamp()) * 1000000)::int8";

// ---------------------------------------------------------------- running

TxnResult run_transaction(Connection& conn, const PostgresOptions& options, const TxnBody& body,
                          TxnMode mode) {
  const bool read_only = mode == TxnMode::kReadOnly;
  Failure f;
  Result begun;
  // A connection that died while idle (a server restart, an idle timeout)
  // shows only when used: BEGIN changes nothing, so it is sent once more on
  // a fresh connection before the transaction is given up.
  for (int attempt = 0; attempt < 2; ++attempt) {
    const bool was_connected = conn.connected();
    if (absl::Status s = conn.ensure(true); !s.ok()) return {CommitOutcome::kUnavailable, s};
    f = Failure{};
    begun = conn.exec(read_only ? kBeginReadOnly : kBeginReadWrite, &f);
    if (!f.failed()) break;
    if (conn.connected()) {
      Failure ignored;
      conn.exec("ROLLBACK", &ignored);
    }
    if (!was_connected || f.kind == Failure::kServer || attempt == 1)
      return before_commit("BEGIN", f);
  }
  absl::Time now;
  if (options.clock != nullptr) {
    now = options.clock->now();
  } else {
    absl::StatusOr<absl::Time> t = parse_micros(begun.get());
    if (!t.ok()) {
      Failure ignored;
      conn.exec("ROLLBACK", &ignored);
      return {CommitOutcome::kUnavailable, t.status()};
    }
    now = *t;
  }
  PgTxn<Connection> txn(conn, now, mode, options.skip_locked_claims);
  absl::Status status;
  try {
    status = body(txn);
  } catch (const BodyInterrupted&) {
    KAIROS_CHECK(txn.doomed());
  }
  if (txn.doomed() || !status.ok()) {
    Failure ignored;
    if (conn.connected()) conn.exec("ROLLBACK", &ignored);
    if (txn.doomed()) return before_commit("in the transaction body", txn.failure());
    return {CommitOutcome::kAborted, std::move(status)};
  }
  if (!read_only && options.before_commit) options.before_commit(conn.backend_pid());
  Failure cf;
  Result committed = conn.exec("COMMIT", &cf);
  if (!cf.failed()) {
    const std::string_view tag = committed ? PQcmdStatus(committed.get()) : "";
    if (tag == "COMMIT") return TxnResult::Committed();
    cf.kind = Failure::kServer;
    cf.message = absl::StrCat("COMMIT answered '", absl_sv(tag), "'");
    return outcome(CommitOutcome::kUnavailable, "COMMIT", cf);
  }
  if (cf.conflict()) return outcome(CommitOutcome::kConflict, "COMMIT", cf);
  if (read_only) return outcome(CommitOutcome::kUnavailable, "COMMIT (read-only)", cf);
  if (cf.commit_fate_open()) {
    conn.close();  // whatever state it is in, start afresh
    return outcome(CommitOutcome::kUnknown, "COMMIT (the write may have been applied)", cf);
  }
  return outcome(CommitOutcome::kUnavailable, "COMMIT", cf);
}

}  // namespace

PostgresStorage::PostgresStorage(PostgresOptions options, Timers& loop)
    : options_(std::move(options)), loop_(loop) {
  for (std::size_t i = 0; i < options_.threads; ++i)
    threads_.emplace_back([this] { thread_main(); });
}

PostgresStorage::~PostgresStorage() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void PostgresStorage::transact(TxnBody body, TxnDone done, TxnMode mode) {
  KAIROS_CHECK(body && done);
  {
    std::lock_guard<std::mutex> lock(mu_);
    KAIROS_CHECK_MSG(!stopping_, "PostgresStorage::transact after shutdown began");
    queue_.push_back(Request{std::move(body), std::move(done), mode});
  }
  cv_.notify_one();
}

void PostgresStorage::thread_main() {
  Connection conn(options_);
  for (;;) {
    Request request;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and everything queued is done
      request = std::move(queue_.front());
      queue_.pop_front();
    }
    TxnResult result = run_transaction(conn, options_, request.body, request.mode);
    loop_.post([done = std::move(request.done), result = std::move(result)]() mutable {
      done(std::move(result));
    });
  }
}

std::string PostgresStorage::describe() const {
  return absl::StrCat("postgresql at ", redact(options_.conninfo), " (schema ", options_.schema,
                      ")");
}

// ---------------------------------------------------------------- schema

namespace {

// One migration step: from `from` to from + 1, as SQL run in the migration's
// transaction (`%s` stands for the quoted schema name).
struct PgMigrationStep {
  std::uint32_t from;
  const char* what;
  std::vector<const char*> sql;
};

const std::vector<PgMigrationStep>& pg_steps() {
  static const std::vector<PgMigrationStep> steps = {
      {0,
       "create the schema, kairos_meta (format, schema version) and kairos_data (bytea keys "
       "and values)",
       {"CREATE SCHEMA IF NOT EXISTS %s",
        "CREATE TABLE %s.kairos_meta (key text PRIMARY KEY, value text NOT NULL)",
        "CREATE TABLE %s.kairos_data (key bytea PRIMARY KEY, value bytea NOT NULL)"}},
  };
  return steps;
}

std::string step_line(const PgMigrationStep& s) {
  return absl::StrFormat("v%d -> v%d: %s", s.from, s.from + 1, s.what);
}

struct SchemaState {
  std::uint32_t version = 0;  // 0: none
};

// Reads the schema's version inside the open transaction on `conn`.
absl::StatusOr<SchemaState> read_schema(Connection& conn, const PostgresOptions& options) {
  const std::string where =
      absl::StrCat("database ", redact(options.conninfo), ", schema \"", options.schema, "\"");
  Failure f;
  const std::string meta = absl::StrCat("\"", options.schema, "\".kairos_meta");
  Result r = conn.exec(absl::StrCat("SELECT to_regclass('", meta, "') IS NOT NULL, to_regclass('",
                                    conn.table(), "') IS NOT NULL")
                           .c_str(),
                       &f);
  if (f.failed()) return absl::UnavailableError(absl::StrCat(where, ": ", f.describe()));
  const bool has_meta = std::string_view(PQgetvalue(r.get(), 0, 0)) == "t";
  const bool has_data = std::string_view(PQgetvalue(r.get(), 0, 1)) == "t";
  if (!has_meta) {
    if (has_data)
      return absl::FailedPreconditionError(
          absl::StrCat(where,
                       " has a kairos_data table but no kairos_meta: not a Kairos store; "
                       "refusing to use it"));
    return SchemaState{0};
  }
  r = conn.exec(
      absl::StrCat("SELECT key, value FROM ", meta, " WHERE key IN ('format', 'schema_version')")
          .c_str(),
      &f);
  if (f.failed()) return absl::UnavailableError(absl::StrCat(where, ": ", f.describe()));
  std::optional<std::string> format, version;
  for (int i = 0; i < PQntuples(r.get()); ++i) {
    const std::string key = PQgetvalue(r.get(), i, 0);
    (key == "format" ? format : version) = std::string(PQgetvalue(r.get(), i, 1));
  }
  if (format != kPostgresFormatValue)
    return absl::FailedPreconditionError(absl::StrCat(
        where,
        ": kairos_meta has no Kairos format marker: not a Kairos store; refusing to use it"));
  std::uint32_t v = 0;
  const auto [ptr, ec] =
      version ? std::from_chars(version->data(), version->data() + version->size(), v)
              : std::from_chars_result{nullptr, std::errc::invalid_argument};
  if (ec != std::errc() || ptr != version->data() + version->size() || v == 0)
    return absl::DataLossError(absl::StrCat(where, ": unreadable schema version record"));
  return SchemaState{v};
}

absl::Status check_options(const PostgresOptions& options) {
  KAIROS_RETURN_IF_ERROR(ValidatePostgresConninfo(options.conninfo));
  if (!valid_schema_name(options.schema))
    return absl::InvalidArgumentError(
        absl::StrCat("invalid PostgreSQL schema name '", options.schema,
                     "' (1..63 of a-z, 0-9 and _, not starting with a digit or pg_)"));
  KAIROS_CHECK_MSG(options.threads > 0, "PostgresOptions::threads must be > 0");
  return absl::OkStatus();
}

enum class SchemaPurpose { kServe, kPlan, kMigrate, kSetVersion };

absl::Status with_schema(const PostgresOptions& options, SchemaPurpose purpose,
                         PostgresMigrationReport* report, std::uint32_t set_version) {
  KAIROS_RETURN_IF_ERROR(check_options(options));
  Connection conn(options);
  KAIROS_RETURN_IF_ERROR(conn.ensure(false));
  const std::string where =
      absl::StrCat("database ", redact(options.conninfo), ", schema \"", options.schema, "\"");
  const std::string store_flag = absl::StrCat("--store '", redact(options.conninfo), "'");
  Failure f;
  // One migration at a time per database: a transaction-scoped advisory lock.
  conn.exec(
      "BEGIN ISOLATION LEVEL READ COMMITTED; SELECT pg_advisory_xact_lock(7306086011567425536)",
      &f);
  if (f.failed()) return absl::UnavailableError(absl::StrCat(where, ": BEGIN: ", f.describe()));
  KAIROS_ASSIGN_OR_RETURN(const SchemaState state, read_schema(conn, options));
  const std::uint32_t current = kPostgresSchemaVersion;
  if (purpose == SchemaPurpose::kSetVersion) {
    if (state.version == 0) return absl::NotFoundError(absl::StrCat(where, ": no Kairos schema"));
  } else if (state.version > current) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s has store schema version %d, newer than this kairos binary supports (%d); run a "
        "newer kairos",
        where, state.version, current));
  } else if (purpose == SchemaPurpose::kServe) {
    if (state.version == 0)
      return absl::FailedPreconditionError(absl::StrFormat(
          "%s holds no Kairos store yet; create it with `kairos migrate %s`", where, store_flag));
    if (state.version < current)
      return absl::FailedPreconditionError(absl::StrFormat(
          "%s has store schema version %d, older than this kairos binary's (%d); back it up, "
          "then upgrade it with `kairos migrate %s`",
          where, state.version, current, store_flag));
    conn.exec("ROLLBACK", &f);
    return absl::OkStatus();
  }
  std::string sql;
  if (purpose == SchemaPurpose::kSetVersion) {
    sql = absl::StrCat("UPDATE \"", options.schema, "\".kairos_meta SET value = '", set_version,
                       "' WHERE key = 'schema_version'");
  } else {
    report->from = state.version;
    report->to = current;
    for (const PgMigrationStep& step : pg_steps()) {
      if (step.from < state.version) continue;
      report->steps.push_back(step_line(step));
      for (const char* statement : step.sql)
        absl::StrAppend(
            &sql,
            absl::StrReplaceAll(statement, {{"%s", absl::StrCat("\"", options.schema, "\"")}}),
            "; ");
    }
    if (purpose == SchemaPurpose::kPlan || report->steps.empty()) {
      conn.exec("ROLLBACK", &f);
      return absl::OkStatus();
    }
    const std::string meta = absl::StrCat("\"", options.schema, "\".kairos_meta");
    absl::StrAppend(&sql, "INSERT INTO ", meta, " (key, value) VALUES ('format', '",
                    absl_sv(kPostgresFormatValue), "'), ('schema_version', '", current,
                    "') ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value");
  }
  conn.exec(sql.c_str(), &f);
  if (f.failed()) {
    Failure ignored;
    if (conn.connected()) conn.exec("ROLLBACK", &ignored);
    return absl::UnavailableError(
        absl::StrCat(where, ": migration failed, nothing changed: ", f.describe()));
  }
  Result done = conn.exec("COMMIT", &f);
  if (f.failed() || std::string_view(PQcmdStatus(done.get())) != "COMMIT")
    return absl::UnavailableError(absl::StrCat(
        where, ": COMMIT of the migration: ", f.failed() ? f.describe() : "rolled back",
        " (run `kairos migrate` again: it is all or nothing)"));
  if (report != nullptr) report->written = true;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<PostgresStorage>> PostgresStorage::Open(
    const PostgresOptions& options, Timers& loop) {
  KAIROS_RETURN_IF_ERROR(with_schema(options, SchemaPurpose::kServe, nullptr, 0));
  return std::unique_ptr<PostgresStorage>(new PostgresStorage(options, loop));
}

absl::StatusOr<PostgresMigrationReport> PostgresStorage::Migrate(const PostgresOptions& options,
                                                                 bool dry_run) {
  PostgresMigrationReport report;
  KAIROS_RETURN_IF_ERROR(
      with_schema(options, dry_run ? SchemaPurpose::kPlan : SchemaPurpose::kMigrate, &report, 0));
  return report;
}

absl::Status PostgresStorage::SetSchemaVersionForTest(const PostgresOptions& options,
                                                      std::uint32_t version) {
  return with_schema(options, SchemaPurpose::kSetVersion, nullptr, version);
}

}  // namespace kairos
