// A durable LMDB store in a fresh temporary directory for the benchmarks,
// with its own Asio loop: run_all() submits bodies and waits for every
// result (each must commit); the directory is removed on destruction unless
// keep_files() was called.
#pragma once

#include <stdlib.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/base/check.h"
#include "prod/runtime/asio_runtime.h"
#include "prod/store/lmdb_storage.h"

namespace kairos {

class LmdbBenchStore {
 public:
  explicit LmdbBenchStore(std::size_t max_batch = 4096) {
    const char* base = getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/kairos-bench-XXXXXX";
    KAIROS_CHECK(mkdtemp(tmpl.data()) != nullptr);
    dir_ = tmpl;
    LmdbOptions o;
    o.path = dir_;
    o.initial_map_size = std::size_t{1} << 30;
    o.max_batch = max_batch;
    auto s = LmdbStorage::Open(o, clock_, timers_);
    KAIROS_CHECK(s.ok());
    store_ = std::move(s).value();
  }
  ~LmdbBenchStore() {
    close();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  // Submits every body at once and waits for all results.
  void run_all(std::vector<TxnBody> bodies, TxnMode mode = TxnMode::kReadWrite) {
    std::size_t left = bodies.size();
    for (auto& b : bodies)
      store_->transact(
          std::move(b),
          [&](TxnResult r) {
            KAIROS_CHECK(r.committed());
            --left;
          },
          mode);
    while (left > 0) io_.run_one();
  }
  void run(TxnBody body, TxnMode mode = TxnMode::kReadWrite) {
    std::vector<TxnBody> v;
    v.push_back(std::move(body));
    run_all(std::move(v), mode);
  }
  LmdbStorage& store() { return *store_; }
  const std::string& dir() const { return dir_; }
  // Closes the store, keeping its files (dir() stays valid until the
  // destructor removes it).
  void close() {
    store_.reset();
    io_.poll();
  }

 private:
  std::string dir_;
  SystemClock clock_;
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_ =
      boost::asio::make_work_guard(io_);
  AsioTimers timers_{io_};
  std::unique_ptr<LmdbStorage> store_;
};

}  // namespace kairos
