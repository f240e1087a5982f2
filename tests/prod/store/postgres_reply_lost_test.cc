// PostgresStorage, "applied, reply lost": COMMIT reaches the server and is
// applied, but its answer never reaches the store (the connection drops right
// after). The store must report kUnknown, never kUnavailable or kConflict, and
// the write must be there afterwards. (The suite's killed-commit mode covers
// the other half of kUnknown: the backend dies before COMMIT, nothing
// applied.) A small Unix-socket proxy between the store and the server
// (KAIROS_TEST_PG, which must name a Unix-socket server, as
// scripts/pg-server.sh starts) forwards everything, and when armed swallows
// the server's answer to the next COMMIT and closes both ends.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "prod/runtime/asio_runtime.h"
#include "prod/store/postgres_storage.h"
#include "tests/conformance/postgres_test_db.h"
#include "tests/conformance/storage_harness.h"

namespace kairos {
namespace {

// The Unix socket of the server named by `conninfo`, or "" when it names no
// Unix-socket server.
std::string server_socket(const std::string& conninfo) {
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(conninfo.c_str(), &err);
  if (err != nullptr) PQfreemem(err);
  if (opts == nullptr) return "";
  std::string host, port = "5432";
  for (PQconninfoOption* o = opts; o->keyword != nullptr; ++o) {
    if (o->val == nullptr) continue;
    if (std::strcmp(o->keyword, "host") == 0) host = o->val;
    if (std::strcmp(o->keyword, "port") == 0 && *o->val != '\0') port = o->val;
  }
  PQconninfoFree(opts);
  if (host.empty() || host[0] != '/' || host.find(',') != std::string::npos) return "";
  return absl::StrCat(host, "/.s.PGSQL.", port);
}

int unix_socket(const std::string& path, bool listen_on) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  KAIROS_CHECK(fd >= 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  KAIROS_CHECK(path.size() < sizeof(addr.sun_path));
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const auto* a = reinterpret_cast<const sockaddr*>(&addr);
  if (listen_on) {
    KAIROS_CHECK(::bind(fd, a, sizeof(addr)) == 0 && ::listen(fd, 16) == 0);
  } else if (::connect(fd, a, sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Forwards connections from its own socket (in `dir`) to the server's. Reads
// the client's messages (the untyped startup message, then type + length
// framing) to recognise a simple-protocol "COMMIT".
class CommitReplyDropper {
 public:
  CommitReplyDropper(const std::string& dir, std::string upstream)
      : upstream_(std::move(upstream)), path_(dir + "/.s.PGSQL.5432") {
    listen_fd_ = unix_socket(path_, true);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~CommitReplyDropper() {
    stopping_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);
    acceptor_.join();
    std::lock_guard<std::mutex> lock(mu_);
    for (std::thread& t : pipes_) t.join();
    ::close(listen_fd_);
  }
  // The next COMMIT any connection sends is forwarded; its answer is read
  // from the server and dropped, and both ends are closed.
  void arm() { armed_ = true; }
  bool fired() const { return fired_; }

 private:
  void accept_loop() {
    for (;;) {
      const int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) return;  // shut down
      if (stopping_) {
        ::close(client);
        return;
      }
      std::lock_guard<std::mutex> lock(mu_);
      pipes_.emplace_back([this, client] { pipe(client); });
    }
  }

  void pipe(int client) {
    const int server = unix_socket(upstream_, false);
    if (server < 0) {
      ::close(client);
      return;
    }
    std::string from_client;  // bytes of an incomplete message
    bool started = false;     // the startup message went by
    bool drop_next_answer = false;
    char buf[65536];
    while (!stopping_) {
      pollfd p[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
      if (::poll(p, 2, 200) < 0) break;
      if (p[0].revents != 0) {
        const ssize_t n = ::read(client, buf, sizeof buf);
        if (n <= 0) break;
        from_client.append(buf, static_cast<std::size_t>(n));
        // Whole messages only: a COMMIT is seen before it is forwarded.
        std::size_t used = 0;
        for (;;) {
          const std::size_t header = started ? 5 : 4;
          if (from_client.size() - used < header) break;
          std::uint32_t len = 0;
          std::memcpy(&len, from_client.data() + used + header - 4, 4);
          len = ntohl(len);
          const std::size_t total = header - 4 + len;
          if (from_client.size() - used < total) break;
          if (started && from_client[used] == 'Q' &&
              from_client.compare(used + 5, total - 5, std::string("COMMIT\0", 7)) == 0 &&
              armed_.exchange(false))
            drop_next_answer = true;
          started = true;
          used += total;
        }
        if (used > 0) {
          KAIROS_CHECK(::write(server, from_client.data(), used) == static_cast<ssize_t>(used));
          from_client.erase(0, used);
        }
      }
      if (p[1].revents != 0) {
        const ssize_t n = ::read(server, buf, sizeof buf);
        if (n <= 0) break;
        if (drop_next_answer) {
          fired_ = true;  // the server answered the COMMIT: it was applied
          break;
        }
        KAIROS_CHECK(::write(client, buf, static_cast<std::size_t>(n)) == n);
      }
    }
    ::close(client);
    ::close(server);
  }

  const std::string upstream_;
  const std::string path_;
  int listen_fd_ = -1;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> armed_{false};
  std::atomic<bool> fired_{false};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<std::thread> pipes_;  // guarded by mu_
};

TEST(PostgresReplyLost, AppliedCommitWhoseAnswerIsLostIsUnknownAndTheWriteIsThere) {
  const auto conninfo = storage_test::test_pg_conninfo();
  if (!conninfo) GTEST_SKIP() << storage_test::kNoTestPg;
  const std::string upstream = server_socket(*conninfo);
  if (upstream.empty() || conninfo->find("://") != std::string::npos)
    GTEST_SKIP() << "KAIROS_TEST_PG is not a key=value conninfo of a Unix-socket server";
  storage_test::PgTestSchema schema(*conninfo);
  storage_test::TempDir dir;
  CommitReplyDropper proxy(dir.path(), upstream);

  PostgresOptions options = schema.options();
  options.conninfo = absl::StrCat(*conninfo, " host=", dir.path(), " port=5432");
  options.threads = 1;
  ASSERT_TRUE(PostgresStorage::Migrate(options, false).ok());
  boost::asio::io_context io;
  auto work = boost::asio::make_work_guard(io);
  AsioTimers timers(io);
  auto opened = PostgresStorage::Open(options, timers);
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::unique_ptr<PostgresStorage> store = std::move(opened).value();
  const auto run = [&](TxnBody body, TxnMode mode) {
    std::optional<TxnResult> result;
    store->transact(
        std::move(body), [&](TxnResult r) { result = std::move(r); }, mode);
    while (!result) EXPECT_GT(io.run_one_for(std::chrono::seconds(60)), 0u);
    return *result;
  };

  proxy.arm();
  const TxnResult r = run(
      [](Txn& t) {
        t.put("k", "applied");
        return absl::OkStatus();
      },
      TxnMode::kReadWrite);
  EXPECT_TRUE(proxy.fired()) << "the COMMIT never went through the proxy";
  EXPECT_EQ(r.outcome, CommitOutcome::kUnknown) << r.status;
  EXPECT_TRUE(r.maybe_applied());

  // The store reconnects (through the now harmless proxy): the write is there.
  std::optional<std::string> value;
  EXPECT_TRUE(run(
                  [&](Txn& t) {
                    value = t.get("k");
                    return absl::OkStatus();
                  },
                  TxnMode::kReadOnly)
                  .committed());
  EXPECT_EQ(value, "applied");
  store.reset();
  io.poll();
}

}  // namespace
}  // namespace kairos
