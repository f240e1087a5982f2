// Drain on signal: the graceful shutdown that `kairos server` and
// `kairos worker` share.
//
// Purpose. Turns SIGTERM/SIGINT into a drain of the process's core Workers
// (core/kernel/worker.h) on the process's one event loop, with a bound:
//   - first signal: every worker drains (no new claim; a grant still
//     arriving is handed straight back; running attempts go on, their
//     heartbeats and reports too), and `on_draining` runs (the server marks
//     itself not ready); event drain.started with the number running;
//   - all workers drained (nothing runs, every report answered or given up):
//     event drain.done, the loop stops;
//   - --drain-timeout passed first: event drain.timeout with the number
//     still running, and every worker stops its running attempts
//     (Worker::stop_running: SIGTERM, SIGKILL after the kill grace); each
//     reports kStopped, which hands its run back, and the drain ends when
//     those reports are answered, or after kill grace plus a slack
//     (event drain.abandoned; a run not handed back keeps its lease until it
//     lapses, then is retried with a higher fencing token);
//   - a second signal at any point: event drain.interrupted, the loop stops
//     at once.
// A timeout of 0 stops the running attempts at once. When the loop stops the
// caller runs its usual shutdown (which stops the workers and terminates
// whatever still runs), so the process always ends, within
// timeout + kill grace + slack of the first signal, plus the caller's own
// bounded shutdown.
//
// Every event carries process=server|worker; the same phases are also
// printed as one line each on stderr ("kairos server: draining: ...").
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "core/kernel/worker.h"
#include "core/ports/clock.h"
#include "core/ports/event_log.h"
#include "core/ports/timers.h"

namespace kairos::cli {

// --drain-timeout: default and bounds (0: stop running attempts at once).
inline constexpr absl::Duration kDefaultDrainTimeout = absl::Seconds(30);
inline constexpr absl::Duration kMaxDrainTimeout = absl::Hours(24);

struct DrainOptions {
  std::string process;  // "server" or "worker"
  absl::Duration timeout = kDefaultDrainTimeout;
  absl::Duration kill_grace = absl::Seconds(1);  // the runners' SIGTERM -> SIGKILL grace
};

class DrainOnSignal {
 public:
  // `workers` (may be empty) outlive this object or the stop of the loop,
  // whichever comes first.
  DrainOnSignal(boost::asio::io_context& io, Timers& timers, const Clock& clock, EventLog& log,
                std::vector<Worker*> workers, DrainOptions options,
                std::function<void()> on_draining = {});
  ~DrainOnSignal();
  DrainOnSignal(const DrainOnSignal&) = delete;
  DrainOnSignal& operator=(const DrainOnSignal&) = delete;

  // The first signal received ("SIGTERM"/"SIGINT"; empty before one).
  const std::string& signal_name() const { return signal_; }
  // How the drain ended: "drained", "abandoned", "interrupted" (empty
  // while it has not).
  const std::string& outcome() const { return outcome_; }
  // Stops waiting for signals (before the caller's shutdown).
  void cancel();

 private:
  void arm();
  void on_signal(int signal);
  void on_worker_drained();
  void on_timeout();
  void finish(std::string outcome);
  std::size_t running() const;
  std::size_t pending_reports() const;
  void say(const std::string& line) const;

  boost::asio::io_context& io_;
  Timers& timers_;
  const Clock& clock_;
  EventLog& log_;
  std::vector<Worker*> workers_;
  DrainOptions options_;
  std::function<void()> on_draining_;
  boost::asio::signal_set signals_;
  std::string signal_;
  std::string outcome_;
  std::size_t undrained_ = 0;
  absl::Time started_;
  std::optional<TimerId> timeout_timer_;
  std::optional<TimerId> bound_timer_;
};

}  // namespace kairos::cli
