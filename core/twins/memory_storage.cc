#include "core/twins/memory_storage.h"

#include <utility>

#include "absl/container/flat_hash_set.h"
#include "core/base/check.h"

namespace kairos {

class MemoryTxn final : public Txn {
 public:
  MemoryTxn(MemoryStorage::Map& data, absl::Time now, TxnMode mode,
            std::vector<MemoryStorage::Undo>& undo)
      : data_(data), now_(now), mode_(mode), undo_(undo) {}

  absl::Time now() const override { return now_; }

  std::optional<std::string> get(std::string_view key) override {
    check_key_limits(key);
    auto it = data_.find(key);
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
    // One tree walk for the undo record and the write.
    auto it = data_.lower_bound(key);
    const bool present = it != data_.end() && it->first == key;
    remember(key, present ? &it->second : nullptr);
    if (present) {
      it->second.assign(value.data(), value.size());
    } else {
      data_.emplace_hint(it, std::string(key), std::string(value));
    }
  }

  void erase(std::string_view key) override {
    check_write();
    check_key_limits(key);
    auto it = data_.find(key);
    if (it == data_.end()) return;
    remember(key, &it->second);
    data_.erase(it);
  }

  void erase_range(std::string_view begin, std::string_view end) override {
    KAIROS_CHECK_MSG(mode_ == TxnMode::kReadWrite, "write in a read-only transaction");
    if (!end.empty() && end <= begin) return;
    auto it = data_.lower_bound(begin);
    while (it != data_.end() && (end.empty() || it->first < end)) {
      remember(it->first, &it->second);
      it = data_.erase(it);
    }
  }

 private:
  void check_write() const {
    KAIROS_CHECK_MSG(mode_ == TxnMode::kReadWrite, "write in a read-only transaction");
  }
  // Records the key's value before this transaction's first write to it
  // (`current`: its value now, null when absent).
  void remember(std::string_view key, const std::string* current) {
    if (!touched_.emplace(key).second) return;
    undo_.push_back(
        {std::string(key), current ? std::optional<std::string>(*current) : std::nullopt});
  }

  MemoryStorage::Map& data_;
  absl::Time now_;
  TxnMode mode_;
  std::vector<MemoryStorage::Undo>& undo_;
  // Lookups only, never iterated: hash order cannot leak into behaviour.
  absl::flat_hash_set<std::string> touched_;
};

void MemoryStorage::roll_back(Map& data, const std::vector<Undo>& undo) {
  for (auto it = undo.rbegin(); it != undo.rend(); ++it) {
    if (it->old_value)
      data.insert_or_assign(it->key, *it->old_value);
    else
      data.erase(it->key);
  }
}

TxnResult MemoryStorage::run_collect(const TxnBody& body, TxnMode mode,
                                     std::vector<Undo>* undo_out) {
  std::vector<Undo> undo;
  MemoryTxn txn(data_, clock_.now(), mode, undo);
  absl::Status status = body(txn);
  if (!status.ok()) {
    roll_back(data_, undo);
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

void MemoryStorage::sync() {
  auto pending = std::move(unsynced_);
  unsynced_.clear();
  for (auto& u : pending)
    if (u.done) loop_.post([d = std::move(u.done)]() mutable { d(TxnResult::Committed()); });
}

void MemoryStorage::lose_unsynced() {
  for (auto it = unsynced_.rbegin(); it != unsynced_.rend(); ++it) roll_back(data_, it->undo);
  unsynced_.clear();
}

}  // namespace kairos
