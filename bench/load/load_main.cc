// kairos-load: drives a real `kairos server` through its
// public surfaces and
// proves what it measured ran exactly once.
//
// What it does. It creates --jobs one-off jobs through the HTTP API
// (POST /v1/jobs:batch, --batch jobs per request, --create-parallel requests
// in flight, with the bearer token of --token-file), all due at one instant
// --lead after the start, or with --rate spread at that many per second from
// that instant; with --every and --for each job instead fires every --every
// from its instant for --for. --stored adds that many jobs, created first,
// that are not due during the run (a store of that size). With --spawn,
// --idle measures the server's CPU while nothing is due, and --restart
// restarts the server on its store before the first due instant, timing
// its way to ready (the plan: bench/load/load_plan.h). Their runs are
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
// (GET /v1/jobs/{id}/runs): each job must have exactly its occurrences'
// runs, each the scheduled run of its nominal time, succeeded, with exactly
// one attempt (a manual, extra or missing run fails the check); and the workers must have started
// every occurrence exactly once with every report accepted. Any difference is listed and the exit
// code is 1, so a fast wrong answer cannot pass. Exit codes: 0 verified, 1 not verified (or the
// server failed), 2 usage.
#include <sys/resource.h>
#include <unistd.h>

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
#include "bench/load/load_plan.h"
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
// GET /v1/jobs/{id}/runs answers at most this many runs: the most
// occurrences a recurring job may have here.
constexpr std::uint32_t kMaxOccurrences = 1000;
// What a run needs on the disk of a spawned server's directory, estimated
// from measured runs (store and event log together, rounded up): a created
// job ~1.3 KiB in the store plus its job.created line, a run ~1.2 KiB of
// log lines plus its record.
constexpr std::uint64_t kBytesPerJob = 2048;
constexpr std::uint64_t kBytesPerRun = 2560;

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
  std::uint32_t stored = 0;
  absl::Duration every = absl::ZeroDuration();
  absl::Duration for_ = absl::ZeroDuration();
  absl::Duration idle = absl::ZeroDuration();
  bool restart = false;
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

Verification verify(const cli::ApiClient& client, const JobPlan& plan, std::uint32_t threads) {
  Verification v;
  std::mutex mu;
  std::atomic<std::uint32_t> next{0};
  auto work = [&] {
    for (std::uint32_t i = next++; i < plan.jobs; i = next++) {
      const std::string id = plan.id(i);
      auto r = client.call(
          "GET", absl::StrCat("/v1/jobs/", cli::url_encode(id), "/runs?limit=", kMaxOccurrences));
      std::optional<std::string> problem;
      if (!r.ok())
        problem = cli::describe(r.status());
      else
        problem = plan.check_runs(i, r->body);
      std::lock_guard<std::mutex> lock(mu);
      ++v.checked;
      if (!problem) {
        ++v.good;
        continue;
      }
      ++v.problem_count;
      if (v.problems.size() < kMaxProblems) v.problems.push_back(absl::StrCat(id, ": ", *problem));
    }
  };
  std::vector<std::thread> pool;
  for (std::uint32_t t = 0; t < threads; ++t) pool.emplace_back(work);
  for (std::thread& t : pool) t.join();
  return v;
}

// Polls GET /readyz until it answers 200; the time that took, or nullopt
// when it did not within `patience`.
std::optional<absl::Duration> wait_ready(const cli::ApiClient& client, absl::Duration patience) {
  const absl::Time from = absl::Now();
  while (absl::Now() - from < patience) {
    if (auto r = client.call("GET", "/readyz"); r.ok()) return absl::Now() - from;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return std::nullopt;
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
  t.add({"every", "DURATION", "none",
         "recurring jobs: each fires every DURATION from its first due instant\n"
         "for --for (100ms..1h); without it every job is one-off",
         cli::set_duration(&f.every, absl::Milliseconds(100), absl::Hours(1))});
  t.add({"for", "DURATION", "none",
         "with --every: how long each job keeps firing; --for / --every\n"
         "occurrences per job (1..1000)",
         cli::set_duration(&f.for_, absl::Milliseconds(100), absl::Hours(24))});
  t.add({"stored", "N", "0",
         "jobs created first that are not due during the run (a year later):\n"
         "a store that holds N jobs besides the measured ones (0..20000000)",
         cli::set_u32(&f.stored, 0, 20000000)});
  t.add({"idle", "DURATION", "0s",
         "with --spawn: after creating, measure the server's CPU this long\n"
         "while nothing is due (the due poll's cost; 0s..10m)",
         cli::set_duration(&f.idle, absl::ZeroDuration(), absl::Minutes(10))});
  t.add({"restart", "", "off",
         "with --spawn: after creating (and --idle), restart the server on\n"
         "its data directory and report the time to its ready line and to\n"
         "GET /readyz 200; the workers connect after it",
         cli::set_switch(&f.restart)});
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
  if (f.spawn.empty() && (table.given("idle") || f.restart))
    return table.usage_error("flags --idle and --restart: only with --spawn");
  if (table.given("every") != table.given("for"))
    return table.usage_error("flags --every and --for: one needs the other");
  std::uint32_t occurrences = 1;
  if (table.given("every")) {
    const std::int64_t n = f.for_ / f.every;
    if (n < 1 || n > kMaxOccurrences)
      return table.usage_error(absl::StrCat(
          "flag --for: --for / --every gives ", n, " occurrences per job; 1..", kMaxOccurrences,
          " (GET /v1/jobs/{id}/runs answers at most ", kMaxOccurrences, ")"));
    occurrences = static_cast<std::uint32_t>(n);
  }
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
  cf.token_file = f.token_file;
  cf.timeout = absl::Seconds(60);
  // Two clients of one server: `client` reads replies; `create_client`
  // leaves a batch's 2xx reply (every job in full) unparsed: the jobs are
  // checked through their runs afterwards, and the tool's CPU belongs to the
  // server on a small machine. Made again after a --restart (new ports).
  std::optional<cli::ApiClient> client, create_client;
  auto connect = [&](const std::string& url) -> absl::Status {
    cf.server = url;
    auto c = cli::make_client(cf);
    if (!c.ok()) return c.status();
    auto address = cli::parse_server_url(url);
    if (!address.ok()) return address.status();
    cli::Transport reply_unread =
        [real = cli::beast_transport(*address, cf.timeout)](
            const cli::HttpRequest& request) -> absl::StatusOr<cli::HttpResponse> {
      auto response = real(request);
      if (response.ok() && response->status / 100 == 2) response->body.clear();
      return response;
    };
    auto cc = cli::make_client(cf, reply_unread);
    if (!cc.ok()) return cc.status();
    client.emplace(std::move(*c));
    create_client.emplace(std::move(*cc));
    return absl::OkStatus();
  };
  if (absl::Status s = connect(server_url); !s.ok())
    return table.usage_error(std::string(s.message()));
  // The API answers (and takes the token) before any worker starts: a wrong
  // --server or token fails within seconds.
  if (auto probe = call_retrying(*client, "GET", "/v1/jobs?page_size=1", nullptr, absl::Seconds(5));
      !probe.ok())
    return fail(absl::StrCat("the server's API: ", cli::describe(probe.status())));

  // A fresh prefix per load run: earlier runs' jobs are not counted.
  JobPlan plan;
  plan.tag = absl::StrFormat("%08x", cli::fresh_seed() & 0xffffffffu);
  plan.prefix = absl::StrCat("load-", plan.tag, "-");
  plan.jobs = f.jobs;
  plan.rate = f.rate;
  plan.every = f.every;
  plan.occurrences = occurrences;
  plan.stored = f.stored;
  if (spawned) {
    const std::uint64_t need =
        (std::uint64_t{f.stored} + f.jobs) * kBytesPerJob + plan.total_runs() * kBytesPerRun;
    const std::optional<std::uint64_t> free = free_bytes(spawned->dir());
    if (free && *free < need)
      return fail(absl::StrFormat(
          "the spawned server's directory %s needs about %.1f GiB free for %u stored and %u "
          "measured jobs and %llu runs (store and event log, about %llu bytes per job and %llu "
          "per run); its file system has %.1f GiB free (set TMPDIR to a larger one)",
          spawned->dir(), static_cast<double>(need) / (1ull << 30), f.stored, f.jobs,
          static_cast<unsigned long long>(plan.total_runs()),
          static_cast<unsigned long long>(kBytesPerJob),
          static_cast<unsigned long long>(kBytesPerRun),
          static_cast<double>(*free) / (1ull << 30)));
  }

  WorkerPoolOptions wo;
  wo.secret = *secret;
  wo.concurrency = f.concurrency;
  wo.slots = std::min(f.slots, f.concurrency);
  wo.workers = (f.concurrency + wo.slots - 1) / wo.slots;
  wo.lease_ttl = f.lease_ttl;
  wo.job_prefix = plan.prefix;
  std::unique_ptr<WorkerPool> pool;
  // Starts the workers against the server's current --listen address.
  auto start_pool = [&]() -> absl::Status {
    cli::HostPort hp;
    if (absl::Status s = cli::parse_host_port(listen, &hp, false); !s.ok())
      return absl::InvalidArgumentError(absl::StrCat("the server's listen address: ", s.message()));
    wo.server = {hp.host, hp.port};
    pool = std::make_unique<WorkerPool>(wo);
    if (absl::Status s = pool->start(absl::Seconds(30)); !s.ok())
      return absl::UnavailableError(
          absl::StrCat(std::string(s.message()),
                       spawned ? "\n" + spawned->log_tail()
                               : std::string(" (is --listen the server's --listen address, "
                                             "and --worker-secret-file its secret?)")));
    return absl::OkStatus();
  };
  // Without a restart the workers connect first, so a wrong --listen or
  // secret fails before any job is created.
  if (!f.restart) {
    if (absl::Status s = start_pool(); !s.ok()) return fail(std::string(s.message()));
  }

  // Jobs: the stored ones first, then the measured ones, their first
  // occurrences from the first due instant.
  const absl::Time created_from = absl::Now();
  plan.first_due = absl::FromUnixMicros(absl::ToUnixMicros(created_from + f.lead));
  const std::uint64_t to_create = std::uint64_t{f.stored} + f.jobs;
  const double server_cpu_before_create =
      spawned ? process_figures(spawned->pid()).value_or(ProcessFigures{}).cpu_seconds : 0;
  // --create-parallel posters take the next batch in turn; the first error
  // stops them all (every batch is safe to retry, so none is half-applied).
  std::atomic<std::uint64_t> next_from{0};
  std::mutex create_mu;
  std::string create_error;
  auto post_batches = [&] {
    for (std::uint64_t from = next_from.fetch_add(f.batch); from < to_create;
         from = next_from.fetch_add(f.batch)) {
      {
        std::lock_guard<std::mutex> lock(create_mu);
        if (!create_error.empty()) return;
      }
      const std::uint64_t until = std::min<std::uint64_t>(to_create, from + f.batch);
      json::array jobs;
      jobs.reserve(until - from);
      for (std::uint64_t i = from; i < until; ++i)
        jobs.push_back(i < f.stored ? plan.stored_job(static_cast<std::uint32_t>(i))
                                    : plan.job(static_cast<std::uint32_t>(i - f.stored)));
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
  const ProcessFigures server_created =
      spawned ? process_figures(spawned->pid()).value_or(ProcessFigures{}) : ProcessFigures{};
  const double server_cpu_after_create = server_created.cpu_seconds;

  // --idle: the server's CPU while it holds every job and none is due.
  std::optional<double> idle_cpu_per_s;
  if (f.idle > absl::ZeroDuration()) {
    if (created_until + f.idle > plan.first_due)
      return fail(absl::StrCat("the --idle window (", format_duration(f.idle),
                               ") would end after the first due instant: creation took ",
                               format_duration(created_until - created_from),
                               "; make --lead longer"));
    const double before = process_figures(spawned->pid()).value_or(ProcessFigures{}).cpu_seconds;
    std::this_thread::sleep_for(absl::ToChronoMicroseconds(f.idle));
    const double after = process_figures(spawned->pid()).value_or(ProcessFigures{}).cpu_seconds;
    idle_cpu_per_s = (after - before) / seconds(f.idle);
  }
  // --restart: stop the server, start it on the same store, time it.
  std::optional<absl::Duration> restart_to_line, restart_to_readyz;
  if (f.restart) {
    auto took = spawned->restart();
    if (!took.ok()) return fail(absl::StrCat("--restart: ", took.status().message()));
    restart_to_line = *took;
    server_url = spawned->http_url();
    listen = spawned->listen();
    if (absl::Status s = connect(server_url); !s.ok())
      return fail(absl::StrCat("--restart: ", s.message()));
    const std::optional<absl::Duration> readyz = wait_ready(*client, absl::Seconds(60));
    if (!readyz)
      return fail(absl::StrCat("--restart: GET /readyz did not answer 200 within 60 s\n",
                               spawned->log_tail()));
    restart_to_readyz = *restart_to_line + *readyz;
    if (absl::Status s = start_pool(); !s.ok()) return fail(std::string(s.message()));
  }
  if (absl::Now() > plan.first_due)
    std::fprintf(stderr,
                 "kairos-load: warning: creation%s took %s, past the first due instant (--lead "
                 "%s): lateness includes it\n",
                 f.restart ? " and the restart" : "",
                 format_duration(absl::Now() - created_from).c_str(),
                 format_duration(f.lead).c_str());

  // The span: from the first due instant to the last accepted report.
  if (absl::Now() < plan.first_due)
    std::this_thread::sleep_for(absl::ToChronoMicroseconds(plan.first_due - absl::Now()));
  const absl::Time first_due = plan.first_due;
  const double server_cpu_from =
      spawned ? process_figures(spawned->pid()).value_or(ProcessFigures{}).cpu_seconds : 0;
  const double self_cpu_from = cpu_self_seconds();
  const absl::Time last_due = plan.last_due();
  const std::uint64_t runs_expected = plan.total_runs();
  const bool all_answered = pool->wait_for_reports(runs_expected, last_due + f.timeout);
  const absl::Time waited_until = absl::Now();
  std::optional<ProcessFigures> server_after;
  if (spawned) {
    if (auto pf = process_figures(spawned->pid()); pf.ok()) server_after = *pf;
  }
  const double self_cpu = cpu_self_seconds() - self_cpu_from;
  pool->stop();
  const WorkerRecords& rec = pool->records();

  Verification v = verify(*client, plan, f.verify_threads);
  std::vector<std::string> problems = v.problems;
  if (!all_answered)
    problems.insert(problems.begin(),
                    absl::StrCat("only ", pool->answered(), " of ", runs_expected,
                                 " reports answered within --timeout ", format_duration(f.timeout),
                                 " after the last due instant"));
  if (rec.starts != runs_expected || rec.duplicate_starts != 0)
    problems.push_back(absl::StrCat("workers started ", rec.starts, " attempts for ", runs_expected,
                                    " occurrences (", rec.duplicate_starts,
                                    " of an occurrence already "
                                    "started)"));
  for (const std::string& d : rec.duplicate_examples) problems.push_back("started twice: " + d);
  if (rec.rejected != 0) problems.push_back(absl::StrCat(rec.rejected, " reports rejected"));
  const bool exactly_once = problems.empty() && v.good == f.jobs && rec.accepted == runs_expected;

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
        {"stored", f.stored},
        {"every_seconds", seconds(f.every)},
        {"occurrences_per_job", occurrences},
        {"runs_expected", runs_expected},
        {"concurrency", f.concurrency},
        {"create_parallel", f.create_parallel},
        {"workers", wo.workers},
        {"slots", wo.slots},
        {"server", server_url},
        {"spawned", spawned != nullptr},
        {"create_seconds", create_s},
        {"created_per_s", static_cast<double>(to_create) / create_s},
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
      out["server_rss_anon_bytes_created"] = server_created.rss_anon_bytes;
      out["server_rss_bytes"] = server_after->rss_bytes;
      out["server_rss_anon_bytes"] = server_after->rss_anon_bytes;
      out["store_bytes"] = store_bytes;
    }
    if (idle_cpu_per_s) out["server_idle_cpu_per_s"] = *idle_cpu_per_s;
    if (restart_to_line) {
      out["restart_ready_line_seconds"] = seconds(*restart_to_line);
      out["restart_readyz_seconds"] = seconds(*restart_to_readyz);
    }
    std::printf("%s\n", json::serialize(out).c_str());
  } else {
    const std::string recurring =
        occurrences > 1 || f.every > absl::ZeroDuration()
            ? absl::StrCat(", each every ", format_duration(f.every), " x ", occurrences)
            : std::string();
    const std::string stored =
        f.stored == 0 ? std::string() : absl::StrCat(", ", f.stored, " more stored");
    std::printf(
        "kairos-load: %u jobs %s%s%s, concurrency %u (%u workers x %u slots), server %s%s\n",
        f.jobs, f.rate == 0 ? "due at one instant" : absl::StrCat("due at ", f.rate, "/s").c_str(),
        recurring.c_str(), stored.c_str(), f.concurrency, wo.workers, wo.slots, server_url.c_str(),
        spawned ? " (spawned)" : "");
    std::printf("  created       %.1f s, %.0f jobs/s (POST /v1/jobs:batch of %u, %u in flight)\n",
                create_s, static_cast<double>(to_create) / create_s, f.batch, f.create_parallel);
    if (spawned)
      std::printf(
          "  after that    server RSS %.0f MiB (%.0f MiB without the store's mapped pages)\n",
          static_cast<double>(server_created.rss_bytes) / (1 << 20),
          static_cast<double>(server_created.rss_anon_bytes) / (1 << 20));
    if (idle_cpu_per_s)
      std::printf(
          "  idle          %.1f ms of server CPU per second over %s, nothing due (resolution "
          "%.1f ms/s: CPU is counted in ticks of %.0f ms)\n",
          *idle_cpu_per_s * 1e3, format_duration(f.idle).c_str(),
          1e3 / static_cast<double>(::sysconf(_SC_CLK_TCK)) / seconds(f.idle),
          1e3 / static_cast<double>(::sysconf(_SC_CLK_TCK)));
    if (restart_to_line)
      std::printf("  restart       ready line %.2f s, GET /readyz 200 %.2f s after the start\n",
                  seconds(*restart_to_line), seconds(*restart_to_readyz));
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
    if (occurrences == 1)
      std::printf(
          "  exactly once  %s: %llu of %u jobs have their one scheduled run, succeeded, one "
          "attempt\n",
          exactly_once ? "yes" : "NO", static_cast<unsigned long long>(v.good), f.jobs);
    else
      std::printf(
          "  exactly once  %s: %llu of %u jobs have their %u scheduled runs, each succeeded "
          "with one attempt\n",
          exactly_once ? "yes" : "NO", static_cast<unsigned long long>(v.good), f.jobs,
          occurrences);
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
