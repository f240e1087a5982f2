// Job CLI: the pieces of `kairos job`, `kairos apply` and `kairos cluster`
// that need no server, kept apart so they can be tested without one.
//
// Purpose. job_add_spec() turns the flags of `kairos job add` into a JobSpec
// through the API's own codec (prod/api/job_json.h): the flags fill the
// contract's JSON, the codec decodes and validates it with the kernel's
// validate_job_spec, so a spec the CLI accepts is one the server accepts and
// a refused one fails with the server's message, prefixed by the flag that
// set the field. The render_*() functions turn response bodies into the
// aligned tables of the human output; plan_apply() compares the jobs of a
// file with the server's.
//
// Guarantees. Nothing here reads a clock or the environment (the caller
// passes `now` and the generated id); every error is kInvalidArgument
// naming the flag or, for a file, the element and field ("jobs[2].id").
// Rendering never fails: a member of an unexpected type is shown as JSON.
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/kernel/records.h"
#include "prod/cli/api_client.h"
#include "prod/cli/flags.h"

namespace kairos::cli {

// The flags of `kairos job add` as given (empty: not given).
struct JobAddArgs {
  std::string id;
  std::string cron, tz, at, in, every;
  std::vector<std::string> program;  // after `--`
  std::string shell;
  std::string http_url, http_method, body;
  std::vector<std::string> headers;  // K:V
  std::string retries, backoff, timeout, misfire, overlap, priority;
  std::string ns;
  std::vector<std::string> labels, env;  // k=v
  std::string dst_gap, dst_fold;
};

// The spec the flags describe (see the file comment). `now` anchors --in;
// `generated_id` is used when --id is absent.
absl::StatusOr<JobSpec> job_add_spec(const JobAddArgs& args, absl::Time now,
                                     std::string_view generated_id);
// "job-" followed by 16 lowercase hex digits from `random`.
std::string job_id_from_random(std::uint64_t random);

// status.generation of a job body, when it holds one.
std::optional<std::uint64_t> generation_of(const boost::json::value& job);

// ---- Human output ----------------------------------------------------------

// Columns aligned with two spaces; the first row is the header.
std::string format_table(const std::vector<std::vector<std::string>>& rows);
// A member as text: strings as they are, null as "-", other values as JSON.
std::string text_of(const boost::json::value* v);
// "cron 0 2 * * * Europe/Berlin", "at 2026-...", "every 30s".
std::string schedule_text(const boost::json::value& job);

std::string render_jobs(const boost::json::array& jobs);
std::string render_job(const boost::json::value& job);
std::string render_runs(const boost::json::array& runs);
std::string render_ledger(const boost::json::array& occurrences);
// Every member of the cluster body: scalars as "key: value", arrays of
// objects as tables.
std::string render_object(const boost::json::object& object);

// Indented JSON for a person to edit (`kairos job edit`).
std::string pretty_json(const boost::json::value& v);

// ---- Command-line plumbing shared by the client commands -----------------

// Parses argv with `table` after taking the `repeatable` flags out of it
// (the table refuses a flag given twice): every `--NAME VALUE` or
// `--NAME=VALUE` of a repeatable flag before a lone `--` goes to its setter,
// in order. The repeatable flags are also added to the table, so --help lists
// them. Returns what FlagTable::parse returns.
std::optional<int> parse_command_line(FlagTable& table, int argc, char** argv,
                                      const std::vector<Flag>& repeatable);
// A setter that appends each value to `out`.
std::function<absl::Status(std::string_view)> append_to(std::vector<std::string>* out);
// Prints "COMMAND: <what the status says>" to stderr; returns exit_code(status).
int report_failure(std::string_view command, const absl::Status& status);

// One client command: its flag table (with the client flags), the parse and
// the client. The description gets the server/token rules and the exit codes.
struct ClientCommand {
  ClientCommand(std::string command, std::string synopsis, std::string_view what);

  // Parses argv (see parse_command_line), checks that exactly `positional`
  // arguments were given (0: none are checked) and builds the client; holds
  // the exit code when the command must end.
  std::optional<int> start(int argc, char** argv, std::size_t positional,
                           const std::vector<Flag>& repeatable = {}, bool request_timeout = true);
  const std::string& id() const { return table.positional().front(); }
  int fail(const absl::Status& s) const { return report_failure(name, s); }

  std::string name;
  FlagTable table;
  ClientFlags client_flags;
  std::optional<ApiClient> client;
};

// ---- apply -----------------------------------------------------------------

// The jobs of an apply file: {"jobs": [...]} or [...]; every job needs an id,
// no id twice.
absl::StatusOr<std::vector<JobSpec>> read_apply_file(std::string_view text);

struct PlanStep {
  enum class Kind { kCreate, kChange, kUnchanged, kCancel };
  Kind kind = Kind::kCreate;
  std::string id;
  std::string ns;
  std::vector<std::string> diff;            // kChange: "policy.priority: 5 -> 7"
  std::optional<JobSpec> spec;              // kCreate, kChange
  std::optional<std::uint64_t> generation;  // kChange, kCancel: the server's
};
// `remote` holds the server's current (active) jobs of the namespaces the
// file names, as GET bodies. With `prune`, remote jobs the file does not list
// become kCancel steps.
absl::StatusOr<std::vector<PlanStep>> plan_apply(const std::vector<JobSpec>& wanted,
                                                 const std::vector<boost::json::value>& remote,
                                                 bool prune);
std::string render_plan(const std::vector<PlanStep>& plan);
// "field: old -> new" for every leaf that differs between two job bodies.
std::vector<std::string> json_diff(const boost::json::value& from, const boost::json::value& to);

}  // namespace kairos::cli
