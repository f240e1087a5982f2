// Shared by the LMDB adapter's tests: a store on its own io_context with a
// manual clock, driven synchronously.
#pragma once

#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/twins/manual_clock.h"
#include "prod/runtime/asio_runtime.h"
#include "prod/store/lmdb_storage.h"

namespace kairos::test_support {

// One LMDB store on its own io_context, driven synchronously by the test:
// run() submits one body and turns the loop until its result arrives.
class LmdbRig {
 public:
  explicit LmdbRig(LmdbOptions options) : options_(std::move(options)) {}
  ~LmdbRig() { close(); }

  absl::Status open() {
    auto s = LmdbStorage::Open(options_, clock_, timers_);
    if (!s.ok()) return s.status();
    store_ = std::move(s).value();
    return absl::OkStatus();
  }
  void close() {
    store_.reset();
    io_.poll();
  }
  LmdbStorage& store() { return *store_; }

  TxnResult run(TxnBody body, TxnMode mode = TxnMode::kReadWrite) {
    std::optional<TxnResult> result;
    store_->transact(
        std::move(body), [&](TxnResult r) { result = std::move(r); }, mode);
    while (!result) io_.run_one_for(std::chrono::seconds(60));
    return *result;
  }
  // Submits all bodies at once, then waits for every result.
  std::vector<TxnResult> run_all(std::vector<TxnBody> bodies) {
    std::vector<std::optional<TxnResult>> results(bodies.size());
    std::size_t left = bodies.size();
    for (std::size_t i = 0; i < bodies.size(); ++i)
      store_->transact(std::move(bodies[i]), [&, i](TxnResult r) {
        results[i] = std::move(r);
        --left;
      });
    while (left > 0) io_.run_one_for(std::chrono::seconds(60));
    std::vector<TxnResult> out;
    for (auto& r : results) out.push_back(*r);
    return out;
  }
  std::optional<std::string> get(const std::string& key) {
    std::optional<std::string> v;
    EXPECT_TRUE(run(
                    [&](Txn& t) {
                      v = t.get(key);
                      return absl::OkStatus();
                    },
                    TxnMode::kReadOnly)
                    .committed());
    return v;
  }

 private:
  LmdbOptions options_;
  ManualClock clock_;
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_ =
      boost::asio::make_work_guard(io_);
  AsioTimers timers_{io_};
  std::unique_ptr<LmdbStorage> store_;
};

}  // namespace kairos::test_support
