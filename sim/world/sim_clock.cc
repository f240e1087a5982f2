#include "sim/world/sim_clock.h"

#include "core/base/check.h"

namespace kairos::sim {

namespace {
constexpr std::int64_t kMillion = 1000000;
__extension__ using int128 = __int128;
}  // namespace

SimClock::SimClock(const World& world, absl::Duration offset, std::int64_t drift_ppm)
    : world_(world),
      anchor_true_ns_(world.now_ns()),
      anchor_local_ns_(world.now_ns() + absl::ToInt64Nanoseconds(offset)),
      ppm_(drift_ppm) {
  KAIROS_CHECK(drift_ppm >= -kMaxDriftPpm && drift_ppm <= kMaxDriftPpm);
}

std::int64_t SimClock::local_ns(std::int64_t true_ns) const {
  const int128 elapsed = static_cast<int128>(true_ns) - anchor_true_ns_;
  const int128 scaled = elapsed * (kMillion + ppm_);
  // Floor division keeps local time monotonic in true time.
  int128 q = scaled / kMillion;
  if (scaled % kMillion != 0 && scaled < 0) --q;
  return anchor_local_ns_ + static_cast<std::int64_t>(q);
}

void SimClock::reanchor() {
  const std::int64_t t = world_.now_ns();
  anchor_local_ns_ = local_ns(t);
  anchor_true_ns_ = t;
}

absl::Duration SimClock::offset() const {
  return absl::Nanoseconds(local_ns(world_.now_ns()) - world_.now_ns());
}

void SimClock::set_offset(absl::Duration offset) { jump(offset - this->offset()); }

void SimClock::jump(absl::Duration d) {
  reanchor();
  anchor_local_ns_ += absl::ToInt64Nanoseconds(d);
}

void SimClock::set_drift_ppm(std::int64_t ppm) {
  KAIROS_CHECK(ppm >= -kMaxDriftPpm && ppm <= kMaxDriftPpm);
  reanchor();
  ppm_ = ppm;
}

absl::Duration SimClock::to_true(absl::Duration local) const {
  if (local <= absl::ZeroDuration()) return absl::ZeroDuration();
  if (local == absl::InfiniteDuration()) return local;
  const int128 n = static_cast<int128>(absl::ToInt64Nanoseconds(local)) * kMillion;
  const int128 d = kMillion + ppm_;
  return absl::Nanoseconds(static_cast<std::int64_t>((n + d - 1) / d));
}

}  // namespace kairos::sim
