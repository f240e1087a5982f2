// The data directory against a hostile user: an emptied, missing, truncated
// or overwritten data.mdb is refused with an error naming the file, never
// silently replaced by a new store and never a crash by signal; a second
// opener of a locked directory is refused naming the holder's pid; a store
// that cannot be created leaves the directory as it was.
//
// Every open of a damaged file runs in a forked child, so a crash shows as a
// failed assertion naming the case (and the signal) instead of killing the
// test binary.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/twins/manual_clock.h"
#include "prod/runtime/asio_runtime.h"
#include "prod/store/lmdb_storage.h"
#include "tests/conformance/storage_harness.h"
#include "tests/support/lmdb_rig.h"

namespace kairos {
namespace {

namespace fs = std::filesystem;
using storage_test::TempDir;

constexpr std::size_t kPage = 4096;

using Rig = test_support::LmdbRig;

LmdbOptions at(const std::string& path) {
  LmdbOptions o;
  o.path = path;
  return o;
}

// A store with a few hundred records: several levels of pages, values on
// overflow pages, and a free-page list from many commits.
void fill(const std::string& path, int batches = 30) {
  Rig rig(at(path));
  ASSERT_TRUE(rig.open().ok());
  for (int batch = 0; batch < batches; ++batch) {
    ASSERT_TRUE(rig.run([batch](Txn& t) {
                     for (int i = 0; i < 20; ++i) {
                       const int n = batch * 20 + i;
                       t.put(absl::StrCat("key/", n),
                             std::string(n % 7 == 0 ? 9000 : 300, static_cast<char>('a' + n % 26)));
                     }
                     if (batch % 3 == 2) t.erase(absl::StrCat("key/", batch * 20 - 5));
                     return absl::OkStatus();
                   })
                    .committed());
  }
}

std::uintmax_t data_size(const std::string& dir) { return fs::file_size(dir + "/data.mdb"); }

void copy_store(const std::string& from, const std::string& to) {
  fs::create_directories(to);
  fs::copy_file(from + "/data.mdb", to + "/data.mdb");
  fs::copy_file(from + "/lock.mdb", to + "/lock.mdb");
}

void overwrite(const std::string& file, std::uint64_t offset, const std::string& bytes) {
  const int fd = ::open(file.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(offset)),
            static_cast<ssize_t>(bytes.size()));
  ::close(fd);
}

// What a child found, as its exit code.
enum ChildResult {
  kRefusedNamingIt = 10,   // Open failed, the error names the data directory
  kOpenedAndRead = 11,     // Open succeeded; every record read back (or a
                           // read failed naming the directory)
  kRefusedSilently = 12,   // Open failed without naming the directory
  kReadErrorUnnamed = 13,  // a read failed without naming the directory
};

// Opens `dir` in a child and reads everything; returns the child's exit code,
// or -signal when it died by one.
int open_in_child(const std::string& dir, std::string* message = nullptr) {
  int fds[2];
  if (pipe(fds) != 0) return -1000;
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    int code = 0;
    std::string text;
    {
      Rig rig(at(dir));
      const absl::Status s = rig.open();
      if (!s.ok()) {
        text = std::string(s.message());
        code = absl::StrContains(s.message(), dir) ? kRefusedNamingIt : kRefusedSilently;
      } else {
        code = kOpenedAndRead;
        for (TxnMode mode : {TxnMode::kReadOnly, TxnMode::kReadWrite}) {
          const TxnResult r = rig.run(
              [](Txn& t) {
                for (auto& kv : t.scan("", "", 1u << 20)) (void)kv;
                (void)t.get("key/7");
                return absl::OkStatus();
              },
              mode);
          if (!r.committed()) {
            text = r.status.ToString();
            if (!absl::StrContains(r.status.message(), dir)) code = kReadErrorUnnamed;
          }
        }
        const TxnResult w = rig.run([](Txn& t) {
          t.put("after-damage", "x");
          return absl::OkStatus();
        });
        if (!w.committed() && !absl::StrContains(w.status.message(), dir)) code = kReadErrorUnnamed;
      }
    }
    if (write(fds[1], text.data(), text.size()) < 0) code = 99;
    _exit(code);
  }
  close(fds[1]);
  std::string text;
  char buf[512];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) text.append(buf, n);
  close(fds[0]);
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1001;
  if (message != nullptr) *message = text;
  if (WIFSIGNALED(status)) return -WTERMSIG(status);
  return WEXITSTATUS(status);
}

TEST(LmdbDataDir, EmptyDataFileIsRefusedNamingItAndKeepsTheFile) {
  TempDir dir;
  fill(dir.path());
  fs::resize_file(dir.path() + "/data.mdb", 0);
  Rig rig(at(dir.path()));
  const absl::Status s = rig.open();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), dir.path() + "/data.mdb")) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "empty")) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "backup")) << s;
  EXPECT_EQ(data_size(dir.path()), 0u) << "the empty file was replaced";
}

TEST(LmdbDataDir, MissingDataFileOfAStoreIsRefused) {
  TempDir dir;
  fill(dir.path());
  fs::remove(dir.path() + "/data.mdb");
  {
    Rig rig(at(dir.path()));
    const absl::Status s = rig.open();
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
    EXPECT_TRUE(absl::StrContains(s.message(), dir.path() + "/data.mdb")) << s;
    EXPECT_TRUE(absl::StrContains(s.message(), "missing")) << s;
  }
  EXPECT_FALSE(fs::exists(dir.path() + "/data.mdb")) << "a new store replaced the missing one";
  // Without lock.mdb, the lock file a server left is trace enough.
  fs::remove(dir.path() + "/lock.mdb");
  ASSERT_TRUE(fs::exists(dir.path() + "/kairos.lock"));
  Rig rig(at(dir.path()));
  const absl::Status s = rig.open();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_FALSE(fs::exists(dir.path() + "/data.mdb"));
}

TEST(LmdbDataDir, TruncatedDataFileIsRefusedWithoutCrash) {
  TempDir base;
  fill(base.path() + "/store");
  const std::uintmax_t full = data_size(base.path() + "/store");
  ASSERT_GT(full, 40 * kPage);
  const std::uintmax_t sizes[] = {0, 1, 4095, 4096, 8192, full / 2, full - kPage, full - 1};
  int n = 0;
  for (const std::uintmax_t size : sizes) {
    const std::string dir = absl::StrCat(base.path(), "/t", n++);
    copy_store(base.path() + "/store", dir);
    fs::resize_file(dir + "/data.mdb", size);
    std::string message;
    const int code = open_in_child(dir, &message);
    EXPECT_EQ(code, kRefusedNamingIt) << "truncated to " << size << " bytes: " << message;
    if (size > 0) {
      EXPECT_TRUE(absl::StrContains(message, dir + "/data.mdb")) << message;
      EXPECT_TRUE(absl::StrContains(message, "truncated")) << message;
    }
    EXPECT_EQ(data_size(dir), size) << "the damaged file was changed";
  }
}

TEST(LmdbDataDir, ShortFileNamesWhatItsMetaPageClaims) {
  TempDir dir;
  fill(dir.path());
  const std::uintmax_t full = data_size(dir.path());
  fs::resize_file(dir.path() + "/data.mdb", full - kPage);
  Rig rig(at(dir.path()));
  const absl::Status s = rig.open();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "truncated")) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), absl::StrCat(full / kPage, " pages of 4096 bytes")))
      << s;
}

TEST(LmdbDataDir, GarbageOverAnyPageNeverCrashes) {
  TempDir base;
  fill(base.path() + "/store");
  const std::uint64_t pages = data_size(base.path() + "/store") / kPage;
  std::mt19937_64 rng(20261201);
  int refused = 0, opened = 0;
  for (int round = 0; round < 48; ++round) {
    const std::string dir = absl::StrCat(base.path(), "/g", round);
    copy_store(base.path() + "/store", dir);
    // Rounds 0 and 1 hit the meta pages; the rest a random page, whole or in
    // part (a torn write).
    const std::uint64_t page = round < 2 ? round : 2 + rng() % (pages - 2);
    const bool torn = round >= 2 && round % 3 == 0;
    const std::size_t begin = torn ? rng() % kPage : 0;
    const std::size_t length = torn ? 1 + rng() % (kPage - begin) : kPage;
    std::string garbage(length, '\0');
    for (char& c : garbage) c = static_cast<char>(rng());
    overwrite(dir + "/data.mdb", page * kPage + begin, garbage);
    std::string message;
    const int code = open_in_child(dir, &message);
    EXPECT_TRUE(code == kRefusedNamingIt || code == kOpenedAndRead)
        << "round " << round << " (page " << page << ", bytes " << begin << ".." << begin + length
        << "): child " << (code < 0 ? "died by signal " : "exited ") << (code < 0 ? -code : code)
        << ": " << message;
    if (round < 2) {
      EXPECT_EQ(code, kRefusedNamingIt) << "meta page " << round << ": " << message;
    }
    refused += code == kRefusedNamingIt;
    opened += code == kOpenedAndRead;
  }
  // Free pages (many, after 30 commits) and the unused part of a page take
  // garbage harmlessly; the rest must be refused.
  EXPECT_GE(refused, 12) << "opened " << opened;
}

// Single flipped bytes (bit rot, a torn sector) in a store three levels deep.
TEST(LmdbDataDir, FlippedBytesNeverCrash) {
  TempDir base;
  fill(base.path() + "/store", 250);
  const std::uintmax_t size = data_size(base.path() + "/store");
  std::mt19937_64 rng(7);
  for (int round = 0; round < 100; ++round) {
    const std::string dir = absl::StrCat(base.path(), "/f", round);
    copy_store(base.path() + "/store", dir);
    // Page headers and node headers are where a flip matters: aim there
    // half of the time.
    const std::uint64_t page = rng() % (size / kPage);
    const std::uint64_t offset = page * kPage + (round % 2 == 0 ? rng() % 64 : rng() % kPage);
    overwrite(dir + "/data.mdb", offset, std::string(1, static_cast<char>(rng())));
    std::string message;
    const int code = open_in_child(dir, &message);
    EXPECT_TRUE(code == kRefusedNamingIt || code == kOpenedAndRead)
        << "round " << round << " (byte " << offset << "): child "
        << (code < 0 ? "died by signal " : "exited ") << (code < 0 ? -code : code) << ": "
        << message;
    fs::remove_all(dir);
  }
}

TEST(LmdbDataDir, SecondOpenOfALockedDirectoryNamesTheHolder) {
  TempDir dir;
  Rig first(at(dir.path()));
  ASSERT_TRUE(first.open().ok());
  {
    Rig second(at(dir.path()));
    const absl::Status s = second.open();
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
    EXPECT_TRUE(absl::StrContains(s.message(), dir.path())) << s;
    EXPECT_TRUE(absl::StrContains(s.message(), absl::StrCat("pid ", getpid()))) << s;
  }
  first.close();
  Rig again(at(dir.path()));
  EXPECT_TRUE(again.open().ok()) << "the lock outlived its store";
}

TEST(LmdbDataDir, LockHeldByAnotherProcessNamesItsPid) {
  TempDir dir;
  int ready[2], done[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(done), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    Rig rig(at(dir.path()));
    const char ok = rig.open().ok() ? 'y' : 'n';
    if (write(ready[1], &ok, 1) != 1) _exit(2);
    char c;
    if (read(done[0], &c, 1) < 0) _exit(3);
    _exit(0);
  }
  char ok = 0;
  ASSERT_EQ(read(ready[0], &ok, 1), 1);
  ASSERT_EQ(ok, 'y');
  {
    Rig rig(at(dir.path()));
    const absl::Status s = rig.open();
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
    EXPECT_TRUE(absl::StrContains(s.message(), absl::StrCat("pid ", pid))) << s;
  }
  ASSERT_EQ(write(done[1], "x", 1), 1);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  Rig rig(at(dir.path()));
  EXPECT_TRUE(rig.open().ok()) << "the lock outlived its process";
}

TEST(LmdbDataDir, StoreThatCannotBeCreatedLeavesNothingBehind) {
  TempDir dir;
  for (const std::size_t map : {std::size_t{4} << 10, std::size_t{16} << 10}) {
    LmdbOptions o = at(dir.path() + "/new/store");
    o.initial_map_size = map;
    Rig rig(o);
    EXPECT_FALSE(rig.open().ok()) << "a " << map << "-byte map held a new store";
    EXPECT_FALSE(fs::exists(dir.path() + "/new")) << "map " << map;
    // An existing empty directory stays empty.
    fs::create_directories(dir.path() + "/empty");
    o.path = dir.path() + "/empty";
    Rig rig2(o);
    EXPECT_FALSE(rig2.open().ok());
    EXPECT_TRUE(fs::is_empty(dir.path() + "/empty")) << "map " << map;
  }
  Rig rig(at(dir.path() + "/empty"));
  EXPECT_TRUE(rig.open().ok()) << "a failed creation left something that blocks the next";
}

TEST(LmdbDataDir, MinimumMapSizeCreatesAStore) {
  TempDir dir;
  LmdbOptions o = at(dir.path());
  o.initial_map_size = kLmdbMinMapSize;
  Rig rig(o);
  EXPECT_TRUE(rig.open().ok());
}

}  // namespace
}  // namespace kairos
