// API routes: the HTTP API of docs/API.md on top of SchedulerNode's job API.
//
// Purpose. Binds every route of the contract (docs/API.md, docs/openapi.yaml)
// to the node: a request body is decoded by job_json.h, the node's call runs
// on the loop, and its result (or its absl::Status) becomes the response.
// The routes hold no state of their own beyond the HTTP request counters.
//
// Guarantees.
// - Status mapping: InvalidArgument 400, NotFound 404, AlreadyExists and
//   the kernel's refusals of a state (FailedPrecondition, e.g. pausing a
//   cancelled job) 409 conflict, If-Match mismatch 412, Unavailable 503; an
//   Unavailable from the store ("outcome unknown") says that the write may
//   have happened and that the request is safe to retry (every node body is
//   idempotent); anything else 500. Errors have the contract's shape.
// - Every response that carries a job carries ETag: "<generation>". PUT,
//   PATCH, DELETE, :pause and :resume honour If-Match: "<generation>",
//   checked by the kernel in the write's own transaction (a mismatch is 412
//   and nothing is written; a request already in effect succeeds), and
//   If-Match: * (the job must exist; read just before the write). PATCH
//   applies the merge patch inside the update's transaction.
// - /v1/cluster: every shard's leader by the store's leader records and the
//   store's clock (a lapsed lease shows no leader), plus this node's view.
// - /healthz: 200 while the process serves. /readyz: 200 only when the
//   store is open, the node runs, its clock agrees with the store's and every
//   shard's leadership is known (this node leads it, or another node holds a
//   live lease by the store's records), else 503 naming the reason; while the
//   server drains for shutdown the reason is "draining".
// - /metrics: the node's Metrics in Prometheus text format, histograms whose
//   name ends in _us exported in seconds (_seconds), plus
//   kairos_http_requests_total{route=,status=} and
//   kairos_http_request_duration_seconds{route=} (every route's handler is
//   timed on the steady clock; docs/API.md lists every metric).
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "core/kernel/scheduler_node.h"
#include "core/ports/metrics.h"
#include "prod/api/run_stats.h"
#include "prod/http/http_server.h"

namespace kairos::api {

struct ApiOptions {
  std::size_t default_page_size = 100;
  std::size_t max_page_size = 1000;
  std::size_t default_runs_limit = 100;
  std::size_t max_runs_limit = 1000;
  // True while the store is open (the server's; tests: always).
  std::function<bool()> store_open = [] { return true; };
  // GET /v1/stats: the node's per-minute run statistics (null: none kept)
  // and the time its minutes are counted to.
  const RunStats* stats = nullptr;
  std::function<absl::Time()> now = [] { return absl::Now(); };
  // True once the server drains for shutdown: /readyz answers 503 "draining".
  std::function<bool()> draining = [] { return false; };
};

class ApiRoutes {
 public:
  // `node` and `metrics` outlive this object and every request it serves.
  ApiRoutes(SchedulerNode& node, Metrics& metrics, ApiOptions options = {});

  // Every route of the contract, bound to this object.
  http::Router router();
  // Counts one answered request (HttpServerOptions::on_response).
  void count(std::string_view route, int status);

 private:
  void create(const http::Request& r, http::Reply reply);
  void batch(const http::Request& r, http::Reply reply);
  void put(const http::Request& r, http::Reply reply);
  void list(const http::Request& r, http::Reply reply);
  void get(const http::Request& r, http::Reply reply);
  void patch(const http::Request& r, http::Reply reply);
  void remove(const http::Request& r, http::Reply reply);
  void control(const http::Request& r, http::Reply reply, bool pause);
  void trigger(const http::Request& r, http::Reply reply);
  void runs(const http::Request& r, http::Reply reply);
  void occurrences(const http::Request& r, http::Reply reply);
  void cluster(http::Reply reply);
  void readyz(http::Reply reply);
  // The If-Match generation to hand the kernel (nullopt: none); "*" is
  // checked here (the job must exist) before `then` runs.
  using Generation = std::optional<std::uint64_t>;
  void with_precondition(const http::Request& r, http::Reply reply,
                         std::function<void(http::Reply, Generation)> then);

  SchedulerNode& node_;
  Metrics& metrics_;
  ApiOptions options_;
};

// The registry as Prometheus text: to_prometheus(), with every histogram
// family named *_us renamed *_seconds and its bounds and sum in seconds.
std::string prometheus_text(const Metrics& metrics);

}  // namespace kairos::api
