#include "prod/api/job_json.h"

#include <array>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "core/base/absl_compat.h"
#include "core/base/check.h"
#include "core/base/duration.h"
#include "core/base/rfc3339.h"
#include "core/base/text.h"
#include "core/kernel/job_store.h"
#include "core/schedule/cron_schedule.h"
#include "core/schedule/schedule_text.h"

namespace kairos::api {
namespace json = boost::json;
namespace {

constexpr std::string_view kFieldPayload = "type.kairos.dev/field";

std::string join(std::string_view path, std::string_view key) {
  return path.empty() ? std::string(key) : absl::StrCat(absl_sv(path), ".", absl_sv(key));
}

std::string_view kind_name(json::kind k) {
  switch (k) {
    case json::kind::null:
      return "null";
    case json::kind::bool_:
      return "a boolean";
    case json::kind::int64:
    case json::kind::uint64:
    case json::kind::double_:
      return "a number";
    case json::kind::string:
      return "a string";
    case json::kind::array:
      return "an array";
    case json::kind::object:
      return "an object";
  }
  return "?";
}

absl::Status wrong_type(std::string_view field, std::string_view expected, const json::value& v) {
  return field_error(
      field, absl::StrCat("must be ", absl_sv(expected), ", got ", absl_sv(kind_name(v.kind()))));
}

// One JSON object being decoded: unknown members are refused, and every
// accessor names the member's dotted path in its error.
class Fields {
 public:
  Fields(const json::object& object, std::string path) : object_(object), path_(std::move(path)) {}

  absl::Status allow_only(std::initializer_list<std::string_view> known) const {
    for (const auto& member : object_) {
      bool ok = false;
      for (std::string_view k : known) ok = ok || member.key() == k;
      if (!ok)
        return field_error(field(std::string_view(member.key().data(), member.key().size())),
                           "unknown field");
    }
    return absl::OkStatus();
  }
  bool has(std::string_view key) const { return object_.contains(key); }
  std::string field(std::string_view key) const { return join(path_, key); }
  const json::value* find(std::string_view key) const { return object_.if_contains(key); }

  absl::StatusOr<std::optional<std::string>> string(std::string_view key) const {
    const json::value* v = find(key);
    if (v == nullptr) return std::optional<std::string>();
    if (!v->is_string()) return wrong_type(field(key), "a string", *v);
    return std::optional<std::string>(std::string(v->get_string()));
  }
  absl::StatusOr<std::optional<bool>> boolean(std::string_view key) const {
    const json::value* v = find(key);
    if (v == nullptr) return std::optional<bool>();
    if (!v->is_bool()) return wrong_type(field(key), "true or false", *v);
    return std::optional<bool>(v->get_bool());
  }
  absl::StatusOr<std::optional<std::int64_t>> integer(std::string_view key, std::int64_t lo,
                                                      std::int64_t hi) const {
    const json::value* v = find(key);
    if (v == nullptr) return std::optional<std::int64_t>();
    const std::string range = absl::StrCat("an integer in [", lo, ", ", hi, "]");
    if (v->is_int64() && v->get_int64() >= lo && v->get_int64() <= hi)
      return std::optional<std::int64_t>(v->get_int64());
    if (v->is_uint64() && v->get_uint64() <= static_cast<std::uint64_t>(hi))
      return std::optional<std::int64_t>(static_cast<std::int64_t>(v->get_uint64()));
    if (v->is_number()) return field_error(field(key), absl::StrCat("must be ", range));
    return wrong_type(field(key), range, *v);
  }
  absl::StatusOr<std::optional<absl::Duration>> duration(std::string_view key) const {
    KAIROS_ASSIGN_OR_RETURN(auto text, string(key));
    if (!text) return std::optional<absl::Duration>();
    auto d = parse_duration(*text);
    if (!d.ok()) return field_error(field(key), std_sv(d.status().message()));
    return std::optional<absl::Duration>(*d);
  }
  absl::StatusOr<std::optional<absl::Time>> time(std::string_view key) const {
    KAIROS_ASSIGN_OR_RETURN(auto text, string(key));
    if (!text) return std::optional<absl::Time>();
    auto t = parse_rfc3339(*text);
    if (!t.ok()) return field_error(field(key), std_sv(t.status().message()));
    return std::optional<absl::Time>(*t);
  }
  absl::StatusOr<const json::object*> object(std::string_view key) const {
    const json::value* v = find(key);
    if (v == nullptr) return static_cast<const json::object*>(nullptr);
    if (!v->is_object()) return wrong_type(field(key), "an object", *v);
    return &v->get_object();
  }
  // An object of string values, in its members' order.
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> string_map(
      std::string_view key) const {
    std::vector<std::pair<std::string, std::string>> out;
    KAIROS_ASSIGN_OR_RETURN(const json::object* o, object(key));
    if (o == nullptr) return out;
    for (const auto& member : *o) {
      const std::string name(member.key());
      if (!member.value().is_string())
        return wrong_type(join(field(key), name), "a string", member.value());
      out.emplace_back(name, std::string(member.value().get_string()));
    }
    return out;
  }

 private:
  const json::object& object_;
  std::string path_;
};

template <typename T>
absl::Status set_int(const Fields& f, std::string_view key, T& out) {
  KAIROS_ASSIGN_OR_RETURN(auto v,
                          f.integer(key, std::numeric_limits<T>::min(),
                                    static_cast<std::int64_t>(std::numeric_limits<T>::max())));
  if (v) out = static_cast<T>(*v);
  return absl::OkStatus();
}
absl::Status set_duration(const Fields& f, std::string_view key, absl::Duration& out) {
  KAIROS_ASSIGN_OR_RETURN(auto v, f.duration(key));
  if (v) out = *v;
  return absl::OkStatus();
}

// Chooses the enum value whose name is the member's text.
template <typename Names, typename E>
absl::Status set_enum(const Fields& f, std::string_view key, const Names& names, E& out) {
  KAIROS_ASSIGN_OR_RETURN(auto text, f.string(key));
  if (!text) return absl::OkStatus();
  std::string expected;
  for (const auto& [name, value] : names) {
    if (*text == name) {
      out = value;
      return absl::OkStatus();
    }
    absl::StrAppend(&expected, expected.empty() ? "" : ", ", absl_sv(name));
  }
  return field_error(f.field(key),
                     absl::StrCat("must be one of ", expected, ", got '", excerpt(*text), "'"));
}

constexpr std::pair<std::string_view, DstGap> kDstGaps[] = {{"shift", DstGap::kShift},
                                                            {"skip", DstGap::kSkip}};
constexpr std::pair<std::string_view, DstFold> kDstFolds[] = {
    {"first", DstFold::kFirst}, {"last", DstFold::kLast}, {"both", DstFold::kBoth}};
constexpr std::pair<std::string_view, MisfirePolicy> kMisfires[] = {
    {"run-once", MisfirePolicy::kRunOnce},
    {"catch-up", MisfirePolicy::kCatchUp},
    {"skip", MisfirePolicy::kSkip}};
constexpr std::pair<std::string_view, OverlapPolicy> kOverlaps[] = {
    {"skip", OverlapPolicy::kSkip},
    {"queue", OverlapPolicy::kQueue},
    {"allow", OverlapPolicy::kAllow}};

template <typename Names, typename E>
std::string_view name_of(const Names& names, E value) {
  for (const auto& [name, v] : names)
    if (v == value) return name;
  return "?";
}

absl::Status decode_schedule(const Fields& f, ScheduleSpec& s) {
  KAIROS_RETURN_IF_ERROR(f.allow_only(
      {"cron", "zone", "dst_gap", "dst_fold", "at", "every", "start", "end", "jitter"}));
  const int kinds = int{f.has("cron")} + int{f.has("at")} + int{f.has("every")};
  if (kinds != 1)
    return field_error(f.field(""), kinds == 0 ? "needs one of cron, at or every"
                                               : "must have exactly one of cron, at or every");
  auto only_with = [&](std::initializer_list<std::string_view> keys,
                       std::string_view kind) -> absl::Status {
    for (std::string_view k : keys)
      if (f.has(k))
        return field_error(f.field(k), absl::StrCat("only for ", absl_sv(kind), " schedules"));
    return absl::OkStatus();
  };
  if (f.has("cron")) {
    s.kind = ScheduleSpec::Kind::kCron;
    KAIROS_RETURN_IF_ERROR(only_with({"start", "end"}, "every"));
    KAIROS_ASSIGN_OR_RETURN(auto cron, f.string("cron"));
    s.cron = *cron;
    KAIROS_ASSIGN_OR_RETURN(auto zone, f.string("zone"));
    if (zone) {
      if (auto z = cron::load_zone(*zone); !z.ok())
        return field_error(f.field("zone"), std_sv(z.status().message()));
      s.zone = *zone;
    }
    KAIROS_RETURN_IF_ERROR(set_enum(f, "dst_gap", kDstGaps, s.dst_gap));
    KAIROS_RETURN_IF_ERROR(set_enum(f, "dst_fold", kDstFolds, s.dst_fold));
  } else {
    KAIROS_RETURN_IF_ERROR(only_with({"zone", "dst_gap", "dst_fold"}, "cron"));
  }
  if (f.has("at")) {
    s.kind = ScheduleSpec::Kind::kOnce;
    KAIROS_RETURN_IF_ERROR(only_with({"start", "end"}, "every"));
    KAIROS_ASSIGN_OR_RETURN(auto at, f.time("at"));
    s.at = *at;
  }
  if (f.has("every")) {
    s.kind = ScheduleSpec::Kind::kInterval;
    KAIROS_RETURN_IF_ERROR(set_duration(f, "every", s.every));
    s.start = absl::UnixEpoch();
    KAIROS_ASSIGN_OR_RETURN(auto start, f.time("start"));
    if (start) s.start = *start;
    KAIROS_ASSIGN_OR_RETURN(auto end, f.time("end"));
    if (end) s.end = *end;
  }
  return set_duration(f, "jitter", s.jitter);
}

absl::Status decode_command(const Fields& f, CommandPayload& p) {
  KAIROS_RETURN_IF_ERROR(f.allow_only({"argv", "env", "working_dir"}));
  const json::value* argv = f.find("argv");
  if (argv == nullptr) return field_error(f.field("argv"), "is required");
  if (!argv->is_array()) return wrong_type(f.field("argv"), "an array of strings", *argv);
  for (std::size_t i = 0; i < argv->get_array().size(); ++i) {
    const json::value& a = argv->get_array()[i];
    if (!a.is_string())
      return wrong_type(absl::StrCat(f.field("argv"), "[", i, "]"), "a string", a);
    p.argv.emplace_back(a.get_string());
  }
  KAIROS_ASSIGN_OR_RETURN(p.env, f.string_map("env"));
  KAIROS_ASSIGN_OR_RETURN(auto dir, f.string("working_dir"));
  if (dir) p.working_dir = *dir;
  return absl::OkStatus();
}

absl::Status decode_http(const Fields& f, HttpPayload& p) {
  KAIROS_RETURN_IF_ERROR(f.allow_only({"method", "url", "headers", "body"}));
  KAIROS_ASSIGN_OR_RETURN(auto method, f.string("method"));
  if (method) p.method = *method;
  KAIROS_ASSIGN_OR_RETURN(auto url, f.string("url"));
  if (!url) return field_error(f.field("url"), "is required");
  p.url = *url;
  KAIROS_ASSIGN_OR_RETURN(p.headers, f.string_map("headers"));
  KAIROS_ASSIGN_OR_RETURN(auto body, f.string("body"));
  if (body) p.body = *body;
  return absl::OkStatus();
}

absl::Status decode_policy(const Fields& f, JobPolicy& p) {
  KAIROS_RETURN_IF_ERROR(
      f.allow_only({"max_attempts", "retry_initial", "retry_multiplier_percent", "retry_max",
                    "retry_jitter_percent", "timeout", "misfire", "misfire_threshold",
                    "catch_up_max", "catch_up_spacing", "overlap", "max_concurrent", "priority"}));
  KAIROS_RETURN_IF_ERROR(set_int(f, "max_attempts", p.max_attempts));
  KAIROS_RETURN_IF_ERROR(set_duration(f, "retry_initial", p.retry_initial));
  KAIROS_RETURN_IF_ERROR(set_int(f, "retry_multiplier_percent", p.retry_multiplier_percent));
  KAIROS_RETURN_IF_ERROR(set_duration(f, "retry_max", p.retry_max));
  KAIROS_RETURN_IF_ERROR(set_int(f, "retry_jitter_percent", p.retry_jitter_percent));
  KAIROS_RETURN_IF_ERROR(set_duration(f, "timeout", p.timeout));
  KAIROS_RETURN_IF_ERROR(set_enum(f, "misfire", kMisfires, p.misfire));
  KAIROS_RETURN_IF_ERROR(set_duration(f, "misfire_threshold", p.misfire_threshold));
  KAIROS_RETURN_IF_ERROR(set_int(f, "catch_up_max", p.catch_up_max));
  KAIROS_RETURN_IF_ERROR(set_duration(f, "catch_up_spacing", p.catch_up_spacing));
  KAIROS_RETURN_IF_ERROR(set_enum(f, "overlap", kOverlaps, p.overlap));
  KAIROS_RETURN_IF_ERROR(set_int(f, "max_concurrent", p.max_concurrent));
  return set_int(f, "priority", p.priority);
}

// The field a kernel schedule message is about (they say "schedule: ...").
std::string schedule_field(const ScheduleSpec& s, std::string_view message) {
  auto has = [&](std::string_view word) { return message.find(word) != std::string_view::npos; };
  if (has("jitter")) return "schedule.jitter";
  if (has("zone")) return "schedule.zone";
  switch (s.kind) {
    case ScheduleSpec::Kind::kCron:
      return "schedule.cron";
    case ScheduleSpec::Kind::kOnce:
      return "schedule.at";
    case ScheduleSpec::Kind::kInterval:
      if (has("interval start")) return "schedule.start";
      if (has("interval end") || has("ends before")) return "schedule.end";
      return "schedule.every";
  }
  return "schedule";
}

// A kernel message's "a.b[0].c: " prefix as the contract's field.
std::string field_of_message(std::string_view message) {
  const auto colon = message.find(": ");
  if (colon == std::string_view::npos || colon == 0) return {};
  std::string_view prefix = message.substr(0, colon);
  for (char c : prefix) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
                    c == '[' || c == ']';
    if (!ok) return {};
  }
  if (prefix.starts_with("payload.")) prefix.remove_prefix(8);
  return std::string(prefix);
}

std::string time_or_empty(absl::Time t) {
  return t == absl::InfinitePast() || t == absl::InfiniteFuture() ? std::string()
                                                                  : format_rfc3339_utc(t);
}
json::value time_or_null(absl::Time t) {
  std::string s = time_or_empty(t);
  return s.empty() ? json::value(nullptr) : json::value(s);
}

// True when `s` is well-formed UTF-8 (no overlong forms, surrogates or code
// points above U+10FFFF): what a JSON string must hold.
bool valid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;
    std::uint32_t cp = 0;
    if (b < 0x80) {
      ++i;
      continue;
    } else if (b >= 0xc2 && b <= 0xdf) {
      n = 1;
      cp = b & 0x1f;
    } else if (b >= 0xe0 && b <= 0xef) {
      n = 2;
      cp = b & 0x0f;
    } else if (b >= 0xf0 && b <= 0xf4) {
      n = 3;
      cp = b & 0x07;
    } else {
      return false;
    }
    if (s.size() - i <= n) return false;
    for (std::size_t k = 1; k <= n; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      if ((c & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (c & 0x3f);
    }
    if ((n == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
        (n == 3 && (cp < 0x10000 || cp > 0x10ffff)))
      return false;
    i += n + 1;
  }
  return true;
}

// Text for a JSON string of an error: as it is when it is UTF-8, else with
// every byte beyond printable ASCII escaped (excerpt's \xNN), so an error
// that quotes hostile input is still valid JSON.
std::string json_text(std::string_view s) {
  return valid_utf8(s) ? std::string(s) : excerpt(s, s.size());
}

}  // namespace

absl::Status field_error(std::string_view field, std::string_view message) {
  std::string_view shown = field;
  if (shown.ends_with(".")) shown.remove_suffix(1);
  absl::Status s = absl::InvalidArgumentError(
      shown.empty() ? std::string(message) : absl::StrCat(absl_sv(shown), ": ", absl_sv(message)));
  if (!shown.empty()) s.SetPayload(absl_sv(kFieldPayload), absl::Cord(absl_sv(shown)));
  return s;
}

std::string error_field(const absl::Status& status) {
  if (auto p = status.GetPayload(absl_sv(kFieldPayload))) return std::string(*p);
  if (status.code() != absl::StatusCode::kInvalidArgument) return {};
  return field_of_message(std_sv(status.message()));
}

absl::Status with_field(absl::Status status, std::string_view field) {
  if (status.ok() || status.GetPayload(absl_sv(kFieldPayload))) return status;
  status.SetPayload(absl_sv(kFieldPayload), absl::Cord(absl_sv(field)));
  return status;
}

std::string_view error_code(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      return "invalid_argument";
    case absl::StatusCode::kUnauthenticated:
    case absl::StatusCode::kPermissionDenied:
      return "unauthenticated";
    case absl::StatusCode::kNotFound:
      return "not_found";
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kAborted:
      return "conflict";
    case absl::StatusCode::kFailedPrecondition:
      return "precondition_failed";
    case absl::StatusCode::kResourceExhausted:
      return "payload_too_large";
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
      return "unavailable";
    default:
      return "internal";
  }
}

int http_status(absl::StatusCode code) {
  const std::string_view name = error_code(code);
  if (name == "invalid_argument") return 400;
  if (name == "unauthenticated") return 401;
  if (name == "not_found") return 404;
  if (name == "conflict") return 409;
  if (name == "precondition_failed") return 412;
  if (name == "payload_too_large") return 413;
  if (name == "unavailable") return 503;
  return 500;
}

json::object error_body(std::string_view code, std::string_view message, std::string_view field) {
  json::object e;
  e["code"] = code;
  e["message"] = json_text(message);
  if (!field.empty()) e["field"] = json_text(field);
  json::object o;
  o["error"] = std::move(e);
  return o;
}

json::object error_body(const absl::Status& status) {
  return error_body(error_code(status.code()), std_sv(status.message()), error_field(status));
}

absl::StatusOr<json::value> parse_json(std::string_view text, json::storage_ptr storage) {
  json::parse_options options;
  options.max_depth = kMaxJsonDepth;
  boost::system::error_code ec;
  json::value v =
      json::parse(json::string_view(text.data(), text.size()), ec, std::move(storage), options);
  if (ec)
    return absl::InvalidArgumentError(
        absl::StrCat("request body is not valid JSON: ", ec.message()));
  return v;
}

absl::StatusOr<JobSpec> job_spec_from_json(const json::value& value) {
  if (!value.is_object()) return wrong_type("", "a JSON object (a job)", value);
  const Fields f(value.get_object(), "");
  KAIROS_RETURN_IF_ERROR(f.allow_only(
      {"id", "namespace", "labels", "schedule", "command", "http", "policy", "status"}));
  JobSpec spec;
  KAIROS_ASSIGN_OR_RETURN(auto id, f.string("id"));
  if (id) {
    if (id->empty()) return field_error("id", "must not be empty (omit it to get a generated id)");
    spec.id = std::move(*id);
  }
  KAIROS_ASSIGN_OR_RETURN(auto ns, f.string("namespace"));
  if (ns) spec.ns = std::move(*ns);
  KAIROS_ASSIGN_OR_RETURN(auto labels, f.string_map("labels"));
  spec.labels.insert(labels.begin(), labels.end());

  KAIROS_ASSIGN_OR_RETURN(const json::object* schedule, f.object("schedule"));
  if (schedule == nullptr) return field_error("schedule", "is required");
  KAIROS_RETURN_IF_ERROR(decode_schedule(Fields(*schedule, "schedule"), spec.schedule));

  if (f.has("command") == f.has("http"))
    return field_error(f.has("command") ? "http" : "command",
                       "a job has exactly one of command or http");
  if (f.has("command")) {
    KAIROS_ASSIGN_OR_RETURN(const json::object* c, f.object("command"));
    CommandPayload p;
    KAIROS_RETURN_IF_ERROR(decode_command(Fields(*c, "command"), p));
    spec.payload = std::move(p);
  } else {
    KAIROS_ASSIGN_OR_RETURN(const json::object* h, f.object("http"));
    HttpPayload p;
    KAIROS_RETURN_IF_ERROR(decode_http(Fields(*h, "http"), p));
    spec.payload = std::move(p);
  }
  KAIROS_ASSIGN_OR_RETURN(const json::object* policy, f.object("policy"));
  if (policy != nullptr)
    KAIROS_RETURN_IF_ERROR(decode_policy(Fields(*policy, "policy"), spec.policy));

  spec = normalize_spec(std::move(spec));
  // An absent id is generated by the node; validate the rest under a stand-in.
  std::optional<JobSpec> stand_in;
  if (spec.id.empty()) {
    stand_in = spec;
    stand_in->id = "job-0000000000000000";
  }
  if (absl::Status s = validate_job_spec(stand_in ? *stand_in : spec); !s.ok()) {
    std::string field = field_of_message(std_sv(s.message()));
    if (field == "schedule" || field.empty())
      field = schedule_field(spec.schedule, std_sv(s.message()));
    return with_field(std::move(s), field);
  }
  return spec;
}

absl::StatusOr<JobSpec> decode_job_spec(std::string_view text) {
  KAIROS_ASSIGN_OR_RETURN(json::value v, parse_json(text));
  return job_spec_from_json(v);
}

json::value merge_patch(json::value target, const json::value& patch) {
  if (!patch.is_object()) return patch;
  if (!target.is_object()) target = json::object();
  json::object& t = target.get_object();
  for (const auto& member : patch.get_object()) {
    if (member.value().is_null()) {
      t.erase(member.key());
      continue;
    }
    json::value* existing = t.if_contains(member.key());
    json::value merged = merge_patch(existing ? *existing : json::value(nullptr), member.value());
    t[member.key()] = std::move(merged);
  }
  return target;
}

namespace {

// JSON text written straight into a string, byte for byte as
// boost::json::serialize writes the same value: members in the order they
// are written, strings escaped as it escapes them ('"', '\\', and control
// characters: \b \t \n \f \r by name, the rest as \u00xx), every other byte
// as it is, integers in decimal.
class JsonText {
 public:
  explicit JsonText(std::string& out) : out_(out) {}
  JsonText& open(char c) {
    separate();
    out_.push_back(c);
    first_ = true;
    return *this;
  }
  JsonText& close(char c) {
    out_.push_back(c);
    first_ = false;
    return *this;
  }
  JsonText& key(std::string_view k) {
    separate();
    quote(k);
    out_.push_back(':');
    first_ = true;
    return *this;
  }
  JsonText& str(std::string_view s) {
    separate();
    quote(s);
    return *this;
  }
  // Text already in JSON form (a memoised member list).
  JsonText& raw(std::string_view text) {
    separate();
    out_.append(text);
    return *this;
  }
  template <typename Int>
  JsonText& num(Int v) {
    separate();
    absl::StrAppend(&out_, v);
    return *this;
  }
  JsonText& boolean(bool b) {
    separate();
    out_.append(b ? "true" : "false");
    return *this;
  }
  JsonText& null() {
    separate();
    out_.append("null");
    return *this;
  }

 private:
  void separate() {
    if (!first_) out_.push_back(',');
    first_ = false;
  }
  void quote(std::string_view s) {
    static constexpr char kHex[] = "0123456789abcdef";
    out_.push_back('"');
    std::size_t plain = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
      const auto c = static_cast<unsigned char>(s[i]);
      if (c >= 0x20 && c != '"' && c != '\\') continue;
      out_.append(s.data() + plain, i - plain);
      plain = i + 1;
      out_.push_back('\\');
      switch (c) {
        case '"':
        case '\\':
          out_.push_back(static_cast<char>(c));
          break;
        case '\b':
          out_.push_back('b');
          break;
        case '\t':
          out_.push_back('t');
          break;
        case '\n':
          out_.push_back('n');
          break;
        case '\f':
          out_.push_back('f');
          break;
        case '\r':
          out_.push_back('r');
          break;
        default:
          out_.append("u00");
          out_.push_back(kHex[c >> 4]);
          out_.push_back(kHex[c & 0xf]);
      }
    }
    out_.append(s.data() + plain, s.size() - plain);
    out_.push_back('"');
  }

  std::string& out_;
  bool first_ = true;
};

// format_rfc3339_utc, remembered for the last few instants of this thread:
// a batch's jobs share their creation time and often their due times.
const std::string& utc_text(absl::Time t) {
  struct Entry {
    absl::Time t;
    std::string text;
  };
  thread_local std::array<std::optional<Entry>, 4> memo;
  thread_local std::size_t next = 0;
  for (const auto& e : memo)
    if (e && e->t == t) return e->text;
  auto& slot = memo[next];
  next = (next + 1) % memo.size();
  slot = Entry{t, format_rfc3339_utc(t)};
  return slot->text;
}

void time_or_null(JsonText& w, absl::Time t) {
  if (t == absl::InfinitePast() || t == absl::InfiniteFuture())
    w.null();
  else
    w.str(utc_text(t));
}

// An object of string values as json::object builds it from pairs: a key
// given twice keeps its first place and takes its last value.
void string_pairs(JsonText& w, const std::vector<std::pair<std::string, std::string>>& pairs) {
  w.open('{');
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    bool earlier = false;
    for (std::size_t j = 0; j < i && !earlier; ++j) earlier = pairs[j].first == pairs[i].first;
    if (earlier) continue;
    std::size_t last = i;
    for (std::size_t j = i + 1; j < pairs.size(); ++j)
      if (pairs[j].first == pairs[i].first) last = j;
    w.key(pairs[i].first).str(pairs[last].second);
  }
  w.close('}');
}

// The policy object's text, remembered for the last policy of this thread
// (a batch's jobs mostly share theirs).
const std::string& policy_text(const JobPolicy& p) {
  thread_local std::optional<std::pair<JobPolicy, std::string>> memo;
  if (memo && memo->first == p) return memo->second;
  std::string text;
  JsonText w(text);
  w.open('{');
  w.key("max_attempts").num(p.max_attempts);
  w.key("retry_initial").str(format_duration(p.retry_initial));
  w.key("retry_multiplier_percent").num(p.retry_multiplier_percent);
  w.key("retry_max").str(format_duration(p.retry_max));
  w.key("retry_jitter_percent").num(p.retry_jitter_percent);
  w.key("timeout").str(format_duration(p.timeout));
  w.key("misfire").str(name_of(kMisfires, p.misfire));
  w.key("misfire_threshold").str(format_duration(p.misfire_threshold));
  w.key("catch_up_max").num(p.catch_up_max);
  w.key("catch_up_spacing").str(format_duration(p.catch_up_spacing));
  w.key("overlap").str(name_of(kOverlaps, p.overlap));
  w.key("max_concurrent").num(p.max_concurrent);
  w.key("priority").num(p.priority);
  w.close('}');
  memo.emplace(p, std::move(text));
  return memo->second;
}

// The members of the job as a request body, without the closing brace.
void spec_members(JsonText& w, const JobSpec& spec) {
  w.open('{');
  if (!spec.id.empty()) w.key("id").str(spec.id);
  w.key("namespace").str(spec.ns);
  w.key("labels").open('{');
  for (const auto& [k, v] : spec.labels) w.key(k).str(v);
  w.close('}');

  const ScheduleSpec& s = spec.schedule;
  w.key("schedule").open('{');
  switch (s.kind) {
    case ScheduleSpec::Kind::kCron:
      w.key("cron").str(s.cron);
      w.key("zone").str(s.zone);
      w.key("dst_gap").str(name_of(kDstGaps, s.dst_gap));
      w.key("dst_fold").str(name_of(kDstFolds, s.dst_fold));
      break;
    case ScheduleSpec::Kind::kOnce:
      w.key("at").str(utc_text(s.at));
      break;
    case ScheduleSpec::Kind::kInterval:
      w.key("every").str(format_duration(s.every));
      w.key("start").str(utc_text(s.start));
      if (s.end != absl::InfiniteFuture()) w.key("end").str(utc_text(s.end));
      break;
  }
  w.key("jitter").str(format_duration(s.jitter));
  w.close('}');

  if (const auto* c = std::get_if<CommandPayload>(&spec.payload)) {
    w.key("command").open('{');
    w.key("argv").open('[');
    for (const auto& a : c->argv) w.str(a);
    w.close(']');
    w.key("env");
    string_pairs(w, c->env);
    if (!c->working_dir.empty()) w.key("working_dir").str(c->working_dir);
    w.close('}');
  } else {
    const auto& h = std::get<HttpPayload>(spec.payload);
    w.key("http").open('{');
    w.key("method").str(h.method);
    w.key("url").str(h.url);
    w.key("headers");
    string_pairs(w, h.headers);
    w.key("body").str(h.body);
    w.close('}');
  }
  w.key("policy").raw(policy_text(spec.policy));
}

json::object parsed_object(const std::string& text) {
  return std::move(json::parse(json::string_view(text.data(), text.size())).as_object());
}

}  // namespace

void append_job_spec_json(std::string& out, const JobSpec& spec) {
  JsonText w(out);
  spec_members(w, spec);
  w.close('}');
}

void append_job_json(std::string& out, const JobRecord& job) {
  JsonText w(out);
  spec_members(w, job.spec);
  w.key("status").open('{');
  w.key("state").str(kairos::to_string(job.state));
  w.key("paused").boolean(job.paused);
  w.key("incarnation").num(job.incarnation);
  w.key("generation").num(job.generation);
  w.key("created_at");
  time_or_null(w, job.created_at);
  w.key("updated_at");
  time_or_null(w, job.updated_at);
  w.key("next_due_at");
  if (job.next_due_at)
    time_or_null(w, *job.next_due_at);
  else
    w.null();
  w.key("next_nominal");
  time_or_null(w, job.next_nominal);
  w.key("cancelled_at");
  time_or_null(w, job.cancelled_at);
  w.close('}');
  w.close('}');
}

json::object job_spec_to_json(const JobSpec& spec) {
  std::string text;
  append_job_spec_json(text, spec);
  return parsed_object(text);
}

json::object job_to_json(const JobRecord& job) {
  std::string text;
  append_job_json(text, job);
  return parsed_object(text);
}

json::object run_to_json(const RunRecord& run) {
  json::object o;
  o["id"] = idempotency_key(run.id);
  o["job_id"] = run.id.job_id;
  o["incarnation"] = run.id.incarnation;
  o["nominal"] = time_or_null(run.id.nominal);
  o["kind"] = kairos::to_string(run.kind);
  o["state"] = kairos::to_string(run.state);
  o["attempt"] = run.attempt;
  o["priority"] = run.priority;
  o["due_at"] = time_or_null(run.due_at);
  o["dispatched_at"] = time_or_null(run.dispatched_at);
  o["claimed_at"] = time_or_null(run.claimed_at);
  o["finished_at"] = time_or_null(run.finished_at);
  o["lateness"] = format_duration(run.lateness);
  o["stands_for"] = run.stands_for;
  o["token"] = run.token;
  o["owner"] = run.owner;
  o["lease_expiry"] = time_or_null(run.lease_expiry);
  const bool has_outcome = run.state == RunState::kSucceeded || run.state == RunState::kFailed;
  o["outcome"] = has_outcome ? json::value(to_string(run.outcome)) : json::value(nullptr);
  o["exit_code"] = run.exit_code;
  o["detail"] = run.detail;
  json::array attempts;
  for (const AttemptRecord& a : run.attempts) {
    json::object j;
    j["attempt"] = a.attempt;
    j["token"] = a.token;
    j["worker"] = a.worker;
    j["claimed_at"] = time_or_null(a.claimed_at);
    j["finished_at"] = time_or_null(a.finished_at);
    j["end"] = kairos::to_string(a.end);
    j["exit_code"] = a.exit_code;
    j["output"] = a.output;
    attempts.emplace_back(std::move(j));
  }
  o["attempts"] = std::move(attempts);
  return o;
}

json::object ledger_to_json(const LedgerRecord& r) {
  json::object o;
  o["incarnation"] = r.incarnation;
  o["nominal"] = time_or_null(r.nominal);
  o["through"] = time_or_null(r.through);
  o["count"] = r.count;
  o["outcome"] = kairos::to_string(r.outcome);
  o["fire_at"] = time_or_null(r.fire_at);
  o["run_nominal"] = time_or_null(r.run_nominal);
  o["lateness"] = format_duration(r.lateness);
  o["recorded_at"] = time_or_null(r.recorded_at);
  o["detail"] = r.detail;
  return o;
}

std::string serialize(const json::value& value) { return json::serialize(value); }

}  // namespace kairos::api
