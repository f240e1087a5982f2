// `kairos apply -f FILE [--prune] [--dry-run]`: makes the server's jobs what a
// file says. The file ({"jobs": [...]} or a JSON array of jobs in the API
// contract's shape, every job with its id) is decoded and validated by the
// API's codec before anything is sent; the plan (create, change with a field
// diff, unchanged, cancel) compares it with the server's jobs. Changes are
// sent with If-Match of the generation the plan saw, so a job changed by
// someone else meanwhile stops the apply (exit 4) instead of being
// overwritten. Jobs are written one by one (PUT /v1/jobs/{id}); an apply cut
// short can be run again: what was done shows as unchanged.
#include <boost/json/serialize.hpp>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "core/base/text.h"
#include "prod/api/job_json.h"
#include "prod/cli/api_client.h"
#include "prod/cli/commands.h"
#include "prod/cli/flags.h"
#include "prod/cli/job_cli.h"

namespace kairos::cli {
namespace json = boost::json;
namespace {

json::value plan_json(const std::vector<PlanStep>& plan) {
  static constexpr const char* kNames[] = {"create", "change", "unchanged", "cancel"};
  json::array steps;
  for (const PlanStep& s : plan) {
    json::object o;
    o["action"] = kNames[static_cast<int>(s.kind)];
    o["id"] = s.id;
    o["namespace"] = s.ns;
    json::array diff;
    for (const std::string& d : s.diff) diff.emplace_back(d);
    o["diff"] = std::move(diff);
    steps.emplace_back(std::move(o));
  }
  json::object out;
  out["plan"] = std::move(steps);
  return out;
}

}  // namespace

int apply_command(int argc, char** argv) {
  std::string file;
  bool prune = false, dry_run = false;
  ClientCommand c("kairos apply", "kairos apply -f FILE [--prune] [--dry-run]",
                  "Creates or updates every job of FILE ({\"jobs\": [...]} or a JSON array of\n"
                  "jobs as the API takes them; every job needs its \"id\"). --dry-run prints\n"
                  "the plan without writing; --prune also cancels the jobs of the file's\n"
                  "namespaces that it no longer lists.");
  c.table.add({"file", "FILE", "", "the jobs (also -f FILE)", set_string(&file)});
  c.table.add({"prune", "", "off", "cancel jobs of the same namespaces the file does not list",
               set_switch(&prune)});
  c.table.add({"dry-run", "", "off", "print the plan, change nothing", set_switch(&dry_run)});
  // `-f FILE` is the conventional short form of --file.
  std::vector<std::string> args(argv, argv + argc);
  for (std::size_t i = 1; i < args.size() && args[i] != "--"; ++i)
    if (args[i] == "-f") args[i] = "--file";
  std::vector<char*> pointers;
  for (std::string& a : args) pointers.push_back(a.data());
  if (auto code = c.start(argc, pointers.data(), 0)) return *code;
  if (file.empty()) return c.table.usage_error("flag --file (-f) is required");
  auto text = read_bounded_file(file, kMaxResponseSize);
  if (!text.ok())
    return c.fail(
        absl::InvalidArgumentError(absl::StrCat("flag --file: ", text.status().message())));
  auto wanted = read_apply_file(*text);
  if (!wanted.ok())
    return c.fail(api::with_field(
        absl::InvalidArgumentError(absl::StrCat(file, ": ", describe(wanted.status()))),
        api::error_field(wanted.status())));

  // What the server has: every job the file names, and with --prune every
  // active job of the file's namespaces.
  std::vector<json::value> remote;
  std::set<std::string> namespaces;
  for (const JobSpec& spec : *wanted) {
    namespaces.insert(spec.ns);
    auto r = c.client->call("GET", absl::StrCat("/v1/jobs/", url_encode(spec.id)));
    if (r.ok()) {
      remote.push_back(std::move(r->body));
    } else if (r.status().code() != absl::StatusCode::kNotFound) {
      return c.fail(r.status());
    }
  }
  if (prune)
    for (const std::string& ns : namespaces) {
      auto jobs =
          list_jobs(*c.client, absl::StrCat("namespace=", url_encode(ns), "&state=active"), 0);
      if (!jobs.ok()) return c.fail(jobs.status());
      for (json::value& j : *jobs) remote.push_back(std::move(j));
    }
  auto plan = plan_apply(*wanted, remote, prune);
  if (!plan.ok()) return c.fail(plan.status());
  if (dry_run) {
    const std::string out =
        c.client_flags.json ? json::serialize(plan_json(*plan)) + "\n" : render_plan(*plan);
    std::fwrite(out.data(), 1, out.size(), stdout);
    return kExitOk;
  }

  json::array done;
  for (const PlanStep& s : *plan) {
    const std::string path = absl::StrCat("/v1/jobs/", url_encode(s.id));
    absl::StatusOr<ApiResult> r;
    std::string verb;
    switch (s.kind) {
      case PlanStep::Kind::kUnchanged:
        continue;
      case PlanStep::Kind::kCreate: {
        const json::value body = api::job_spec_to_json(*s.spec);
        r = c.client->call("PUT", path, &body);
        verb = "created";
        break;
      }
      case PlanStep::Kind::kChange: {
        const json::value body = api::job_spec_to_json(*s.spec);
        r = c.client->call("PUT", path, &body, s.generation);
        verb = "changed";
        break;
      }
      case PlanStep::Kind::kCancel:
        r = c.client->call("DELETE", path, nullptr, s.generation);
        verb = "cancelled";
        break;
    }
    if (!r.ok()) {
      std::fprintf(stderr, "kairos apply: stopped at job %s (%zu step(s) done before it)\n",
                   s.id.c_str(), done.size());
      return c.fail(r.status());
    }
    if (c.client_flags.json) {
      done.push_back(std::move(r->body));
    } else {
      std::printf("%s job %s\n", verb.c_str(), s.id.c_str());
    }
  }
  if (c.client_flags.json) {
    json::object o;
    o["jobs"] = std::move(done);
    std::printf("%s\n", json::serialize(o).c_str());
  } else {
    const std::string summary = render_plan(*plan);
    std::fputs(summary.substr(summary.rfind('\n', summary.size() - 2) + 1).c_str(), stdout);
  }
  return kExitOk;
}

}  // namespace kairos::cli
