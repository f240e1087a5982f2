#include "prod/cli/job_cli.h"

#include <algorithm>
#include <boost/json/serialize.hpp>
#include <charconv>
#include <cstdio>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/base/absl_compat.h"
#include "core/base/check.h"
#include "core/base/duration.h"
#include "core/base/rfc3339.h"
#include "core/base/text.h"
#include "prod/api/job_json.h"
#include "prod/cli/api_client.h"

namespace kairos::cli {
namespace json = boost::json;
namespace {

absl::Status flag_error(std::string_view flag, std::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat("flag --", absl_sv(flag), ": ", absl_sv(message)));
}

template <typename T>
bool parse_int(std::string_view text, T* out) {
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return !text.empty() && ec == std::errc() && ptr == text.data() + text.size();
}

// "K=V" (labels, env) or "K:V" (headers) into `out`, refusing a key twice.
absl::Status add_pair(std::string_view flag, std::string_view text, char sep, json::object& out) {
  const auto at = text.find(sep);
  if (at == std::string_view::npos || at == 0)
    return flag_error(flag, absl::StrCat("expected KEY", std::string(1, sep), "VALUE, got '",
                                         excerpt(text), "'"));
  const std::string key(text.substr(0, at));
  std::string_view value = text.substr(at + 1);
  if (sep == ':') value = std_sv(absl::StripLeadingAsciiWhitespace(absl_sv(value)));
  if (out.contains(key))
    return flag_error(flag, absl::StrCat("key '", excerpt(key), "' given twice"));
  out[key] = value;
  return absl::OkStatus();
}

// The flag that sets a contract field, for messages.
std::string flag_of_field(std::string_view field, const JobAddArgs& a) {
  auto starts = [&](std::string_view prefix) { return field.starts_with(prefix); };
  if (starts("schedule.zone")) return "tz";
  if (starts("schedule.dst_gap")) return "dst-gap";
  if (starts("schedule.dst_fold")) return "dst-fold";
  if (starts("schedule.at")) return a.in.empty() ? "at" : "in";
  if (starts("schedule.every") || starts("schedule.start") || starts("schedule.end"))
    return "every";
  if (starts("schedule")) {
    if (!a.cron.empty()) return "cron";
    if (!a.every.empty()) return "every";
    return a.in.empty() ? "at" : "in";
  }
  if (starts("command.env")) return "env";
  if (starts("command")) return a.shell.empty() ? "" : "shell";
  if (starts("http.method")) return "http-method";
  if (starts("http.headers")) return "header";
  if (starts("http.body")) return "body";
  if (starts("http")) return "http-url";
  if (starts("policy.max_attempts")) return "retries";
  if (starts("policy.retry_")) return "backoff";
  if (starts("policy.timeout")) return "timeout";
  if (starts("policy.misfire")) return "misfire";
  if (starts("policy.overlap") || starts("policy.max_concurrent")) return "overlap";
  if (starts("policy.priority")) return "priority";
  if (starts("namespace")) return "namespace";
  if (starts("labels")) return "label";
  if (starts("id")) return "id";
  return "";
}

const json::value* member(const json::value& v, std::string_view path) {
  const json::value* cur = &v;
  while (!path.empty()) {
    const auto dot = path.find('.');
    const std::string_view key = path.substr(0, dot);
    if (!cur->is_object()) return nullptr;
    cur = cur->get_object().if_contains(json::string_view(key.data(), key.size()));
    if (cur == nullptr) return nullptr;
    path = dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
  }
  return cur;
}

std::string text_at(const json::value& v, std::string_view path) {
  return text_of(member(v, path));
}

std::string pairs_text(const json::value* v) {
  if (v == nullptr || !v->is_object()) return "-";
  std::vector<std::string> parts;
  for (const auto& m : v->get_object())
    parts.push_back(absl::StrCat(std::string(m.key()), "=", text_of(&m.value())));
  return parts.empty() ? "-" : absl::StrJoin(parts, ",");
}

void pretty(const json::value& v, int indent, std::string& out) {
  const std::string pad(static_cast<std::size_t>(indent) * 2 + 2, ' ');
  const std::string close(static_cast<std::size_t>(indent) * 2, ' ');
  if (v.is_object() && !v.get_object().empty()) {
    out += "{\n";
    bool first = true;
    for (const auto& m : v.get_object()) {
      if (!first) out += ",\n";
      first = false;
      absl::StrAppend(&out, pad, json::serialize(json::value(m.key())), ": ");
      pretty(m.value(), indent + 1, out);
    }
    absl::StrAppend(&out, "\n", close, "}");
  } else if (v.is_array() && !v.get_array().empty()) {
    out += "[\n";
    bool first = true;
    for (const auto& e : v.get_array()) {
      if (!first) out += ",\n";
      first = false;
      out += pad;
      pretty(e, indent + 1, out);
    }
    absl::StrAppend(&out, "\n", close, "]");
  } else {
    out += json::serialize(v);
  }
}

void flatten(const json::value& v, const std::string& path,
             std::map<std::string, std::string>& out) {
  if (v.is_object() && !v.get_object().empty()) {
    for (const auto& m : v.get_object())
      flatten(m.value(), path.empty() ? std::string(m.key()) : path + "." + std::string(m.key()),
              out);
    return;
  }
  out[path] = json::serialize(v);
}

}  // namespace

std::optional<std::uint64_t> generation_of(const json::value& job) {
  const json::value* g = member(job, "status.generation");
  if (g == nullptr || !g->is_number()) return std::nullopt;
  boost::system::error_code ec;
  const auto n = g->to_number<std::uint64_t>(ec);
  if (ec) return std::nullopt;
  return n;
}

std::string job_id_from_random(std::uint64_t random) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id = "job-";
  for (int shift = 60; shift >= 0; shift -= 4) id.push_back(kHex[(random >> shift) & 15]);
  return id;
}

absl::StatusOr<JobSpec> job_add_spec(const JobAddArgs& a, absl::Time now,
                                     std::string_view generated_id) {
  const int kinds =
      int{!a.cron.empty()} + int{!a.at.empty()} + int{!a.in.empty()} + int{!a.every.empty()};
  if (kinds != 1)
    return absl::InvalidArgumentError(
        kinds == 0 ? "flag --cron, --at, --in or --every is required: when should the job run?"
                   : "flags --cron, --at, --in and --every: give exactly one");
  for (const auto& [flag, value] :
       {std::pair{"tz", &a.tz}, std::pair{"dst-gap", &a.dst_gap}, {"dst-fold", &a.dst_fold}})
    if (!value->empty() && a.cron.empty()) return flag_error(flag, "only with --cron");
  const int payloads = int{!a.program.empty()} + int{!a.shell.empty()} + int{!a.http_url.empty()};
  if (payloads != 1)
    return absl::InvalidArgumentError(
        payloads == 0
            ? "the work is required: `-- PROGRAM ARGS...`, --shell STRING or --http-url URL"
            : "give exactly one of `-- PROGRAM ARGS...`, --shell and --http-url");
  if (a.http_url.empty()) {
    if (!a.http_method.empty()) return flag_error("http-method", "only with --http-url");
    if (!a.headers.empty()) return flag_error("header", "only with --http-url");
    if (!a.body.empty()) return flag_error("body", "only with --http-url");
  } else if (!a.env.empty()) {
    return flag_error("env", "only for a command (`-- PROGRAM` or --shell)");
  }

  json::object job;
  job["id"] = a.id.empty() ? generated_id : std::string_view(a.id);
  if (!a.ns.empty()) job["namespace"] = a.ns;
  json::object labels;
  for (const std::string& l : a.labels) KAIROS_RETURN_IF_ERROR(add_pair("label", l, '=', labels));
  job["labels"] = std::move(labels);

  json::object schedule;
  if (!a.cron.empty()) {
    schedule["cron"] = a.cron;
    if (!a.tz.empty()) schedule["zone"] = a.tz;
    if (!a.dst_gap.empty()) schedule["dst_gap"] = a.dst_gap;
    if (!a.dst_fold.empty()) schedule["dst_fold"] = a.dst_fold;
  } else if (!a.at.empty()) {
    schedule["at"] = a.at;
  } else if (!a.in.empty()) {
    auto d = parse_duration(a.in);
    if (!d.ok()) return flag_error("in", std_sv(d.status().message()));
    if (*d <= absl::ZeroDuration())
      return flag_error("in", absl::StrCat("must be positive, got '", excerpt(a.in), "'"));
    schedule["at"] = format_rfc3339_utc(now + *d);
  } else {
    schedule["every"] = a.every;
  }
  job["schedule"] = std::move(schedule);

  if (!a.http_url.empty()) {
    json::object http;
    http["url"] = a.http_url;
    if (!a.http_method.empty()) http["method"] = a.http_method;
    json::object headers;
    for (const std::string& h : a.headers)
      KAIROS_RETURN_IF_ERROR(add_pair("header", h, ':', headers));
    http["headers"] = std::move(headers);
    if (!a.body.empty()) http["body"] = a.body;
    job["http"] = std::move(http);
  } else {
    json::object command;
    json::array argv;
    if (!a.shell.empty()) {
      argv = {"/bin/sh", "-c", a.shell};
    } else {
      for (const std::string& arg : a.program) argv.emplace_back(arg);
    }
    command["argv"] = std::move(argv);
    json::object env;
    for (const std::string& e : a.env) KAIROS_RETURN_IF_ERROR(add_pair("env", e, '=', env));
    command["env"] = std::move(env);
    job["command"] = std::move(command);
  }

  json::object policy;
  if (!a.retries.empty()) {
    std::uint32_t n = 0;
    if (!parse_int(a.retries, &n) || n >= 1000)
      return flag_error("retries", absl::StrCat("expected an integer in [0, 999], got '",
                                                excerpt(a.retries), "'"));
    policy["max_attempts"] = n + 1;
  }
  if (!a.backoff.empty()) {
    const auto colon = a.backoff.find(':');
    policy["retry_initial"] = a.backoff.substr(0, colon);
    if (colon != std::string::npos) policy["retry_max"] = a.backoff.substr(colon + 1);
  }
  if (!a.timeout.empty()) policy["timeout"] = a.timeout;
  if (!a.misfire.empty()) policy["misfire"] = a.misfire;
  if (!a.overlap.empty()) {
    const auto colon = a.overlap.find(':');
    policy["overlap"] = a.overlap.substr(0, colon);
    if (colon != std::string::npos) {
      std::uint32_t n = 0;
      if (a.overlap.substr(0, colon) != "allow" || !parse_int(a.overlap.substr(colon + 1), &n))
        return flag_error("overlap", absl::StrCat("expected skip, queue, allow or allow:N, got '",
                                                  excerpt(a.overlap), "'"));
      policy["max_concurrent"] = n;
    }
  }
  if (!a.priority.empty()) {
    std::int32_t p = 0;
    if (!parse_int(a.priority, &p))
      return flag_error("priority",
                        absl::StrCat("expected an integer, got '", excerpt(a.priority), "'"));
    policy["priority"] = p;
  }
  job["policy"] = std::move(policy);

  auto spec = api::job_spec_from_json(json::value(std::move(job)));
  if (spec.ok()) return spec;
  const std::string field = api::error_field(spec.status());
  const std::string flag = flag_of_field(field, a);
  if (flag.empty()) return spec.status();
  // "flag --cron (schedule.cron): field 1 (minute): 61 is out of range 0-59".
  std::string_view message = std_sv(spec.status().message());
  for (const std::string& prefix : {field + ": ", std::string("schedule: ")})
    if (message.starts_with(prefix)) message.remove_prefix(prefix.size());
  return api::with_field(absl::InvalidArgumentError(
                             absl::StrCat("flag --", flag, " (", field, "): ", absl_sv(message))),
                         field);
}

// ---- Human output ----------------------------------------------------------

std::string format_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows)
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (widths.size() <= i) widths.push_back(0);
      widths[i] = std::max(widths[i], row[i].size());
    }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line.append(widths[i] - row[i].size() + 2, ' ');
    }
    absl::StrAppend(&out, absl::StripTrailingAsciiWhitespace(line), "\n");
  }
  return out;
}

std::string text_of(const json::value* v) {
  if (v == nullptr || v->is_null()) return "-";
  if (v->is_string()) return std::string(v->get_string());
  return json::serialize(*v);
}

std::string schedule_text(const json::value& job) {
  const json::value* s = member(job, "schedule");
  if (s == nullptr || !s->is_object()) return "-";
  if (member(*s, "cron") != nullptr) {
    std::string out = absl::StrCat("cron ", text_at(*s, "cron"));
    if (const json::value* z = member(*s, "zone"); z != nullptr && text_of(z) != "UTC")
      absl::StrAppend(&out, " ", text_of(z));
    return out;
  }
  if (member(*s, "at") != nullptr) return absl::StrCat("at ", text_at(*s, "at"));
  if (member(*s, "every") != nullptr) return absl::StrCat("every ", text_at(*s, "every"));
  return "-";
}

namespace {
std::string state_text(const json::value& job) {
  const std::string state = text_at(job, "status.state");
  const json::value* paused = member(job, "status.paused");
  if (state == "active" && paused != nullptr && paused->is_bool() && paused->get_bool())
    return "paused";
  return state;
}
}  // namespace

std::string render_jobs(const json::array& jobs) {
  std::vector<std::vector<std::string>> rows = {
      {"ID", "NAMESPACE", "SCHEDULE", "STATE", "NEXT DUE", "GEN"}};
  for (const json::value& j : jobs)
    rows.push_back({text_at(j, "id"), text_at(j, "namespace"), schedule_text(j), state_text(j),
                    text_at(j, "status.next_due_at"), text_at(j, "status.generation")});
  return format_table(rows);
}

std::string render_job(const json::value& job) {
  std::string work = "-";
  if (const json::value* argv = member(job, "command.argv"); argv != nullptr && argv->is_array()) {
    std::vector<std::string> parts;
    for (const auto& a : argv->get_array()) parts.push_back(text_of(&a));
    work = absl::StrCat("command ", absl::StrJoin(parts, " "));
  } else if (member(job, "http") != nullptr) {
    work = absl::StrCat("http ", text_at(job, "http.method"), " ", text_at(job, "http.url"));
  }
  std::vector<std::vector<std::string>> rows = {
      {"id:", text_at(job, "id")},
      {"namespace:", text_at(job, "namespace")},
      {"labels:", pairs_text(member(job, "labels"))},
      {"schedule:", schedule_text(job)},
      {"work:", work},
  };
  if (const json::value* env = member(job, "command.env");
      env != nullptr && env->is_object() && !env->get_object().empty())
    rows.push_back({"env:", pairs_text(env)});
  if (const json::value* p = member(job, "policy"); p != nullptr && p->is_object())
    rows.push_back({"policy:", pairs_text(p)});
  if (member(job, "status") != nullptr) {
    rows.push_back({"state:", state_text(job)});
    for (const char* key : {"generation", "incarnation", "created_at", "updated_at", "next_due_at",
                            "next_nominal", "cancelled_at"})
      rows.push_back({absl::StrCat(key, ":"), text_at(job, absl::StrCat("status.", key))});
  }
  return format_table(rows);
}

std::string render_runs(const json::array& runs) {
  std::vector<std::vector<std::string>> rows = {
      {"NOMINAL", "KIND", "STATE", "OUTCOME", "ATTEMPT", "EXIT", "FINISHED", "DETAIL"}};
  for (const json::value& r : runs)
    rows.push_back({text_at(r, "nominal"), text_at(r, "kind"), text_at(r, "state"),
                    text_at(r, "outcome"), text_at(r, "attempt"), text_at(r, "exit_code"),
                    text_at(r, "finished_at"), excerpt(text_at(r, "detail"))});
  return format_table(rows);
}

std::string render_ledger(const json::array& occurrences) {
  std::vector<std::vector<std::string>> rows = {
      {"NOMINAL", "COUNT", "OUTCOME", "FIRE AT", "LATENESS", "RUN", "DETAIL"}};
  for (const json::value& o : occurrences) {
    std::string count = text_at(o, "count");
    if (count != "1" && count != "-") absl::StrAppend(&count, " (to ", text_at(o, "through"), ")");
    rows.push_back({text_at(o, "nominal"), count, text_at(o, "outcome"), text_at(o, "fire_at"),
                    text_at(o, "lateness"), text_at(o, "run_nominal"),
                    excerpt(text_at(o, "detail"))});
  }
  return format_table(rows);
}

std::string render_object(const json::object& object) {
  std::vector<std::vector<std::string>> scalars;
  std::string tables;
  for (const auto& m : object) {
    const std::string key(m.key());
    const json::value& v = m.value();
    if (v.is_array() && !v.get_array().empty() && v.get_array()[0].is_object()) {
      std::vector<std::string> columns;
      for (const auto& c : v.get_array()[0].get_object()) columns.emplace_back(c.key());
      std::vector<std::vector<std::string>> rows;
      rows.emplace_back();
      for (const auto& c : columns) rows.back().push_back(absl::AsciiStrToUpper(c));
      for (const auto& e : v.get_array()) {
        rows.emplace_back();
        for (const auto& c : columns) rows.back().push_back(text_at(e, c));
      }
      absl::StrAppend(&tables, "\n", key, ":\n", format_table(rows));
    } else {
      scalars.push_back({key + ":", text_of(&v)});
    }
  }
  return format_table(scalars) + tables;
}

std::string pretty_json(const json::value& v) {
  std::string out;
  pretty(v, 0, out);
  out += "\n";
  return out;
}

// ---- Command-line plumbing -------------------------------------------------

std::optional<int> parse_command_line(FlagTable& table, int argc, char** argv,
                                      const std::vector<Flag>& repeatable) {
  for (const Flag& f : repeatable) table.add(f);
  std::vector<std::string> rewritten;
  std::vector<std::pair<const Flag*, std::string>> values;
  bool flags_done = false;
  for (int i = 0; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (i == 0 || flags_done) {
      rewritten.emplace_back(arg);
      continue;
    }
    if (arg == "--") flags_done = true;
    const Flag* match = nullptr;
    std::optional<std::string> value;
    for (const Flag& f : repeatable) {
      const std::string name = "--" + f.name;
      if (arg == name) {
        match = &f;
      } else if (arg.starts_with(name + "=")) {
        match = &f;
        value = std::string(arg.substr(name.size() + 1));
      }
    }
    if (match == nullptr) {
      rewritten.emplace_back(arg);
      continue;
    }
    if (!value) {
      if (i + 1 >= argc)
        return table.usage_error(
            absl::StrCat("flag --", match->name, " needs a value (", match->value_name, ")"));
      value = argv[++i];
    }
    values.emplace_back(match, *std::move(value));
  }
  std::vector<char*> pointers;
  for (std::string& a : rewritten) pointers.push_back(a.data());
  if (auto code = table.parse(static_cast<int>(pointers.size()), pointers.data())) return code;
  for (const auto& [flag, value] : values)
    if (absl::Status s = flag->set(value); !s.ok())
      return table.usage_error(absl::StrCat("flag --", flag->name, ": ", s.message()));
  return std::nullopt;
}

std::function<absl::Status(std::string_view)> append_to(std::vector<std::string>* out) {
  return [out](std::string_view v) {
    if (v.empty()) return absl::InvalidArgumentError("expected a value, got ''");
    out->emplace_back(v);
    return absl::OkStatus();
  };
}

int report_failure(std::string_view command, const absl::Status& status) {
  std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(command.size()), command.data(),
               describe(status).c_str());
  return exit_code(status);
}

ClientCommand::ClientCommand(std::string command, std::string synopsis, std::string_view what)
    : name(command),
      table(std::move(command), std::move(synopsis),
            absl::StrCat(absl_sv(what),
                         "\n\nThe server is --server, else KAIROS_SERVER, else "
                         "http://127.0.0.1:8080;\nthe bearer token the first line of "
                         "--token-file, else KAIROS_TOKEN.\n\n",
                         kExitCodesHelp)) {}

std::optional<int> ClientCommand::start(int argc, char** argv, std::size_t positional,
                                        const std::vector<Flag>& repeatable, bool request_timeout) {
  add_client_flags(table, &client_flags, request_timeout);
  if (positional > 0) table.allow_positional();
  if (auto code = parse_command_line(table, argc, argv, repeatable)) return code;
  if (positional > 0 && table.positional().size() != positional)
    return table.usage_error(table.positional().empty() ? "the job ID is required"
                                                        : "expected exactly one job ID");
  auto c = make_client(client_flags, transport_for_testing());
  if (!c.ok()) return table.usage_error(describe(c.status()));
  client.emplace(*std::move(c));
  return std::nullopt;
}

// ---- apply -----------------------------------------------------------------

absl::StatusOr<std::vector<JobSpec>> read_apply_file(std::string_view text) {
  KAIROS_ASSIGN_OR_RETURN(json::value v, api::parse_json(text));
  const json::array* jobs = nullptr;
  if (v.is_array()) {
    jobs = &v.get_array();
  } else if (v.is_object()) {
    for (const auto& m : v.get_object())
      if (m.key() != "jobs")
        return absl::InvalidArgumentError(
            absl::StrCat(std::string(m.key()), ": unknown field (expected {\"jobs\": [...]})"));
    const json::value* j = v.get_object().if_contains("jobs");
    if (j != nullptr && j->is_array()) jobs = &j->get_array();
  }
  if (jobs == nullptr)
    return absl::InvalidArgumentError("jobs: expected {\"jobs\": [...]} or a JSON array of jobs");
  std::vector<JobSpec> out;
  std::set<std::string> seen;
  for (std::size_t i = 0; i < jobs->size(); ++i) {
    const std::string where = absl::StrCat("jobs[", i, "]");
    const json::value& j = (*jobs)[i];
    if (!j.is_object() || !j.get_object().contains("id"))
      return api::field_error(absl::StrCat(where, ".id"), "is required in an apply file");
    auto spec = api::job_spec_from_json(j);
    if (!spec.ok()) {
      const std::string field = api::error_field(spec.status());
      return api::field_error(absl::StrCat(where, field.empty() ? "" : ".", field),
                              std_sv(describe(spec.status())));
    }
    if (!seen.insert(spec->id).second)
      return api::field_error(absl::StrCat(where, ".id"),
                              absl::StrCat("'", excerpt(spec->id), "' is listed twice"));
    out.push_back(*std::move(spec));
  }
  return out;
}

std::vector<std::string> json_diff(const json::value& from, const json::value& to) {
  std::map<std::string, std::string> a, b;
  flatten(from, "", a);
  flatten(to, "", b);
  std::set<std::string> keys;
  for (const auto& [k, _] : a) keys.insert(k);
  for (const auto& [k, _] : b) keys.insert(k);
  std::vector<std::string> out;
  for (const std::string& k : keys) {
    if (k == "status" || k.starts_with("status.")) continue;
    const auto ia = a.find(k);
    const auto ib = b.find(k);
    const std::string va = ia == a.end() ? "(none)" : ia->second;
    const std::string vb = ib == b.end() ? "(none)" : ib->second;
    if (va != vb) out.push_back(absl::StrCat(k, ": ", va, " -> ", vb));
  }
  return out;
}

absl::StatusOr<std::vector<PlanStep>> plan_apply(const std::vector<JobSpec>& wanted,
                                                 const std::vector<json::value>& remote,
                                                 bool prune) {
  std::map<std::string, const json::value*> by_id;
  for (const json::value& r : remote) {
    const std::string id = text_at(r, "id");
    if (id != "-") by_id.emplace(id, &r);
  }
  std::set<std::string> namespaces, ids;
  std::vector<PlanStep> plan;
  for (const JobSpec& spec : wanted) {
    namespaces.insert(spec.ns);
    ids.insert(spec.id);
    PlanStep step;
    step.id = spec.id;
    step.ns = spec.ns;
    step.spec = spec;
    const auto it = by_id.find(spec.id);
    if (it == by_id.end() || text_at(*it->second, "status.state") == "cancelled") {
      step.kind = PlanStep::Kind::kCreate;
      plan.push_back(std::move(step));
      continue;
    }
    const json::value& current = *it->second;
    step.generation = generation_of(current);
    auto have = api::job_spec_from_json(current);
    if (have.ok() && *have == spec) {
      step.kind = PlanStep::Kind::kUnchanged;
    } else {
      step.kind = PlanStep::Kind::kChange;
      const json::value from = have.ok() ? json::value(api::job_spec_to_json(*have)) : current;
      step.diff = json_diff(from, json::value(api::job_spec_to_json(spec)));
    }
    plan.push_back(std::move(step));
  }
  if (prune) {
    for (const auto& [id, r] : by_id) {
      if (ids.contains(id) || !namespaces.contains(text_at(*r, "namespace")) ||
          text_at(*r, "status.state") != "active")
        continue;
      PlanStep step;
      step.kind = PlanStep::Kind::kCancel;
      step.id = id;
      step.ns = text_at(*r, "namespace");
      step.generation = generation_of(*r);
      plan.push_back(std::move(step));
    }
  }
  return plan;
}

std::string render_plan(const std::vector<PlanStep>& plan) {
  std::string out;
  std::size_t counts[4] = {0, 0, 0, 0};
  for (const PlanStep& s : plan) {
    static constexpr const char* kNames[] = {"create", "change", "unchanged", "cancel"};
    const auto k = static_cast<std::size_t>(s.kind);
    ++counts[k];
    absl::StrAppend(&out, kNames[k], " ", s.id, " (namespace ", s.ns, ")\n");
    for (const std::string& d : s.diff) absl::StrAppend(&out, "    ", d, "\n");
  }
  absl::StrAppend(&out, counts[0], " to create, ", counts[1], " to change, ", counts[2],
                  " unchanged, ", counts[3], " to cancel\n");
  return out;
}

}  // namespace kairos::cli
