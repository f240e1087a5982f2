// Storage: a serializable, transactional, ordered key-value store.
//
// Purpose. Every durable state change in Kairos (jobs, the due index, runs,
// leases, leader records) is one transaction over byte-string keys ordered
// bytewise (memcmp order, shorter prefix first). core/kernel/keyspace.h is the one
// place that decides which keys exist; core/base/key_codec.h encodes them so that
// byte order is the intended order.
//
// The transaction model. A caller hands the store a *body*: a synchronous
// function that reads and writes through a Txn. The store runs the body (on its
// own thread if it does I/O), commits, and delivers exactly one TxnResult back
// on the caller's event loop. Because a store may run the body more than once
// (after an internal conflict, say), a body must have no effect other than its
// reads and writes through the Txn; it may capture an output slot by reference
// that it overwrites on every run, and the caller reads that slot only when the
// result says kCommitted (or, for read-only transactions, kCommitted as well).
//
// Isolation. Transactions are serializable: the committed ones behave as if
// they had run one at a time in some order, and a body always observes a
// consistent snapshot plus its own earlier writes (read-your-writes, including
// erase_range). Two transactions whose reads and writes conflict never both
// commit.
//
// Outcomes. Each call of transact() ends in exactly one of:
//   kCommitted   - applied and durable (see Durability below).
//   kConflict    - not applied; it lost a race with another transaction.
//                  Retrying (running the body again) is safe and expected.
//   kUnavailable - definitely not applied (store down, connection refused
//                  before the request was sent, read error). Retry later.
//   kUnknown     - may or may not have been applied: the request reached the
//                  store but the reply was lost or timed out. The caller must
//                  not assume either; it re-reads, or retries a body that is
//                  idempotent (e.g. keyed by an idempotency key) so that
//                  "applied twice" equals "applied once". Never fold this into
//                  a failure: that is where naive exactly-once breaks.
//   kAborted     - the body itself returned a non-OK status: nothing it wrote
//                  is applied and `status` is the body's own error. Not a
//                  store failure; retrying gives the same answer unless the
//                  data changed.
//
// Durability. kCommitted is reported only after the sync that covers the
// transaction has completed (fsync/fdatasync, or the replicated commit of a
// database). Stores may batch many transactions into one sync (group commit);
// the caller's event loop never blocks on a sync. A store whose sync fails
// cannot know what is on disk: it stops the process (KAIROS_CHECK) rather than
// report committed, unknown or unavailable.
//
// Time. Txn::now() is the store's clock: one authority, the same for every
// node, used to judge lease expiry. It is read once per body run and is
// constant during that run.
//
// Limits. Keys are 1..kMaxKeySize bytes; values at most kMaxValueSize bytes.
// Violating a limit is a programming error (KAIROS_CHECK), since keyspace.h
// owns every key shape and record sizes are validated at the API boundary.
// Every adapter enforces them through check_key_limits(), so each one stops
// with the same message ("key size out of range: ...", "value larger than
// kMaxValueSize: ...") whatever is underneath. Scan and erase_range bounds
// are not keys: they may be empty and are not checked.
//
// Threading. transact() is called from the owner's event loop; `done` runs on
// that same loop, never re-entrantly inside transact().
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace kairos {

// LMDB's default maximum key size; every adapter honours the same limit.
inline constexpr std::size_t kMaxKeySize = 511;
inline constexpr std::size_t kMaxValueSize = 16u << 20;

namespace detail {
[[noreturn]] void key_size_out_of_range(std::size_t size);
[[noreturn]] void value_too_large(std::size_t size);
}  // namespace detail

// The limits above, shared by every adapter: stops the process (KAIROS_CHECK
// style, naming the size) when `key` is empty or longer than kMaxKeySize.
// Adapters call it for the key of every get, put and erase.
inline void check_key_limits(std::string_view key) {
  if (key.empty() || key.size() > kMaxKeySize) detail::key_size_out_of_range(key.size());
}
// The same for a put: the key, then `value` (at most kMaxValueSize bytes).
inline void check_key_limits(std::string_view key, std::string_view value) {
  check_key_limits(key);
  if (value.size() > kMaxValueSize) detail::value_too_large(value.size());
}

enum class Direction : std::uint8_t { kForward, kReverse };

enum class TxnMode : std::uint8_t {
  kReadWrite,
  // The body only reads. Writing through the Txn is a programming error.
  // Stores may run read-only bodies concurrently with writers on a snapshot;
  // the result is kCommitted when the snapshot was consistent.
  kReadOnly,
};

struct KeyValue {
  std::string key;
  std::string value;
  friend bool operator==(const KeyValue&, const KeyValue&) = default;
};

// The view of the store that a transaction body gets. Valid only during the
// body's run; never store a pointer to it.
class Txn {
 public:
  virtual ~Txn() = default;

  // The store's clock, fixed for this run of the body.
  virtual absl::Time now() const = 0;

  // The value at `key`, or nullopt when absent. Sees this transaction's own
  // writes.
  virtual std::optional<std::string> get(std::string_view key) = 0;

  // Entries with begin <= key < end in key order (kForward: ascending from
  // begin; kReverse: descending from just below end). An empty `end` means
  // "no upper bound". At most `limit` entries (limit must be > 0). Sees this
  // transaction's own writes.
  virtual std::vector<KeyValue> scan(std::string_view begin, std::string_view end,
                                     std::size_t limit,
                                     Direction direction = Direction::kForward) = 0;

  // Claiming from a queue: up to `limit` entries (limit must be > 0) with
  // begin <= key < end in ascending key order (empty `end`: no upper bound),
  // as scan(begin, end, limit) would return them, except that the store may
  // leave out any key another in-flight transaction has reserved or written
  // (a concurrent claimer's keys). The answer is a subsequence of scan's
  // answer: present in this transaction's view, own writes included, with
  // their values; this transaction's own reserved keys are never left out.
  // So:
  //   - a left-out key is not proof of absence, and a short answer does not
  //     mean the range holds fewer than `limit` entries;
  //   - the first key returned need not be the range's first.
  // Use it only for queue-like ranges where taking any ready entry in place
  // of another is acceptable, never to decide that something does not exist.
  // A store that overrides it reserves every key it returns until this
  // transaction ends, so concurrent claimers get disjoint keys and one's
  // erase or put of its keys does not wait for, or lose to, another claimer
  // of them (returned keys stay reserved even if the body does not write
  // them). Either way isolation is not weakened: the transaction stays
  // serializable, its writes to what it claimed are what fence the claim,
  // and it may still end kConflict, to be retried as ever. The default, and
  // the answer in a read-only transaction, is exactly scan(begin, end,
  // limit): correct under serializable isolation, with concurrent claimers
  // of the same entries meeting at their writes, where all but one conflict.
  virtual std::vector<KeyValue> scan_claimable(std::string_view begin, std::string_view end,
                                               std::size_t limit) {
    return scan(begin, end, limit, Direction::kForward);
  }

  // Sets `key` to `value`, replacing any previous value.
  virtual void put(std::string_view key, std::string_view value) = 0;

  // Removes `key`; a no-op when absent.
  virtual void erase(std::string_view key) = 0;

  // Removes every key with begin <= key < end (empty `end`: no upper bound).
  virtual void erase_range(std::string_view begin, std::string_view end) = 0;
};

enum class CommitOutcome : std::uint8_t {
  kCommitted,
  kConflict,
  kUnavailable,
  kUnknown,
  kAborted,
};

std::string_view to_string(CommitOutcome outcome);

struct TxnResult {
  CommitOutcome outcome = CommitOutcome::kUnavailable;
  // OK when committed; the body's error for kAborted; the adapter's
  // explanation (naming the operation) for the other outcomes.
  absl::Status status;

  bool committed() const { return outcome == CommitOutcome::kCommitted; }
  // True when the transaction may have been applied.
  bool maybe_applied() const {
    return outcome == CommitOutcome::kCommitted || outcome == CommitOutcome::kUnknown;
  }
  static TxnResult Committed() { return {CommitOutcome::kCommitted, absl::OkStatus()}; }
};

// A transaction body. Returning a non-OK status aborts the transaction.
using TxnBody = std::function<absl::Status(Txn&)>;
using TxnDone = std::function<void(TxnResult)>;

class Storage {
 public:
  virtual ~Storage() = default;

  // Runs `body` as one serializable transaction and calls `done` exactly once
  // with its outcome, on the caller's event loop, after the covering sync for
  // a commit. See the file comment for every outcome's meaning.
  virtual void transact(TxnBody body, TxnDone done, TxnMode mode = TxnMode::kReadWrite) = 0;
};

}  // namespace kairos
