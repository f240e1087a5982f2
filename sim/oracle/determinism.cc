#include "sim/oracle/determinism.h"

#include <fstream>
#include <vector>

#include "absl/strings/str_cat.h"

namespace kairos::sim {

namespace {
struct Captured {
  std::uint64_t hash = 0;
  std::vector<std::uint64_t> checkpoints;
  std::vector<std::string> lines;
};

Captured run_once(const std::function<std::unique_ptr<Cluster>()>& make, std::uint64_t from,
                  std::uint64_t to) {
  Captured c;
  auto cluster = make();
  World& w = cluster->world();
  w.set_checkpoint_interval(kCheckpointEvery);
  if (to > from) {
    w.set_trace_writer([&c, &w, from, to](std::string_view line) {
      const std::uint64_t r = w.records() + 1;  // the record being written
      if (r > from && r <= to) c.lines.emplace_back(line);
    });
  }
  cluster->run();
  c.hash = w.trace_hash();
  c.checkpoints = w.checkpoints();
  return c;
}
}  // namespace

Divergence check_determinism(const std::function<std::unique_ptr<Cluster>()>& make) {
  Divergence d;
  Captured a = run_once(make, 0, 0), b = run_once(make, 0, 0);
  d.hash_a = a.hash;
  d.hash_b = b.hash;
  if (a.hash == b.hash && a.checkpoints == b.checkpoints) return d;
  d.diverged = true;
  std::size_t k = 0;
  while (k < a.checkpoints.size() && k < b.checkpoints.size() &&
         a.checkpoints[k] == b.checkpoints[k])
    ++k;
  const std::uint64_t from = k * kCheckpointEvery, to = from + kCheckpointEvery;
  Captured la = run_once(make, from, to), lb = run_once(make, from, to);
  for (std::size_t i = 0; i < std::max(la.lines.size(), lb.lines.size()); ++i) {
    const std::string x = i < la.lines.size() ? la.lines[i] : "<end of trace>";
    const std::string y = i < lb.lines.size() ? lb.lines[i] : "<end of trace>";
    if (x != y) {
      d.record = from + i + 1;
      d.line_a = x;
      d.line_b = y;
      break;
    }
  }
  return d;
}

absl::StatusOr<Divergence> compare_trace_files(const std::string& pa, const std::string& pb) {
  std::ifstream a(pa), b(pb);
  if (!a) return absl::NotFoundError(absl::StrCat(pa, ": cannot open"));
  if (!b) return absl::NotFoundError(absl::StrCat(pb, ": cannot open"));
  Divergence d;
  std::string x, y;
  for (std::uint64_t n = 1;; ++n) {
    const bool ga = static_cast<bool>(std::getline(a, x));
    const bool gb = static_cast<bool>(std::getline(b, y));
    if (!ga && !gb) return d;
    if (!ga) x = "<end of trace>";
    if (!gb) y = "<end of trace>";
    if (x != y) {
      d.diverged = true;
      d.record = n;
      d.line_a = x;
      d.line_b = y;
      return d;
    }
  }
}

}  // namespace kairos::sim
