#include "sim/scenario/scenario.h"

#include <algorithm>
#include <array>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/base/absl_compat.h"
#include "core/base/duration.h"
#include "core/kernel/job_store.h"
#include "core/schedule/schedule.h"

namespace kairos::sim {

namespace {

struct FaultName {
  FaultKind kind;
  std::string_view name;
};
constexpr FaultName kFaultNames[] = {
    {FaultKind::kPause, "pause"},
    {FaultKind::kCrash, "crash"},
    {FaultKind::kCrashAt, "crash-at"},
    {FaultKind::kPartition, "partition"},
    {FaultKind::kOneWay, "one-way"},
    {FaultKind::kIsolate, "isolate"},
    {FaultKind::kSwizzle, "swizzle"},
    {FaultKind::kNet, "net"},
    {FaultKind::kStoreOutage, "store-outage"},
    {FaultKind::kStoreSlow, "store-slow"},
    {FaultKind::kStoreCrash, "store-crash"},
    {FaultKind::kClockJump, "clock-jump"},
    {FaultKind::kClockDrift, "clock-drift"},
    {FaultKind::kSinkFaults, "sink-faults"},
    {FaultKind::kFleetRestart, "fleet-restart"},
    {FaultKind::kCorruptRecord, "corrupt-record"},
    {FaultKind::kLeave, "leave"},
    {FaultKind::kDrain, "drain"},
    {FaultKind::kStop, "stop"},
};

// One line split into words; quoted values keep their spaces.
struct Line {
  int number = 0;
  std::vector<std::string> words;
};

class Parser {
 public:
  Parser(std::string_view filename) : filename_(filename) {}

  absl::Status error(int line, std::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrCat(absl_sv(filename_), ":", line, ": ", absl_sv(what)));
  }

  absl::StatusOr<Line> split(int number, std::string_view text) const {
    Line line{number, {}};
    std::string cur;
    bool in_word = false, quoted = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
      const char c = text[i];
      if (quoted) {
        if (c == '"')
          quoted = false;
        else
          cur.push_back(c);
        continue;
      }
      if (c == '#') break;
      if (c == ' ' || c == '\t' || c == '\r') {
        if (in_word) line.words.push_back(std::move(cur)), cur.clear(), in_word = false;
        continue;
      }
      in_word = true;
      if (c == '"')
        quoted = true;
      else
        cur.push_back(c);
    }
    if (quoted) return error(number, "unterminated double quote");
    if (in_word) line.words.push_back(std::move(cur));
    return line;
  }

 private:
  std::string_view filename_;
};

// The key=value attributes of one directive; every key must be consumed.
class Attrs {
 public:
  Attrs(const Parser& p, const Line& line, std::string directive, std::size_t first)
      : p_(p), line_(line), directive_(std::move(directive)) {
    for (std::size_t i = first; i < line.words.size(); ++i) {
      const std::string& w = line.words[i];
      const auto eq = w.find('=');
      if (eq == std::string::npos || eq == 0) {
        status_ = err(absl::StrCat("expected key=value, got \"", w, "\""));
        return;
      }
      std::string key = w.substr(0, eq);
      if (values_.count(key)) {
        status_ = err(absl::StrCat("attribute ", key, " given twice"));
        return;
      }
      values_[key] = w.substr(eq + 1);
    }
  }

  absl::Status err(std::string_view what) const {
    return p_.error(line_.number, absl::StrCat(directive_, ": ", absl_sv(what)));
  }
  const absl::Status& status() const { return status_; }

  // Each getter leaves `out` untouched when the key is absent.
  void str(const char* key, std::string* out) {
    if (auto* v = take(key)) *out = *v;
  }
  void dur(const char* key, absl::Duration* out, bool allow_sign = false) {
    auto* v = take(key);
    if (!v || !status_.ok()) return;
    auto d = parse_signed(*v, allow_sign);
    if (!d.ok()) {
      status_ = err(absl::StrCat(key, ": ", d.status().message()));
      return;
    }
    *out = *d;
  }
  void range(const char* key, absl::Duration* lo, absl::Duration* hi) {
    auto* v = take(key);
    if (!v || !status_.ok()) return;
    const auto dots = v->find("..");
    if (dots == std::string::npos) {
      status_ =
          err(absl::StrCat(key, ": expected a range <duration>..<duration>, got \"", *v, "\""));
      return;
    }
    auto a = parse_duration(std::string_view(*v).substr(0, dots));
    auto b = parse_duration(std::string_view(*v).substr(dots + 2));
    if (!a.ok() || !b.ok()) {
      status_ = err(absl::StrCat(key, ": ", (!a.ok() ? a.status() : b.status()).message()));
      return;
    }
    if (*a > *b) {
      status_ = err(absl::StrCat(key, ": range start exceeds its end"));
      return;
    }
    *lo = *a;
    *hi = *b;
  }
  template <typename T>
  void num(const char* key, T* out, std::int64_t lo, std::int64_t hi, const char* what) {
    auto* v = take(key);
    if (!v || !status_.ok()) return;
    std::int64_t n;
    if (!absl::SimpleAtoi(*v, &n) || n < lo || n > hi) {
      status_ =
          err(absl::StrCat(key, ": expected ", what, " ", lo, "..", hi, ", got \"", *v, "\""));
      return;
    }
    *out = static_cast<T>(n);
  }
  void permille(const char* key, std::uint32_t* out) {
    num(key, out, 0, 1000, "an integer per-mille rate");
  }
  void boolean(const char* key, bool* out) {
    auto* v = take(key);
    if (!v || !status_.ok()) return;
    if (*v == "yes")
      *out = true;
    else if (*v == "no")
      *out = false;
    else
      status_ = err(absl::StrCat(key, ": expected yes or no, got \"", *v, "\""));
  }
  template <typename T>
  void opt_num(const char* key, std::optional<T>* out, std::int64_t lo, std::int64_t hi,
               const char* what) {
    if (!has(key)) return;
    T v{};
    num(key, &v, lo, hi, what);
    if (status_.ok()) *out = v;
  }
  void opt_dur(const char* key, std::optional<absl::Duration>* out) {
    if (!has(key)) return;
    absl::Duration d;
    dur(key, &d);
    if (status_.ok()) *out = d;
  }
  // One of the words in `names` (values in the same order).
  template <typename T, std::size_t N>
  void choice(const char* key, T* out, const std::pair<std::string_view, T> (&names)[N]) {
    auto* v = take(key);
    if (!v || !status_.ok()) return;
    std::vector<std::string> words;
    for (const auto& [name, value] : names) {
      if (name == *v) {
        *out = value;
        return;
      }
      words.emplace_back(name);
    }
    status_ =
        err(absl::StrCat(key, ": expected ", absl::StrJoin(words, ", "), "; got \"", *v, "\""));
  }
  // An integer "N" (lo = hi = N) or an integer range "LO..HI", within [min, max].
  void int_range(const char* key, std::int32_t* lo, std::int32_t* hi, std::int32_t min,
                 std::int32_t max, const char* what) {
    auto* v = take(key);
    if (!v || !status_.ok()) return;
    const auto dots = v->find("..");
    std::int32_t a = 0, b = 0;
    const bool ok = dots == std::string::npos ? absl::SimpleAtoi(*v, &a) && (b = a, true)
                                              : absl::SimpleAtoi(v->substr(0, dots), &a) &&
                                                    absl::SimpleAtoi(v->substr(dots + 2), &b);
    if (!ok || a < min || b > max || a > b) {
      status_ = err(absl::StrCat(key, ": expected ", what, " ", min, "..", max,
                                 " or a range LO..HI of them, got \"", *v, "\""));
      return;
    }
    *lo = a;
    *hi = b;
  }
  bool has(const char* key) const { return values_.count(key) != 0; }
  // Call last: unknown keys are errors.
  absl::Status finish() {
    if (!status_.ok()) return status_;
    for (const auto& [k, v] : values_)
      if (!used_.count(k)) return err(absl::StrCat("unknown attribute \"", k, "\""));
    return absl::OkStatus();
  }

  static absl::StatusOr<absl::Duration> parse_signed(std::string_view v, bool allow_sign) {
    if (allow_sign && !v.empty() && v[0] == '-') {
      auto d = parse_duration(v.substr(1));
      if (!d.ok()) return d.status();
      return -*d;
    }
    return parse_duration(v);
  }

 private:
  const std::string* take(const char* key) {
    auto it = values_.find(key);
    if (it == values_.end()) return nullptr;
    used_.insert(key);
    return &it->second;
  }
  const Parser& p_;
  const Line& line_;
  std::string directive_;
  std::map<std::string, std::string> values_;
  std::set<std::string> used_;
  absl::Status status_;
};

bool valid_name(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.'))
      return false;
  return true;
}

std::string signed_duration(absl::Duration d) {
  return d < absl::ZeroDuration() ? "-" + format_duration(-d) : format_duration(d);
}
std::string range_text(absl::Duration a, absl::Duration b) {
  return absl::StrCat(format_duration(a), "..", format_duration(b));
}
std::string quote(std::string_view s) {
  if (!s.empty() && s.find_first_of(" \t#\"") == std::string_view::npos) return std::string(s);
  return absl::StrCat("\"", absl_sv(s), "\"");
}

constexpr std::pair<std::string_view, MisfirePolicy> kMisfireNames[] = {
    {"run-once", MisfirePolicy::kRunOnce},
    {"catch-up", MisfirePolicy::kCatchUp},
    {"skip", MisfirePolicy::kSkip}};
constexpr std::pair<std::string_view, OverlapPolicy> kOverlapNames[] = {
    {"skip", OverlapPolicy::kSkip},
    {"queue", OverlapPolicy::kQueue},
    {"allow", OverlapPolicy::kAllow}};

template <typename T, std::size_t N>
std::string_view name_of(T value, const std::pair<std::string_view, T> (&names)[N]) {
  for (const auto& [name, v] : names)
    if (v == value) return name;
  return "?";
}

// The policy and run-profile attributes of a `job` line (docs/SIMULATION.md,
// ranges from docs/POLICIES.md "Defaults"). The kernel's own validation of
// the whole job runs once the file is read (check_job_line).
absl::Status parse_job_attrs(Attrs& a, JobSpec& j) {
  JobPolicy& p = j.policy;
  a.choice("misfire", &p.misfire, kMisfireNames);
  a.dur("threshold", &p.misfire_threshold);
  a.num("catch-up-max", &p.catch_up_max, 1, 1000, "a count");
  a.dur("catch-up-spacing", &p.catch_up_spacing);
  a.choice("overlap", &p.overlap, kOverlapNames);
  a.num("max-concurrent", &p.max_concurrent, 1, 100, "a count");
  a.int_range("priority", &j.priority_min, &j.priority_max, kMinPriority, kMaxPriority,
              "a priority");
  a.opt_num("attempts", &j.max_attempts, 1, 100, "a count");
  a.range("retry", &p.retry_initial, &p.retry_max);
  a.num("retry-multiplier", &p.retry_multiplier_percent, 100, 1000, "a percentage");
  a.num("jitter", &p.retry_jitter_percent, 0, 100, "a percentage");
  a.opt_dur("timeout", &j.timeout);
  if (a.has("run")) {
    absl::Duration lo, hi;
    a.range("run", &lo, &hi);
    j.run.min_duration = lo;
    j.run.max_duration = hi;
  }
  a.opt_num("fail", &j.run.fail_permille, 0, 1000, "an integer per-mille rate");
  a.opt_num("permanent-fail", &j.run.permanent_fail_permille, 0, 1000, "an integer per-mille rate");
  KAIROS_RETURN_IF_ERROR(a.finish());
  if (p.catch_up_spacing > absl::Hours(24))
    return a.err(absl::StrCat("catch-up-spacing: expected a duration 0s..24h, got ",
                              format_duration(p.catch_up_spacing)));
  if (j.timeout && (*j.timeout <= absl::ZeroDuration() || *j.timeout > absl::Hours(24 * 7)))
    return a.err(absl::StrCat("timeout: expected a duration in (0s, 7d], got ",
                              format_duration(*j.timeout)));
  if (j.run.fail_permille && j.run.permanent_fail_permille &&
      *j.run.fail_permille + *j.run.permanent_fail_permille > 1000)
    return a.err("fail, permanent-fail: their sum must not exceed 1000 per mille");
  return absl::OkStatus();
}

// The kernel attribute a validate_job_spec() error is about, by its field.
std::string_view attribute_of(std::string_view message, const JobSpec& j) {
  struct Field {
    std::string_view field, attribute;
  };
  static constexpr Field kFields[] = {
      {"policy.max_attempts", "attempts"},
      {"policy.retry_initial", "retry"},
      {"policy.retry_multiplier_percent", "retry-multiplier"},
      {"policy.retry_max", "retry"},
      {"policy.timeout", "timeout"},
      {"policy.misfire_threshold", "threshold"},
      {"policy.catch_up_max", "catch-up-max"},
      {"policy.catch_up_spacing", "catch-up-spacing"},
      {"policy.max_concurrent", "max-concurrent"},
      {"policy.priority", "priority"},
      {"policy.retry_jitter_percent", "jitter"},
      {"payload", "run"},
  };
  for (const auto& f : kFields)
    if (message.substr(0, f.field.size()) == f.field) {
      if (f.attribute == "timeout" && !j.timeout) return "timeout (from timing job-timeout)";
      if (f.attribute == "attempts" && !j.max_attempts)
        return "attempts (from timing max-attempts)";
      return f.attribute;
    }
  if (message.substr(0, 8) == "schedule")
    return j.kind == JobSpec::Kind::kCron       ? "expr, zone"
           : j.kind == JobSpec::Kind::kInterval ? "every"
                                                : "within";
  return "job";
}

// The kernel's own check (validate_job_spec, core/kernel/job_store.h) of a job of
// this line: a scenario whose jobs the kernel would refuse does not parse.
absl::Status check_job_line(const Parser& parser, int line, const JobSpec& j, const Timing& t,
                            absl::Time start) {
  kairos::JobSpec k;
  k.id = "scenario-job";
  switch (j.kind) {
    case JobSpec::Kind::kCron:
      k.schedule.kind = ScheduleSpec::Kind::kCron;
      k.schedule.cron = j.expr;
      k.schedule.zone = j.zone;
      break;
    case JobSpec::Kind::kInterval:
      k.schedule.kind = ScheduleSpec::Kind::kInterval;
      k.schedule.every = j.every;
      k.schedule.start = start;
      break;
    case JobSpec::Kind::kOnce:
      k.schedule.kind = ScheduleSpec::Kind::kOnce;
      k.schedule.at = start;
      break;
  }
  k.payload = job_payload(j.run);
  for (const std::int32_t priority : {j.priority_min, j.priority_max}) {
    k.policy = job_policy(j, t, priority);
    const absl::Status s = validate_job_spec(k);
    if (!s.ok())
      return parser.error(line, absl::StrCat("job: ", absl_sv(attribute_of(std_sv(s.message()), j)),
                                             ": the kernel refuses this job: ", s.message()));
  }
  return absl::OkStatus();
}

}  // namespace

std::string_view to_string(ControlSpec::Op op) {
  switch (op) {
    case ControlSpec::Op::kPause:
      return "pause";
    case ControlSpec::Op::kReschedule:
      return "reschedule";
    case ControlSpec::Op::kTrigger:
      return "trigger";
  }
  return "?";
}

kairos::JobPolicy job_policy(const JobSpec& j, const Timing& timing, std::int32_t priority) {
  kairos::JobPolicy p = j.policy;
  p.timeout = j.timeout.value_or(timing.job_timeout);
  p.max_attempts = j.max_attempts.value_or(timing.max_attempts);
  p.priority = priority;
  return p;
}

std::string_view to_string(FaultKind kind) {
  for (const auto& f : kFaultNames)
    if (f.kind == kind) return f.name;
  return "?";
}

bool parse_fault_kind(std::string_view text, FaultKind* out) {
  for (const auto& f : kFaultNames) {
    if (f.name == text) {
      *out = f.kind;
      return true;
    }
  }
  return false;
}

bool valid_selector(std::string_view s, const Topology& t) {
  if (s == "store" || s == "sink" || s == "client" || s == "any" || s == "any-worker" ||
      s == "any-scheduler" || s == "leader")
    return true;
  auto indexed = [&](std::string_view prefix, std::uint32_t n) {
    if (s.substr(0, prefix.size()) != prefix) return false;
    std::uint32_t k;
    return absl::SimpleAtoi(absl_sv(s.substr(prefix.size())), &k) && k >= 1 && k <= n;
  };
  return indexed("scheduler-", t.schedulers) || indexed("worker-", t.workers);
}

namespace {

// What a directive's parse reads and writes: its line, the scenario so far,
// and what parse_scenario() checks once the whole file is read.
struct ParseState {
  const Parser& parser;
  const Line& line;
  const std::string& d;  // the keyword
  Scenario& s;
  // Selectors are checked against the final topology, so remember their lines.
  std::vector<std::pair<int, std::string>>& selectors;
  // Job and control lines are checked against the whole file at the end.
  std::vector<int>& job_lines;
  std::vector<int>& control_lines;
  std::vector<int>& expect_lines;
  std::vector<int>& cancel_lines;

  int number() const { return line.number; }
  absl::Status error(std::string_view what) const { return parser.error(line.number, what); }
  absl::Status want_words(std::size_t n, std::string_view what) const {
    if (line.words.size() < n + 1) return error(absl::StrCat(d, ": expected ", absl_sv(what)));
    return absl::OkStatus();
  }
  Attrs attrs(std::size_t first) const { return Attrs(parser, line, d, first); }
};

// Appends one line to `out`.
template <typename... Parts>
void put(std::string& out, const Parts&... parts) {
  absl::StrAppend(&out, parts...);
  out += "\n";
}

// --- name, description, start, duration, quiet-tail ------------------------

absl::Status parse_name(ParseState& p) {
  if (p.line.words.size() != 2 || !valid_name(p.line.words[1]))
    return p.error("name: expected one name of [a-z0-9._-]");
  p.s.name = p.line.words[1];
  return absl::OkStatus();
}
void format_name(const Scenario& s, std::string& out) { put(out, "name ", s.name); }

absl::Status parse_description(ParseState& p) {
  std::vector<std::string> rest(p.line.words.begin() + 1, p.line.words.end());
  p.s.description = absl::StrJoin(rest, " ");
  return absl::OkStatus();
}
void format_description(const Scenario& s, std::string& out) {
  if (!s.description.empty()) put(out, "description ", s.description);
}

absl::Status parse_start(ParseState& p) {
  std::string err;
  if (p.line.words.size() != 2 ||
      !absl::ParseTime(absl::RFC3339_full, p.line.words[1], &p.s.start, &err))
    return p.error("start: expected an RFC 3339 time like 2026-03-08T00:00:00Z");
  return absl::OkStatus();
}
void format_start(const Scenario& s, std::string& out) {
  put(out, "start ", absl::FormatTime(absl::RFC3339_full, s.start, absl::UTCTimeZone()));
}

absl::Status parse_one_duration(ParseState& p, absl::Duration* out) {
  if (p.line.words.size() != 2) return p.error(absl::StrCat(p.d, ": expected one duration"));
  auto v = parse_duration(p.line.words[1]);
  if (!v.ok()) return p.error(absl::StrCat(p.d, ": ", v.status().message()));
  *out = *v;
  return absl::OkStatus();
}
absl::Status parse_run_duration(ParseState& p) { return parse_one_duration(p, &p.s.duration); }
void format_run_duration(const Scenario& s, std::string& out) {
  put(out, "duration ", format_duration(s.duration));
}
absl::Status parse_quiet_tail(ParseState& p) { return parse_one_duration(p, &p.s.quiet_tail); }
void format_quiet_tail(const Scenario& s, std::string& out) {
  put(out, "quiet-tail ", format_duration(s.quiet_tail));
}

// --- topology, timing, network, store, sink, runner -------------------------

absl::Status parse_topology(ParseState& p) {
  Attrs a = p.attrs(1);
  Topology& t = p.s.topology;
  a.num("schedulers", &t.schedulers, 0, 16, "a count");
  a.num("workers", &t.workers, 0, 256, "a count");
  a.num("shards", &t.shards, 1, 1024, "a count");
  a.num("slots", &t.slots, 1, 1024, "a count");
  a.boolean("handback", &t.handback);
  return a.finish();
}
void format_topology(const Scenario& s, std::string& out) {
  const Topology& t = s.topology;
  put(out, "topology schedulers=", t.schedulers, " workers=", t.workers, " shards=", t.shards,
      " slots=", t.slots, t.handback ? " handback=yes" : "");
}

absl::Status parse_timing(ParseState& p) {
  Attrs a = p.attrs(1);
  Timing& t = p.s.timing;
  a.dur("poll", &t.poll);
  a.dur("lease", &t.lease);
  a.dur("job-timeout", &t.job_timeout);
  a.num("max-attempts", &t.max_attempts, 1, 100, "a count");
  a.dur("quantum", &t.quantum);
  KAIROS_RETURN_IF_ERROR(a.finish());
  if (t.quantum < absl::ZeroDuration() || t.quantum > absl::Seconds(10))
    return p.error("timing: quantum: expected a duration in [0s, 10s] (0s: off)");
  return absl::OkStatus();
}
void format_timing(const Scenario& s, std::string& out) {
  const Timing& t = s.timing;
  put(out, "timing poll=", format_duration(t.poll), " lease=", format_duration(t.lease),
      " job-timeout=", format_duration(t.job_timeout), " max-attempts=", t.max_attempts,
      t.quantum != absl::ZeroDuration() ? absl::StrCat(" quantum=", format_duration(t.quantum))
                                        : std::string());
}

// kernel-policy ledger-keep=N ledger-max-age=D prune-budget=N misfire-chunk=N
//               dispatch-batch=N reap-batch=N
absl::Status parse_kernel_policy(ParseState& p) {
  Attrs a = p.attrs(1);
  KernelPolicy& k = p.s.kernel_policy;
  a.num("ledger-keep", &k.ledger_keep, 1, 10'000'000, "a record count");
  a.dur("ledger-max-age", &k.ledger_max_age);
  a.num("prune-budget", &k.prune_budget, 1, 10'000, "a record count");
  a.num("misfire-chunk", &k.misfire_chunk, 1, 1'000'000, "an occurrence count");
  a.num("dispatch-batch", &k.dispatch_batch, 1, 100'000, "an entry count");
  a.num("reap-batch", &k.reap_batch, 1, 100'000, "an entry count");
  KAIROS_RETURN_IF_ERROR(a.finish());
  if (absl::Status v = validate(policy_options(k)); !v.ok())
    return p.error(absl::StrCat("kernel-policy: ", v.message()));
  return absl::OkStatus();
}
void format_kernel_policy(const Scenario& s, std::string& out) {
  const KernelPolicy& k = s.kernel_policy;
  if (k == KernelPolicy{}) return;
  put(out, "kernel-policy ledger-keep=", k.ledger_keep,
      " ledger-max-age=", format_duration(k.ledger_max_age), " prune-budget=", k.prune_budget,
      " misfire-chunk=", k.misfire_chunk, " dispatch-batch=", k.dispatch_batch,
      " reap-batch=", k.reap_batch);
}

absl::Status parse_network(ParseState& p) {
  Attrs a = p.attrs(1);
  NetworkConfig& n = p.s.network;
  a.range("delay", &n.min_delay, &n.max_delay);
  a.permille("slow", &n.slow_permille);
  a.dur("slow-max", &n.slow_max);
  a.permille("loss", &n.loss_permille);
  a.permille("duplicate", &n.dup_permille);
  a.permille("replay", &n.replay_permille);
  return a.finish();
}
void format_network(const Scenario& s, std::string& out) {
  const NetworkConfig& n = s.network;
  put(out, "network delay=", range_text(n.min_delay, n.max_delay), " slow=", n.slow_permille,
      " slow-max=", format_duration(n.slow_max), " loss=", n.loss_permille,
      " duplicate=", n.dup_permille, " replay=", n.replay_permille);
}

absl::Status parse_store(ParseState& p) {
  Attrs a = p.attrs(1);
  StoreConfig& st = p.s.store;
  a.dur("sync", &st.sync_interval);
  a.range("service", &st.service_min, &st.service_max);
  a.dur("timeout", &st.client_timeout);
  a.dur("connect-timeout", &st.connect_timeout);
  a.boolean("record-writes", &st.record_writes);
  return a.finish();
}
void format_store(const Scenario& s, std::string& out) {
  const StoreConfig& st = s.store;
  put(out, "store sync=", format_duration(st.sync_interval),
      " service=", range_text(st.service_min, st.service_max),
      " timeout=", format_duration(st.client_timeout),
      " connect-timeout=", format_duration(st.connect_timeout),
      " record-writes=", st.record_writes ? "yes" : "no");
}

absl::Status parse_sink(ParseState& p) {
  Attrs a = p.attrs(1);
  SinkConfig& k = p.s.sink;
  a.permille("error", &k.error_permille);
  a.permille("timeout", &k.timeout_permille);
  a.dur("wait", &k.timeout);
  return a.finish();
}
void format_sink(const Scenario& s, std::string& out) {
  put(out, "sink error=", s.sink.error_permille, " timeout=", s.sink.timeout_permille,
      " wait=", format_duration(s.sink.timeout));
}

absl::Status parse_runner(ParseState& p) {
  Attrs a = p.attrs(1);
  RunnerConfig& r = p.s.runner;
  a.range("duration", &r.min_duration, &r.max_duration);
  a.permille("tail", &r.tail_permille);
  a.dur("tail-max", &r.tail_max);
  a.permille("fail", &r.fail_permille);
  a.permille("permanent-fail", &r.permanent_fail_permille);
  a.permille("hang", &r.hang_permille);
  return a.finish();
}
void format_runner(const Scenario& s, std::string& out) {
  const RunnerConfig& r = s.runner;
  put(out, "runner duration=", range_text(r.min_duration, r.max_duration),
      " tail=", r.tail_permille, " tail-max=", format_duration(r.tail_max),
      " fail=", r.fail_permille, " permanent-fail=", r.permanent_fail_permille,
      " hang=", r.hang_permille);
}

// --- clock, job, cancel, pause / reschedule / trigger -----------------------

absl::Status parse_clock(ParseState& p) {
  KAIROS_RETURN_IF_ERROR(p.want_words(1, "a node selector"));
  ClockSpec c;
  c.node = p.line.words[1];
  Attrs a = p.attrs(2);
  a.dur("offset", &c.offset, /*allow_sign=*/true);
  a.num("drift", &c.drift_ppm, -500000, 500000, "a drift in ppm");
  KAIROS_RETURN_IF_ERROR(a.finish());
  p.selectors.emplace_back(p.number(), c.node);
  p.s.clocks.push_back(std::move(c));
  return absl::OkStatus();
}
void format_clock(const Scenario& s, std::string& out) {
  for (const auto& c : s.clocks)
    put(out, "clock ", c.node, " offset=", signed_duration(c.offset), " drift=", c.drift_ppm);
}

absl::Status parse_job(ParseState& p) {
  KAIROS_RETURN_IF_ERROR(p.want_words(1, "a kind: cron, once or interval"));
  JobSpec j;
  const std::string& kind = p.line.words[1];
  Attrs a = p.attrs(2);
  a.num("count", &j.count, 1, 10000000, "a count");
  if (kind == "cron") {
    j.kind = JobSpec::Kind::kCron;
    if (!a.has("expr")) return a.err("cron: expected expr=\"<cron expression>\"");
    a.str("expr", &j.expr);
    a.str("zone", &j.zone);
  } else if (kind == "once") {
    j.kind = JobSpec::Kind::kOnce;
    a.dur("within", &j.within);
  } else if (kind == "interval") {
    j.kind = JobSpec::Kind::kInterval;
    a.dur("every", &j.every);
    if (j.every <= absl::ZeroDuration()) return a.err("every: must be positive");
  } else {
    return p.error(absl::StrCat("job: expected a kind cron, once or interval, got \"", kind, "\""));
  }
  KAIROS_RETURN_IF_ERROR(parse_job_attrs(a, j));
  p.job_lines.push_back(p.number());
  p.s.jobs.push_back(std::move(j));
  return absl::OkStatus();
}
void format_job(const Scenario& s, std::string& out) {
  for (const auto& j : s.jobs) {
    std::string l;
    switch (j.kind) {
      case JobSpec::Kind::kCron:
        l = absl::StrCat("job cron count=", j.count, " expr=", quote(j.expr),
                         " zone=", quote(j.zone));
        break;
      case JobSpec::Kind::kOnce:
        l = absl::StrCat("job once count=", j.count, " within=", format_duration(j.within));
        break;
      case JobSpec::Kind::kInterval:
        l = absl::StrCat("job interval count=", j.count, " every=", format_duration(j.every));
        break;
    }
    // Policy attributes that differ from JobPolicy's defaults, in a fixed order.
    const JobPolicy d;
    const JobPolicy& p = j.policy;
    if (p.misfire != d.misfire)
      absl::StrAppend(&l, " misfire=", absl_sv(name_of(p.misfire, kMisfireNames)));
    if (p.misfire_threshold != d.misfire_threshold)
      absl::StrAppend(&l, " threshold=", format_duration(p.misfire_threshold));
    if (p.catch_up_max != d.catch_up_max) absl::StrAppend(&l, " catch-up-max=", p.catch_up_max);
    if (p.catch_up_spacing != d.catch_up_spacing)
      absl::StrAppend(&l, " catch-up-spacing=", format_duration(p.catch_up_spacing));
    if (p.overlap != d.overlap)
      absl::StrAppend(&l, " overlap=", absl_sv(name_of(p.overlap, kOverlapNames)));
    if (p.max_concurrent != d.max_concurrent)
      absl::StrAppend(&l, " max-concurrent=", p.max_concurrent);
    if (j.priority_min != d.priority || j.priority_max != d.priority) {
      absl::StrAppend(&l, " priority=", j.priority_min);
      if (j.priority_max != j.priority_min) absl::StrAppend(&l, "..", j.priority_max);
    }
    if (j.max_attempts) absl::StrAppend(&l, " attempts=", *j.max_attempts);
    if (p.retry_initial != d.retry_initial || p.retry_max != d.retry_max)
      absl::StrAppend(&l, " retry=", range_text(p.retry_initial, p.retry_max));
    if (p.retry_multiplier_percent != d.retry_multiplier_percent)
      absl::StrAppend(&l, " retry-multiplier=", p.retry_multiplier_percent);
    if (p.retry_jitter_percent != d.retry_jitter_percent)
      absl::StrAppend(&l, " jitter=", p.retry_jitter_percent);
    if (j.timeout) absl::StrAppend(&l, " timeout=", format_duration(*j.timeout));
    if (j.run.min_duration && j.run.max_duration)
      absl::StrAppend(&l, " run=", range_text(*j.run.min_duration, *j.run.max_duration));
    if (j.run.fail_permille) absl::StrAppend(&l, " fail=", *j.run.fail_permille);
    if (j.run.permanent_fail_permille)
      absl::StrAppend(&l, " permanent-fail=", *j.run.permanent_fail_permille);
    put(out, l);
  }
}

absl::Status parse_cancel(ParseState& p) {
  CancelSpec c;
  Attrs a = p.attrs(1);
  a.num("count", &c.count, 1, 10000000, "a count");
  a.dur("at", &c.at);
  a.num("job", &c.job, 1, 10000, "a job line number (1-based)");
  a.opt_dur("recreate", &c.recreate_after);
  KAIROS_RETURN_IF_ERROR(a.finish());
  p.s.cancels.push_back(c);
  p.cancel_lines.push_back(p.number());
  return absl::OkStatus();
}
void format_cancel(const Scenario& s, std::string& out) {
  for (const auto& c : s.cancels)
    put(out, "cancel count=", c.count, " at=", format_duration(c.at),
        c.job != 0 ? absl::StrCat(" job=", c.job) : std::string(),
        c.recreate_after ? absl::StrCat(" recreate=", format_duration(*c.recreate_after))
                         : std::string());
}

// The three job-control keywords share one list (in file order), so they are
// one entry: the keyword is the operation.
absl::Status parse_control(ParseState& p) {
  ControlSpec c;
  c.op = p.d == "pause"        ? ControlSpec::Op::kPause
         : p.d == "reschedule" ? ControlSpec::Op::kReschedule
                               : ControlSpec::Op::kTrigger;
  Attrs a = p.attrs(1);
  if (!a.has("at")) return a.err("expected at=<duration>");
  if (!a.has("count")) return a.err("expected count=N");
  a.dur("at", &c.at);
  a.num("count", &c.count, 1, 10000000, "a count");
  a.num("job", &c.job, 1, 10000, "a job line number (1-based)");
  if (c.op == ControlSpec::Op::kPause) {
    a.opt_dur("for", &c.resume_after);
  } else if (c.op == ControlSpec::Op::kTrigger) {
    a.num("repeat", &c.repeat, 1, 100000, "a trigger count per job");
    a.dur("spacing", &c.spacing);
    a.boolean("force", &c.force);
  } else if (c.op == ControlSpec::Op::kReschedule) {
    if (a.has("every") == a.has("expr"))
      return a.err(
          "expected exactly one new schedule: every=<duration> or expr=\"<cron expression>\"");
    if (a.has("zone") && !a.has("expr")) return a.err("zone: only with expr=");
    a.dur("every", &c.every);
    a.str("expr", &c.expr);
    a.str("zone", &c.zone);
  }
  KAIROS_RETURN_IF_ERROR(a.finish());
  if (c.resume_after && *c.resume_after <= absl::ZeroDuration())
    return a.err("for: expected a positive duration");
  if (c.spacing < absl::ZeroDuration()) return a.err("spacing: must not be negative");
  if (c.repeat == 1 && c.spacing != absl::ZeroDuration())
    return a.err("spacing: only with repeat= above 1");
  if (c.op == ControlSpec::Op::kReschedule) {
    ScheduleSpec sch;
    if (c.expr.empty()) {
      if (c.every <= absl::ZeroDuration()) return a.err("every: must be positive");
      sch.kind = ScheduleSpec::Kind::kInterval;
      sch.every = c.every;
      sch.start = p.s.start;
    } else {
      sch.kind = ScheduleSpec::Kind::kCron;
      sch.cron = c.expr;
      sch.zone = c.zone;
    }
    auto compiled = Schedule::compile(sch, "scenario-job");
    if (!compiled.ok())
      return a.err(
          absl::StrCat(c.expr.empty() ? "every" : "expr, zone", ": ", compiled.status().message()));
  }
  p.control_lines.push_back(p.number());
  p.s.controls.push_back(std::move(c));
  return absl::OkStatus();
}
void format_control(const Scenario& s, std::string& out) {
  for (const auto& c : s.controls) {
    std::string l =
        absl::StrCat(absl_sv(to_string(c.op)), " at=", format_duration(c.at), " count=", c.count);
    if (c.job != 0) absl::StrAppend(&l, " job=", c.job);
    if (c.resume_after) absl::StrAppend(&l, " for=", format_duration(*c.resume_after));
    if (c.repeat != 1) absl::StrAppend(&l, " repeat=", c.repeat);
    if (c.spacing != absl::ZeroDuration())
      absl::StrAppend(&l, " spacing=", format_duration(c.spacing));
    if (c.force) absl::StrAppend(&l, " force=yes");
    if (c.op == ControlSpec::Op::kReschedule) {
      if (c.expr.empty())
        absl::StrAppend(&l, " every=", format_duration(c.every));
      else
        absl::StrAppend(&l, " expr=", quote(c.expr), " zone=", quote(c.zone));
    }
    put(out, l);
  }
}

// --- fault, swarm, ignore ----------------------------------------------------

absl::Status parse_fault(ParseState& p) {
  KAIROS_RETURN_IF_ERROR(p.want_words(1, "a fault kind"));
  FaultSpec f;
  if (!parse_fault_kind(p.line.words[1], &f.kind)) {
    std::vector<std::string> names;
    for (const auto& n : kFaultNames) names.emplace_back(n.name);
    return p.error(absl::StrCat("fault: unknown kind \"", p.line.words[1], "\"; expected one of ",
                                absl::StrJoin(names, ", ")));
  }
  Attrs a(p.parser, p.line, p.d + " " + p.line.words[1], 2);
  if (!a.has("at")) return a.err("expected at=<duration>");
  a.dur("at", &f.at);
  a.dur("for", &f.length);
  a.str("node", &f.node);
  a.str("peer", &f.peer);
  a.dur("amount", &f.amount, /*allow_sign=*/true);
  a.num("drift", &f.drift_ppm, -500000, 500000, "a drift in ppm");
  a.str("point", &f.point);
  a.permille("loss", &f.loss);
  a.permille("duplicate", &f.duplicate);
  a.permille("replay", &f.replay);
  a.permille("error", &f.error);
  a.permille("timeout", &f.timeout);
  a.str("job", &f.job);
  a.str("record", &f.record);
  if (a.has("drain-timeout")) {
    absl::Duration d;
    a.dur("drain-timeout", &d);
    f.drain_timeout = d;
  }
  KAIROS_RETURN_IF_ERROR(a.finish());
  if (f.drain_timeout && f.kind != FaultKind::kDrain)
    return a.err("drain-timeout= belongs to drain");
  if (f.kind == FaultKind::kCorruptRecord && f.job.empty() && f.record != "node")
    return a.err("expected job=<job id>");
  if (f.record == "node" && !f.job.empty())
    return a.err("job: record=node corrupts the schedulers' membership records, which name no job");
  if (!f.record.empty()) {
    if (f.kind != FaultKind::kCorruptRecord) return a.err("record= belongs to corrupt-record");
    if (std::find(std::begin(kCorruptibleRecords), std::end(kCorruptibleRecords), f.record) ==
        std::end(kCorruptibleRecords)) {
      std::vector<std::string> names(std::begin(kCorruptibleRecords),
                                     std::end(kCorruptibleRecords));
      return a.err(absl::StrCat("record: expected one of ", absl::StrJoin(names, ", "), ", got \"",
                                f.record, "\""));
    }
    if (f.record == "job") f.record.clear();  // the default
  }
  if (f.kind == FaultKind::kCorruptRecord) f.node = "store";
  if ((f.kind == FaultKind::kDrain || f.kind == FaultKind::kStop) && f.node != "any-worker" &&
      f.node.rfind("worker-", 0) != 0)
    return a.err("expected node=worker-K or node=any-worker (a worker stops)");
  if ((f.kind == FaultKind::kPartition || f.kind == FaultKind::kOneWay) && f.peer.empty())
    return a.err("expected peer=<node>");
  if (f.kind == FaultKind::kCrashAt && f.point.empty())
    return a.err("expected point=<crash point name>");
  // The store has no "down for good": without a length it would stay down
  // until the quiet tail while the checker saw a fault window of zero.
  if (f.kind == FaultKind::kStoreCrash && f.length <= absl::ZeroDuration())
    return a.err("expected for=<duration> (how long the store stays down)");
  p.selectors.emplace_back(p.number(), f.node);
  if (!f.peer.empty()) p.selectors.emplace_back(p.number(), f.peer);
  p.s.faults.push_back(std::move(f));
  return absl::OkStatus();
}
void format_fault(const Scenario& s, std::string& out) {
  for (const auto& f : s.faults) {
    std::string l = absl::StrCat("fault ", absl_sv(to_string(f.kind)),
                                 " at=", format_duration(f.at), " node=", quote(f.node));
    if (f.length != absl::ZeroDuration()) absl::StrAppend(&l, " for=", format_duration(f.length));
    if (!f.peer.empty()) absl::StrAppend(&l, " peer=", quote(f.peer));
    if (f.amount != absl::ZeroDuration())
      absl::StrAppend(&l, " amount=", signed_duration(f.amount));
    if (f.drift_ppm != 0) absl::StrAppend(&l, " drift=", f.drift_ppm);
    if (!f.point.empty()) absl::StrAppend(&l, " point=", quote(f.point));
    if (f.loss) absl::StrAppend(&l, " loss=", f.loss);
    if (f.duplicate) absl::StrAppend(&l, " duplicate=", f.duplicate);
    if (f.replay) absl::StrAppend(&l, " replay=", f.replay);
    if (f.error) absl::StrAppend(&l, " error=", f.error);
    if (f.timeout) absl::StrAppend(&l, " timeout=", f.timeout);
    if (!f.job.empty()) absl::StrAppend(&l, " job=", quote(f.job));
    if (!f.record.empty()) absl::StrAppend(&l, " record=", f.record);
    if (f.drain_timeout) absl::StrAppend(&l, " drain-timeout=", format_duration(*f.drain_timeout));
    put(out, l);
  }
}

absl::Status parse_reads(ParseState& p) {
  Attrs a = p.attrs(1);
  ReadSpec& r = p.s.reads;
  a.dur("every", &r.every);
  a.num("page", &r.page, 1, 1000, "a page size");
  KAIROS_RETURN_IF_ERROR(a.finish());
  if (r.every < absl::Milliseconds(100) || r.every > absl::Hours(24))
    return p.error("reads: every: expected a duration in [100ms, 24h]");
  return absl::OkStatus();
}
void format_reads(const Scenario& s, std::string& out) {
  if (s.reads.every == absl::ZeroDuration()) return;
  put(out, "reads every=", format_duration(s.reads.every), " page=", s.reads.page);
}

// The client's boundary inputs and filtered/bounded queries (`inputs`,
// `queries`; sim/scenario/workload.h, "Inputs" and "Queries").
absl::Status parse_inputs(ParseState& p) {
  Attrs a = p.attrs(1);
  a.dur("every", &p.s.inputs.every);
  KAIROS_RETURN_IF_ERROR(a.finish());
  if (p.s.inputs.every < absl::Milliseconds(100) || p.s.inputs.every > absl::Hours(24))
    return p.error("inputs: every: expected a duration in [100ms, 24h]");
  return absl::OkStatus();
}
void format_inputs(const Scenario& s, std::string& out) {
  if (s.inputs.every == absl::ZeroDuration()) return;
  put(out, "inputs every=", format_duration(s.inputs.every));
}
absl::Status parse_queries(ParseState& p) {
  Attrs a = p.attrs(1);
  QuerySpec& q = p.s.queries;
  a.dur("every", &q.every);
  a.num("page", &q.page, 1, 1000, "a page size");
  KAIROS_RETURN_IF_ERROR(a.finish());
  if (q.every < absl::Milliseconds(100) || q.every > absl::Hours(24))
    return p.error("queries: every: expected a duration in [100ms, 24h]");
  return absl::OkStatus();
}
void format_queries(const Scenario& s, std::string& out) {
  if (s.queries.every == absl::ZeroDuration()) return;
  put(out, "queries every=", format_duration(s.queries.every), " page=", s.queries.page);
}

// The client's batches and in-place updates (`batches`, `updates`;
// sim/scenario/workload.h, "Batches" and "Updates").
absl::Status parse_batches(ParseState& p) {
  Attrs a = p.attrs(1);
  a.dur("every", &p.s.batches.every);
  KAIROS_RETURN_IF_ERROR(a.finish());
  if (p.s.batches.every < absl::Milliseconds(100) || p.s.batches.every > absl::Hours(24))
    return p.error("batches: every: expected a duration in [100ms, 24h]");
  return absl::OkStatus();
}
void format_batches(const Scenario& s, std::string& out) {
  if (s.batches.every == absl::ZeroDuration()) return;
  put(out, "batches every=", format_duration(s.batches.every));
}
absl::Status parse_updates(ParseState& p) {
  Attrs a = p.attrs(1);
  a.dur("every", &p.s.updates.every);
  KAIROS_RETURN_IF_ERROR(a.finish());
  if (p.s.updates.every < absl::Seconds(1) || p.s.updates.every > absl::Hours(24))
    return p.error("updates: every: expected a duration in [1s, 24h]");
  return absl::OkStatus();
}
void format_updates(const Scenario& s, std::string& out) {
  if (s.updates.every == absl::ZeroDuration()) return;
  put(out, "updates every=", format_duration(s.updates.every));
}

absl::Status parse_swarm(ParseState& p) {
  Attrs a = p.attrs(1);
  RandomFaults& rf = p.s.random_faults;
  a.num("per-hour", &rf.per_hour, 0, 100000, "a count");
  a.range("for", &rf.min_length, &rf.max_length);
  const bool jumps_last = a.has("jumps-last");
  a.dur("jumps-last", &rf.jump_length);
  std::string kinds;
  a.str("kinds", &kinds);
  KAIROS_RETURN_IF_ERROR(a.finish());
  if (jumps_last && rf.jump_length <= absl::ZeroDuration())
    return a.err("jumps-last: expected a positive duration (leave it out: until the heal)");
  for (absl::string_view k : absl::StrSplit(kinds, ',', absl::SkipEmpty())) {
    FaultKind fk;
    if (!parse_fault_kind(std_sv(k), &fk))
      return a.err(absl::StrCat("kinds: unknown fault kind \"", k, "\""));
    if (fk == FaultKind::kCorruptRecord)
      return a.err("kinds: corrupt-record names its job: use a fault line");
    if (fk == FaultKind::kLeave || fk == FaultKind::kDrain || fk == FaultKind::kStop)
      return a.err(absl::StrCat("kinds: ", absl_sv(to_string(fk)),
                                " is a planned stop, not a swarm fault: use a fault line"));
    rf.kinds.push_back(fk);
  }
  return absl::OkStatus();
}
void format_swarm(const Scenario& s, std::string& out) {
  const RandomFaults& rf = s.random_faults;
  if (rf.per_hour == 0 && rf.kinds.empty()) return;
  std::vector<std::string> kinds;
  for (FaultKind k : rf.kinds) kinds.emplace_back(to_string(k));
  std::string jumps;
  if (rf.jump_length > absl::ZeroDuration())
    jumps = absl::StrCat(" jumps-last=", format_duration(rf.jump_length));
  put(out, "swarm per-hour=", rf.per_hour, " for=", range_text(rf.min_length, rf.max_length), jumps,
      " kinds=", absl::StrJoin(kinds, ","));
}

absl::Status parse_ignore(ParseState& p) {
  KAIROS_RETURN_IF_ERROR(p.want_words(1, "an invariant name"));
  for (std::size_t i = 1; i < p.line.words.size(); ++i) p.s.ignored.push_back(p.line.words[i]);
  return absl::OkStatus();
}
void format_ignore(const Scenario& s, std::string& out) {
  for (const auto& i : s.ignored) put(out, "ignore ", i);
}

// expect FACT OP N [job=K]
absl::Status parse_expect(ParseState& p) {
  constexpr std::string_view kForm =
      "expected FACT OP NUMBER [job=K], e.g. \"expect kernel.clock-skew-fenced >= 1\"";
  if (p.line.words.size() < 4) return p.error(absl::StrCat("expect: ", absl_sv(kForm)));
  Expectation e;
  e.fact = p.line.words[1];
  const FactKind kind = fact_kind(e.fact);
  if (kind == FactKind::kUnknown)
    return p.error(absl::StrCat("expect: unknown fact \"", e.fact,
                                "\"; expected a coverage mark (kairos-sim --list-marks), "
                                "fault.KIND, or one of ",
                                run_counter_names()));
  if (!parse_expectation_op(p.line.words[2], &e.op))
    return p.error(absl::StrCat("expect: ", e.fact,
                                ": expected a comparison ==, !=, <, <=, > or >=, got \"",
                                p.line.words[2], "\""));
  if (!absl::SimpleAtoi(p.line.words[3], &e.value) || p.line.words[3].empty() ||
      p.line.words[3][0] == '+')
    return p.error(absl::StrCat("expect: ", e.fact, ": expected a non-negative integer, got \"",
                                p.line.words[3], "\""));
  Attrs a = p.attrs(4);
  a.num("job", &e.job, 1, 1000, "a job line number (1-based)");
  KAIROS_RETURN_IF_ERROR(a.finish());
  if (e.job != 0 && kind != FactKind::kRunCounter)
    return p.error(absl::StrCat("expect: ", e.fact,
                                ": job= scopes run counters (runs.*, ledger.*) only, not a "
                                "coverage mark"));
  p.s.expectations.push_back(std::move(e));
  p.expect_lines.push_back(p.number());
  return absl::OkStatus();
}
void format_expect(const Scenario& s, std::string& out) {
  for (const auto& e : s.expectations) put(out, expectation_text(e));
}

// --- The table ---------------------------------------------------------------

// One directive of the language: its keyword(s), whether it may appear at
// most once, how a line of it is read into the Scenario, how the Scenario's
// part is written back (zero or more canonical lines), and a sample of that
// canonical text (one line per keyword) the round-trip test reads back.
// format_scenario() writes the entries in this order.
struct Directive {
  std::array<std::string_view, 3> keywords;  // unused slots are empty
  bool once;
  absl::Status (*parse)(ParseState&);
  void (*format)(const Scenario&, std::string&);
  std::string_view sample;
};

constexpr Directive kDirectives[] = {
    {{"name"}, true, parse_name, format_name, "name sample-1.x_y\n"},
    {{"description"},
     true,
     parse_description,
     format_description,
     "description A worker pauses past its lease.\n"},
    {{"start"}, true, parse_start, format_start, "start 2026-03-08T01:30:00+00:00\n"},
    {{"duration"}, true, parse_run_duration, format_run_duration, "duration 2h30m\n"},
    {{"quiet-tail"}, true, parse_quiet_tail, format_quiet_tail, "quiet-tail 10m\n"},
    {{"topology"},
     true,
     parse_topology,
     format_topology,
     "topology schedulers=2 workers=8 shards=16 slots=4\n"},
    {{"timing"},
     true,
     parse_timing,
     format_timing,
     "timing poll=500ms lease=20s job-timeout=1m max-attempts=5 quantum=250ms\n"},
    {{"kernel-policy"},
     true,
     parse_kernel_policy,
     format_kernel_policy,
     "kernel-policy ledger-keep=5 ledger-max-age=10m prune-budget=2 misfire-chunk=1001 "
     "dispatch-batch=3 reap-batch=2\n"},
    {{"network"},
     true,
     parse_network,
     format_network,
     "network delay=1ms..5ms slow=3 slow-max=2s loss=2 duplicate=1 replay=4\n"},
    {{"store"},
     true,
     parse_store,
     format_store,
     "store sync=2ms service=0s..1ms timeout=1s connect-timeout=3s record-writes=yes\n"},
    {{"sink"}, true, parse_sink, format_sink, "sink error=5 timeout=6 wait=2s\n"},
    {{"runner"},
     true,
     parse_runner,
     format_runner,
     "runner duration=100ms..20s tail=7 tail-max=1m fail=10 permanent-fail=2 hang=1\n"},
    {{"clock"},
     false,
     parse_clock,
     format_clock,
     "clock worker-2 offset=-2s drift=150\nclock scheduler-1 offset=1s500ms drift=0\n"},
    {{"job"},
     false,
     parse_job,
     format_job,
     "job cron count=10 expr=\"*/5 * * * *\" zone=Europe/Berlin misfire=catch-up "
     "catch-up-max=5 priority=2..8 attempts=4 run=1s..3s fail=100\n"
     "job once count=100 within=1h\n"
     "job interval count=5 every=1m30s overlap=queue retry=2s..1m jitter=30 timeout=45s "
     "permanent-fail=5\n"},
    {{"cancel"},
     false,
     parse_cancel,
     format_cancel,
     "cancel count=2 at=30m\ncancel count=1 at=40m recreate=30s\n"},
    {{"pause", "reschedule", "trigger"},
     false,
     parse_control,
     format_control,
     "pause at=10m count=2 for=5m\n"
     "reschedule at=20m count=1 every=2m\n"
     "trigger at=25m count=3\n"
     "trigger at=26m count=1 repeat=5 spacing=10ms force=yes\n"
     "reschedule at=30m count=1 expr=\"0 * * * *\" zone=UTC\n"},
    {{"reads"}, true, parse_reads, format_reads, "reads every=5s page=3\n"},
    {{"inputs"}, true, parse_inputs, format_inputs, "inputs every=20s\n"},
    {{"queries"}, true, parse_queries, format_queries, "queries every=4s page=2\n"},
    {{"batches"}, true, parse_batches, format_batches, "batches every=6s\n"},
    {{"updates"}, true, parse_updates, format_updates, "updates every=40s\n"},
    {{"fault"},
     false,
     parse_fault,
     format_fault,
     "fault pause at=5m node=worker-1 for=40s\n"
     "fault partition at=10m node=scheduler-1 for=30s peer=store\n"
     "fault clock-jump at=15m node=any amount=-3s\n"
     "fault net at=20m node=any for=1m loss=100 duplicate=50 replay=10\n"
     "fault crash-at at=25m node=leader point=dispatch.after-commit\n"},
    {{"swarm"},
     true,
     parse_swarm,
     format_swarm,
     "swarm per-hour=6 for=1s..30s jumps-last=5m kinds=pause,crash,net,clock-jump\n"},
    {{"ignore"}, false, parse_ignore, format_ignore, "ignore timeliness\nignore not-before-due\n"},
    {{"expect"},
     false,
     parse_expect,
     format_expect,
     "expect kernel.clock-skew-fenced >= 1\nexpect ledger.late == 3\nexpect runs.failed < 5\n"},
};

const Directive* find_directive(std::string_view keyword) {
  for (const Directive& d : kDirectives)
    for (std::string_view k : d.keywords)
      if (!k.empty() && k == keyword) return &d;
  return nullptr;
}

// "name, description, ..., ignore": every keyword, in table order.
std::string keyword_list() {
  std::vector<std::string> all;
  for (const Directive& d : kDirectives)
    for (std::string_view k : d.keywords)
      if (!k.empty()) all.emplace_back(k);
  return absl::StrJoin(all, ", ");
}

}  // namespace

absl::StatusOr<Scenario> parse_scenario(std::string_view text, std::string_view filename) {
  Parser parser(filename);
  Scenario s;
  std::set<std::string> seen_once;
  std::vector<std::pair<int, std::string>> selectors;
  std::vector<int> job_lines, control_lines, expect_lines, cancel_lines;
  int number = 0;
  for (absl::string_view raw : absl::StrSplit(absl_sv(text), '\n')) {
    ++number;
    KAIROS_ASSIGN_OR_RETURN(Line line, parser.split(number, std_sv(raw)));
    if (line.words.empty()) continue;
    const std::string& d = line.words[0];
    const Directive* directive = find_directive(d);
    if (directive == nullptr)
      return parser.error(
          number, absl::StrCat("unknown directive \"", d, "\"; expected one of ", keyword_list()));
    if (directive->once && !seen_once.insert(d).second)
      return parser.error(number, absl::StrCat(d, ": given twice"));
    ParseState state{parser,        line,         d,           s, selectors, job_lines,
                     control_lines, expect_lines, cancel_lines};
    KAIROS_RETURN_IF_ERROR(directive->parse(state));
  }
  for (const auto& [line, sel] : selectors)
    if (!valid_selector(sel, s.topology))
      return parser.error(line, absl::StrCat("unknown node \"", sel,
                                             "\"; expected scheduler-K, worker-K (within the "
                                             "topology), store, sink, client, any, any-worker, "
                                             "any-scheduler or leader"));
  if (s.quiet_tail > s.duration)
    return parser.error(number, "quiet-tail: must not exceed the duration");
  // The queries' model keeps each job's namespace and labels as created;
  // updates change them.
  if (s.updates.every != absl::ZeroDuration() && s.queries.every != absl::ZeroDuration())
    return parser.error(number,
                        "updates: cannot be combined with queries (updates change the labels "
                        "and namespace the queries' model keeps from the creation)");
  for (std::size_t i = 0; i < s.jobs.size(); ++i)
    KAIROS_RETURN_IF_ERROR(check_job_line(parser, job_lines[i], s.jobs[i], s.timing, s.start));
  for (std::size_t i = 0; i < s.controls.size(); ++i) {
    const ControlSpec& c = s.controls[i];
    if (c.job == 0) continue;
    const std::string what = absl::StrCat(absl_sv(to_string(c.op)), ": job: ");
    if (c.job > s.jobs.size())
      return parser.error(control_lines[i], absl::StrCat(what, "the file has ", s.jobs.size(),
                                                         " job lines, no job line ", c.job));
    if (!s.jobs[c.job - 1].recurring())
      return parser.error(control_lines[i],
                          absl::StrCat(what, "job line ", c.job,
                                       " is a one-off; expected a cron or interval job line"));
  }
  for (std::size_t i = 0; i < s.cancels.size(); ++i) {
    const CancelSpec& c = s.cancels[i];
    if (c.job == 0) continue;
    if (c.job > s.jobs.size())
      return parser.error(cancel_lines[i], absl::StrCat("cancel: job: the file has ", s.jobs.size(),
                                                        " job lines, no job line ", c.job));
    if (!s.jobs[c.job - 1].recurring())
      return parser.error(cancel_lines[i],
                          absl::StrCat("cancel: job: job line ", c.job,
                                       " is a one-off; expected a cron or interval job line"));
  }
  for (std::size_t i = 0; i < s.expectations.size(); ++i)
    if (s.expectations[i].job > s.jobs.size())
      return parser.error(
          expect_lines[i],
          absl::StrCat("expect: ", s.expectations[i].fact, ": job: the file has ", s.jobs.size(),
                       " job lines, no job line ", s.expectations[i].job));
  return s;
}

absl::StatusOr<Scenario> load_scenario(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open the scenario file"));
  std::stringstream buf;
  buf << in.rdbuf();
  return parse_scenario(buf.str(), path);
}

std::string format_scenario(const Scenario& s) {
  std::string out;
  for (const Directive& d : kDirectives) d.format(s, out);
  return out;
}

kairos::PolicyOptions policy_options(const KernelPolicy& k, kairos::PolicyOptions defaults) {
  defaults.ledger_keep = k.ledger_keep;
  defaults.ledger_max_age = k.ledger_max_age;
  defaults.prune_budget = k.prune_budget;
  defaults.misfire_chunk = k.misfire_chunk;
  return defaults;
}

std::vector<ScenarioDirective> scenario_directives() {
  std::vector<ScenarioDirective> out;
  for (const Directive& d : kDirectives) {
    ScenarioDirective x;
    for (std::string_view k : d.keywords)
      if (!k.empty()) x.keywords.push_back(k);
    x.sample = d.sample;
    out.push_back(std::move(x));
  }
  return out;
}

}  // namespace kairos::sim
