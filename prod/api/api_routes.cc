#include "prod/api/api_routes.h"

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/serialize.hpp>
#include <charconv>
#include <chrono>
#include <initializer_list>
#include <memory>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/base/absl_compat.h"
#include "core/base/check.h"
#include "core/base/duration.h"
#include "core/base/rfc3339.h"
#include "core/base/text.h"
#include "core/schedule/schedule_text.h"
#include "prod/api/job_json.h"
#include "prod/api/next_fires.h"

namespace kairos::api {
namespace json = boost::json;
using http::Reply;
using http::Request;
using http::Response;

namespace {

Response json_response(int status, const json::value& body) {
  Response r;
  r.status = status;
  r.body = api::serialize(body);
  return r;
}

std::string etag(const JobRecord& job) { return absl::StrCat("\"", job.generation, "\""); }

Response job_response(int status, const JobRecord& job) {
  Response r;
  r.status = status;
  append_job_json(r.body, job);
  r.headers.emplace_back("ETag", etag(job));
  return r;
}

// The contract's response for a failed call (see the header's mapping).
Response error_response(const absl::Status& status) {
  std::string_view code = error_code(status.code());
  int http = http_status(status.code());
  std::string message(status.message());
  if (is_generation_mismatch(status))
    return json_response(
        412, error_body("precondition_failed", absl::StrCat("If-Match does not hold: ", message),
                        "If-Match"));
  if (status.code() == absl::StatusCode::kFailedPrecondition) {
    code = "conflict";  // a refusal of the job's state; 412 is If-Match only
    http = 409;
  }
  if (status.code() == absl::StatusCode::kUnavailable)
    message = absl::StrCat(
        "the store did not confirm the outcome (", message,
        "); the change may or may not have been made, and the request is safe to retry");
  if (status.code() == absl::StatusCode::kDataLoss) message = absl::StrCat("store: ", message);
  return json_response(http, error_body(code, message, error_field(status)));
}

Response bad_request(std::string_view field, std::string_view message) {
  return error_response(field_error(field, message));
}

absl::Status only_params(const Request& r, std::initializer_list<std::string_view> known) {
  for (const auto& [name, value] : r.query) {
    bool ok = false;
    for (std::string_view k : known) ok = ok || name == k;
    if (!ok) return field_error(name, "unknown query parameter");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::size_t> size_param(const Request& r, std::string_view name, std::size_t dflt,
                                       std::size_t max) {
  auto it = r.query.find(std::string(name));
  if (it == r.query.end()) return dflt;
  std::size_t value = 0;
  const std::string& text = it->second;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || value < 1 || value > max)
    return field_error(
        name, absl::StrCat("must be an integer in [1, ", max, "], got '", excerpt(text), "'"));
  return value;
}

absl::StatusOr<absl::Time> time_param(const Request& r, std::string_view name, absl::Time dflt) {
  auto it = r.query.find(std::string(name));
  if (it == r.query.end()) return dflt;
  auto t = parse_rfc3339(it->second);
  if (!t.ok()) return field_error(name, std_sv(t.status().message()));
  return *t;
}

// "k=v,k2=v2" -> labels.
absl::StatusOr<std::map<std::string, std::string>> parse_selector(std::string_view text) {
  std::map<std::string, std::string> labels;
  if (text.empty()) return labels;
  for (absl::string_view term : absl::StrSplit(absl_sv(text), ',')) {
    const auto eq = term.find('=');
    if (eq == absl::string_view::npos || eq == 0)
      return field_error(
          "selector", absl::StrCat("expected k=v[,k2=v2...], got '", excerpt(std_sv(term)), "'"));
    labels[std::string(term.substr(0, eq))] = std::string(term.substr(eq + 1));
  }
  return labels;
}

// The If-Match header's generation: nullopt when absent or "*".
absl::StatusOr<std::optional<std::uint64_t>> if_match(const Request& r) {
  std::string text = r.header("If-Match");
  if (text.empty() || text == "*") return std::optional<std::uint64_t>();
  std::string_view v = text;
  if (v.starts_with("W/")) v.remove_prefix(2);
  std::uint64_t g = 0;
  if (v.size() < 3 || v.front() != '"' || v.back() != '"')
    return field_error("If-Match", "expected a quoted generation such as \"3\"");
  v = v.substr(1, v.size() - 2);
  const auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), g);
  if (ec != std::errc() || ptr != v.data() + v.size())
    return field_error("If-Match", "expected a quoted generation such as \"3\"");
  return std::optional<std::uint64_t>(g);
}

// Seconds text of a microsecond count, exact: 2500000 -> "2.5".
std::string micros_as_seconds(std::int64_t us) {
  const bool negative = us < 0;
  const std::uint64_t v =
      negative ? static_cast<std::uint64_t>(-(us + 1)) + 1 : static_cast<std::uint64_t>(us);
  std::string frac = absl::StrCat(v % 1000000 + 1000000).substr(1);
  while (!frac.empty() && frac.back() == '0') frac.pop_back();
  return absl::StrCat(negative ? "-" : "", v / 1000000, frac.empty() ? "" : ".", frac);
}

std::string seconds_of(std::string_view text) {
  std::int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::string(text);
  return micros_as_seconds(v);
}

// `handler` with its answer timed: from the routed request (head and body
// read) to the response handed back to the server, on the steady clock.
http::Handler timed(Metrics& metrics, std::string_view route, http::Handler handler) {
  return [&metrics,
          series = absl::StrCat("kairos_http_request_duration_us{route=\"", absl_sv(route), "\"}"),
          handler = std::move(handler)](const Request& req, Reply reply) {
    const auto start = std::chrono::steady_clock::now();
    handler(req, [&metrics, series, start, reply = std::move(reply)](Response res) {
      const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::steady_clock::now() - start)
                          .count();
      metrics
          .histogram(series, latency_buckets_us(),
                     "HTTP request latency by route, from the request read to the answer "
                     "handed to the connection (the time a store transaction took included)")
          .observe(static_cast<std::int64_t>(us));
      reply(std::move(res));
    });
  };
}

}  // namespace

std::string prometheus_text(const Metrics& metrics) {
  const std::string in = metrics.to_prometheus();
  std::vector<std::string_view> lines;
  for (absl::string_view line : absl::StrSplit(absl_sv(in), '\n', absl::SkipEmpty()))
    lines.push_back(std_sv(line));
  std::set<std::string, std::less<>> micro_families;
  for (std::string_view line : lines) {
    if (!line.starts_with("# TYPE ") || !line.ends_with(" histogram")) continue;
    std::string_view name = line.substr(7, line.size() - 7 - 10);
    if (name.ends_with("_us")) micro_families.insert(std::string(name));
  }
  std::string out;
  for (std::string_view line : lines) {
    const bool comment = line.starts_with("# HELP ") || line.starts_with("# TYPE ");
    const std::size_t name_at = comment ? 7 : 0;
    const std::string_view rest = line.substr(name_at);
    const std::size_t end = rest.find_first_of(" {");
    std::string_view name = rest.substr(0, end);
    std::string_view suffix;
    for (std::string_view s : {"_bucket", "_sum", "_count"})
      if (!comment && name.ends_with(s) &&
          micro_families.count(name.substr(0, name.size() - s.size()))) {
        suffix = s;
        name.remove_suffix(s.size());
      }
    if (!micro_families.count(name)) {
      absl::StrAppend(&out, absl_sv(line), "\n");
      continue;
    }
    std::string renamed =
        absl::StrCat(absl_sv(line.substr(0, name_at)), absl_sv(name.substr(0, name.size() - 3)),
                     "_seconds", absl_sv(suffix));
    std::string tail(rest.substr(name.size() + suffix.size()));
    if (suffix == "_bucket") {
      const std::size_t le = tail.find("le=\"");
      const std::size_t close = le == std::string::npos ? le : tail.find('"', le + 4);
      if (close != std::string::npos && tail.substr(le + 4, close - le - 4) != "+Inf")
        tail = absl::StrCat(tail.substr(0, le + 4), seconds_of(tail.substr(le + 4, close - le - 4)),
                            tail.substr(close));
    } else if (suffix == "_sum") {
      const std::size_t space = tail.rfind(' ');
      tail = absl::StrCat(tail.substr(0, space + 1), seconds_of(tail.substr(space + 1)));
    }
    absl::StrAppend(&out, renamed, tail, "\n");
  }
  return out;
}

ApiRoutes::ApiRoutes(SchedulerNode& node, Metrics& metrics, ApiOptions options)
    : node_(node), metrics_(metrics), options_(std::move(options)) {}

void ApiRoutes::count(std::string_view route, int status) {
  metrics_
      .counter(absl::StrCat("kairos_http_requests_total{route=\"", absl_sv(route), "\",status=\"",
                            status, "\"}"),
               "HTTP requests answered, by route and status")
      .add();
}

http::Router ApiRoutes::router() {
  http::Router r;
  auto bind = [this](void (ApiRoutes::*f)(const Request&, Reply)) {
    return [this, f](const Request& req, Reply reply) { (this->*f)(req, std::move(reply)); };
  };
  r.add("POST", "/v1/jobs", bind(&ApiRoutes::create));
  r.add("POST", "/v1/jobs:batch", bind(&ApiRoutes::batch));
  r.add("GET", "/v1/jobs", bind(&ApiRoutes::list));
  r.add("GET", "/v1/jobs/{id}", bind(&ApiRoutes::get));
  r.add("PUT", "/v1/jobs/{id}", bind(&ApiRoutes::put));
  r.add("PATCH", "/v1/jobs/{id}", bind(&ApiRoutes::patch));
  r.add("DELETE", "/v1/jobs/{id}", bind(&ApiRoutes::remove));
  r.add("POST", "/v1/jobs/{id}:pause",
        [this](const Request& req, Reply reply) { control(req, std::move(reply), true); });
  r.add("POST", "/v1/jobs/{id}:resume",
        [this](const Request& req, Reply reply) { control(req, std::move(reply), false); });
  r.add("POST", "/v1/jobs/{id}:trigger", bind(&ApiRoutes::trigger));
  r.add("GET", "/v1/jobs/{id}/runs", bind(&ApiRoutes::runs));
  r.add("GET", "/v1/jobs/{id}/occurrences", bind(&ApiRoutes::occurrences));
  r.add("GET", "/v1/jobs/{id}/next", next_fires_handler(node_));
  r.add("GET", "/v1/stats", stats_handler(options_.stats, options_.now));
  r.add("GET", "/v1/cluster", [this](const Request&, Reply reply) { cluster(std::move(reply)); });
  r.add("GET", "/metrics", [this](const Request&, Reply reply) {
    Response res;
    res.content_type = "text/plain; version=0.0.4; charset=utf-8";
    res.body = prometheus_text(metrics_);
    reply(std::move(res));
  });
  r.add("GET", "/healthz", [](const Request&, Reply reply) {
    reply(json_response(200, json::object{{"status", "ok"}}));
  });
  r.add("GET", "/readyz", [this](const Request&, Reply reply) { readyz(std::move(reply)); });
  http::Router out;
  for (const http::Router::Route& route : r.routes())
    out.add(route.method, route.pattern, timed(metrics_, route.name, route.handler));
  return out;
}

void ApiRoutes::create(const Request& r, Reply reply) {
  auto spec = decode_job_spec(r.body);
  if (!spec.ok()) return reply(error_response(spec.status()));
  node_.create_job(std::move(*spec), [reply](absl::StatusOr<CreateResult> result) {
    if (!result.ok()) return reply(error_response(result.status()));
    Response res = job_response(result->created ? 201 : 200, result->job);
    res.headers.emplace_back("Location", absl::StrCat("/v1/jobs/", result->job.spec.id));
    reply(std::move(res));
  });
}

namespace {
// One refused item of a batch, in the error body's "items".
json::object batch_item_error(std::size_t index, const absl::Status& status) {
  json::object item;
  item["index"] = index;
  item["code"] = error_code(status.code());
  item["message"] = std::string(status.message());
  const std::string field = error_field(status);
  if (!field.empty()) item["field"] = absl::StrCat("jobs[", index, "].", field);
  return item;
}

Response batch_refused(const json::array& items, std::size_t count) {
  const json::object& first = items.front().as_object();
  const json::value* field = first.if_contains("field");
  json::object body = error_body(
      "invalid_argument",
      absl::StrCat(items.size(), " of ", count, " jobs refused; nothing was applied; first: jobs[",
                   first.at("index").to_number<std::uint64_t>(),
                   "]: ", std::string(first.at("message").as_string())),
      field ? std::string(field->as_string()) : std::string());
  body["error"].as_object()["items"] = items;
  return json_response(400, body);
}
}  // namespace

void ApiRoutes::batch(const Request& r, Reply reply) {
  // The parsed body lives in one arena, freed at once when the specs are
  // decoded (a batch's value holds thousands of members).
  json::monotonic_resource arena(r.body.size() * 2 + 4096);
  auto body = parse_json(r.body, &arena);
  if (!body.ok()) return reply(error_response(body.status()));
  if (!body->is_object()) return reply(bad_request("", "expected {\"jobs\": [...]}"));
  for (const auto& member : body->get_object())
    if (member.key() != "jobs")
      return reply(
          bad_request(std::string_view(member.key().data(), member.key().size()), "unknown field"));
  const json::value* jobs = body->get_object().if_contains("jobs");
  if (jobs == nullptr || !jobs->is_array()) return reply(bad_request("jobs", "must be an array"));
  const json::array& list = jobs->get_array();
  if (list.empty() || list.size() > kMaxBatchSize)
    return reply(bad_request(
        "jobs", absl::StrCat("must hold 1..", kMaxBatchSize, " jobs, got ", list.size())));
  std::vector<JobSpec> specs;
  json::array refused;
  for (std::size_t i = 0; i < list.size(); ++i) {
    auto spec = job_spec_from_json(list[i]);
    if (spec.ok() && spec->id.empty())
      spec = field_error("id", "is required in a batch (a retried batch must name the same jobs)");
    if (!spec.ok()) {
      refused.emplace_back(batch_item_error(i, spec.status()));
      continue;
    }
    specs.push_back(std::move(*spec));
  }
  if (!refused.empty()) return reply(batch_refused(refused, list.size()));
  const std::size_t count = specs.size();
  node_.apply_jobs(std::move(specs), [reply, count](absl::Status status, BatchResult result) {
    if (!status.ok()) {
      if (result.errors.empty()) return reply(error_response(status));
      json::array items;
      for (const BatchItemError& e : result.errors)
        items.emplace_back(batch_item_error(e.index, e.status));
      return reply(batch_refused(items, count));
    }
    // {"jobs": [...], "created": N} as text, the jobs written straight in.
    Response res;
    res.status = 200;
    res.body.reserve(result.items.size() * 768 + 32);
    res.body.append("{\"jobs\":[");
    std::size_t created = 0;
    for (std::size_t i = 0; i < result.items.size(); ++i) {
      if (i > 0) res.body.push_back(',');
      append_job_json(res.body, result.items[i].job);
      created += result.items[i].created ? 1 : 0;
    }
    absl::StrAppend(&res.body, "],\"created\":", created, "}");
    reply(std::move(res));
  });
}

void ApiRoutes::put(const Request& r, Reply reply) {
  const std::string id = r.params.at("id");
  auto spec = decode_job_spec(r.body);
  if (!spec.ok()) return reply(error_response(spec.status()));
  if (spec->id.empty()) {
    spec->id = id;
    if (absl::Status s = validate_job_spec(*spec); !s.ok()) return reply(error_response(s));
  }
  if (spec->id != id)
    return reply(
        bad_request("id", absl::StrCat("'", excerpt(spec->id),
                                       "' differs from the id in the path '", excerpt(id), "'")));
  with_precondition(
      r, std::move(reply), [this, spec = *spec](Reply reply, Generation expected) mutable {
        node_.apply_job(std::move(spec), expected, [reply](absl::StatusOr<ControlResult> result) {
          if (!result.ok()) return reply(error_response(result.status()));
          reply(job_response(result->created ? 201 : 200, result->job));
        });
      });
}

void ApiRoutes::list(const Request& r, Reply reply) {
  if (absl::Status s =
          only_params(r, {"namespace", "selector", "state", "paused", "page_size", "page_token"});
      !s.ok())
    return reply(error_response(s));
  auto page_size = size_param(r, "page_size", options_.default_page_size, options_.max_page_size);
  if (!page_size.ok()) return reply(error_response(page_size.status()));
  JobFilter filter;
  if (auto it = r.query.find("namespace"); it != r.query.end()) filter.ns = it->second;
  if (auto it = r.query.find("selector"); it != r.query.end()) {
    auto labels = parse_selector(it->second);
    if (!labels.ok()) return reply(error_response(labels.status()));
    filter.labels = std::move(*labels);
  }
  std::optional<JobState> state;
  if (auto it = r.query.find("state"); it != r.query.end()) {
    if (it->second == "active")
      state = JobState::kActive;
    else if (it->second == "cancelled")
      state = JobState::kCancelled;
    else
      return reply(bad_request("state", "must be active or cancelled"));
  }
  std::optional<bool> paused;
  if (auto it = r.query.find("paused"); it != r.query.end()) {
    if (it->second == "true")
      paused = true;
    else if (it->second == "false")
      paused = false;
    else
      return reply(bad_request("paused", "must be true or false"));
  }
  std::string token;
  if (auto it = r.query.find("page_token"); it != r.query.end()) token = it->second;
  node_.list_jobs(std::move(token), *page_size, std::move(filter),
                  [reply, state, paused](absl::StatusOr<ListResult> result) {
                    if (!result.ok())
                      return reply(error_response(with_field(result.status(), "page_token")));
                    json::array jobs;
                    for (const JobRecord& job : result->jobs) {
                      if (state && job.state != *state) continue;
                      if (paused && job.paused != *paused) continue;
                      jobs.emplace_back(job_to_json(job));
                    }
                    json::object body;
                    body["jobs"] = std::move(jobs);
                    body["next_page_token"] = result->next_page_token;
                    reply(json_response(200, body));
                  });
}

void ApiRoutes::get(const Request& r, Reply reply) {
  const std::string id = r.params.at("id");
  node_.get_job(id, [reply, id](absl::StatusOr<std::optional<JobRecord>> result) {
    if (!result.ok()) return reply(error_response(result.status()));
    if (!*result)
      return reply(
          error_response(absl::NotFoundError(absl::StrCat("job '", excerpt(id), "' not found"))));
    reply(job_response(200, **result));
  });
}

void ApiRoutes::with_precondition(const Request& r, Reply reply,
                                  std::function<void(Reply, Generation)> then) {
  auto expected = if_match(r);
  if (!expected.ok()) return reply(error_response(expected.status()));
  // A generation is checked by the kernel in the write's own transaction.
  if (r.header("If-Match") != "*") return then(std::move(reply), *expected);
  // "*": the job must exist (read just before the write).
  const std::string id = r.params.at("id");
  node_.get_job(id, [reply, id, then = std::move(then)](
                        absl::StatusOr<std::optional<JobRecord>> result) mutable {
    if (!result.ok()) return reply(error_response(result.status()));
    if (!*result)
      return reply(json_response(412, error_body("precondition_failed",
                                                 absl::StrCat("If-Match: * does not hold: job '",
                                                              excerpt(id), "' does not exist"),
                                                 "If-Match")));
    then(std::move(reply), std::nullopt);
  });
}

void ApiRoutes::patch(const Request& r, Reply reply) {
  const std::string id = r.params.at("id");
  auto patch = parse_json(r.body);
  if (!patch.ok()) return reply(error_response(patch.status()));
  if (!patch->is_object())
    return reply(bad_request("", "a merge patch of a job must be a JSON object"));
  // Runs inside the update's transaction (maybe more than once): a pure
  // function of the stored spec and the patch.
  SpecMutation mutate = [patch = std::move(*patch)](JobSpec& spec) -> absl::Status {
    const json::value merged = merge_patch(json::value(job_spec_to_json(spec)), patch);
    KAIROS_ASSIGN_OR_RETURN(JobSpec next, job_spec_from_json(merged));
    if (next.id != spec.id) return field_error("id", "a job's id cannot be changed");
    spec = std::move(next);
    return absl::OkStatus();
  };
  with_precondition(
      r, std::move(reply),
      [this, id, mutate = std::move(mutate)](Reply reply, Generation expected) mutable {
        node_.update_job(id, std::move(mutate), expected,
                         [reply](absl::StatusOr<ControlResult> result) {
                           if (!result.ok()) return reply(error_response(result.status()));
                           reply(job_response(200, result->job));
                         });
      });
}

void ApiRoutes::remove(const Request& r, Reply reply) {
  const std::string id = r.params.at("id");
  with_precondition(r, std::move(reply), [this, id](Reply reply, Generation expected) {
    node_.cancel_job(id, expected, [reply](absl::StatusOr<CancelResult> result) {
      if (!result.ok()) return reply(error_response(result.status()));
      reply(job_response(200, result->job));
    });
  });
}

void ApiRoutes::control(const Request& r, Reply reply, bool pause) {
  const std::string id = r.params.at("id");
  with_precondition(r, std::move(reply), [this, id, pause](Reply reply, Generation expected) {
    auto done = [reply](absl::StatusOr<ControlResult> result) {
      if (!result.ok()) return reply(error_response(result.status()));
      reply(job_response(200, result->job));
    };
    if (pause)
      node_.pause_job(id, expected, std::move(done));
    else
      node_.resume_job(id, expected, std::move(done));
  });
}

void ApiRoutes::trigger(const Request& r, Reply reply) {
  const std::string id = r.params.at("id");
  bool force = false;
  if (!r.body.empty()) {
    auto body = parse_json(r.body);
    if (!body.ok()) return reply(error_response(body.status()));
    if (!body->is_object())
      return reply(bad_request("", "expected {\"force\": true|false} or no body"));
    for (const auto& member : body->get_object()) {
      if (member.key() != "force")
        return reply(bad_request(std::string_view(member.key().data(), member.key().size()),
                                 "unknown field"));
      if (!member.value().is_bool()) return reply(bad_request("force", "must be true or false"));
      force = member.value().get_bool();
    }
  }
  node_.trigger_job(id, force, [reply](absl::StatusOr<TriggerResult> result) {
    if (!result.ok()) return reply(error_response(result.status()));
    reply(json_response(result->created ? 201 : 200, run_to_json(result->run)));
  });
}

void ApiRoutes::runs(const Request& r, Reply reply) {
  if (absl::Status s = only_params(r, {"limit", "from"}); !s.ok()) return reply(error_response(s));
  auto limit = size_param(r, "limit", options_.default_runs_limit, options_.max_runs_limit);
  if (!limit.ok()) return reply(error_response(limit.status()));
  auto from = time_param(r, "from", absl::InfinitePast());
  if (!from.ok()) return reply(error_response(from.status()));
  RunsQuery q;
  q.job_id = r.params.at("id");
  q.limit = *limit;
  q.from = *from;
  node_.list_runs(std::move(q), [reply](absl::StatusOr<RunsResult> result) {
    if (!result.ok()) return reply(error_response(result.status()));
    json::array runs;
    for (const RunRecord& run : result->runs) runs.emplace_back(run_to_json(run));
    json::object body;
    body["runs"] = std::move(runs);
    body["more"] = result->more;
    reply(json_response(200, body));
  });
}

void ApiRoutes::occurrences(const Request& r, Reply reply) {
  if (absl::Status s = only_params(r, {"from", "to", "limit"}); !s.ok())
    return reply(error_response(s));
  LedgerQuery q;
  q.job_id = r.params.at("id");
  auto from = time_param(r, "from", absl::InfinitePast());
  if (!from.ok()) return reply(error_response(from.status()));
  auto to = time_param(r, "to", absl::InfiniteFuture());
  if (!to.ok()) return reply(error_response(to.status()));
  auto limit = size_param(r, "limit", options_.default_runs_limit, options_.max_runs_limit);
  if (!limit.ok()) return reply(error_response(limit.status()));
  q.from = *from;
  q.to = *to;
  q.limit = *limit;
  node_.get_ledger(std::move(q), [reply](absl::StatusOr<LedgerResult> result) {
    if (!result.ok()) return reply(error_response(result.status()));
    json::array records;
    for (const LedgerRecord& rec : result->records) records.emplace_back(ledger_to_json(rec));
    json::object body;
    body["occurrences"] = std::move(records);
    body["more"] = result->more;
    reply(json_response(200, body));
  });
}

void ApiRoutes::cluster(Reply reply) {
  node_.get_cluster([this, reply](absl::StatusOr<ClusterView> view) {
    if (!view.ok()) return reply(error_response(view.status()));
    std::map<std::uint32_t, const LeaderRecord*> by_shard;
    for (const auto& [shard, record] : view->leaders) by_shard[shard] = &record;
    json::array shards;
    for (std::uint32_t i = 0; i < view->shard_count; ++i) {
      json::object s;
      s["shard"] = i;
      if (i < view->backlog.size()) {
        s["due_backlog"] = view->backlog[i].due;
        s["due_backlog_capped"] = view->backlog[i].capped;
      }
      auto it = by_shard.find(i);
      if (it == by_shard.end()) {
        s["leader"] = nullptr;
      } else {
        const LeaderRecord& l = *it->second;
        const bool live = l.expiry > view->now;
        s["leader"] = live ? json::value(l.holder) : json::value(nullptr);
        s["last_holder"] = l.holder;
        s["epoch"] = l.epoch;
        s["lease_expiry"] = format_rfc3339_utc(l.expiry);
        s["expires_in"] =
            live ? json::value(format_duration(l.expiry - view->now)) : json::value(nullptr);
      }
      shards.emplace_back(std::move(s));
    }
    json::array nodes;
    std::uint32_t live_nodes = 0;
    for (const NodeRecord& n : view->nodes) {
      const bool live = n.expiry > view->now;
      live_nodes += live ? 1 : 0;
      json::object o;
      o["id"] = n.id;
      o["liveness"] = live ? "live" : "expired";
      o["started"] = format_rfc3339_utc(n.started);
      o["lease_expiry"] = format_rfc3339_utc(n.expiry);
      o["expires_in"] =
          live ? json::value(format_duration(n.expiry - view->now)) : json::value(nullptr);
      nodes.emplace_back(std::move(o));
    }
    json::array leads;
    for (std::uint32_t i = 0; i < node_.config().shard_count; ++i)
      if (node_.leads(i)) leads.emplace_back(i);
    json::object self;
    self["id"] = node_.id();
    self["leads"] = std::move(leads);
    self["clock_sane"] = node_.clock_sane();
    self["degraded"] = node_.health().degraded;
    if (node_.health().degraded) self["degraded_reason"] = node_.health().reason;
    json::object body;
    body["shard_count"] = view->shard_count;
    body["store_now"] = format_rfc3339_utc(view->now);
    body["live_nodes"] = live_nodes;
    body["nodes"] = std::move(nodes);
    body["shards"] = std::move(shards);
    body["node"] = std::move(self);
    reply(json_response(200, body));
  });
}

void ApiRoutes::readyz(Reply reply) {
  auto answer = [this, reply](const std::string& reason) {
    json::object body;
    body["ready"] = reason.empty();
    if (!reason.empty()) body["reason"] = reason;
    const NodeHealth& h = node_.health();
    body["degraded"] = h.degraded;
    if (h.degraded) body["degraded_reason"] = h.reason;
    if (reason.empty()) return reply(json_response(200, body));
    body["error"] = error_body("unavailable", reason).at("error");
    reply(json_response(503, body));
  };
  if (!options_.store_open()) return answer("the store is not open");
  if (options_.draining()) return answer("draining");
  if (!node_.running()) return answer("the scheduler node is not running");
  if (!node_.clock_sane())
    return answer("this node's clock disagrees with the store's; it neither leads nor claims");
  // Every shard's leadership must be known: led by this node, or held by a
  // live lease of another one (by the store's records and clock).
  node_.get_cluster([this, answer](absl::StatusOr<ClusterView> view) {
    if (!view.ok())
      return answer(absl::StrCat("reading the leader records failed: ", view.status().message()));
    std::set<std::uint32_t> held;
    for (const auto& [shard, record] : view->leaders)
      if (record.expiry > view->now && record.holder != node_.id()) held.insert(shard);
    std::string missing;
    for (std::uint32_t s = 0; s < view->shard_count; ++s)
      if (!node_.leads(s) && !held.count(s))
        absl::StrAppend(&missing, missing.empty() ? "" : ",", s);
    if (!missing.empty()) return answer(absl::StrCat("no known leader for shards ", missing));
    answer("");
  });
}

}  // namespace kairos::api
