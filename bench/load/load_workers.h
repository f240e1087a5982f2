// In-process remote workers for the load tool: core's Worker over the
// production TCP transport, with a runner that does nothing.
//
// Purpose. `kairos-load` measures the server, not process spawning: each of
// its workers is the same Worker loop `kairos worker` runs
// (core/kernel/worker.h), connected to the server's --listen address through
// prod/net/tcp_transport.h with the same handshake (and worker secret, when
// given), and a NoopRunner that succeeds every attempt on the next turn of
// the loop. Everything the server sees is the real worker protocol.
//
// What it records (on the workers' loop thread; read only after stop()):
// per started attempt its (job, incarnation, nominal) and its firing
// lateness (the worker's clock at Runner::start minus the run's nominal
// time), and per answered completion report whether the server accepted it
// and when. Attempts started twice for one occurrence are counted, so a
// duplicate cannot hide.
//
// Threading. start() runs the workers' io_context on a thread of its own;
// wait_for_reports() blocks the caller until the expected number of reports
// was answered or the deadline passed; stop() stops the workers on their
// loop, joins the thread and leaves the records readable.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "prod/net/tcp_transport.h"

namespace kairos::load {

struct WorkerPoolOptions {
  net::NetAddress server;             // the server's --listen address
  std::optional<std::string> secret;  // the worker secret, when the server requires one
  std::uint32_t workers = 4;
  std::uint32_t slots = 4;        // concurrent runs per worker
  std::uint32_t concurrency = 0;  // total slots (the last worker takes the remainder)
  absl::Duration lease_ttl = absl::Seconds(30);
  std::string id_prefix = "kairos-load";
  // Only runs of jobs whose id starts with this count as ours; others are
  // run (a no-op) and counted as foreign.
  std::string job_prefix;
};

struct WorkerRecords {
  // Lateness of every first start of one of our occurrences, microseconds.
  std::vector<std::int64_t> lateness_us;
  std::optional<absl::Time> first_start, last_start;
  std::optional<absl::Time> last_accepted;
  std::uint64_t starts = 0;                        // attempts started for our jobs
  std::uint64_t duplicate_starts = 0;              // starts of an occurrence already started
  std::uint64_t foreign_starts = 0;                // attempts of jobs that are not ours
  std::uint64_t accepted = 0;                      // reports the server accepted
  std::uint64_t rejected = 0;                      // reports it rejected
  std::map<std::string, std::uint64_t> anomalies;  // lease lost, report dropped, ...
  std::vector<std::string> duplicate_examples;     // at most 10 occurrence keys
};

class WorkerPool {
 public:
  explicit WorkerPool(WorkerPoolOptions options);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Starts the loop thread and every worker; waits up to `connect_timeout`
  // until every worker finished its handshake (error otherwise, naming how
  // many did).
  absl::Status start(absl::Duration connect_timeout);
  // Blocks until `expected` reports of our runs were answered (accepted or
  // rejected) or `deadline` passed; returns whether all were.
  bool wait_for_reports(std::uint64_t expected, absl::Time deadline);
  // Answered reports so far (any thread).
  std::uint64_t answered() const { return answered_.load(); }
  // Stops the workers and the loop; idempotent.
  void stop();
  const WorkerRecords& records() const { return records_; }

 private:
  struct State;
  WorkerPoolOptions options_;
  std::unique_ptr<State> state_;
  WorkerRecords records_;
  std::atomic<std::uint64_t> answered_{0};
  std::atomic<std::uint32_t> ready_{0};
  // Until wait_for_reports() sets it, no report wakes the waiter.
  std::atomic<std::uint64_t> expected_{UINT64_MAX};
  std::mutex mu_;
  std::condition_variable cv_;
};

}  // namespace kairos::load
