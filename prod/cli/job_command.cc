// `kairos job add|ls|get|cancel|pause|resume|trigger|runs|ledger|edit`: the
// job commands over the HTTP API (prod/cli/api_client.h). Each verb has its
// own flag table (prod/cli/flags.h) with the client flags; the spec of `add`
// is built and validated by prod/cli/job_cli.h before anything is sent, so a
// refused add never reaches the server. Exit codes: see kExitCodesHelp.
#include <unistd.h>

#include <boost/json/serialize.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/base/absl_compat.h"
#include "core/base/text.h"
#include "core/schedule/schedule_text.h"
#include "prod/api/job_json.h"
#include "prod/cli/api_client.h"
#include "prod/cli/commands.h"
#include "prod/cli/flags.h"
#include "prod/cli/job_cli.h"

namespace kairos::cli {
namespace json = boost::json;
namespace {

constexpr const char* kJobUsage =
    "usage: kairos job <verb> [options]\n"
    "\n"
    "verbs:\n"
    "  add       create a job (--cron, --at, --in or --every; -- PROGRAM, --shell or --http-url)\n"
    "  ls        list jobs (--namespace, --selector, --state, --paused, --limit)\n"
    "  get       show one job\n"
    "  edit      edit a job's JSON in $EDITOR and save it (If-Match of its generation)\n"
    "  cancel    cancel a job\n"
    "  pause     pause a job\n"
    "  resume    resume a paused job\n"
    "  trigger   run a job now (--force: even if a run is in progress)\n"
    "  runs      a job's recent runs\n"
    "  ledger    what became of each occurrence (fired, late, skipped, ...)\n"
    "\n"
    "Run `kairos job <verb> --help` for a verb's options.\n";

void print(const std::string& text) { std::fwrite(text.data(), 1, text.size(), stdout); }
void print_json(const json::value& v) { print(json::serialize(v) + "\n"); }

std::string job_path(std::string_view id) { return absl::StrCat("/v1/jobs/", url_encode(id)); }

std::string random_job_id() {
  std::random_device rd;
  const std::uint64_t r = (std::uint64_t{rd()} << 32) ^ rd();
  return job_id_from_random(r);
}

int job_add(int argc, char** argv) {
  JobAddArgs a;
  ClientCommand v(
      "kairos job add",
      "kairos job add (--cron EXPR [--tz ZONE] | --at TIME | --in DURATION |\n"
      "       --every DURATION) (-- PROGRAM ARGS... | --shell STRING | --http-url URL) "
      "[options]",
      "Creates a job. The spec is checked here exactly as the server checks it, so a\n"
      "refused add sends nothing. Without --id an id \"job-<16 hex>\" is made here and\n"
      "printed: run the same command with --id ID to retry safely (an identical job\n"
      "that exists already is success, a different one exit 4).");
  FlagTable& t = v.table;
  t.add({"id", "ID", "generated", "the job's id", set_string(&a.id)});
  t.add({"cron", "EXPR", "", "a cron schedule: 5 or 6 fields or a macro (@daily)",
         set_string(&a.cron)});
  t.add({"tz", "ZONE", "UTC", "the IANA zone of --cron (Europe/Berlin)", set_string(&a.tz)});
  t.add(
      {"at", "TIME", "", "run once at an RFC 3339 time (2026-12-01T10:00:00Z)", set_string(&a.at)});
  t.add({"in", "DURATION", "", "run once, this long from now (10m)", set_string(&a.in)});
  t.add({"every", "DURATION", "", "run every DURATION (30s), aligned to the Unix epoch",
         set_string(&a.every)});
  t.add({"shell", "STRING", "", "the work is /bin/sh -c STRING", set_string(&a.shell)});
  t.add({"http-url", "URL", "", "the work is an HTTP request to URL", set_string(&a.http_url)});
  t.add({"http-method", "METHOD", "POST", "the request's method", set_string(&a.http_method)});
  t.add({"body", "TEXT", "", "the request's body", set_string(&a.body)});
  t.add({"retries", "N", "2", "retries after a failed attempt (max_attempts = N + 1)",
         set_string(&a.retries)});
  t.add({"backoff", "INITIAL[:MAX]", "10s:5m", "the first retry delay and its cap",
         set_string(&a.backoff)});
  t.add({"timeout", "DURATION", "1h", "a run's time limit", set_string(&a.timeout)});
  t.add({"misfire", "run-once|catch-up|skip", "run-once", "what late occurrences become",
         set_string(&a.misfire)});
  t.add({"overlap", "skip|queue|allow[:N]", "skip", "what an occurrence does while a run is on",
         set_string(&a.overlap)});
  t.add({"priority", "N", "5", "0..9; higher runs first", set_string(&a.priority)});
  t.add({"namespace", "NS", "default", "the job's namespace", set_string(&a.ns)});
  t.add({"dst-gap", "shift|skip", "shift", "--cron: a local time a DST gap skips",
         set_string(&a.dst_gap)});
  t.add({"dst-fold", "first|last|both", "first", "--cron: a local time a DST fold repeats",
         set_string(&a.dst_fold)});
  const std::vector<Flag> repeatable = {
      {"label", "K=V", "", "a label (repeatable)", append_to(&a.labels)},
      {"env", "K=V", "", "an environment variable of the command (repeatable)", append_to(&a.env)},
      {"header", "K:V", "", "a header of the HTTP request (repeatable)", append_to(&a.headers)},
  };
  // Everything after a lone `--` is the program; nothing else is positional.
  t.allow_positional();
  if (auto code = v.start(argc, argv, 0, repeatable, /*request_timeout=*/false)) return *code;
  int dashes = argc;
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]) == "--") {
      dashes = i;
      break;
    }
  const std::size_t after = dashes < argc ? static_cast<std::size_t>(argc - dashes - 1) : 0;
  if (t.positional().size() != after)
    return t.usage_error(absl::StrCat("unexpected argument '", excerpt(t.positional().front()),
                                      "' (the program goes after `--`)"));
  a.program = t.positional();

  const std::string generated = random_job_id();
  auto spec = job_add_spec(a, absl::Now(), generated);
  if (!spec.ok()) return v.fail(spec.status());
  const json::value body = api::job_spec_to_json(*spec);
  auto r = v.client->call("POST", "/v1/jobs", &body);
  if (!r.ok()) {
    const int code = v.fail(r.status());
    if (code == kExitUnavailable)
      std::fprintf(stderr, "kairos job add: the job id is %s; retry with --id %s\n",
                   spec->id.c_str(), spec->id.c_str());
    return code;
  }
  if (v.client_flags.json) {
    print_json(r->body);
  } else {
    print(absl::StrCat(r->status == 201 ? "created job " : "job exists, identical: ", spec->id,
                       "\n"));
  }
  return kExitOk;
}

int job_ls(int argc, char** argv) {
  std::string ns, selector, state;
  bool paused = false;
  std::uint32_t limit = 0;
  ClientCommand v("kairos job ls",
                  "kairos job ls [--namespace NS] [--selector k=v,...] [--state S] [--paused]",
                  "Lists jobs, following the server's pages.");
  v.table.add({"namespace", "NS", "all", "only this namespace", set_string(&ns)});
  v.table.add(
      {"selector", "K=V,...", "none", "only jobs with all these labels", set_string(&selector)});
  v.table.add({"state", "active|cancelled", "all", "only jobs in this state",
               set_choice(&state, {"active", "cancelled"})});
  v.table.add({"paused", "", "off", "only paused jobs", set_switch(&paused)});
  v.table.add({"limit", "N", "all", "at most N jobs (1..1000000)", set_u32(&limit, 1, 1000000)});
  if (auto code = v.start(argc, argv, 0)) return *code;
  std::vector<std::string> query;
  if (!ns.empty()) query.push_back("namespace=" + url_encode(ns));
  if (!selector.empty()) query.push_back("selector=" + url_encode(selector));
  if (!state.empty()) query.push_back("state=" + state);
  if (paused) query.push_back("paused=true");
  std::string q;
  for (const auto& part : query) absl::StrAppend(&q, q.empty() ? "" : "&", part);
  auto jobs = list_jobs(*v.client, q, limit);
  if (!jobs.ok()) return v.fail(jobs.status());
  if (v.client_flags.json) {
    json::object o;
    o["jobs"] = *std::move(jobs);
    print_json(o);
  } else {
    print(render_jobs(*jobs));
  }
  return kExitOk;
}

int job_get(int argc, char** argv) {
  ClientCommand v("kairos job get", "kairos job get ID", "Shows one job with its status.");
  if (auto code = v.start(argc, argv, 1)) return *code;
  auto r = v.client->call("GET", job_path(v.id()));
  if (!r.ok()) return v.fail(r.status());
  print(v.client_flags.json ? json::serialize(r->body) + "\n" : render_job(r->body));
  return kExitOk;
}

// cancel, pause and resume: one request, optionally conditional.
int job_control(int argc, char** argv, std::string_view verb) {
  std::uint32_t if_generation = 0;
  ClientCommand v(absl::StrCat("kairos job ", absl_sv(verb)),
                  absl::StrCat("kairos job ", absl_sv(verb), " ID [--if-generation N]"),
                  verb == "cancel" ? "Cancels a job: no new runs; a run in progress is not stopped."
                  : verb == "pause" ? "Pauses a job: no occurrence fires until it is resumed."
                                    : "Resumes a paused job; its misfire policy decides what the\n"
                                      "occurrences missed meanwhile become.");
  v.table.add({"if-generation", "N", "any", "only if the job's generation is still N (else exit 4)",
               set_u32(&if_generation, 1, UINT32_MAX)});
  if (auto code = v.start(argc, argv, 1)) return *code;
  std::optional<std::uint64_t> if_match;
  if (v.table.given("if-generation")) if_match = if_generation;
  auto r = verb == "cancel"
               ? v.client->call("DELETE", job_path(v.id()), nullptr, if_match)
               : v.client->call("POST", absl::StrCat(job_path(v.id()), ":", absl_sv(verb)), nullptr,
                                if_match);
  if (!r.ok()) return v.fail(r.status());
  if (v.client_flags.json) {
    print_json(r->body);
  } else {
    const char* done = verb == "cancel" ? "cancelled" : verb == "pause" ? "paused" : "resumed";
    print(absl::StrCat(done, " job ", v.id(), "\n"));
  }
  return kExitOk;
}

int job_trigger(int argc, char** argv) {
  bool force = false;
  ClientCommand v("kairos job trigger", "kairos job trigger ID [--force]",
                  "Runs a job now, as a manual run outside its schedule.");
  v.table.add(
      {"force", "", "off", "run even if the overlap policy would refuse", set_switch(&force)});
  if (auto code = v.start(argc, argv, 1)) return *code;
  json::object body;
  if (force) body["force"] = true;
  const json::value b(std::move(body));
  auto r = v.client->call("POST", job_path(v.id()) + ":trigger", &b);
  if (!r.ok()) return v.fail(r.status());
  if (v.client_flags.json) {
    print_json(r->body);
  } else {
    std::string line = absl::StrCat("triggered job ", v.id());
    if (r->body.is_object())
      for (const char* key : {"run_id", "id"})
        if (const json::value* id = r->body.get_object().if_contains(key); id && id->is_string()) {
          absl::StrAppend(&line, ": run ", std::string(id->get_string()));
          break;
        }
    print(line + "\n");
  }
  return kExitOk;
}

// The array `key` of a response body (an empty one when absent).
json::array array_member(const json::value& body, std::string_view key) {
  if (!body.is_object()) return {};
  const json::value* v = body.get_object().if_contains(json::string_view(key.data(), key.size()));
  return v != nullptr && v->is_array() ? v->get_array() : json::array();
}

int job_runs(int argc, char** argv) {
  std::uint32_t limit = 20;
  ClientCommand v("kairos job runs", "kairos job runs ID [--limit N]",
                  "Shows a job's most recent runs.");
  v.table.add({"limit", "N", "20", "at most N runs (1..1000)", set_u32(&limit, 1, 1000)});
  if (auto code = v.start(argc, argv, 1)) return *code;
  auto r = v.client->call("GET", absl::StrCat(job_path(v.id()), "/runs?limit=", limit));
  if (!r.ok()) return v.fail(r.status());
  print(v.client_flags.json ? json::serialize(r->body) + "\n"
                            : render_runs(array_member(r->body, "runs")));
  return kExitOk;
}

int job_ledger(int argc, char** argv) {
  std::string from, to;
  std::uint32_t limit = 100;
  ClientCommand v("kairos job ledger", "kairos job ledger ID [--from TIME] [--to TIME] [--limit N]",
                  "The occurrence ledger: what became of each scheduled occurrence (fired,\n"
                  "late, moved by DST, skipped by overlap or misfire, coalesced, cancelled,\n"
                  "paused) and why: the answer to \"why didn't 02:30 run?\".");
  auto time_flag = [](std::string* out) {
    return [out](std::string_view value) -> absl::Status {
      if (auto t = parse_rfc3339(value); !t.ok()) return t.status();
      *out = std::string(value);
      return absl::OkStatus();
    };
  };
  v.table.add(
      {"from", "TIME", "none", "occurrences at or after this RFC 3339 time", time_flag(&from)});
  v.table.add({"to", "TIME", "none", "occurrences before this RFC 3339 time", time_flag(&to)});
  v.table.add({"limit", "N", "100", "at most N records (1..1000)", set_u32(&limit, 1, 1000)});
  if (auto code = v.start(argc, argv, 1)) return *code;
  std::string target = absl::StrCat(job_path(v.id()), "/occurrences?limit=", limit);
  if (!from.empty()) absl::StrAppend(&target, "&from=", url_encode(from));
  if (!to.empty()) absl::StrAppend(&target, "&to=", url_encode(to));
  auto r = v.client->call("GET", target);
  if (!r.ok()) return v.fail(r.status());
  print(v.client_flags.json ? json::serialize(r->body) + "\n"
                            : render_ledger(array_member(r->body, "occurrences")));
  return kExitOk;
}

std::string shell_quote(std::string_view s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

int job_edit(int argc, char** argv) {
  ClientCommand v("kairos job edit", "kairos job edit ID",
                  "Opens the job's JSON in $VISUAL or $EDITOR (else vi) and saves it with\n"
                  "If-Match of the generation it showed: if the job changed meanwhile the\n"
                  "save is refused (exit 4) and nothing is lost but the edit, kept in its file.");
  if (auto code = v.start(argc, argv, 1)) return *code;
  auto r = v.client->call("GET", job_path(v.id()));
  if (!r.ok()) return v.fail(r.status());
  std::optional<std::uint64_t> generation = r->generation;
  if (!generation) generation = generation_of(r->body);
  if (!generation)
    return v.fail(absl::InternalError("the server's job has no generation (no ETag)"));
  const std::string before = pretty_json(r->body);

  const char* tmpdir = std::getenv("TMPDIR");
  std::string path = absl::StrCat(tmpdir && *tmpdir ? tmpdir : "/tmp", "/kairos-edit-XXXXXX");
  const int fd = mkstemp(path.data());
  if (fd < 0) return v.fail(absl::InternalError("cannot create a temporary file"));
  const bool wrote = write(fd, before.data(), before.size()) == static_cast<ssize_t>(before.size());
  close(fd);
  if (!wrote) return v.fail(absl::InternalError(absl::StrCat("cannot write ", path)));
  const char* editor = std::getenv("VISUAL");
  if (editor == nullptr || *editor == '\0') editor = std::getenv("EDITOR");
  if (editor == nullptr || *editor == '\0') editor = "vi";
  const int rc = std::system(absl::StrCat(editor, " ", shell_quote(path)).c_str());
  if (rc != 0) {
    unlink(path.c_str());
    return v.fail(absl::InternalError(absl::StrCat("the editor '", excerpt(editor),
                                                   "' failed (status ", rc, "); nothing saved")));
  }
  auto after = read_bounded_file(path, kMaxResponseSize);
  if (!after.ok()) return v.fail(after.status());
  if (*after == before) {
    unlink(path.c_str());
    print(absl::StrCat("no changes to job ", v.id(), "\n"));
    return kExitOk;
  }
  auto spec = api::decode_job_spec(*after);
  if (spec.ok() && spec->id != v.id()) spec = api::field_error("id", "cannot be changed by edit");
  if (!spec.ok()) {
    std::fprintf(stderr, "kairos job edit: your edit is kept in %s\n", path.c_str());
    return v.fail(spec.status());
  }
  const json::value body = api::job_spec_to_json(*spec);
  auto put = v.client->call("PUT", job_path(v.id()), &body, generation);
  if (!put.ok()) {
    std::fprintf(stderr, "kairos job edit: your edit is kept in %s\n", path.c_str());
    if (put.status().code() == absl::StatusCode::kFailedPrecondition)
      return v.fail(absl::FailedPreconditionError(
          absl::StrCat("job ", v.id(), " changed on the server since generation ", *generation,
                       " was opened; run edit again")));
    return v.fail(put.status());
  }
  unlink(path.c_str());
  if (v.client_flags.json) {
    print_json(put->body);
  } else {
    print(absl::StrCat("saved job ", v.id(), "\n"));
  }
  return kExitOk;
}

}  // namespace

int job_command(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(kJobUsage, stderr);
    return kExitUsage;
  }
  const std::string_view verb = argv[1];
  const int n = argc - 1;
  char** args = argv + 1;
  if (verb == "--help" || verb == "-h" || verb == "help") {
    std::fputs(kJobUsage, stdout);
    return kExitOk;
  }
  if (verb == "add") return job_add(n, args);
  if (verb == "ls" || verb == "list") return job_ls(n, args);
  if (verb == "get") return job_get(n, args);
  if (verb == "cancel" || verb == "pause" || verb == "resume") return job_control(n, args, verb);
  if (verb == "trigger") return job_trigger(n, args);
  if (verb == "runs") return job_runs(n, args);
  if (verb == "ledger") return job_ledger(n, args);
  if (verb == "edit") return job_edit(n, args);
  std::fprintf(stderr, "kairos job: unknown verb '%s'\n\n%s", excerpt(verb).c_str(), kJobUsage);
  return kExitUsage;
}

}  // namespace kairos::cli
