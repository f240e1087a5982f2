// Job JSON: the one codec between the API contract's JSON and the kernel's
// records (docs/API.md), shared by the HTTP routes and the `kairos job` CLI.
//
// Purpose. A request body becomes a JobSpec through decode_job_spec(); a
// JobSpec, JobRecord, RunRecord or LedgerRecord becomes the JSON a response
// carries through the *_to_json() functions; every error becomes the one
// error shape {"error": {"code", "message", "field"}}.
//
// Guarantees.
// - Strict decoding: an unknown field, a value of the wrong JSON type, an
//   integer out of its type's range, a duration outside the Kairos grammar
//   (core/base/duration.h), a time that is not RFC 3339 with an offset, and a
//   schedule or payload that breaks its exactly-one-of rule are errors; then
//   the kernel's validate_job_spec() judges cron, zone, payload and policy
//   ranges. Every error is kInvalidArgument, its message starts with the
//   dotted field ("schedule.cron: ..."), and error_field() returns that field.
// - A response body can be sent back: the "status" member is ignored by the
//   decoder, and decode(job_spec_to_json(s)) == s for every valid spec whose
//   durations are whole milliseconds (the grammar's finest unit).
// - Encoding is deterministic: members in a fixed order, every policy field
//   present, times in UTC (core/base/rfc3339.h), durations canonical.
// - Hostile input cannot crash or hang the decoder: nesting is bounded by the
//   parser (kMaxJsonDepth), and every path is checked before it is read.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/storage_ptr.hpp>
#include <boost/json/value.hpp>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/kernel/records.h"

namespace kairos::api {

// Deepest nesting a request body may have (objects and arrays).
inline constexpr std::size_t kMaxJsonDepth = 32;

// ---- Errors ---------------------------------------------------------------

// kInvalidArgument "field: message", carrying `field` for error_field().
absl::Status field_error(std::string_view field, std::string_view message);
// The dotted field a status names: the one field_error() attached, else the
// "a.b: " prefix of a kernel message (payload.command.argv -> command.argv);
// empty when no single field is at fault.
std::string error_field(const absl::Status& status);
// A copy of `status` that names `field` (unless it already names one).
absl::Status with_field(absl::Status status, std::string_view field);

// The contract's error code for a status ("invalid_argument", "not_found",
// "conflict", "precondition_failed", "unavailable", ...) and its HTTP status.
std::string_view error_code(absl::StatusCode code);
int http_status(absl::StatusCode code);
// {"error": {"code", "message", "field"?}}. `code` is the contract's name.
// A message or field that is not UTF-8 (it quotes hostile input) has every
// byte beyond printable ASCII escaped (\xNN, as excerpt() does): the body is
// always valid JSON.
boost::json::object error_body(std::string_view code, std::string_view message,
                               std::string_view field = {});
boost::json::object error_body(const absl::Status& status);

// ---- Decoding -------------------------------------------------------------

// Parses JSON text with the contract's limits; a syntax error names no
// field and says where the text broke. The value's memory comes from
// `storage` (default: the heap; a request's arena, e.g. a
// boost::json::monotonic_resource that outlives the value, saves an
// allocation per member).
absl::StatusOr<boost::json::value> parse_json(std::string_view text,
                                              boost::json::storage_ptr storage = {});

// A job from a request body (see the file comment). An absent "id" stays
// empty (the node generates one on create); the result is normalised
// (normalize_spec) and has passed validate_job_spec() unless the id is empty,
// in which case everything but the id has been validated.
absl::StatusOr<JobSpec> decode_job_spec(std::string_view json);
absl::StatusOr<JobSpec> job_spec_from_json(const boost::json::value& json);

// RFC 7396 JSON merge patch: members of `patch` replace those of `target`
// (recursively for objects), a null member removes one, a non-object patch
// replaces the whole target.
boost::json::value merge_patch(boost::json::value target, const boost::json::value& patch);

// ---- Encoding -------------------------------------------------------------

// The job as a request body (no "status") or a response (with it), as JSON
// text appended to `out`: byte for byte serialize(job_spec_to_json(spec)) /
// serialize(job_to_json(job)), written without building a JSON value (the
// routes' path for many jobs; the *_to_json() functions parse this text).
void append_job_spec_json(std::string& out, const JobSpec& spec);
void append_job_json(std::string& out, const JobRecord& job);
// The job as a request body (no "status"): what the CLI sends.
boost::json::object job_spec_to_json(const JobSpec& spec);
// The job as a response: job_spec_to_json plus "status".
boost::json::object job_to_json(const JobRecord& job);
// A run with its attempts, each with what it printed ("output"); the run
// "id" is job/incarnation/nominal-micros.
boost::json::object run_to_json(const RunRecord& run);
// One ledger record (an occurrence or a range of them).
boost::json::object ledger_to_json(const LedgerRecord& record);

// Text helpers of the contract (run status names: core/ports/runner.h).
using kairos::to_string;
std::string serialize(const boost::json::value& value);

}  // namespace kairos::api
