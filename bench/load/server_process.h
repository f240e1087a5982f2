// A `kairos server` the load tool starts itself (--spawn), and what /proc
// says about a server process.
//
// Purpose. With --spawn the tool runs the given `kairos` binary as
//   kairos server --data-dir TMP/data --workers 0 --http 127.0.0.1:0
//                 --listen 127.0.0.1:0 [--auth-token-file F]
//                 [--worker-secret-file F] [--lease-ttl D] [EXTRA...]
// in a fresh temporary directory, so nothing but the tool's own workers runs
// its jobs. Its stdout goes to TMP/server.out and its stderr (the event
// log) to TMP/server.log; start() waits for the ready line and reads the
// two free ports the server picked from those files (the same lines an
// operator sees: "kairos server: http api on ADDR:PORT" and the
// net.listening event). stop() sends SIGTERM (a drain), waits, and SIGKILLs
// after a bound; the destructor stops and removes the directory unless it
// is kept.
//
// Process figures (any server pid on this machine): CPU seconds (user +
// system, /proc/PID/stat fields 14 and 15), resident memory (field 24) and
// its anonymous part (RssAnon of /proc/PID/status: without the store's
// memory-mapped file).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace kairos::load {

struct ProcessFigures {
  double cpu_seconds = 0;
  std::uint64_t rss_bytes = 0;       // resident, the store's mapped pages included
  std::uint64_t rss_anon_bytes = 0;  // resident anonymous memory (heap, stacks): without them
};
// From /proc/PID/stat and /proc/PID/status (RssAnon); an error when the
// process is gone or unreadable.
absl::StatusOr<ProcessFigures> process_figures(pid_t pid);
// The bytes of the regular files under `dir` (the store's size on disk).
std::uint64_t directory_bytes(const std::string& dir);
// Where --spawn makes its temporary directory: $TMPDIR, else /tmp.
std::string temp_base();
// Bytes an unprivileged process may still write on the file system of
// `dir`; nullopt when statvfs fails.
std::optional<std::uint64_t> free_bytes(const std::string& dir);
// /proc/loadavg's first three fields, "1.38 1.18 1.72"; empty when unreadable.
std::string load_average();

struct SpawnOptions {
  std::string binary;  // path to `kairos`
  std::string token_file;
  std::string secret_file;
  std::optional<absl::Duration> lease_ttl;
  std::vector<std::string> extra_flags;
  bool keep = false;  // leave the temporary directory behind
  absl::Duration ready_timeout = absl::Seconds(60);
};

class ServerProcess {
 public:
  explicit ServerProcess(SpawnOptions options);
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  // Starts the server and waits for it to be ready; errors carry the tail
  // of its log.
  absl::Status start();
  // SIGTERM, then SIGKILL after `grace`; returns the exit status text.
  std::string stop(absl::Duration grace = absl::Seconds(30));
  // Stops the server (SIGTERM: it drains) and starts it again with the
  // same data directory and flags (new free ports: read http_url() and
  // listen() again); returns the time from its start to its ready line
  // (about 10 ms resolution). Its earlier output stays as server.out.1 and
  // server.log.1.
  absl::StatusOr<absl::Duration> restart();

  pid_t pid() const { return pid_; }
  const std::string& http_url() const { return http_url_; }  // http://127.0.0.1:PORT
  const std::string& listen() const { return listen_; }      // 127.0.0.1:PORT
  const std::string& dir() const { return dir_; }
  std::string data_dir() const { return dir_ + "/data"; }
  std::string log_tail(std::size_t lines = 20) const;

 private:
  absl::Status launch();  // runs the binary in dir_ and waits for its ready line
  SpawnOptions options_;
  std::string dir_;
  absl::Time ready_at_ = absl::InfinitePast();
  pid_t pid_ = -1;
  std::string http_url_;
  std::string listen_;
};

}  // namespace kairos::load
