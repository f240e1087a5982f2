// The storage conformance checks. Each check drives one StoreHarness and
// returns "" when the adapter behaved as core/ports/storage.h requires, or a
// description of the first violation. The typed suite
// (storage_conformance_test.cc) expects "" from every adapter; the suite's
// own test (broken_adapters_test.cc) expects a violation from deliberately
// broken adapters, proving the checks can fail.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/ports/storage.h"
#include "tests/conformance/storage_harness.h"

namespace kairos::storage_test {

using Model = std::map<std::string, std::string, std::less<>>;

// One operation of a generated transaction.
struct Op {
  enum Kind : std::uint8_t { kGet, kScan, kPut, kErase, kEraseRange } kind = kGet;
  std::string a;      // key, or scan/erase begin
  std::string b;      // scan/erase end ("" = unbounded)
  std::string value;  // put
  std::size_t limit = 1;
  bool reverse = false;
};
struct TxnSpec {
  std::vector<Op> ops;
  bool read_only = false;
  bool abort = false;  // the body returns an error after its ops
};

// A Txn over a std::map: the reference semantics.
class ModelTxn final : public Txn {
 public:
  ModelTxn(Model& data, absl::Time now, TxnMode mode) : data_(data), now_(now), mode_(mode) {}
  absl::Time now() const override { return now_; }
  std::optional<std::string> get(std::string_view key) override;
  std::vector<KeyValue> scan(std::string_view begin, std::string_view end, std::size_t limit,
                             Direction direction) override;
  void put(std::string_view key, std::string_view value) override;
  void erase(std::string_view key) override;
  void erase_range(std::string_view begin, std::string_view end) override;

 private:
  Model& data_;
  absl::Time now_;
  TxnMode mode_;
};

// A body that runs `spec`, recording every read's answer in `*out`.
TxnBody spec_body(const TxnSpec& spec, std::vector<std::string>* out);

// Helpers that drive one transaction to an answer.
TxnResult run_once(StoreHarness& h, TxnBody body, TxnMode mode = TxnMode::kReadWrite);
// Retries kConflict and kUnavailable (bounded); returns the final result.
TxnResult run_retrying(StoreHarness& h, const TxnBody& body, TxnMode mode = TxnMode::kReadWrite);
// For idempotent bodies: also retries kUnknown, until committed or aborted.
TxnResult commit_idempotent(StoreHarness& h, const TxnBody& body);
// The whole store, read through a read-only transaction.
Model read_all(StoreHarness& h);
void clear_all(StoreHarness& h);

// The checks.
std::string check_basic_ops(StoreHarness& h);
std::string check_scans(StoreHarness& h);
std::string check_read_your_writes(StoreHarness& h);
std::string check_abort_leaves_no_trace(StoreHarness& h);
std::string check_read_only(StoreHarness& h);
std::string check_now(StoreHarness& h);
std::string check_limits(StoreHarness& h);  // kMaxKeySize keys, large values
std::string check_model(StoreHarness& h, const std::vector<TxnSpec>& specs);
std::string check_model_random(StoreHarness& h, std::uint64_t seed, int txns);
// `n` read-modify-write transactions submitted at once: no lost update.
std::string check_concurrent_increments(StoreHarness& h, int n);
// Acknowledged commits survive crash() (harnesses with can_crash()).
std::string check_crash_keeps_acknowledged(StoreHarness& h, std::uint64_t seed);

}  // namespace kairos::storage_test
