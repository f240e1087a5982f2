#include "sim/world/sink.h"

#include <utility>

namespace kairos::sim {

std::string_view to_string(SinkOutcome outcome) {
  switch (outcome) {
    case SinkOutcome::kAccepted:
      return "accepted";
    case SinkOutcome::kDuplicate:
      return "duplicate";
    case SinkOutcome::kStaleToken:
      return "stale-token";
    case SinkOutcome::kError:
      return "error";
    case SinkOutcome::kTimeout:
      return "timeout";
  }
  return "?";
}

Sink::Sink(World& world, SimNetwork& network, NodeId node, Random random, SinkConfig config)
    : world_(world), network_(network), node_(node), random_(random), config_(config) {}

SinkOutcome Sink::apply(NodeId from, const SinkWrite& write, bool inject_faults) {
  SinkAttempt a;
  a.index = attempts_.size();
  a.at = world_.now();
  a.from = from;
  a.write = write;
  if (inject_faults && config_.error_permille != 0 &&
      random_.chance(config_.error_permille, 1000)) {
    a.outcome = SinkOutcome::kError;
    attempts_.push_back(std::move(a));
    return SinkOutcome::kError;
  }
  KeyState& k = keys_[write.key];
  if (write.token < k.highest_token) {
    a.outcome = SinkOutcome::kStaleToken;
    world_.mark("sink.stale-token-rejected");
  } else {
    k.highest_token = write.token;
    if (k.has_effect) {
      a.outcome = SinkOutcome::kDuplicate;
      world_.mark("sink.deduplicated");
    } else {
      k.has_effect = true;
      a.outcome = SinkOutcome::kAccepted;
      a.applied = true;
      ++accepted_;
    }
  }
  const SinkOutcome result = a.outcome;
  attempts_.push_back(std::move(a));
  return result;
}

void Sink::write(NodeId from, SinkWrite write, std::function<void(SinkOutcome)> done) {
  const std::uint64_t id = ++next_id_;
  Pending& p = pending_[id];
  p.done = std::move(done);
  p.from = from;
  p.timer = world_.schedule_after(config_.timeout, EventKind::kTimeout, from, id,
                                  [this, id] { finish(id, SinkOutcome::kTimeout); });
  network_.send_call(
      from, node_, EventKind::kSinkCall, id, [this, from, id, write = std::move(write)] {
        if (config_.timeout_permille != 0 && random_.chance(config_.timeout_permille, 1000)) {
          // The reply will be lost; applied or not, 50/50.
          if (random_.chance(1, 2)) {
            apply(from, write, /*inject_faults=*/false);
            world_.mark("sink.timeout-applied");
          } else {
            SinkAttempt a;
            a.index = attempts_.size();
            a.at = world_.now();
            a.from = from;
            a.write = write;
            a.outcome = SinkOutcome::kTimeout;
            attempts_.push_back(std::move(a));
            world_.mark("sink.timeout-not-applied");
          }
          attempts_.back().reply_dropped = true;
          return;
        }
        const SinkOutcome outcome = apply(from, write);
        network_.send_call(node_, from, EventKind::kSinkReply, id,
                           [this, id, outcome] { finish(id, outcome); });
      });
}

void Sink::reset_node(NodeId node) {
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (it->second.from == node) {
      world_.cancel(it->second.timer);
      it = pending_.erase(it);
    } else {
      ++it;
    }
  }
}

void Sink::finish(std::uint64_t id, SinkOutcome outcome) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  auto done = std::move(it->second.done);
  world_.cancel(it->second.timer);
  pending_.erase(it);
  done(outcome);
}

}  // namespace kairos::sim
