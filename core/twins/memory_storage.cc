#include "core/twins/memory_storage.h"

#include <iterator>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "core/base/check.h"

namespace kairos {

class MemoryTxn final : public Txn {
 public:
  MemoryTxn(MemoryStorage& store, absl::Time now, TxnMode mode,
            std::vector<MemoryStorage::Undo>& undo)
      : store_(store), data_(store.data_), now_(now), mode_(mode), undo_(undo) {}

  absl::Time now() const override { return now_; }

  std::optional<std::string> get(std::string_view key) override {
    check_key_limits(key);
    auto it = store_.find(key);
    if (it == data_.end()) return std::nullopt;
    return it->second;
  }

  std::vector<KeyValue> scan(std::string_view begin, std::string_view end, std::size_t limit,
                             Direction direction) override {
    KAIROS_CHECK(limit > 0);
    std::vector<KeyValue> out;
    if (!end.empty() && end <= begin) return out;
    if (direction == Direction::kForward) {
      for (auto it = data_.lower_bound(begin); it != data_.end() && out.size() < limit; ++it) {
        if (!end.empty() && it->first >= end) break;
        out.push_back({it->first, it->second});
      }
    } else {
      auto it = end.empty() ? data_.end() : data_.lower_bound(end);
      while (it != data_.begin() && out.size() < limit) {
        --it;
        if (it->first < begin) break;
        out.push_back({it->first, it->second});
      }
    }
    return out;
  }

  void put(std::string_view key, std::string_view value) override {
    check_write();
    check_key_limits(key, value);
    auto it = store_.find(key);
    if (it != data_.end()) {
      // The old value moves into the undo record (when this is the key's
      // first write in the transaction) before the new one replaces it.
      remember(key, &it->second);
      it->second.assign(value.data(), value.size());
    } else {
      remember(key, nullptr);
      store_.insert(key, value);
    }
  }

  void erase(std::string_view key) override {
    check_write();
    check_key_limits(key);
    auto it = store_.find(key);
    if (it == data_.end()) return;
    remember(key, &it->second);
    store_.erase(it);
  }

  void erase_range(std::string_view begin, std::string_view end) override {
    KAIROS_CHECK_MSG(mode_ == TxnMode::kReadWrite, "write in a read-only transaction");
    if (!end.empty() && end <= begin) return;
    auto it = data_.lower_bound(begin);
    while (it != data_.end() && (end.empty() || it->first < end)) {
      auto next = std::next(it);
      remember(it->first, &it->second);
      store_.erase(it);
      it = next;
    }
  }

 private:
  // Below this many undo records a transaction finds its earlier writes by a
  // linear search; past it, in a hash set (built once from the records).
  static constexpr std::size_t kLinearTouched = 16;

  void check_write() const {
    KAIROS_CHECK_MSG(mode_ == TxnMode::kReadWrite, "write in a read-only transaction");
  }
  // Records the key's value before this transaction's first write to it
  // (`current`: its value now, null when absent). The value is moved out:
  // every caller overwrites or erases it next.
  void remember(std::string_view key, std::string* current) {
    if (touched(key)) return;
    undo_.push_back({std::string(key),
                     current ? std::optional<std::string>(std::move(*current)) : std::nullopt});
    if (!touched_.empty() || undo_.size() > kLinearTouched) {
      if (touched_.empty())
        for (const auto& u : undo_) touched_.emplace(u.key);
      else
        touched_.emplace(key);
    }
  }
  bool touched(std::string_view key) const {
    if (!touched_.empty()) return touched_.contains(absl::string_view(key.data(), key.size()));
    for (const auto& u : undo_)
      if (u.key == key) return true;
    return false;
  }

  MemoryStorage& store_;
  MemoryStorage::Map& data_;
  absl::Time now_;
  TxnMode mode_;
  std::vector<MemoryStorage::Undo>& undo_;
  // Lookups only, never iterated: hash order cannot leak into behaviour.
  absl::flat_hash_set<std::string> touched_;
};

MemoryStorage::Map::iterator MemoryStorage::find(std::string_view key) const {
  auto it = index_.find(absl::string_view(key.data(), key.size()));
  return it == index_.end() ? const_cast<Map&>(data_).end() : it->second;
}

MemoryStorage::Map::iterator MemoryStorage::insert(std::string_view key, std::string_view value) {
  auto [it, inserted] = data_.emplace(std::string(key), std::string(value));
  KAIROS_CHECK(inserted);
  index_.emplace(absl::string_view(it->first), it);
  return it;
}

void MemoryStorage::erase(Map::iterator it) {
  index_.erase(absl::string_view(it->first));
  data_.erase(it);
}

void MemoryStorage::roll_back(std::vector<Undo>& undo) {
  for (auto u = undo.rbegin(); u != undo.rend(); ++u) {
    auto it = find(u->key);
    if (u->old_value) {
      if (it != data_.end())
        it->second = std::move(*u->old_value);
      else
        insert(u->key, *u->old_value);
    } else if (it != data_.end()) {
      erase(it);
    }
  }
}

TxnResult MemoryStorage::run_collect(const TxnBody& body, TxnMode mode,
                                     std::vector<Undo>* undo_out) {
  std::vector<Undo> undo;
  MemoryTxn txn(*this, clock_.now(), mode, undo);
  absl::Status status = body(txn);
  if (!status.ok()) {
    roll_back(undo);
    return {CommitOutcome::kAborted, std::move(status)};
  }
  if (!undo.empty()) ++commits_;
  if (undo_out) *undo_out = std::move(undo);
  return TxnResult::Committed();
}

TxnResult MemoryStorage::run(const TxnBody& body, TxnMode mode) {
  std::vector<Undo> undo;
  TxnResult result = run_collect(body, mode, &undo);
  if (result.committed() && deferred_ && (!undo.empty() || !unsynced_.empty()))
    unsynced_.push_back({std::move(undo), nullptr});
  return result;
}

void MemoryStorage::transact(TxnBody body, TxnDone done, TxnMode mode) {
  std::vector<Undo> undo;
  TxnResult result = run_collect(body, mode, &undo);
  // With deferred sync, a commit is acknowledged only after the sync that
  // covers it; so is any transaction that ran after an unsynced commit, since
  // it may have read that commit's writes.
  if (result.committed() && deferred_ && (!undo.empty() || !unsynced_.empty())) {
    unsynced_.push_back({std::move(undo), std::move(done)});
    return;
  }
  loop_.post(
      [done = std::move(done), result = std::move(result)]() mutable { done(std::move(result)); });
}

void MemoryStorage::clear() {
  index_.clear();
  data_.clear();
  unsynced_.clear();
}

void MemoryStorage::sync() {
  auto pending = std::move(unsynced_);
  unsynced_.clear();
  for (auto& u : pending)
    if (u.done) loop_.post([d = std::move(u.done)]() mutable { d(TxnResult::Committed()); });
}

void MemoryStorage::lose_unsynced() {
  for (auto it = unsynced_.rbegin(); it != unsynced_.rend(); ++it) roll_back(it->undo);
  unsynced_.clear();
}

}  // namespace kairos
