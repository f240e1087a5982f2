// kairos-load: drives a real `kairos server` through its
// public surfaces and
// proves what it measured ran exactly once.
//
// What it does. It creates --jobs one-off jobs through the HTTP API
// (POST /v1/jobs:batch, --batch jobs per request, --create-parallel requests
// in flight, with the bearer token of --token-file), all due at one instant
// --lead after the start, or with --rate spread at that many per second from
// that instant. Their runs are
// executed by --concurrency slots of in-process workers speaking the real
// worker protocol over TCP to the server's --listen address
// (bench/load/load_workers.h: core's Worker, the production TCP transport and
// handshake, a runner that does nothing), so the figures are the server's
// throughput, not process spawning. The server is either one already
// running (--server URL, --listen HOST:PORT; it should run no workers of its
// own and hold no other jobs, or those runs are not counted) or one the tool
// starts (--spawn PATH_TO_KAIROS, bench/load/server_process.h).
//
// What it reports (a human summary, or one JSON object with --json):
// jobs created per second; runs per second sustained (runs completed, i.e.
// reports the server accepted, over the span from the first due instant to
// the last acceptance); firing lateness (the worker's clock when the run
// started minus the run's nominal time) p50/p90/p99/p99.9/max; when the last
// run started; with --spawn the server's CPU over that span (and per run),
// its resident memory and its store's size; the load tool's own CPU; the
// load average before and after.
//
// Exactly once. Afterwards every job's runs are read back
// (GET /v1/jobs/{id}/runs): each job must have exactly one run, the
// scheduled run of its nominal time, succeeded, with exactly one attempt
// (a manual or extra run fails the check); and the workers must have started every
// occurrence exactly once with every report accepted. Any difference is
// listed and the exit code is 1, so a fast wrong answer cannot pass.
// Exit codes: 0 verified, 1 not verified (or the server failed), 2 usage.
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "bench/load/load_workers.h"
#include "bench/load/server_process.h"
#include "core/base/absl_compat.h"
#include "core/base/duration.h"
#include "core/base/rfc3339.h"
#include "prod/cli/api_client.h"
#include "prod/cli/flags.h"
#include "prod/cli/job_runners.h"
#include "prod/net/handshake.h"

namespace kairos::load {
namespace {
namespace json = boost::json;

constexpr std::size_t kMaxProblems = 20;

struct LoadFlags {
  std::string server;
  std::string spawn;
  std::string listen;
  std::string token_file;
  std::string secret_file;
  std::uint32_t jobs = 20000;
  std::uint32_t rate = 0;
  absl::Duration lead = absl::Seconds(10);
  std::uint32_t concurrency = 16;
  std::uint32_t slots = 4;
  std::uint32_t batch = 1000;
  std::uint32_t create_parallel = 4;
  absl::Duration timeout = absl::Minutes(10);
  absl::Duration lease_ttl = absl::Seconds(30);
  std::uint32_t verify_threads = 4;
  std::string server_flags;
  bool keep = false;
  bool json = false;
};

double seconds(absl::Duration d) { return absl::ToDoubleSeconds(d); }

double cpu_self_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  auto sec = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return sec(u.ru_utime) + sec(u.ru_stime);
}

// Nearest rank over sorted values.
std::int64_t percentile(const std::vector<std::int64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  const auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(sorted.size())));
  return sorted[std::min(sorted.size() - 1, rank == 0 ? 0 : rank - 1)];
}

std::string ms(std::int64_t us) {
  return absl::StrFormat("%.1f ms", static_cast<double>(us) / 1e3);
}

// One API call, retried while the server says unavailable (a server that
// just started may still be taking its shard leases; a batch is safe to
// retry); other errors at once.
absl::StatusOr<cli::ApiResult> call_retrying(const cli::ApiClient& client, std::string_view method,
                                             const std::string& target, const json::value* body,
                                             absl::Duration patience) {
  const absl::Time give_up = absl::Now() + patience;
  absl::Duration backoff = absl::Milliseconds(50);
  for (;;) {
    auto r = client.call(method, target, body);
    if (r.ok() ||
        (r.status().code() != absl::StatusCode::kUnavailable &&
         r.status().code() != absl::StatusCode::kDeadlineExceeded) ||
        absl::Now() + backoff > give_up)
      return r;
    std::this_thread::sleep_for(absl::ToChronoMilliseconds(backoff));
    backoff = std::min(backoff * 2, absl::Seconds(2));
  }
}

struct Verification {
  std::uint64_t checked = 0;
  std::uint64_t good = 0;
  std::vector<std::string> problems;  // at most kMaxProblems
  std::uint64_t problem_count = 0;
};

// One job's runs must be exactly one run: the scheduled one of its nominal
// time, succeeded, with one attempt.
std::optional<std::string> check_runs(const json::value& body, const std::string& nominal) {
  const json::object* o = body.if_object();
  const json::value* runs = o != nullptr ? o->if_contains("runs") : nullptr;
  if (runs == nullptr || !runs->is_array()) return "no \"runs\" array";
  const json::array& a = runs->get_array();
  if (a.size() != 1) return absl::StrCat(a.size(), " runs");
  const json::object* run = a[0].if_object();
  if (run == nullptr) return "a run that is not an object";
  auto text = [&](std::string_view key) -> std::string {
    const json::value* v = run->if_contains(key);
    return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string("null");
  };
  if (text("kind") != "scheduled" || text("nominal") != nominal)
    return absl::StrCat("a ", text("kind"), " run of ", text("nominal"),
                        ", expected the scheduled run of ", nominal);
  if (text("state") != "succeeded" || text("outcome") != "succeeded")
    return absl::StrCat("run state ", text("state"), ", outcome ", text("outcome"));
  const json::value* attempts = run->if_contains("attempts");
  if (attempts == nullptr || !attempts->is_array() || attempts->get_array().size() != 1)
    return absl::StrCat(
        attempts != nullptr && attempts->is_array() ? attempts->get_array().size() : 0,
        " attempts");
  return std::nullopt;
}

Verification verify(const cli::ApiClient& client, const std::vector<std::string>& ids,
                    const std::vector<std::string>& nominals, std::uint32_t threads) {
  Verification v;
  std::mutex mu;
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i = next++; i < ids.size(); i = next++) {
      auto r =
          client.call("GET", absl::StrCat("/v1/jobs/", cli::url_encode(ids[i]), "/runs?limit=10"));
      std::optional<std::string> problem;
      if (!r.ok())
        problem = cli::describe(r.status());
      else
        problem = check_runs(r->body, nominals[i]);
      std::lock_guard<std::mutex> lock(mu);
      ++v.checked;
      if (!problem) {
        ++v.good;
        continue;
      }
      ++v.problem_count;
      if (v.problems.size() < kMaxProblems)
        v.problems.push_back(absl::StrCat(ids[i], ": ", *problem));
    }
  };
  std::vector<std::thread> pool;
  for (std::uint32_t t = 0; t < threads; ++t) pool.emplace_back(work);
  for (std::thread& t : pool) t.join();
  return v;
}

cli::FlagTable make_table(LoadFlags& f) {
  cli::FlagTable t("kairos-load",
                   "kairos-load (--spawn PATH_TO_KAIROS | --server URL [--listen HOST:PORT])\n"
                   "                   [--jobs N] [--rate R] [--concurrency C] [--json] ...",
                   "Creates one-off jobs through a kairos server's HTTP API, runs them with\n"
                   "in-process no-op workers over the real worker protocol (TCP, handshake,\n"
                   "worker secret) and reports runs/s, firing lateness and, with --spawn, the\n"
                   "server's CPU; then checks through the API that every job ran exactly once.\n"
                   "Exit codes: 0 verified, 1 not verified or a failure, 2 usage.");
  t.add({"spawn", "PATH", "none",
         "start this `kairos` binary as the server (temporary data dir,\n"
         "--workers 0, free ports); exclusive with --server",
         cli::set_string(&f.spawn)});
  t.add({"server", "URL", "none",
         "an already running server's API (http://HOST:PORT); it should run\n"
         "no workers of its own (--workers 0) and no other jobs",
         cli::set_string(&f.server)});
  t.add({"listen", "HOST:PORT", "127.0.0.1:7070",
         "with --server: the server's --listen address the workers connect to",
         cli::set_host_port(&f.listen, /*allow_port_zero=*/false)});
  t.add({"token-file", "FILE", "$KAIROS_TOKEN",
         "the API's bearer token (first line); with --spawn also the\n"
         "server's --auth-token-file",
         cli::set_string(&f.token_file)});
  t.add({"worker-secret-file", "FILE", "none", "the worker secret; with --spawn also the server's",
         cli::set_string(&f.secret_file)});
  t.add({"jobs", "N", "20000", "one-off jobs to create (1..10000000)",
         cli::set_u32(&f.jobs, 1, 10000000)});
  t.add({"rate", "R", "0",
         "jobs due per second from the first due instant; 0: all due at that\n"
         "one instant (0..1000000)",
         cli::set_u32(&f.rate, 0, 1000000)});
  t.add({"lead", "DURATION", "10s",
         "from the start of creation to the first due instant (0s..1h); make it\n"
         "longer than creation takes, or the lateness includes creation",
         cli::set_duration(&f.lead, absl::ZeroDuration(), absl::Hours(1))});
  t.add({"concurrency", "C", "16", "run slots of all workers together (1..65536)",
         cli::set_u32(&f.concurrency, 1, 65536)});
  t.add({"slots", "S", "4", "slots per worker connection (1..1024): ceil(C / S) workers",
         cli::set_u32(&f.slots, 1, 1024)});
  t.add({"batch", "B", "1000", "jobs per POST /v1/jobs:batch (1..1000)",
         cli::set_u32(&f.batch, 1, 1000)});
  t.add({"create-parallel", "N", "4",
         "batches in flight at once while creating (1..64): each its own\n"
         "connection and thread",
         cli::set_u32(&f.create_parallel, 1, 64)});
  t.add({"timeout", "DURATION", "10m",
         "how long after the last due instant every run may take to complete\n"
         "(1s..24h)",
         cli::set_duration(&f.timeout, absl::Seconds(1), absl::Hours(24))});
  t.add({"lease-ttl", "DURATION", "30s",
         "the server's --lease-ttl (the workers plan heartbeats for it;\n"
         "passed on with --spawn)",
         cli::set_duration(&f.lease_ttl, absl::Seconds(1), absl::Hours(24))});
  t.add({"verify-threads", "N", "4", "parallel API readers for the check (1..64)",
         cli::set_u32(&f.verify_threads, 1, 64)});
  t.add({"server-flags", "FLAGS", "none",
         "with --spawn: further server flags, space-separated\n"
         "(\"--shards 4 --log-format json\")",
         cli::set_string(&f.server_flags)});
  t.add({"keep", "", "off", "with --spawn: keep the server's temporary directory",
         cli::set_switch(&f.keep)});
  t.add({"json", "", "off", "print one JSON object instead of the summary",
         cli::set_switch(&f.json)});
  return t;
}

int fail(const std::string& message) {
  std::fprintf(stderr, "kairos-load: %s\n", message.c_str());
  return 1;
}

int run(int argc, char** argv) {
  LoadFlags f;
  cli::FlagTable table = make_table(f);
  if (auto code = table.parse(argc, argv)) return *code;
  if (f.spawn.empty() == f.server.empty())
    return table.usage_error("exactly one of --spawn and --server is required");
  if (!f.spawn.empty() && table.given("listen"))
    return table.usage_error("flag --listen: only with --server (--spawn finds the address)");
  if (f.spawn.empty() && (table.given("server-flags") || f.keep))
    return table.usage_error("flags --server-flags and --keep: only with --spawn");
  if (f.listen.empty()) f.listen = "127.0.0.1:7070";
  auto secret = net::secret_from_flag(f.secret_file);
  if (!secret.ok()) return table.usage_error(std::string(secret.status().message()));
  std::vector<std::string> extra;
  for (absl::string_view part : absl::StrSplit(absl_sv(f.server_flags), ' ', absl::SkipEmpty()))
    extra.emplace_back(part);

  const std::string load_before = load_average();
  std::unique_ptr<ServerProcess> spawned;
  std::string server_url = f.server;
  std::string listen = f.listen;
  if (!f.spawn.empty()) {
    SpawnOptions so;
    so.binary = f.spawn;
    so.token_file = f.token_file;
    so.secret_file = f.secret_file;
    if (table.given("lease-ttl")) so.lease_ttl = f.lease_ttl;
    so.extra_flags = extra;
    so.keep = f.keep;
    spawned = std::make_unique<ServerProcess>(so);
    if (absl::Status s = spawned->start(); !s.ok()) return fail(std::string(s.message()));
    server_url = spawned->http_url();
    listen = spawned->listen();
  }
  cli::ClientFlags cf;
  cf.server = server_url;
  cf.token_file = f.token_file;
  cf.timeout = absl::Seconds(60);
  auto client = cli::make_client(cf);
  if (!client.ok()) return table.usage_error(std::string(client.status().message()));
  // The creating client leaves a batch's 2xx reply (every job in full)
  // unparsed: the jobs are checked through their runs afterwards, and the
  // tool's CPU belongs to the server on a small machine.
  auto server_address = cli::parse_server_url(server_url);
  if (!server_address.ok())
    return table.usage_error(std::string(server_address.status().message()));
  cli::Transport reply_unread =
      [real = cli::beast_transport(*server_address, cf.timeout)](
          const cli::HttpRequest& request) -> absl::StatusOr<cli::HttpResponse> {
    auto response = real(request);
    if (response.ok() && response->status / 100 == 2) response->body.clear();
    return response;
  };
  auto create_client = cli::make_client(cf, reply_unread);
  if (!create_client.ok()) return table.usage_error(std::string(create_client.status().message()));
  // The API answers (and takes the token) before any worker starts: a wrong
  // --server or token fails within seconds.
  if (auto probe = call_retrying(*client, "GET", "/v1/jobs?page_size=1", nullptr, absl::Seconds(5));
      !probe.ok())
    return fail(absl::StrCat("the server's API: ", cli::describe(probe.status())));
  cli::HostPort hp;
  if (absl::Status s = cli::parse_host_port(listen, &hp, false); !s.ok())
    return fail(absl::StrCat("the server's listen address: ", s.message()));

  WorkerPoolOptions wo;
  wo.server = {hp.host, hp.port};
  wo.secret = *secret;
  wo.concurrency = f.concurrency;
  wo.slots = std::min(f.slots, f.concurrency);
  wo.workers = (f.concurrency + wo.slots - 1) / wo.slots;
  wo.lease_ttl = f.lease_ttl;
  // A fresh prefix per load run: earlier runs' jobs are not counted.
  const std::string tag = absl::StrFormat("%08x", cli::fresh_seed() & 0xffffffffu);
  wo.job_prefix = absl::StrCat("load-", tag, "-");
  WorkerPool pool(wo);
  if (absl::Status s = pool.start(absl::Seconds(30)); !s.ok())
    return fail(absl::StrCat(std::string(s.message()),
                             spawned ? "\n" + spawned->log_tail()
                                     : std::string(" (is --listen the server's --listen address, "
                                                   "and --worker-secret-file its secret?)")));

  // Jobs: ids in order, nominal times from the first due instant.
  const absl::Time created_from = absl::Now();
  const absl::Time first_due = absl::FromUnixMicros(absl::ToUnixMicros(created_from + f.lead));
  auto due_of = [&](std::uint32_t i) {
    if (f.rate == 0) return first_due;
    return first_due + absl::Microseconds(static_cast<std::int64_t>(i) * 1000000 / f.rate);
  };
  std::vector<std::string> ids, nominals;
  ids.reserve(f.jobs);
  nominals.reserve(f.jobs);
  for (std::uint32_t i = 0; i < f.jobs; ++i) {
    ids.push_back(absl::StrCat(wo.job_prefix, i));
    nominals.push_back(format_rfc3339_utc(due_of(i)));
  }
  const double server_cpu_before_create =
      spawned ? process_figures(spawned->pid()).value_or(ProcessFigures{}).cpu_seconds : 0;
  // --create-parallel posters take the next batch in turn; the first error
  // stops them all (every batch is safe to retry, so none is half-applied).
  std::atomic<std::uint32_t> next_from{0};
  std::mutex create_mu;
  std::string create_error;
  auto post_batches = [&] {
    for (std::uint32_t from = next_from.fetch_add(f.batch); from < f.jobs;
         from = next_from.fetch_add(f.batch)) {
      {
        std::lock_guard<std::mutex> lock(create_mu);
        if (!create_error.empty()) return;
      }
      json::array jobs;
      jobs.reserve(std::min(f.jobs, from + f.batch) - from);
      for (std::uint32_t i = from; i < std::min(f.jobs, from + f.batch); ++i) {
        jobs.push_back(json::object{{"id", ids[i]},
                                    {"labels", json::object{{"kairos-load", tag}}},
                                    {"schedule", json::object{{"at", nominals[i]}}},
                                    {"command", json::object{{"argv", json::array{"/bin/true"}}}}});
      }
      const json::value body = json::object{{"jobs", std::move(jobs)}};
      if (auto r =
              call_retrying(*create_client, "POST", "/v1/jobs:batch", &body, absl::Seconds(60));
          !r.ok()) {
        std::lock_guard<std::mutex> lock(create_mu);
        if (create_error.empty())
          create_error = absl::StrCat("creating jobs ", from, "..: ", cli::describe(r.status()));
        return;
      }
    }
  };
  {
    std::vector<std::thread> posters;
    for (std::uint32_t t = 0; t < f.create_parallel; ++t) posters.emplace_back(post_batches);
    for (std::thread& t : posters) t.join();
  }
  if (!create_error.empty()) return fail(create_error);
  const absl::Time created_until = absl::Now();
  const double server_cpu_after_create =
      spawned ? process_figures(spawned->pid()).value_or(ProcessFigures{}).cpu_seconds : 0;
  if (created_until > first_due)
    std::fprintf(stderr,
                 "kairos-load: warning: creation took %s, past the first due instant (--lead "
                 "%s): lateness includes creation\n",
                 format_duration(created_until - created_from).c_str(),
                 format_duration(f.lead).c_str());

  // The span: from the first due instant to the last accepted report.
  if (absl::Now() < first_due)
    std::this_thread::sleep_for(absl::ToChronoMicroseconds(first_due - absl::Now()));
  const double server_cpu_from =
      spawned ? process_figures(spawned->pid()).value_or(ProcessFigures{}).cpu_seconds : 0;
  const double self_cpu_from = cpu_self_seconds();
  const absl::Time last_due = due_of(f.jobs - 1);
  const bool all_answered = pool.wait_for_reports(f.jobs, last_due + f.timeout);
  const absl::Time waited_until = absl::Now();
  std::optional<ProcessFigures> server_after;
  if (spawned) {
    if (auto pf = process_figures(spawned->pid()); pf.ok()) server_after = *pf;
  }
  const double self_cpu = cpu_self_seconds() - self_cpu_from;
  pool.stop();
  const WorkerRecords& rec = pool.records();

  Verification v = verify(*client, ids, nominals, f.verify_threads);
  std::vector<std::string> problems = v.problems;
  if (!all_answered)
    problems.insert(problems.begin(),
                    absl::StrCat("only ", pool.answered(), " of ", f.jobs,
                                 " reports answered within --timeout ", format_duration(f.timeout),
                                 " after the last due instant"));
  if (rec.starts != f.jobs || rec.duplicate_starts != 0)
    problems.push_back(absl::StrCat("workers started ", rec.starts, " attempts for ", f.jobs,
                                    " jobs (", rec.duplicate_starts,
                                    " of an occurrence already "
                                    "started)"));
  for (const std::string& d : rec.duplicate_examples) problems.push_back("started twice: " + d);
  if (rec.rejected != 0) problems.push_back(absl::StrCat(rec.rejected, " reports rejected"));
  const bool exactly_once = problems.empty() && v.good == f.jobs && rec.accepted == f.jobs;

  const absl::Time span_end = rec.last_accepted.value_or(waited_until);
  const double span = std::max(1e-6, seconds(span_end - first_due));
  std::vector<std::int64_t> late = rec.lateness_us;
  std::sort(late.begin(), late.end());
  const double runs_per_s = static_cast<double>(rec.accepted) / span;
  const double create_s = std::max(1e-6, seconds(created_until - created_from));
  const std::string load_after = load_average();
  std::optional<double> server_cpu, server_create_cpu;
  std::uint64_t store_bytes = 0;
  if (spawned && server_after) {
    server_cpu = server_after->cpu_seconds - server_cpu_from;
    server_create_cpu = server_cpu_after_create - server_cpu_before_create;
    store_bytes = directory_bytes(spawned->data_dir());
  }
  const double all_started = rec.last_start ? seconds(*rec.last_start - first_due) : std::nan("");

  if (f.json) {
    json::object out{
        {"jobs", f.jobs},
        {"rate", f.rate},
        {"concurrency", f.concurrency},
        {"create_parallel", f.create_parallel},
        {"workers", wo.workers},
        {"slots", wo.slots},
        {"server", server_url},
        {"spawned", spawned != nullptr},
        {"create_seconds", create_s},
        {"created_per_s", f.jobs / create_s},
        {"span_seconds", span},
        {"runs_completed", rec.accepted},
        {"runs_per_s", runs_per_s},
        {"lateness_ms", json::object{{"p50", percentile(late, 0.50) / 1e3},
                                     {"p90", percentile(late, 0.90) / 1e3},
                                     {"p99", percentile(late, 0.99) / 1e3},
                                     {"p999", percentile(late, 0.999) / 1e3},
                                     {"max", late.empty() ? 0.0 : late.back() / 1e3}}},
        {"all_started_seconds",
         std::isnan(all_started) ? json::value(nullptr) : json::value(all_started)},
        {"last_due_seconds", seconds(last_due - first_due)},
        {"load_cpu_seconds", self_cpu},
        {"load_average_before", load_before},
        {"load_average_after", load_after},
        {"exactly_once", exactly_once},
        {"jobs_verified", v.good},
        {"problem_count", v.problem_count + (problems.size() - v.problems.size())},
    };
    json::array ps;
    for (const std::string& p : problems) ps.push_back(json::value(p));
    out["problems"] = std::move(ps);
    json::object anomalies;
    for (const auto& [k, n] : rec.anomalies) anomalies[k] = n;
    out["worker_anomalies"] = std::move(anomalies);
    if (server_cpu) {
      out["server_cpu_seconds"] = *server_cpu;
      out["server_cpu_us_per_run"] = *server_cpu * 1e6 / std::max<double>(1, rec.accepted);
      out["server_create_cpu_seconds"] = *server_create_cpu;
      out["server_rss_bytes"] = server_after->rss_bytes;
      out["server_rss_anon_bytes"] = server_after->rss_anon_bytes;
      out["store_bytes"] = store_bytes;
    }
    std::printf("%s\n", json::serialize(out).c_str());
  } else {
    std::printf(
        "kairos-load: %u jobs %s, concurrency %u (%u workers x %u slots), server %s%s\n", f.jobs,
        f.rate == 0 ? "due at one instant" : absl::StrCat("due at ", f.rate, "/s").c_str(),
        f.concurrency, wo.workers, wo.slots, server_url.c_str(), spawned ? " (spawned)" : "");
    std::printf("  created       %.1f s, %.0f jobs/s (POST /v1/jobs:batch of %u, %u in flight)\n",
                create_s, f.jobs / create_s, f.batch, f.create_parallel);
    std::printf("  completed     %llu runs in %.2f s from the first due instant: %.0f runs/s\n",
                static_cast<unsigned long long>(rec.accepted), span, runs_per_s);
    std::printf("  lateness      p50 %s  p90 %s  p99 %s  p99.9 %s  max %s\n",
                ms(percentile(late, 0.5)).c_str(), ms(percentile(late, 0.9)).c_str(),
                ms(percentile(late, 0.99)).c_str(), ms(percentile(late, 0.999)).c_str(),
                ms(late.empty() ? 0 : late.back()).c_str());
    const std::string last_due_note =
        f.rate == 0
            ? std::string()
            : absl::StrFormat(" (the last was due at +%.2f s)", seconds(last_due - first_due));
    std::printf("  all started   %.2f s after the first due instant%s\n", all_started,
                last_due_note.c_str());
    if (server_cpu)
      std::printf(
          "  server        %.2f s CPU over the span (%.0f us per run), %.2f s creating; "
          "RSS %.0f MiB (%.0f MiB without the store's mapped pages); store %.0f MiB\n",
          *server_cpu, *server_cpu * 1e6 / std::max<double>(1, rec.accepted), *server_create_cpu,
          static_cast<double>(server_after->rss_bytes) / (1 << 20),
          static_cast<double>(server_after->rss_anon_bytes) / (1 << 20),
          static_cast<double>(store_bytes) / (1 << 20));
    std::printf("  load tool     %.2f s CPU over the span; load average %s before, %s after\n",
                self_cpu, load_before.c_str(), load_after.c_str());
    for (const auto& [k, n] : rec.anomalies)
      std::printf("  worker event  %s x %llu\n", k.c_str(), static_cast<unsigned long long>(n));
    std::printf(
        "  exactly once  %s: %llu of %u jobs have their one scheduled run, succeeded, one "
        "attempt\n",
        exactly_once ? "yes" : "NO", static_cast<unsigned long long>(v.good), f.jobs);
    for (const std::string& p : problems) std::printf("    %s\n", p.c_str());
    if (v.problem_count > v.problems.size())
      std::printf("    ... %llu more\n",
                  static_cast<unsigned long long>(v.problem_count - v.problems.size()));
  }
  std::fflush(stdout);
  if (spawned) {
    const std::string how = spawned->stop();
    if (how != "exit 0") std::fprintf(stderr, "kairos-load: the server ended: %s\n", how.c_str());
    if (f.keep) std::fprintf(stderr, "kairos-load: kept %s\n", spawned->dir().c_str());
  }
  return exactly_once ? 0 : 1;
}

}  // namespace
}  // namespace kairos::load

int main(int argc, char** argv) { return kairos::load::run(argc, argv); }
