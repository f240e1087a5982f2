// LMDB data file check: decides, with plain read()s and before LMDB maps the
// file, whether an existing data.mdb is safe to hand to LMDB.
//
// Purpose. LMDB maps data.mdb and trusts what it finds: a file shorter than
// its meta page claims, or a page whose node offsets or sizes point past the
// page, makes the process read past the end of the file (SIGBUS) or of the
// map (SIGSEGV). LMDB itself checks only a page's type on the way down, and
// only the pages a transaction happens to touch. This check reads the file
// once and refuses it unless every page LMDB can reach through the newest
// meta page stays inside the file.
//
// What it checks (LMDB 0.9 on-disk format, 64-bit, native byte order): both
// meta pages (page type, magic, format version, equal power-of-two page
// size); the meta page LMDB will use (the one with the larger transaction id,
// ties to page 0) must have a last page number the file covers, i.e. the file
// is at least (last page + 1) x page size bytes. Then every tree reachable
// from it (the free-page database, the main database and each named database
// in it): every branch and leaf page is within the last page, reached once,
// names its own page number, has sane free-space bounds, and each node's
// header, key and value lie inside the page; a branch's children and a big
// value's overflow pages lie within the last page, the overflow header
// matches and covers the value; every leaf sits at the depth the database
// records; free-page lists are well-formed and list pages within the file.
//
// What it does not check: key order, record contents, and pages no tree
// reaches (free pages). It is a property of the bytes at the moment of the
// read: a file changed afterwards by another process is not covered.
//
// Cost: one read of every reachable page (and of free-list overflow pages)
// at open; values on overflow pages are checked by their headers only.
#pragma once

#include <string>

#include "absl/status/status.h"

namespace kairos {

// Checks the LMDB data file at `file` (which exists and is not empty).
// OK: LMDB may map it. Otherwise an error naming `file` and what is wrong:
// kFailedPrecondition when the file is not an LMDB data file of this format
// (no meta page, another LMDB version, a feature Kairos never uses);
// kDataLoss when it is one but truncated or damaged; kUnavailable when it
// cannot be read.
absl::Status CheckLmdbDataFile(const std::string& file);

}  // namespace kairos
