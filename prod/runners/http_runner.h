// HttpRunner: runs a job's HttpPayload as one HTTP or HTTPS request (a
// webhook).
//
// Purpose. The production Runner (core/ports/runner.h) for HTTP jobs. Each
// attempt is one request on a new connection (Connection: close), made with
// Boost.Beast over Asio (TLS: OpenSSL) on the worker's io_context; nothing
// blocks the loop (name resolution runs on Asio's resolver thread).
//
// The request. payload.method to the path and query of payload.url (parsed
// strictly: parse_http_url below; the fragment is never sent), with
//   Host (from the URL), User-Agent (options.user_agent), Content-Length,
//   Connection: close,
//   Idempotency-Key      request.idempotency_key, verbatim
//   Kairos-Fencing-Token request.fencing_token, decimal
//   Kairos-Job-Id        request.job_id
//   Kairos-Run-Id        request.run_id
//   Kairos-Attempt       request.attempt, decimal
//   Kairos-Scheduled-At  request.nominal_time, RFC 3339 UTC
//   Kairos-Late-By, Kairos-Occurrences  only for a late or folded run, in the
//                        format of the process runner's KAIROS_LATE_BY and
//                        KAIROS_OCCURRENCES
// plus payload.headers. A payload header named like any of those (compared
// without case) is dropped: a payload can neither forge the token or the key
// nor break the message framing. payload.body is the body.
//
// Outcomes (through `done`, exactly once, on the loop, never inside start()
// or stop(), and only after the connection is closed):
//   2xx                                 -> kSucceeded, exit_code = status
//   429, 5xx, a 4xx listed in options.retryable_statuses
//                                       -> kFailed (retryable)
//   any other 4xx                       -> kFailedPermanent
//   3xx                                 -> kFailedPermanent: redirects are
//                                          not followed (detail names the
//                                          Location)
//   1xx (after up to 8 interim responses, which are skipped; 101) or a
//   status outside 100..599             -> kFailed
//   a bad URL, method or header, a payload that is not HTTP
//                                       -> kFailedPermanent, started = false
//   name resolution, connect or TLS handshake failed (certificate
//   verification included)              -> kFailed, started = false: no byte
//                                          of the request was sent
//   the connection failed while sending or reading
//                                       -> kFailed (started: bytes may have
//                                          reached the server)
//   request.deadline reached            -> kTimedOut; started says whether
//                                          sending had begun
//   stop()                              -> kStopped, likewise
// RunOutcome::output is the start of the response body, at most
// options.output_bytes; once that much is read (or the whole body, if
// shorter) the connection is closed and the rest is not read. detail is
// "HTTP 503 Service Unavailable" or what failed and where.
//
// The deadline covers everything: resolution, connect, TLS handshake,
// sending and reading. At the deadline or on stop() the resolver is
// cancelled and the socket closed at once (no further byte is sent), then
// the outcome is posted.
//
// TLS. https verifies the server's certificate chain (the system store plus
// options.ca_file) and its name against the URL's host (DNS name or IP
// address), sends the host as SNI (not for an IP address), and requires TLS
// 1.2 or newer. options.verify_certificates = false turns verification off
// (tests, never production).
//
// Threading. Everything runs on the loop thread that runs `io`; `timers`
// must post to that loop. The destructor closes every connection and
// delivers no outcome.
#pragma once

#include <boost/asio/io_context.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/ports/clock.h"
#include "core/ports/runner.h"
#include "core/ports/timers.h"

namespace kairos {

// A URL the HTTP runner can request: "http" or "https" (any case), "://",
// a host (a DNS name of letters, digits, '-', '_' and '.', or an IPv4
// address, or an IPv6 address in brackets), an optional port 1..65535, then
// an optional path and query of printable ASCII without spaces; a fragment
// ('#...') is dropped. No user info ("user@"), no percent-encoded host.
struct HttpUrl {
  bool tls = false;
  std::string host;  // without brackets
  bool host_is_ip = false;
  std::uint16_t port = 0;   // the scheme's default when not given
  std::string target;       // path and query, "/" when the URL has none
  std::string host_header;  // Host: host[:port], brackets kept, port only if not default
};
// The error names the URL and what is wrong with it ("payload.http.url:
// 'http://h:0/': port must be 1..65535").
absl::StatusOr<HttpUrl> parse_http_url(std::string_view url);

struct HttpExit {
  const RunRequest* request = nullptr;  // valid during the call only
  RunOutcome outcome;
  absl::Duration elapsed;
};

struct HttpRunnerOptions {
  // Verify the server's certificate and name (https). Off only in tests.
  bool verify_certificates = true;
  // PEM file of CA certificates trusted in addition to the system store.
  std::string ca_file;
  // 4xx statuses (besides 429) that are retryable (kFailed) instead of
  // permanent, e.g. 408 or 409 for a target that uses them for "not yet".
  std::vector<int> retryable_statuses;
  // How much of the response body goes into RunOutcome::output (the start);
  // at most kMaxRunOutputSize.
  std::size_t output_bytes = 16 * 1024;
  std::string user_agent = "kairos";
  // Called on the loop right before `done` (for logs).
  std::function<void(const HttpExit&)> on_exit;
};

class HttpRunner final : public Runner {
 public:
  // Fails (naming the file and OpenSSL's reason) when options.ca_file cannot
  // be loaded, or when output_bytes is above kMaxRunOutputSize.
  static absl::StatusOr<std::unique_ptr<HttpRunner>> create(boost::asio::io_context& io,
                                                            Timers& timers, const Clock& clock,
                                                            HttpRunnerOptions options = {});
  ~HttpRunner() override;
  HttpRunner(const HttpRunner&) = delete;
  HttpRunner& operator=(const HttpRunner&) = delete;

  RunHandle start(RunRequest request, std::function<void(RunOutcome)> done) override;
  void stop(RunHandle handle) override;

  // Shutdown: stop() every running attempt (outcomes kStopped, delivered).
  void terminate_all();

  // Attempts started and not yet finished.
  std::size_t running() const { return calls_.size(); }

 private:
  struct Call;
  struct Tls;
  using CallPtr = std::shared_ptr<Call>;
  HttpRunner(boost::asio::io_context& io, Timers& timers, const Clock& clock,
             HttpRunnerOptions options, std::unique_ptr<Tls> tls);

  void fail_to_start(RunRequest request, std::function<void(RunOutcome)> done, std::string detail);
  void resolved(const CallPtr& c);
  void connected(const CallPtr& c);
  void send(const CallPtr& c);
  void read_header(const CallPtr& c);
  void read_body(const CallPtr& c);
  void respond(const CallPtr& c);
  void finish(const CallPtr& c, RunOutcome outcome);
  void deliver(RunRequest request, std::function<void(RunOutcome)> done, RunOutcome outcome,
               absl::Time started);

  boost::asio::io_context& io_;
  Timers& timers_;
  const Clock& clock_;
  HttpRunnerOptions options_;
  std::unique_ptr<Tls> tls_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  RunHandle next_handle_ = 0;
  std::map<RunHandle, CallPtr> calls_;
};

}  // namespace kairos
