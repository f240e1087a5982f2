#include "prod/store/lmdb_storage.h"

#include <fcntl.h>
#include <lmdb.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <map>
#include <memory_resource>
#include <optional>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/base/absl_compat.h"
#include "core/base/check.h"
#include "prod/store/lmdb_file_check.h"

namespace kairos {
namespace {

const char* lmdb_code_name(int rc) {
  switch (rc) {
    case MDB_KEYEXIST:
      return "MDB_KEYEXIST";
    case MDB_NOTFOUND:
      return "MDB_NOTFOUND";
    case MDB_PAGE_NOTFOUND:
      return "MDB_PAGE_NOTFOUND";
    case MDB_CORRUPTED:
      return "MDB_CORRUPTED";
    case MDB_PANIC:
      return "MDB_PANIC";
    case MDB_VERSION_MISMATCH:
      return "MDB_VERSION_MISMATCH";
    case MDB_INVALID:
      return "MDB_INVALID";
    case MDB_MAP_FULL:
      return "MDB_MAP_FULL";
    case MDB_DBS_FULL:
      return "MDB_DBS_FULL";
    case MDB_READERS_FULL:
      return "MDB_READERS_FULL";
    case MDB_TLS_FULL:
      return "MDB_TLS_FULL";
    case MDB_TXN_FULL:
      return "MDB_TXN_FULL";
    case MDB_CURSOR_FULL:
      return "MDB_CURSOR_FULL";
    case MDB_PAGE_FULL:
      return "MDB_PAGE_FULL";
    case MDB_MAP_RESIZED:
      return "MDB_MAP_RESIZED";
    case MDB_INCOMPATIBLE:
      return "MDB_INCOMPATIBLE";
    case MDB_BAD_RSLOT:
      return "MDB_BAD_RSLOT";
    case MDB_BAD_TXN:
      return "MDB_BAD_TXN";
    case MDB_BAD_VALSIZE:
      return "MDB_BAD_VALSIZE";
    case MDB_BAD_DBI:
      return "MDB_BAD_DBI";
    case ENOENT:
      return "ENOENT";
    case EACCES:
      return "EACCES";
    case EAGAIN:
      return "EAGAIN";
    case ENOMEM:
      return "ENOMEM";
    case ENOSPC:
      return "ENOSPC";
    case EIO:
      return "EIO";
    case EINVAL:
      return "EINVAL";
    case EROFS:
      return "EROFS";
    default:
      return "errno";
  }
}

absl::StatusCode lmdb_status_code(int rc) {
  switch (rc) {
    case MDB_NOTFOUND:
    case ENOENT:
      return absl::StatusCode::kNotFound;
    case MDB_KEYEXIST:
      return absl::StatusCode::kAlreadyExists;
    case MDB_PAGE_NOTFOUND:
    case MDB_CORRUPTED:
    case MDB_PANIC:
    case EIO:
      return absl::StatusCode::kDataLoss;
    case MDB_VERSION_MISMATCH:
    case MDB_INVALID:
    case MDB_INCOMPATIBLE:
      return absl::StatusCode::kFailedPrecondition;
    case MDB_MAP_FULL:
    case MDB_DBS_FULL:
    case MDB_READERS_FULL:
    case MDB_TLS_FULL:
    case MDB_TXN_FULL:
    case MDB_CURSOR_FULL:
    case MDB_PAGE_FULL:
    case ENOMEM:
    case ENOSPC:
      return absl::StatusCode::kResourceExhausted;
    case MDB_MAP_RESIZED:
    case EAGAIN:
      return absl::StatusCode::kUnavailable;
    case EACCES:
    case EROFS:
      return absl::StatusCode::kPermissionDenied;
    case EINVAL:
    case MDB_BAD_RSLOT:
    case MDB_BAD_TXN:
    case MDB_BAD_VALSIZE:
    case MDB_BAD_DBI:
      return absl::StatusCode::kInternal;
    default:
      return absl::StatusCode::kUnknown;
  }
}

MDB_val to_val(std::string_view s) { return MDB_val{s.size(), const_cast<char*>(s.data())}; }
std::string_view from_val(const MDB_val& v) {
  return std::string_view(static_cast<const char*>(v.mv_data), v.mv_size);
}

// An LMDB transaction handle: aborted in the destructor unless committed.
class TxnHandle {
 public:
  TxnHandle() = default;
  ~TxnHandle() { abort(); }
  TxnHandle(const TxnHandle&) = delete;
  TxnHandle& operator=(const TxnHandle&) = delete;

  int begin(MDB_env* env, MDB_txn* parent, unsigned flags) {
    KAIROS_CHECK(txn_ == nullptr);
    return mdb_txn_begin(env, parent, flags, &txn_);
  }
  // LMDB frees the transaction whether or not the commit succeeds.
  int commit() {
    KAIROS_CHECK(txn_ != nullptr);
    MDB_txn* t = std::exchange(txn_, nullptr);
    return mdb_txn_commit(t);
  }
  void abort() {
    if (txn_ != nullptr) mdb_txn_abort(std::exchange(txn_, nullptr));
  }
  MDB_txn* get() const { return txn_; }

 private:
  MDB_txn* txn_ = nullptr;
};

// One LMDB cursor shared by every scan of the bodies that run on one LMDB
// transaction (a write group's parent, or a read snapshot): opened at the
// first scan, positioned afresh by each, and closed before the transaction
// ends. mdb_cursor_open allocates, so opening one per scan cost an
// allocation pair per scan.
class SharedCursor {
 public:
  SharedCursor(MDB_txn* txn, MDB_dbi dbi) : txn_(txn), dbi_(dbi) {}
  ~SharedCursor() { close(); }
  SharedCursor(const SharedCursor&) = delete;
  SharedCursor& operator=(const SharedCursor&) = delete;
  // The cursor, opened on first use; 0 or the LMDB error of opening it.
  int get(MDB_cursor** out) {
    if (cursor_ == nullptr) {
      if (const int rc = mdb_cursor_open(txn_, dbi_, &cursor_); rc != 0) {
        cursor_ = nullptr;
        return rc;
      }
    }
    *out = cursor_;
    return 0;
  }
  // Must be called before the transaction commits or aborts.
  void close() {
    if (cursor_ != nullptr) mdb_cursor_close(std::exchange(cursor_, nullptr));
  }

 private:
  MDB_txn* txn_;
  MDB_dbi dbi_;
  MDB_cursor* cursor_ = nullptr;
};

}  // namespace

namespace lmdb_internal {

// Scratch memory for the overlay of the body that runs now (see LmdbTxn):
// its map nodes and the bytes of its keys and values are bump-allocated
// here and dropped together when the next body starts, instead of three
// heap allocations per buffered write. The first block is kept for the
// store's life; a body that buffers more spills into blocks taken from the
// heap, returned at the reset. Writer thread only.
class OverlayArena {
 public:
  OverlayArena() : first_(new char[kFirstBlock]), resource_(first_.get(), kFirstBlock) {}
  std::pmr::memory_resource* resource() { return &resource_; }
  // A copy of `s` in the arena, valid until reset().
  std::string_view copy(std::string_view s) {
    if (s.empty()) return std::string_view("");  // never a null pointer for LMDB
    char* p = static_cast<char*>(resource_.allocate(s.size(), 1));
    std::memcpy(p, s.data(), s.size());
    return std::string_view(p, s.size());
  }
  // Frees everything allocated since the last reset; nothing allocated here
  // may be in use.
  void reset() { resource_.release(); }

 private:
  static constexpr std::size_t kFirstBlock = std::size_t{1} << 20;
  std::unique_ptr<char[]> first_;
  std::pmr::monotonic_buffer_resource resource_;
};

}  // namespace lmdb_internal

namespace {

using lmdb_internal::OverlayArena;

// The Txn a body sees. The first LMDB error dooms the transaction: later
// reads return nothing, later writes are ignored, and the store reports the
// error instead of committing.
//
// A read-write body's writes are buffered here (an ordered overlay of puts
// and tombstones) and reach LMDB only through apply(), after the body
// returned OK; reads merge the overlay over the group's parent transaction,
// so a body sees its own writes and those of the bodies before it. A body
// that fails or is doomed leaves the parent untouched. This replaces one
// nested LMDB transaction per body, whose cost (a dirty-page list and a page
// copy for every page it touched that the parent had dirtied already) was
// the largest single item of the writer's profile.
class LmdbTxn final : public Txn {
 public:
  LmdbTxn(MDB_txn* txn, MDB_dbi dbi, SharedCursor& cursor, OverlayArena& arena, absl::Time now,
          TxnMode mode)
      : txn_(txn),
        dbi_(dbi),
        cursor_(cursor),
        arena_(arena),
        now_(now),
        mode_(mode),
        overlay_(arena.resource()) {}

  absl::Time now() const override { return now_; }

  std::optional<std::string> get(std::string_view key) override {
    check_key_limits(key);
    if (doomed()) return std::nullopt;
    if (!overlay_.empty()) {
      if (auto it = overlay_.find(key); it != overlay_.end()) {
        if (!it->second) return std::nullopt;
        return std::string(*it->second);
      }
    }
    MDB_val k = to_val(key);
    MDB_val v;
    const int rc = mdb_get(txn_, dbi_, &k, &v);
    if (rc == MDB_NOTFOUND) return std::nullopt;
    if (rc != 0) {
      doom("mdb_get", rc);
      return std::nullopt;
    }
    return std::string(from_val(v));
  }

  std::vector<KeyValue> scan(std::string_view begin, std::string_view end, std::size_t limit,
                             Direction direction) override {
    KAIROS_CHECK(limit > 0);
    std::vector<KeyValue> out;
    if (doomed() || (!end.empty() && end <= begin)) return out;
    MDB_cursor* cursor = nullptr;
    int rc = cursor_.get(&cursor);
    if (rc != 0) {
      doom("mdb_cursor_open", rc);
      return out;
    }
    MDB_val k, v;
    if (direction == Direction::kForward) {
      // Merge the store's keys with the overlay's, ascending; an overlay
      // entry shadows the stored key it equals (a tombstone hides it).
      auto below_end = [&](std::string_view key) { return end.empty() || key < end; };
      auto it = overlay_.lower_bound(begin);
      rc = position_at_or_after(cursor, begin, &k, &v);
      while (out.size() < limit) {
        const bool stored = rc == 0 && below_end(from_val(k));
        const bool buffered = it != overlay_.end() && below_end(it->first);
        if (!stored && !buffered) break;
        if (buffered && (!stored || it->first <= from_val(k))) {
          if (stored && it->first == from_val(k)) rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT);
          if (it->second) out.push_back({std::string(it->first), std::string(*it->second)});
          ++it;
        } else {
          out.push_back({std::string(from_val(k)), std::string(from_val(v))});
          rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT);
        }
      }
    } else {
      if (end.empty()) {
        rc = mdb_cursor_get(cursor, &k, &v, MDB_LAST);
      } else {
        rc = position_at_or_after(cursor, end, &k, &v);
        if (rc == 0) {
          rc = mdb_cursor_get(cursor, &k, &v, MDB_PREV);  // first key < end
        } else if (rc == MDB_NOTFOUND) {
          rc = mdb_cursor_get(cursor, &k, &v, MDB_LAST);  // every key < end
        }
      }
      // The same merge, descending: `it` is one past the next overlay entry.
      auto it = end.empty() ? overlay_.end() : overlay_.lower_bound(end);
      while (out.size() < limit) {
        const bool stored = rc == 0 && from_val(k) >= begin;
        const bool buffered = it != overlay_.begin() && std::prev(it)->first >= begin;
        if (!stored && !buffered) break;
        if (buffered && (!stored || std::prev(it)->first >= from_val(k))) {
          --it;
          if (stored && it->first == from_val(k)) rc = mdb_cursor_get(cursor, &k, &v, MDB_PREV);
          if (it->second) out.push_back({std::string(it->first), std::string(*it->second)});
        } else {
          out.push_back({std::string(from_val(k)), std::string(from_val(v))});
          rc = mdb_cursor_get(cursor, &k, &v, MDB_PREV);
        }
      }
    }
    if (rc != 0 && rc != MDB_NOTFOUND) doom("mdb_cursor_get in scan", rc);
    return out;
  }

  void put(std::string_view key, std::string_view value) override {
    check_write();
    check_key_limits(key, value);
    if (doomed()) return;
    buffer(key, arena_.copy(value));
  }

  void erase(std::string_view key) override {
    check_write();
    check_key_limits(key);
    if (doomed()) return;
    buffer(key, std::nullopt);
  }

  void erase_range(std::string_view begin, std::string_view end) override {
    KAIROS_CHECK_MSG(mode_ == TxnMode::kReadWrite, "write in a read-only transaction");
    if (doomed() || (!end.empty() && end <= begin)) return;
    // Tombstones for the overlay's keys in the range, then for the store's.
    for (auto it = overlay_.lower_bound(begin);
         it != overlay_.end() && (end.empty() || it->first < end); ++it)
      it->second.reset();
    MDB_cursor* cursor = nullptr;
    int rc = cursor_.get(&cursor);
    if (rc != 0) {
      doom("mdb_cursor_open", rc);
      return;
    }
    MDB_val k, v;
    for (rc = position_at_or_after(cursor, begin, &k, &v); rc == 0;
         rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)) {
      const std::string_view key = from_val(k);
      if (!end.empty() && key >= end) break;
      buffer(key, std::nullopt);
    }
    if (rc != 0 && rc != MDB_NOTFOUND) doom("mdb_cursor_get in erase_range", rc);
  }

  // Writes the buffered changes into the parent transaction, in key order.
  // On an error (0 when none) the parent holds part of them and must be
  // aborted; `*operation` names the failing call.
  int apply(std::string_view* operation) {
    KAIROS_CHECK(mode_ == TxnMode::kReadWrite && !doomed());
    for (const auto& [key, value] : overlay_) {
      MDB_val k = to_val(key);
      if (value) {
        MDB_val v = to_val(*value);
        if (const int rc = mdb_put(txn_, dbi_, &k, &v, 0); rc != 0) {
          *operation = "mdb_put in transaction";
          return rc;
        }
      } else if (const int rc = mdb_del(txn_, dbi_, &k, nullptr); rc != 0 && rc != MDB_NOTFOUND) {
        *operation = "mdb_del in transaction";
        return rc;
      }
    }
    return 0;
  }

  bool doomed() const { return rc_ != 0; }
  int error_code() const { return rc_; }
  const absl::Status& error() const { return error_; }

 private:
  // Sets the overlay's entry for `key` (one tree search; the key is copied
  // into the arena only when it is new).
  void buffer(std::string_view key, std::optional<std::string_view> value) {
    auto it = overlay_.lower_bound(key);
    if (it != overlay_.end() && it->first == key) {
      it->second = value;
    } else {
      overlay_.emplace_hint(it, arena_.copy(key), value);
    }
  }
  void check_write() const {
    KAIROS_CHECK_MSG(mode_ == TxnMode::kReadWrite, "write in a read-only transaction");
  }
  static int position_at_or_after(MDB_cursor* c, std::string_view key, MDB_val* k, MDB_val* v) {
    if (key.empty()) return mdb_cursor_get(c, k, v, MDB_FIRST);
    *k = to_val(key);
    return mdb_cursor_get(c, k, v, MDB_SET_RANGE);
  }
  void doom(std::string_view operation, int rc) {
    if (rc_ != 0) return;
    rc_ = rc;
    error_ = LmdbError(operation, rc);
  }

  MDB_txn* txn_;
  MDB_dbi dbi_;
  SharedCursor& cursor_;  // the scans' cursor, shared with the other bodies on txn_
  OverlayArena& arena_;   // holds the overlay's nodes, keys and values
  absl::Time now_;
  TxnMode mode_;
  int rc_ = 0;
  absl::Status error_;
  // Buffered writes of a read-write body: a value, or nullopt for an erase;
  // keys and values point into arena_.
  std::pmr::map<std::string_view, std::optional<std::string_view>, std::less<>> overlay_;
};

TxnResult unavailable(absl::Status status) {
  return {CommitOutcome::kUnavailable, std::move(status)};
}

}  // namespace

absl::Status LmdbError(std::string_view operation, int rc) {
  KAIROS_CHECK(rc != 0);
  return absl::Status(lmdb_status_code(rc),
                      absl::StrCat("lmdb: ", absl_sv(operation), ": ", lmdb_code_name(rc), " (",
                                   mdb_strerror(rc), ")"));
}

// The environment and its two databases, and the directory lock held for as
// long as the environment is open.
class LmdbStorage::Env {
 public:
  Env() = default;
  ~Env() {
    close_env();
    if (lock_fd >= 0) ::close(lock_fd);
  }
  Env(const Env&) = delete;
  Env& operator=(const Env&) = delete;
  void close_env() {
    if (env != nullptr) mdb_env_close(std::exchange(env, nullptr));
  }

  MDB_env* env = nullptr;
  MDB_dbi data = 0;
  MDB_dbi meta = 0;
  int lock_fd = -1;  // flock(LOCK_EX) on kLmdbLockFile
};

namespace {

namespace fs = std::filesystem;

bool is_damage_code(int rc) {
  return rc == MDB_CORRUPTED || rc == MDB_PAGE_NOTFOUND || rc == MDB_PANIC || rc == MDB_INVALID;
}

// An LMDB error; when it says the file is damaged, the error names the
// directory and what to do.
absl::Status store_error(const std::string& path, std::string_view operation, int rc) {
  absl::Status s = LmdbError(operation, rc);
  if (!is_damage_code(rc)) return s;
  return absl::DataLossError(
      absl::StrFormat("data directory %s is damaged (%s); stop the server and restore the data "
                      "directory from a backup (see docs/OPERATIONS.md)",
                      path, s.message()));
}

// The same for an error a transaction body ran into.
absl::Status body_error(const std::string& path, int rc, absl::Status error) {
  if (!is_damage_code(rc)) return error;
  return absl::DataLossError(
      absl::StrFormat("data directory %s is damaged (%s); stop the server and restore the data "
                      "directory from a backup (see docs/OPERATIONS.md)",
                      path, error.message()));
}

std::string read_holder_pid(int fd) {
  char buf[32] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::string pid(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  const bool digits = !pid.empty() && pid.find_first_not_of("0123456789") == std::string::npos;
  return digits ? pid : std::string("unknown");
}

// Takes the directory lock: flock(LOCK_EX) on `dir`/kLmdbLockFile, holding
// this process's pid. `created` tells whether the file was new.
absl::StatusOr<int> lock_directory(const std::string& dir, bool& created) {
  const std::string file = (fs::path(dir) / kLmdbLockFile).string();
  for (int attempt = 0; attempt < 16; ++attempt) {
    created = true;
    int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
    if (fd < 0 && errno == EEXIST) {
      created = false;
      fd = ::open(file.c_str(), O_RDWR | O_CLOEXEC);
      if (fd < 0 && errno == ENOENT) continue;  // removed in between: try again
    }
    if (fd < 0) {
      const int err = errno;
      return absl::Status(lmdb_status_code(err), absl::StrFormat("cannot open the lock file %s: %s",
                                                                 file, std::strerror(err)));
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      if (err == EWOULDBLOCK) {
        const std::string pid = read_holder_pid(fd);
        ::close(fd);
        return absl::FailedPreconditionError(absl::StrFormat(
            "data directory %s is in use by another process (pid %s holds the lock %s); stop "
            "that server first, or give this one another --data-dir",
            dir, pid, file));
      }
      ::close(fd);
      return absl::UnavailableError(
          absl::StrFormat("cannot lock %s: %s", file, std::strerror(err)));
    }
    // A holder that failed to create a store removes the file while it still
    // holds the lock: make sure the lock is on the file the path names.
    struct stat held, named;
    if (::fstat(fd, &held) != 0 || ::stat(file.c_str(), &named) != 0 ||
        held.st_ino != named.st_ino || held.st_dev != named.st_dev) {
      ::close(fd);
      continue;
    }
    const std::string pid = absl::StrCat(::getpid(), "\n");
    if (::ftruncate(fd, 0) != 0 ||
        ::pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
      const int err = errno;
      ::close(fd);
      return absl::UnavailableError(
          absl::StrFormat("cannot write the lock file %s: %s", file, std::strerror(err)));
    }
    return fd;
  }
  return absl::UnavailableError(absl::StrFormat("cannot lock %s: it keeps disappearing", file));
}

// What the directory holds before the store opens.
enum class DirState { kNew, kExisting };

// Classifies the (locked) directory: kNew when it holds no trace of a store
// at all; kExisting when data.mdb is present and passes the file check; an
// error otherwise (foreign files, a store whose data file is missing or
// empty, a damaged data file).
absl::StatusOr<DirState> classify_directory(const std::string& path, bool lock_was_new) {
  std::error_code ec;
  const fs::path dir(path);
  const fs::path data = dir / "data.mdb";
  const std::string data_file = data.string();
  std::vector<std::string> traces;  // files only a store leaves behind
  std::string foreign;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name == "data.mdb") continue;
    if (name == "lock.mdb" || name == kJobRecordsDir) {
      traces.push_back(name);
    } else if (name == kLmdbLockFile) {
      if (!lock_was_new) traces.push_back(name);
    } else if (foreign.empty()) {
      foreign = name;
    }
  }
  if (ec)
    return absl::UnavailableError(
        absl::StrFormat("cannot list data directory %s: %s", path, ec.message()));
  const bool has_data = fs::exists(data, ec);
  if (!has_data) {
    if (!foreign.empty())
      return absl::FailedPreconditionError(absl::StrFormat(
          "data directory %s is not a Kairos store: it is not empty (found '%s') and has no "
          "data.mdb; refusing to use it (choose an empty or new directory)",
          path, foreign));
    if (!traces.empty())
      return absl::DataLossError(absl::StrFormat(
          "data directory %s held a store (it has %s) but its data file %s is missing; refusing "
          "to start a new, empty store in its place. Restore the data directory from a backup; "
          "or, if it never held jobs (a first start that was interrupted), remove the directory "
          "to create a new store",
          path, absl::StrJoin(traces, " and "), data_file));
    return DirState::kNew;
  }
  const std::uintmax_t size = fs::file_size(data, ec);
  if (!ec && size == 0)
    return absl::DataLossError(absl::StrFormat(
        "data file %s is empty (0 bytes): the store's contents are gone; refusing to start a "
        "new, empty store in its place. Restore the data directory from a backup; or, if it "
        "never held jobs (a first start that was interrupted), remove the directory to create a "
        "new store",
        data_file));
  KAIROS_RETURN_IF_ERROR(CheckLmdbDataFile(data_file));
  return DirState::kExisting;
}

std::string foreign_lmdb_message(const std::string& path, std::string_view why) {
  return absl::StrFormat(
      "data directory %s holds an LMDB environment that is not a Kairos store (%s); refusing "
      "to use it",
      path, absl_sv(why));
}

int put_version(MDB_txn* txn, MDB_dbi meta, std::uint32_t version) {
  const std::string text = std::to_string(version);
  MDB_val k = to_val(kMetaSchemaVersionKey), v = to_val(text);
  return mdb_put(txn, meta, &k, &v, 0);
}

// Puts the format marker and schema version of a new store.
int put_marker(MDB_txn* txn, MDB_dbi meta, std::uint32_t version, std::string_view* failed) {
  MDB_val k = to_val(kMetaFormatKey), v = to_val(kMetaFormatValue);
  int rc = mdb_put(txn, meta, &k, &v, 0);
  if (rc != 0) {
    *failed = "mdb_put (format marker)";
    return rc;
  }
  rc = put_version(txn, meta, version);
  if (rc != 0) *failed = "mdb_put (schema version)";
  return rc;
}

// The steps of `schema` that take a store at `version` to schema.version,
// in order; an error when the store is older than the first step.
absl::StatusOr<std::span<const LmdbMigrationStep>> steps_from(const std::string& path,
                                                              const LmdbSchema& schema,
                                                              std::uint32_t version) {
  const std::uint32_t oldest = schema.steps.empty() ? schema.version : schema.steps.front().from;
  if (version < oldest)
    return absl::FailedPreconditionError(absl::StrFormat(
        "data directory %s has store schema version %d, older than the oldest this kairos "
        "binary migrates from (%d); migrate it with an older kairos first",
        path, version, oldest));
  return schema.steps.subspan(version - oldest);
}

// A schema that breaks LmdbSchema's rules is a bug in the binary.
void check_schema(const LmdbSchema& schema) {
  KAIROS_CHECK_MSG(schema.version > 0, "LmdbSchema: version 0");
  for (std::size_t i = 0; i < schema.steps.size(); ++i) {
    const LmdbMigrationStep& step = schema.steps[i];
    KAIROS_CHECK_MSG(step.apply != nullptr && step.from > 0, "LmdbSchema: a step without apply");
    const std::uint32_t expected =
        schema.version - static_cast<std::uint32_t>(schema.steps.size() - i);
    KAIROS_CHECK_MSG(step.from == expected, "LmdbSchema: steps not consecutive up to the version");
  }
}

std::string step_line(const LmdbMigrationStep& step) {
  return absl::StrFormat("v%d -> v%d: %s", step.from, step.from + 1, absl_sv(step.what));
}

}  // namespace

const LmdbSchema& CurrentLmdbSchema() {
  static const LmdbSchema schema = [] {
    const LmdbSchema s{kLmdbSchemaVersion, {}};
    check_schema(s);
    return s;
  }();
  return schema;
}

// Opens the environment in the locked, classified directory and identifies
// (or, when new and serving, creates) the store in one write transaction;
// for the other purposes, plans, migrates or sets the version in it.
absl::Status LmdbStorage::OpenEnv(const LmdbOptions& options, const Purpose& purpose, Env& env) {
  const std::string& path = options.path;
  const LmdbSchema& schema = options.schema != nullptr ? *options.schema : CurrentLmdbSchema();
  check_schema(schema);
  int rc = mdb_env_create(&env.env);
  if (rc != 0) return LmdbError("mdb_env_create", rc);
  if ((rc = mdb_env_set_maxdbs(env.env, 4)) != 0) return LmdbError("mdb_env_set_maxdbs", rc);
  if ((rc = mdb_env_set_mapsize(env.env, options.initial_map_size)) != 0)
    return LmdbError("mdb_env_set_mapsize", rc);
  // No MDB_NOSYNC / MDB_NOMETASYNC: mdb_txn_commit syncs. MDB_NOTLS: read
  // transactions are not tied to the opening thread.
  rc = mdb_env_open(env.env, path.c_str(), MDB_NOTLS, 0640);
  if (rc == MDB_INVALID)
    return absl::FailedPreconditionError(absl::StrFormat(
        "data directory %s is not a Kairos store: data.mdb is not an LMDB environment (%s)", path,
        LmdbError("mdb_env_open", rc).message()));
  if (rc == MDB_VERSION_MISMATCH)
    return absl::FailedPreconditionError(
        absl::StrFormat("data directory %s was written by an incompatible LMDB version (%s)", path,
                        LmdbError("mdb_env_open", rc).message()));
  if (rc != 0)
    return absl::Status(lmdb_status_code(rc),
                        absl::StrFormat("cannot open data directory %s: %s", path,
                                        LmdbError("mdb_env_open", rc).message()));
  int dead = 0;
  if ((rc = mdb_reader_check(env.env, &dead)) != 0) return LmdbError("mdb_reader_check", rc);

  TxnHandle txn;
  if ((rc = txn.begin(env.env, nullptr, 0)) != 0)
    return store_error(path, "mdb_txn_begin (open)", rc);
  MDB_dbi main_dbi;
  if ((rc = mdb_dbi_open(txn.get(), nullptr, 0, &main_dbi)) != 0)
    return store_error(path, "mdb_dbi_open (main)", rc);
  rc = mdb_dbi_open(txn.get(), kMetaDbName, 0, &env.meta);
  if (rc == MDB_NOTFOUND) {
    MDB_stat st;
    if ((rc = mdb_stat(txn.get(), main_dbi, &st)) != 0)
      return store_error(path, "mdb_stat (main)", rc);
    if (st.ms_entries > 0)
      return absl::FailedPreconditionError(
          foreign_lmdb_message(path, "no Kairos metadata database"));
    if (purpose.kind != Purpose::kServe)
      return absl::NotFoundError(absl::StrFormat(
          "data directory %s holds no Kairos store (its creation never committed)", path));
    // A new store (or one whose creation never committed: nothing is lost).
    if ((rc = mdb_dbi_open(txn.get(), kMetaDbName, MDB_CREATE, &env.meta)) != 0)
      return store_error(path, "mdb_dbi_open (create meta)", rc);
    if ((rc = mdb_dbi_open(txn.get(), kDataDbName, MDB_CREATE, &env.data)) != 0)
      return store_error(path, "mdb_dbi_open (create data)", rc);
    std::string_view failed;
    if ((rc = put_marker(txn.get(), env.meta, schema.version, &failed)) != 0)
      return store_error(path, failed, rc);
  } else if (rc == MDB_INCOMPATIBLE) {
    return absl::FailedPreconditionError(
        foreign_lmdb_message(path, "its main database holds plain records"));
  } else if (rc != 0) {
    return store_error(path, "mdb_dbi_open (meta)", rc);
  } else {
    MDB_val k = to_val(kMetaFormatKey), v;
    rc = mdb_get(txn.get(), env.meta, &k, &v);
    if (rc == MDB_NOTFOUND || (rc == 0 && from_val(v) != kMetaFormatValue))
      return absl::FailedPreconditionError(
          foreign_lmdb_message(path, "format marker missing or different"));
    if (rc != 0) return store_error(path, "mdb_get (format marker)", rc);
    k = to_val(kMetaSchemaVersionKey);
    rc = mdb_get(txn.get(), env.meta, &k, &v);
    if (rc == MDB_NOTFOUND)
      return absl::DataLossError(
          absl::StrFormat("data directory %s: Kairos store without a schema version record", path));
    if (rc != 0) return store_error(path, "mdb_get (schema version)", rc);
    const std::string_view text = from_val(v);
    std::uint32_t version = 0;
    const auto parsed = std::from_chars(text.data(), text.data() + text.size(), version);
    if (parsed.ec != std::errc() || parsed.ptr != text.data() + text.size() || version == 0)
      return absl::DataLossError(absl::StrFormat(
          "data directory %s: unreadable schema version record '%s'", path, absl_sv(text)));
    if ((rc = mdb_dbi_open(txn.get(), kDataDbName, 0, &env.data)) != 0)
      return store_error(path, "mdb_dbi_open (data)", rc);
    if (purpose.kind == Purpose::kSetVersion) {
      if ((rc = put_version(txn.get(), env.meta, purpose.set_version)) != 0)
        return store_error(path, "mdb_put (schema version)", rc);
    } else if (version > schema.version) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "data directory %s has store schema version %d, newer than this kairos binary "
          "supports (%d); run a newer kairos",
          path, version, schema.version));
    } else if (purpose.kind == Purpose::kServe) {
      if (version < schema.version)
        return absl::FailedPreconditionError(absl::StrFormat(
            "data directory %s has store schema version %d, older than this kairos binary's "
            "(%d); back it up, then upgrade it with `kairos migrate --data-dir %s`",
            path, version, schema.version, path));
    } else {
      KAIROS_ASSIGN_OR_RETURN(const std::span<const LmdbMigrationStep> steps,
                              steps_from(path, schema, version));
      LmdbMigrationReport& report = *purpose.report;
      report.from = version;
      report.to = schema.version;
      for (const LmdbMigrationStep& step : steps) {
        report.steps.push_back(step_line(step));
        if (purpose.kind != Purpose::kMigrate) continue;
        if (absl::Status s = step.apply(txn.get(), env.meta, env.data); !s.ok())
          return absl::Status(
              s.code(), absl::StrFormat("data directory %s: migration step %s failed: %s; the "
                                        "store is unchanged (still version %d)",
                                        path, step_line(step), s.message(), version));
      }
      if (purpose.kind == Purpose::kPlan || steps.empty()) return absl::OkStatus();  // no write
      if ((rc = put_version(txn.get(), env.meta, schema.version)) != 0)
        return store_error(path, "mdb_put (schema version)", rc);
      report.written = true;
    }
  }
  if ((rc = txn.commit()) != 0) return store_error(path, "mdb_txn_commit (open)", rc);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<LmdbStorage>> LmdbStorage::Open(const LmdbOptions& options,
                                                               const Clock& clock, Timers& loop) {
  KAIROS_CHECK_MSG(options.max_batch > 0, "LmdbOptions::max_batch must be > 0");
  KAIROS_ASSIGN_OR_RETURN(std::unique_ptr<Env> env, OpenDirectory(options, Purpose{}));
  return std::unique_ptr<LmdbStorage>(new LmdbStorage(options, clock, loop, std::move(env)));
}

absl::StatusOr<LmdbMigrationReport> LmdbStorage::Migrate(const LmdbOptions& options, bool dry_run) {
  LmdbMigrationReport report;
  Purpose purpose;
  purpose.kind = dry_run ? Purpose::kPlan : Purpose::kMigrate;
  purpose.report = &report;
  KAIROS_ASSIGN_OR_RETURN(std::unique_ptr<Env> env, OpenDirectory(options, purpose));
  return report;
}

absl::Status LmdbStorage::SetSchemaVersionForTest(const LmdbOptions& options,
                                                  std::uint32_t version) {
  Purpose purpose;
  purpose.kind = Purpose::kSetVersion;
  purpose.set_version = version;
  return OpenDirectory(options, purpose).status();
}

absl::StatusOr<std::unique_ptr<LmdbStorage::Env>> LmdbStorage::OpenDirectory(
    const LmdbOptions& options, const Purpose& purpose) {
  KAIROS_CHECK_MSG(options.initial_map_size > 0, "LmdbOptions::initial_map_size must be > 0");
  const std::string& path = options.path;
  std::error_code ec;
  const fs::path dir(path);
  // Only serving creates a store; the other purposes need one.
  if (purpose.kind != Purpose::kServe && !fs::is_directory(dir, ec))
    return absl::NotFoundError(
        absl::StrFormat("data directory %s does not exist (no store to migrate)", path));
  // The directories this call creates, deepest first: removed again when
  // creating the store fails.
  std::vector<fs::path> made;
  if (!fs::exists(dir, ec)) {
    for (fs::path p = fs::absolute(dir, ec); !p.empty() && !fs::exists(p, ec);
         p = p.parent_path()) {
      made.push_back(p);
      if (p == p.parent_path()) break;
    }
    fs::create_directories(dir, ec);
    if (ec)
      return absl::UnavailableError(
          absl::StrFormat("cannot create data directory %s: %s", path, ec.message()));
  } else if (!fs::is_directory(dir, ec)) {
    return absl::FailedPreconditionError(
        absl::StrFormat("data directory %s exists and is not a directory", path));
  }
  auto env = std::make_unique<Env>();
  bool lock_was_new = false;
  absl::StatusOr<int> lock = lock_directory(path, lock_was_new);
  if (!lock.ok()) {
    for (const fs::path& p : made) fs::remove(p, ec);
    return lock.status();
  }
  env->lock_fd = *lock;
  // Undoes what this call created when the store is not there in the end:
  // a directory with no store stays one.
  auto undo = [&](bool store_files) {
    env->close_env();
    if (store_files) {
      fs::remove(dir / "data.mdb", ec);
      fs::remove(dir / "lock.mdb", ec);
    }
    if (lock_was_new) fs::remove(dir / kLmdbLockFile, ec);  // still locked: see lock_directory
    for (const fs::path& p : made) fs::remove(p, ec);       // only when empty
  };
  absl::StatusOr<DirState> state = classify_directory(path, lock_was_new);
  if (state.ok() && *state == DirState::kNew && purpose.kind != Purpose::kServe)
    state = absl::NotFoundError(
        absl::StrFormat("data directory %s holds no Kairos store (no data.mdb)", path));
  if (!state.ok()) {
    undo(false);
    return state.status();
  }
  if (absl::Status s = OpenEnv(options, purpose, *env); !s.ok()) {
    undo(*state == DirState::kNew);
    return s;
  }
  if (purpose.kind != Purpose::kServe && lock_was_new) undo(false);  // leave no trace behind
  return env;
}

LmdbStorage::LmdbStorage(LmdbOptions options, const Clock& clock, Timers& loop,
                         std::unique_ptr<Env> env)
    : options_(std::move(options)),
      clock_(clock),
      loop_(loop),
      env_(std::move(env)),
      arena_(std::make_unique<OverlayArena>()) {
  MDB_envinfo info;
  mdb_env_info(env_->env, &info);
  stats_.map_size = info.me_mapsize;
  writer_ = std::thread([this] { writer_main(); });
}

LmdbStorage::~LmdbStorage() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  writer_.join();
}

LmdbStorage::Stats LmdbStorage::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void LmdbStorage::transact(TxnBody body, TxnDone done, TxnMode mode) {
  KAIROS_CHECK(body && done);
  {
    std::lock_guard<std::mutex> lock(mu_);
    KAIROS_CHECK_MSG(!stopping_, "LmdbStorage::transact after shutdown began");
    queue_.push_back(Request{std::move(body), std::move(done), mode, {}, false});
  }
  cv_.notify_one();
}

void LmdbStorage::writer_main() {
  for (;;) {
    std::vector<Request> batch;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and everything queued is done
      while (!queue_.empty() && batch.size() < options_.max_batch) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    run_batch(batch);
    {
      std::lock_guard<std::mutex> lock(mu_);
      stats_.transactions += batch.size();
    }
    // One hand-off to the loop per batch, not per transaction: the dones
    // run there one after another in the batch's order, as they would from
    // one post each, for one queue operation (and at most one wake-up).
    std::vector<std::pair<TxnDone, TxnResult>> finished;
    finished.reserve(batch.size());
    for (auto& r : batch) finished.emplace_back(std::move(r.done), std::move(r.result));
    loop_.post([finished = std::move(finished)]() mutable {
      for (auto& [done, result] : finished) done(std::move(result));
    });
  }
}

void LmdbStorage::run_batch(std::vector<Request>& batch) {
  std::vector<Request*> writes;
  for (auto& r : batch)
    if (r.mode == TxnMode::kReadWrite) writes.push_back(&r);
  // A group can end early (a body too large to share a parent transaction),
  // so a batch may take more than one sync.
  std::size_t next = 0;
  while (next < writes.size()) next = run_write_group(writes, next);
  // Read-only bodies run after the parent commit(s): they see synced data only.
  for (auto& r : batch)
    if (r.mode == TxnMode::kReadOnly) run_read(r);
}

std::size_t LmdbStorage::run_write_group(std::vector<Request*>& writes, std::size_t begin) {
  // The group ends before `stop`: lowered when a body's writes do not fit
  // beside its predecessors' (MDB_TXN_FULL), so that body starts the next.
  std::size_t stop = writes.size();
  for (;;) {  // one iteration per attempt; repeated after the map grew
    TxnHandle parent;
    int rc = parent.begin(env_->env, nullptr, 0);
    if (rc == MDB_MAP_RESIZED) {  // another process grew the map: adopt its size
      KAIROS_CHECK(mdb_env_set_mapsize(env_->env, 0) == 0);
      continue;
    }
    if (rc != 0) {
      for (std::size_t j = begin; j < writes.size(); ++j)
        if (!writes[j]->finished)
          writes[j]->result = unavailable(store_error(options_.path, "mdb_txn_begin (write)", rc));
      return writes.size();
    }
    // Declared after `parent`, so destroyed (closed) before it aborts.
    SharedCursor cursor(parent.get(), env_->data);
    Request* map_full = nullptr;  // the body that ran out of map
    absl::Status map_full_status;
    bool retry = false;
    const std::size_t next = stop;
    for (std::size_t j = begin; j < stop; ++j) {
      Request& r = *writes[j];
      if (r.finished) continue;  // excluded by an earlier attempt
      arena_->reset();           // the previous body's overlay is gone
      LmdbTxn txn(parent.get(), env_->data, cursor, *arena_, clock_.now(), TxnMode::kReadWrite);
      absl::Status status = r.body(txn);
      if (txn.doomed()) {
        // A read failed. LMDB may have marked the parent failed too, so the
        // attempt is dropped: this body fails, its siblings run again.
        r.result = unavailable(body_error(options_.path, txn.error_code(), txn.error()));
        r.finished = true;
        retry = true;
        break;
      }
      if (!status.ok()) {
        r.result = {CommitOutcome::kAborted, std::move(status)};
        continue;  // its writes were only buffered
      }
      std::string_view operation;
      rc = txn.apply(&operation);
      if (rc == MDB_MAP_FULL) {
        map_full = &r;
        map_full_status = LmdbError(operation, rc);
        break;
      }
      if (rc == MDB_TXN_FULL && j > begin) {
        stop = j;  // commit the bodies before it; this body starts the next group
        retry = true;
        break;
      }
      if (rc != 0) {
        // The parent holds part of this body's writes: drop the whole
        // attempt, fail this body and run its siblings again.
        r.result = unavailable(store_error(options_.path, operation, rc));
        r.finished = true;
        retry = true;
        break;
      }
      r.result = TxnResult::Committed();
    }
    if (retry) continue;  // the cursor closes, then the parent aborts, in their destructors
    cursor.close();       // before the parent ends
    if (map_full != nullptr) {
      // mdb_env_set_mapsize needs no transaction active: abort first.
      parent.abort();
      if (!grow_map()) {  // at max_map_size: this body cannot fit; the rest run again
        map_full->result = unavailable(std::move(map_full_status));
        map_full->finished = true;
      }
      continue;
    }
    rc = parent.commit();  // frees the parent whatever the outcome
    if (rc == MDB_MAP_FULL) {
      if (grow_map()) continue;
      for (std::size_t j = begin; j < next; ++j)
        if (!writes[j]->finished)
          writes[j]->result = unavailable(LmdbError("mdb_txn_commit (group)", rc));
      return next;
    }
    // A damaged page met while preparing the commit: nothing was written
    // (LMDB writes the meta page last), so the group is definitely not applied.
    if (rc == MDB_CORRUPTED || rc == MDB_PAGE_NOTFOUND) {
      for (std::size_t j = begin; j < next; ++j)
        if (!writes[j]->finished)
          writes[j]->result = unavailable(store_error(options_.path, "mdb_txn_commit (group)", rc));
      return next;
    }
    // The sync failed: nobody can know what is on disk. Stop the process
    // rather than report committed, unknown or unavailable.
    if (rc != 0) {
      const std::string message = LmdbError("mdb_txn_commit (group commit sync)", rc).ToString();
      KAIROS_CHECK_MSG(rc == 0, message.c_str());
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.syncs;
    }
    return next;
  }
}

void LmdbStorage::run_read(Request& r) {
  TxnHandle txn;
  int rc = txn.begin(env_->env, nullptr, MDB_RDONLY);
  if (rc == MDB_MAP_RESIZED) {
    KAIROS_CHECK(mdb_env_set_mapsize(env_->env, 0) == 0);
    rc = txn.begin(env_->env, nullptr, MDB_RDONLY);
  }
  if (rc != 0) {
    r.result = unavailable(store_error(options_.path, "mdb_txn_begin (read-only)", rc));
    return;
  }
  SharedCursor cursor(txn.get(), env_->data);  // closed before txn aborts
  LmdbTxn view(txn.get(), env_->data, cursor, *arena_, clock_.now(), TxnMode::kReadOnly);
  absl::Status status = r.body(view);
  if (view.doomed()) {
    r.result = unavailable(body_error(options_.path, view.error_code(), view.error()));
  } else if (!status.ok()) {
    r.result = {CommitOutcome::kAborted, std::move(status)};
  } else {
    r.result = TxnResult::Committed();
  }
}

bool LmdbStorage::grow_map() {
  MDB_envinfo info;
  mdb_env_info(env_->env, &info);
  const std::size_t current = info.me_mapsize;
  if (options_.max_map_size != 0 && current >= options_.max_map_size) return false;
  std::size_t target = current * 2;
  if (options_.max_map_size != 0 && target > options_.max_map_size) target = options_.max_map_size;
  // Called between transactions on the writer thread, the only thread with
  // transactions on this environment, as mdb_env_set_mapsize requires.
  if (mdb_env_set_mapsize(env_->env, target) != 0) return false;
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.map_growths;
  stats_.map_size = target;
  return true;
}

}  // namespace kairos
