#include "prod/store/lmdb_file_check.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "absl/strings/str_format.h"
#include "core/base/check.h"

namespace kairos {
namespace {

static_assert(sizeof(std::size_t) == 8, "the check reads the 64-bit LMDB format");

// LMDB 0.9 on-disk layout (mdb.c): page header, meta record, node header.
constexpr std::size_t kPageHeader =
    16;  // pgno u64, pad u16, flags u16, lower/upper u16 (or pages u32)
constexpr std::size_t kMetaRecord =
    136;  // MDB_meta: magic, version, address, mapsize, 2 dbs, last_pg, txnid
constexpr std::size_t kDbRecord = 48;   // MDB_db
constexpr std::size_t kNodeHeader = 8;  // lo u16, hi u16, flags u16, ksize u16
constexpr std::uint32_t kMagic = 0xBEEFC0DE;
constexpr std::uint32_t kDataVersion = 1;
constexpr std::uint64_t kInvalidPage = ~std::uint64_t{0};
constexpr std::uint64_t kMinPageSize = 512;
constexpr std::uint64_t kMaxPageSize = 65536;
constexpr int kMaxDepth = 32;  // LMDB's cursor stack

constexpr std::uint16_t kPageBranch = 0x01;
constexpr std::uint16_t kPageLeaf = 0x02;
constexpr std::uint16_t kPageOverflow = 0x04;
constexpr std::uint16_t kPageMeta = 0x08;
constexpr std::uint16_t kPageLeaf2 = 0x20;
constexpr std::uint16_t kPageSub = 0x40;
constexpr std::uint16_t kPageTypes =
    kPageBranch | kPageLeaf | kPageOverflow | kPageMeta | kPageLeaf2 | kPageSub;

constexpr std::uint16_t kNodeBig = 0x01;  // value on overflow pages
constexpr std::uint16_t kNodeSub = 0x02;  // value is a named database record
constexpr std::uint16_t kNodeDup = 0x04;  // duplicate-sorted values
constexpr std::uint16_t kDbDupSort = 0x04;

std::uint16_t ld16(std::string_view b, std::size_t at) {
  std::uint16_t v;
  std::memcpy(&v, b.data() + at, sizeof v);
  return v;
}
std::uint32_t ld32(std::string_view b, std::size_t at) {
  std::uint32_t v;
  std::memcpy(&v, b.data() + at, sizeof v);
  return v;
}
std::uint64_t ld64(std::string_view b, std::size_t at) {
  std::uint64_t v;
  std::memcpy(&v, b.data() + at, sizeof v);
  return v;
}

struct Db {
  std::uint32_t pad = 0;  // the page size, in the free database's record
  std::uint16_t flags = 0;
  std::uint16_t depth = 0;
  std::uint64_t root = kInvalidPage;
};

Db parse_db(std::string_view b, std::size_t at) {
  Db d;
  d.pad = ld32(b, at);
  d.flags = ld16(b, at + 4);
  d.depth = ld16(b, at + 6);
  d.root = ld64(b, at + 40);
  return d;
}

struct Meta {
  bool present = false;  // the bytes could be read
  std::uint16_t page_flags = 0;
  std::uint32_t magic = 0;
  std::uint32_t version = 0;
  Db free_db;
  Db main_db;
  std::uint64_t last_page = 0;
  std::uint64_t txnid = 0;
  std::uint64_t page_size() const { return free_db.pad; }
  bool is_meta() const { return present && (page_flags & kPageMeta) != 0 && magic == kMagic; }
};

bool power_of_two_page(std::uint64_t p) {
  return p >= kMinPageSize && p <= kMaxPageSize && (p & (p - 1)) == 0;
}

class Checker {
 public:
  Checker(std::string file, int fd, std::uint64_t size)
      : file_(std::move(file)), fd_(fd), size_(size) {}
  ~Checker() {
    if (map_ != nullptr) ::munmap(const_cast<char*>(map_), map_len_);
  }
  Checker(const Checker&) = delete;
  Checker& operator=(const Checker&) = delete;

  absl::Status run() {
    Meta m0 = read_meta(0);
    if (!m0.present)
      return truncated(absl::StrFormat("%d bytes, shorter than one LMDB meta page", size_));
    std::uint64_t psize = m0.page_size();
    if (!m0.is_meta() || !power_of_two_page(psize)) {
      // Meta page 0 tells where page 1 is; without it, look for page 1 at
      // every page size LMDB can use, to tell damage from a foreign file.
      for (std::uint64_t p = kMinPageSize; p <= kMaxPageSize; p *= 2) {
        const Meta m1 = read_meta(p);
        if (m1.is_meta() && m1.page_size() == p)
          return damaged("meta page 0 is invalid (meta page 1 is intact, but LMDB needs both)");
      }
      return absl::FailedPreconditionError(absl::StrFormat(
          "%s is not an LMDB environment: no valid LMDB meta page (if this directory held a "
          "Kairos store, the file is destroyed: restore the data directory from a backup)",
          file_));
    }
    const Meta m1 = read_meta(psize);
    if (!m1.present)
      return truncated(absl::StrFormat("%d bytes, shorter than LMDB's two meta pages of %d bytes",
                                       size_, psize));
    if (!m1.is_meta()) return damaged("meta page 1 is invalid (meta page 0 is intact)");
    if (m0.version != kDataVersion || m1.version != kDataVersion)
      return absl::FailedPreconditionError(absl::StrFormat(
          "%s was written by an incompatible LMDB version (data format %d, this binary reads %d)",
          file_, m0.version != kDataVersion ? m0.version : m1.version, kDataVersion));
    if (m1.page_size() != psize)
      return damaged(absl::StrFormat("the meta pages disagree on the page size (%d and %d)", psize,
                                     m1.page_size()));
    // The meta page LMDB will use: the newer one, ties to page 0.
    const Meta& m = m1.txnid > m0.txnid ? m1 : m0;
    psize_ = psize;
    if (m.last_page < 1 || m.last_page > (std::uint64_t{1} << 48))
      return damaged(absl::StrFormat("meta page %d claims an impossible last page %d",
                                     &m == &m1 ? 1 : 0, m.last_page));
    last_page_ = m.last_page;
    if (size_ / psize_ < last_page_ + 1)
      return truncated(absl::StrFormat(
          "%d bytes, but its meta page (transaction %d) claims %d pages of %d bytes (%d bytes)",
          size_, m.txnid, last_page_ + 1, psize_, (last_page_ + 1) * psize_));
    // Every page the walk reads lies within the pages the file was just
    // found to hold, so a read-only map of them serves the walk without a
    // read() and a copy per page (it cannot fault past the end of the file
    // unless another process shrinks the file meanwhile, which would make
    // LMDB's own map fault as well). Without a map the walk reads.
    map_len_ = static_cast<std::size_t>((last_page_ + 1) * psize_);
    void* map = ::mmap(nullptr, map_len_, PROT_READ, MAP_SHARED, fd_, 0);
    if (map != MAP_FAILED)
      map_ = static_cast<const char*>(map);
    else
      map_len_ = 0;
    seen_.assign(last_page_ + 1, false);
    seen_[0] = seen_[1] = true;
    if (absl::Status s = walk_db(m.free_db, Kind::kFree, "the free-page database"); !s.ok())
      return s;
    return walk_db(m.main_db, Kind::kMain, "the main database");
  }

 private:
  enum class Kind { kFree, kMain, kNamed };

  Meta read_meta(std::uint64_t offset) {
    Meta m;
    std::string b;
    if (!read_at(offset, kPageHeader + kMetaRecord, b)) return m;
    m.present = true;
    m.page_flags = ld16(b, 10);
    m.magic = ld32(b, kPageHeader);
    m.version = ld32(b, kPageHeader + 4);
    m.free_db = parse_db(b, kPageHeader + 24);
    m.main_db = parse_db(b, kPageHeader + 24 + kDbRecord);
    m.last_page = ld64(b, kPageHeader + 24 + 2 * kDbRecord);
    m.txnid = ld64(b, kPageHeader + 24 + 2 * kDbRecord + 8);
    return m;
  }

  // The `n` bytes at `offset`: a view of the map when they lie in it, else
  // read into `buf`; false when the file ends first.
  bool view_at(std::uint64_t offset, std::size_t n, std::string& buf, std::string_view& out) {
    if (map_ != nullptr && offset <= map_len_ && n <= map_len_ - offset) {
      out = std::string_view(map_ + offset, n);
      return true;
    }
    if (!read_at(offset, n, buf)) return false;
    out = buf;
    return true;
  }

  // Reads exactly `n` bytes at `offset`; false when the file ends first.
  bool read_at(std::uint64_t offset, std::size_t n, std::string& out) {
    out.assign(n, '\0');
    if (offset > size_ || n > size_ - offset) return false;
    std::size_t done = 0;
    while (done < n) {
      const ssize_t r =
          ::pread(fd_, out.data() + done, n - done, static_cast<off_t>(offset + done));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) {
        io_error_ = errno;
        return false;
      }
      if (r == 0) return false;
      done += static_cast<std::size_t>(r);
    }
    return true;
  }

  absl::Status truncated(std::string why) {
    if (io_error_ != 0) return read_error();
    return absl::DataLossError(absl::StrFormat(
        "%s is truncated: %s; the store is damaged: restore the data directory from a backup",
        file_, why));
  }
  absl::Status damaged(std::string why) {
    if (io_error_ != 0) return read_error();
    return absl::DataLossError(
        absl::StrFormat("%s is damaged: %s; restore the data directory from a backup", file_, why));
  }
  absl::Status bad_page(std::uint64_t page, std::string_view why) {
    return damaged(absl::StrFormat("page %d: %s", page, why));
  }
  absl::Status read_error() {
    return absl::UnavailableError(
        absl::StrFormat("cannot read %s: %s", file_, std::strerror(io_error_)));
  }

  // Marks pages [first, first + count) as reached; false when one was already.
  bool claim(std::uint64_t first, std::uint64_t count) {
    for (std::uint64_t p = first; p < first + count; ++p) {
      if (seen_[p]) return false;
      seen_[p] = true;
    }
    return true;
  }

  absl::Status walk_db(const Db& db, Kind kind, std::string_view name) {
    if (db.root == kInvalidPage) return absl::OkStatus();  // empty
    if (kind == Kind::kNamed && (db.flags & kDbDupSort) != 0)
      return absl::FailedPreconditionError(absl::StrFormat(
          "%s holds a duplicate-sorted database, which a Kairos store never has: not a Kairos "
          "store",
          file_));
    if (db.depth < 1 || db.depth > kMaxDepth)
      return damaged(absl::StrFormat("%s records an impossible depth %d", name, db.depth));
    if (db.root < 2 || db.root > last_page_)
      return damaged(absl::StrFormat("%s has its root at page %d, outside pages 2..%d", name,
                                     db.root, last_page_));
    return walk_page(db.root, 1, db.depth, kind);
  }

  absl::Status walk_page(std::uint64_t page, int level, int depth, Kind kind) {
    if (!claim(page, 1)) return bad_page(page, "reached twice (a cycle or shared page)");
    std::string buf;
    std::string_view b;
    if (!view_at(page * psize_, psize_, buf, b))
      return truncated("a page ends past the end of file");
    if (ld64(b, 0) != page)
      return bad_page(page, absl::StrFormat("its header names page %d", ld64(b, 0)));
    const std::uint16_t type = ld16(b, 10) & kPageTypes;
    if (type != kPageBranch && type != kPageLeaf)
      return bad_page(page, absl::StrFormat("not a branch or leaf page (flags 0x%x)", ld16(b, 10)));
    if ((type == kPageLeaf) != (level == depth))
      return bad_page(page, absl::StrFormat("a %s at level %d of a tree of depth %d",
                                            type == kPageLeaf ? "leaf" : "branch", level, depth));
    const std::uint64_t lower = ld16(b, 12), upper = ld16(b, 14);
    if (lower < kPageHeader || lower > upper || upper > psize_ || (lower - kPageHeader) % 2 != 0)
      return bad_page(page, absl::StrFormat("bad free-space bounds %d..%d", lower, upper));
    const std::uint64_t n = (lower - kPageHeader) / 2;
    if (type == kPageBranch && n == 0) return bad_page(page, "a branch page without children");
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::uint64_t at = ld16(b, kPageHeader + 2 * i);
      if (at < upper || at + kNodeHeader > psize_)
        return bad_page(page, absl::StrFormat("node %d lies outside the node area", i));
      const std::uint64_t lo = ld16(b, at), hi = ld16(b, at + 2), flags = ld16(b, at + 4),
                          key_size = ld16(b, at + 6);
      const std::uint64_t data_at = at + kNodeHeader + key_size;
      if (data_at > psize_)
        return bad_page(page, absl::StrFormat("the key of node %d overruns the page", i));
      if (type == kPageBranch) {
        const std::uint64_t child = lo | (hi << 16) | (flags << 32);
        if (child < 2 || child > last_page_)
          return bad_page(page, absl::StrFormat("node %d points at page %d, outside pages 2..%d", i,
                                                child, last_page_));
        if (absl::Status s = walk_page(child, level + 1, depth, kind); !s.ok()) return s;
        continue;
      }
      const std::uint64_t data_size = lo | (hi << 16);
      if ((flags & kNodeDup) != 0)
        return absl::FailedPreconditionError(absl::StrFormat(
            "%s holds duplicate-sorted values, which a Kairos store never has: not a Kairos store",
            file_));
      std::string value;  // read only where the check needs the bytes
      if ((flags & kNodeBig) != 0) {
        if (data_at + 8 > psize_)
          return bad_page(page, absl::StrFormat("node %d overruns the page", i));
        const std::uint64_t first = ld64(b, data_at);
        if (absl::Status s = check_overflow(page, i, first, data_size); !s.ok()) return s;
        if (kind == Kind::kFree &&
            !read_at(first * psize_ + kPageHeader, static_cast<std::size_t>(data_size), value))
          return truncated("a free-page list ends past the end of file");
      } else {
        if (data_at + data_size > psize_)
          return bad_page(page, absl::StrFormat("the value of node %d overruns the page", i));
        if (kind != Kind::kNamed) value.assign(b.substr(data_at, data_size));
      }
      if ((flags & kNodeSub) != 0) {
        if (kind != Kind::kMain || (flags & kNodeBig) != 0 || data_size != kDbRecord)
          return bad_page(page, absl::StrFormat("node %d: a misplaced database record", i));
        const Db named = parse_db(value, 0);
        if (absl::Status s = walk_db(named, Kind::kNamed,
                                     absl::StrFormat("the database at page %d node %d", page, i));
            !s.ok())
          return s;
      } else if (kind == Kind::kFree) {
        if (absl::Status s = check_free_list(page, i, value); !s.ok()) return s;
      }
    }
    return absl::OkStatus();
  }

  absl::Status check_overflow(std::uint64_t page, std::uint64_t node, std::uint64_t first,
                              std::uint64_t data_size) {
    if (first < 2 || first > last_page_)
      return bad_page(page, absl::StrFormat("node %d: its value at page %d, outside pages 2..%d",
                                            node, first, last_page_));
    std::string buf;
    std::string_view h;
    if (!view_at(first * psize_, kPageHeader, buf, h))
      return truncated("an overflow page ends past the end of file");
    const std::uint64_t pages = ld32(h, 12);
    if (ld64(h, 0) != first || (ld16(h, 10) & kPageTypes) != kPageOverflow || pages == 0 ||
        pages > last_page_ + 1 - first || kPageHeader + data_size > pages * psize_)
      return bad_page(page, absl::StrFormat("node %d: the overflow pages at %d do not hold its "
                                            "value of %d bytes",
                                            node, first, data_size));
    if (!claim(first, pages))
      return bad_page(first, "overflow pages reached twice (shared with another page)");
    return absl::OkStatus();
  }

  // A free-page list: a count, then that many page numbers.
  absl::Status check_free_list(std::uint64_t page, std::uint64_t node, const std::string& v) {
    if (v.size() < 8 || v.size() % 8 != 0)
      return bad_page(page, absl::StrFormat("node %d: a malformed free-page list", node));
    const std::uint64_t count = ld64(v, 0);
    if (count > v.size() / 8 - 1)
      return bad_page(page,
                      absl::StrFormat("node %d: a free-page list longer than its record", node));
    for (std::uint64_t j = 1; j <= count; ++j) {
      const std::uint64_t p = ld64(v, 8 * j);
      if (p < 2 || p > last_page_)
        return bad_page(page, absl::StrFormat("node %d: free page %d outside pages 2..%d", node, p,
                                              last_page_));
    }
    return absl::OkStatus();
  }

  const std::string file_;
  const int fd_;
  const std::uint64_t size_;
  const char* map_ = nullptr;  // pages 0..last_page_ of the file, read-only
  std::size_t map_len_ = 0;
  std::uint64_t psize_ = 0;
  std::uint64_t last_page_ = 0;
  std::vector<bool> seen_;
  int io_error_ = 0;
};

}  // namespace

absl::Status CheckLmdbDataFile(const std::string& file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return absl::UnavailableError(
        absl::StrFormat("cannot open %s: %s", file, std::strerror(errno)));
  struct stat st;
  absl::Status result;
  if (::fstat(fd, &st) != 0) {
    result =
        absl::UnavailableError(absl::StrFormat("cannot stat %s: %s", file, std::strerror(errno)));
  } else if (!S_ISREG(st.st_mode)) {
    result = absl::FailedPreconditionError(absl::StrFormat("%s is not a regular file", file));
  } else {
    result = Checker(file, fd, static_cast<std::uint64_t>(st.st_size)).run();
  }
  ::close(fd);
  return result;
}

}  // namespace kairos
