// kairos-sim: the deterministic simulator's command line.
//
//   kairos-sim --scenario FILE [--seed N | --seeds A..B] [--trace FILE]
//   kairos-sim --swarm --runs N [--seed FIRST] [--scenario BASE]
//   kairos-sim --inject-bug NAME ...      plant a known bug (see --list-bugs)
//   kairos-sim --check-determinism ...    run each seed twice, compare traces
//   kairos-sim --compare-traces A B       name the first differing record
//   kairos-sim --emit-scenario FILE ...   write the (first) run's scenario
//   kairos-sim --list-bugs | --list-scenarios [--scenario-dir DIR] | --list-marks
//   kairos-sim --list-invariants           every invariant: name and what must hold
//   --stop-on-failure                     stop the batch at the first failing run
//   --coverage                            print the coverage marks the batch hit
//   --require-marks                       fail the batch if a required mark was never hit
//
// Exit status: 0 every run passed; 1 a violation (or, with --require-marks, a
// coverage mark never hit); 2 bad usage or a bad scenario file; 3 a
// determinism check failed.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/base/absl_compat.h"
#include "core/kernel/planted_bugs.h"
#include "sim/oracle/determinism.h"
#include "sim/oracle/invariant_names.h"
#include "sim/scenario/scenario.h"
#include "sim/world/cluster.h"
#include "sim/world/fault_plan.h"

namespace {

using namespace kairos;
using namespace kairos::sim;

struct Options {
  std::string scenario_file;
  std::string scenario_dir = "scenarios";
  std::uint64_t first_seed = 1, last_seed = 1;
  bool seed_given = false, seeds_given = false;
  bool swarm = false;
  std::uint64_t runs = 0;
  std::string trace_file;
  std::vector<std::string> bugs;
  bool list_bugs = false, list_scenarios = false, check_determinism = false;
  bool list_invariants = false;
  bool list_marks = false, stop_on_failure = false, coverage = false, require_marks = false;
  std::string emit_file;
  std::vector<std::string> compare;
};

constexpr const char* kUsage =
    "usage: kairos-sim [options]\n"
    "\n"
    "  --scenario FILE         run the scenario in FILE\n"
    "  --seed N | --seeds A..B seed(s) to run (default 1)\n"
    "  --swarm --runs N        N runs with random fault mixes (first seed: --seed)\n"
    "  --trace FILE            write the event trace of the (first) run\n"
    "  --inject-bug NAME       plant a known bug in the core (see --list-bugs)\n"
    "  --check-determinism     run each seed twice and compare trace hashes\n"
    "  --compare-traces A B    name the first differing record of two traces\n"
    "  --emit-scenario FILE    write the (first) run's scenario to FILE\n"
    "  --list-bugs | --list-scenarios [--scenario-dir DIR] | --list-marks\n"
    "  --list-invariants       every invariant the checker judges, with its rule\n"
    "  --stop-on-failure       stop a batch at the first failing run\n"
    "  --coverage              print the coverage marks the batch hit\n"
    "  --require-marks         fail the batch if a required mark was never hit\n"
    "  --help                  show this text\n"
    "\n"
    "Exit status: 0 every run passed; 1 a violation (or a required mark never\n"
    "hit); 2 bad usage or a bad scenario file; 3 a determinism check failed.\n"
    "The scenario format and the invariants: docs/SIMULATION.md.\n";

// parse_args() result meaning "done, exit 0" (after --help).
constexpr int kExitOk = -1;

int usage_error(const std::string& msg) {
  std::fprintf(stderr, "kairos-sim: %s\n\n%s", msg.c_str(), kUsage);
  return 2;
}

bool parse_u64(const std::string& s, std::uint64_t* out) { return absl::SimpleAtoi(s, out); }

// Returns 0 on success, else the exit code.
int parse_args(int argc, char** argv, Options& o) {
  const std::map<std::string, bool> takes_value = {
      {"--scenario", true},       {"--seed", true},           {"--seeds", true},
      {"--swarm", false},         {"--runs", true},           {"--trace", true},
      {"--inject-bug", true},     {"--list-bugs", false},     {"--list-scenarios", false},
      {"--emit-scenario", true},  {"--scenario-dir", true},   {"--check-determinism", false},
      {"--compare-traces", true}, {"--list-marks", false},    {"--stop-on-failure", false},
      {"--coverage", false},      {"--require-marks", false}, {"--list-invariants", false}};
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i], value;
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      return kExitOk;
    }
    bool has_inline = false;
    if (const auto eq = flag.find('='); eq != std::string::npos && flag.rfind("--", 0) == 0) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
      has_inline = true;
    }
    auto it = takes_value.find(flag);
    if (it == takes_value.end()) return usage_error(absl::StrCat("unknown flag ", flag));
    if (it->second && !has_inline) {
      if (i + 1 >= argc) return usage_error(absl::StrCat(flag, ": missing value"));
      value = argv[++i];
    } else if (!it->second && has_inline) {
      return usage_error(absl::StrCat(flag, ": takes no value"));
    }
    if (flag == "--scenario")
      o.scenario_file = value;
    else if (flag == "--scenario-dir")
      o.scenario_dir = value;
    else if (flag == "--seed") {
      if (!parse_u64(value, &o.first_seed)) return usage_error("--seed: expected an integer");
      o.last_seed = o.first_seed;
      o.seed_given = true;
    } else if (flag == "--seeds") {
      const auto dots = value.find("..");
      if (dots == std::string::npos || !parse_u64(value.substr(0, dots), &o.first_seed) ||
          !parse_u64(value.substr(dots + 2), &o.last_seed) || o.first_seed > o.last_seed)
        return usage_error("--seeds: expected A..B with A <= B");
      o.seeds_given = true;
    } else if (flag == "--swarm")
      o.swarm = true;
    else if (flag == "--runs") {
      if (!parse_u64(value, &o.runs) || o.runs == 0)
        return usage_error("--runs: expected a positive integer");
    } else if (flag == "--trace")
      o.trace_file = value;
    else if (flag == "--inject-bug")
      o.bugs.push_back(value);
    else if (flag == "--list-bugs")
      o.list_bugs = true;
    else if (flag == "--list-scenarios")
      o.list_scenarios = true;
    else if (flag == "--list-marks")
      o.list_marks = true;
    else if (flag == "--list-invariants")
      o.list_invariants = true;
    else if (flag == "--stop-on-failure")
      o.stop_on_failure = true;
    else if (flag == "--coverage")
      o.coverage = true;
    else if (flag == "--require-marks")
      o.require_marks = true;
    else if (flag == "--emit-scenario")
      o.emit_file = value;
    else if (flag == "--check-determinism")
      o.check_determinism = true;
    else if (flag == "--compare-traces") {
      o.compare.push_back(value);
      if (i + 1 >= argc) return usage_error("--compare-traces: expected two files");
      o.compare.push_back(argv[++i]);
    }
  }
  if (o.seed_given && o.seeds_given) return usage_error("--seed and --seeds are exclusive");
  if (o.runs != 0 && !o.swarm) return usage_error("--runs needs --swarm");
  if (o.swarm && o.seeds_given) return usage_error("--swarm takes --runs N (and --seed FIRST)");
  return 0;
}

std::string replay_command(const Options& o, std::uint64_t seed) {
  std::string cmd = "kairos-sim";
  if (!o.scenario_file.empty()) absl::StrAppend(&cmd, " --scenario ", o.scenario_file);
  if (o.swarm) absl::StrAppend(&cmd, " --swarm --runs 1");
  absl::StrAppend(&cmd, " --seed ", seed);
  for (const auto& b : o.bugs) absl::StrAppend(&cmd, " --inject-bug ", b);
  return cmd;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (int rc = parse_args(argc, argv, o); rc != 0) return rc == kExitOk ? 0 : rc;

  if (o.list_marks) {
    for (auto name : kRequiredMarks)
      std::printf("%.*s\n", static_cast<int>(name.size()), name.data());
    return 0;
  }
  if (o.list_invariants) {
    for (const InvariantInfo& i : kInvariants)
      std::printf("%-28.*s %.*s\n", static_cast<int>(i.name.size()), i.name.data(),
                  static_cast<int>(i.description.size()), i.description.data());
    return 0;
  }
  if (o.list_bugs) {
    for (auto name : kPlantedBugNames)
      std::printf("%.*s\n", static_cast<int>(name.size()), name.data());
    return 0;
  }
  if (o.list_scenarios) {
    std::error_code ec;
    std::vector<std::string> files;
    for (const auto& e : std::filesystem::recursive_directory_iterator(o.scenario_dir, ec))
      if (e.path().extension() == ".scenario") files.push_back(e.path().string());
    if (ec) return usage_error(absl::StrCat(o.scenario_dir, ": ", ec.message()));
    std::sort(files.begin(), files.end());
    int rc = 0;
    for (const auto& f : files) {
      auto s = load_scenario(f);
      if (!s.ok()) {
        std::fprintf(stderr, "%s\n", std::string(s.status().message()).c_str());
        rc = 2;
        continue;
      }
      std::printf("%-40s %s\n", f.c_str(), s->description.c_str());
    }
    return rc;
  }
  if (!o.compare.empty()) {
    auto d = compare_trace_files(o.compare[0], o.compare[1]);
    if (!d.ok()) return usage_error(std::string(d.status().message()));
    if (!d->diverged) {
      std::printf("traces identical\n");
      return 0;
    }
    std::printf("first divergent record %llu\n  A: %s\n  B: %s\n",
                static_cast<unsigned long long>(d->record), d->line_a.c_str(), d->line_b.c_str());
    return 3;
  }

  PlantedBugs bugs;
  for (const auto& b : o.bugs)
    if (!set_planted_bug(bugs, b))
      return usage_error(absl::StrCat("--inject-bug: unknown bug \"", b, "\" (see --list-bugs)"));

  Scenario base;
  if (!o.scenario_file.empty()) {
    auto s = load_scenario(o.scenario_file);
    if (!s.ok()) {
      std::fprintf(stderr, "kairos-sim: %s\n", std::string(s.status().message()).c_str());
      return 2;
    }
    base = *s;
    if (auto v = Cluster::validate(base); !v.ok()) {
      std::fprintf(stderr, "kairos-sim: %s: %s\n", o.scenario_file.c_str(),
                   std::string(v.message()).c_str());
      return 2;
    }
  } else if (o.swarm) {
    base = default_swarm_base();  // sim/world/fault_plan.h
  } else {
    return usage_error("nothing to run: give --scenario FILE or --swarm");
  }

  std::vector<std::pair<std::uint64_t, Scenario>> runs;
  if (o.swarm) {
    const std::uint64_t n = o.runs == 0 ? 1 : o.runs;
    for (std::uint64_t i = 0; i < n; ++i) {
      Random r(o.first_seed + i);
      runs.emplace_back(o.first_seed + i, swarm_scenario(base, r));
    }
  } else {
    for (std::uint64_t seed = o.first_seed; seed <= o.last_seed; ++seed)
      runs.emplace_back(seed, base);
  }
  if (!o.emit_file.empty()) {
    std::ofstream out(o.emit_file);
    out << format_scenario(runs.front().second);
    if (!out) return usage_error(absl::StrCat(o.emit_file, ": cannot write"));
  }

  int rc = 0;
  std::map<std::string, std::uint64_t> marks;
  std::uint64_t passed = 0, failed = 0;
  for (const auto& [seed, scenario] : runs) {
    if (o.stop_on_failure && failed != 0) break;
    std::printf("seed=%llu scenario=%s\n", static_cast<unsigned long long>(seed),
                scenario.name.c_str());
    std::fflush(stdout);
    if (o.check_determinism) {
      auto make = [&, seed = seed, &scenario = scenario] {
        return std::make_unique<Cluster>(scenario, seed, bugs);
      };
      Divergence d = check_determinism(make);
      if (d.diverged) {
        std::printf(
            "NONDETERMINISTIC seed=%llu: %016llx vs %016llx; first divergent record %llu\n"
            "  A: %s\n  B: %s\n",
            static_cast<unsigned long long>(seed), static_cast<unsigned long long>(d.hash_a),
            static_cast<unsigned long long>(d.hash_b), static_cast<unsigned long long>(d.record),
            d.line_a.c_str(), d.line_b.c_str());
        rc = 3;
        continue;
      }
      std::printf("deterministic seed=%llu trace=%016llx\n", static_cast<unsigned long long>(seed),
                  static_cast<unsigned long long>(d.hash_a));
    }
    Cluster cluster(scenario, seed, bugs);
    std::unique_ptr<std::ofstream> trace;
    if (!o.trace_file.empty()) {
      const std::string path =
          runs.size() == 1 ? o.trace_file : absl::StrCat(o.trace_file, ".", seed);
      trace = std::make_unique<std::ofstream>(path);
      if (!*trace) return usage_error(absl::StrCat(path, ": cannot write"));
      std::ofstream* t = trace.get();
      cluster.set_trace_writer([t](std::string_view line) { *t << line << '\n'; });
    }
    const RunSummary s = cluster.run();
    std::printf("%s\n", s.line().c_str());
    const auto& report = cluster.report();
    for (const auto& v : report.violations) {
      std::printf("VIOLATION %s job=%s%s%s: %s\n", v.invariant.c_str(), v.job.c_str(),
                  v.run.empty() ? "" : " run=", v.run.c_str(), v.detail.c_str());
      for (const auto& e : v.evidence) std::printf("    %s\n", e.c_str());
    }
    for (const auto& [name, n] : cluster.world().marks()) marks[name] += n;
    if (!s.ok) {
      ++failed;
      std::printf("replay: %s\n", replay_command(o, seed).c_str());
      if (rc == 0) rc = 1;
    } else {
      ++passed;
    }
    std::fflush(stdout);
  }
  if (o.coverage || o.require_marks) {
    for (const auto& [name, n] : marks)
      std::printf("mark %s %llu\n", name.c_str(), static_cast<unsigned long long>(n));
  }
  if (o.require_marks) {
    for (auto name : kRequiredMarks) {
      if (marks.count(std::string(name)) != 0) continue;
      std::printf("COVERAGE mark %.*s was never hit in this batch\n", static_cast<int>(name.size()),
                  name.data());
      if (rc == 0) rc = 1;
    }
  }
  if (runs.size() > 1)
    std::printf("batch: %llu passed, %llu failed\n", static_cast<unsigned long long>(passed),
                static_cast<unsigned long long>(failed));
  return rc;
}
