// Hand-made histories for checker tests: commits of run, leader and ledger
// records written as the store service records them (FactRecorder), and the
// History the checker reads.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/kernel/keyspace.h"
#include "core/kernel/records.h"
#include "sim/oracle/checker.h"
#include "sim/oracle/history.h"

namespace kairos::sim::testing {

struct Hist {
  std::vector<SinkAttempt> sink;
  std::vector<StoreCommit> commits;
  FactRecorder facts;
  std::vector<NodeEvent> events;
  std::vector<Occurrence> expected;
  std::vector<CancelAck> cancels;
  std::vector<FaultWindow> faults;
  std::vector<ClientJob> jobs;
  std::vector<std::string> names{"store", "scheduler-1", "scheduler-2"};
  absl::Time t0 = absl::FromUnixSeconds(1767225600);

  // One commit at t0 + `at` by `client` writing `ops`.
  void commit_ops(absl::Duration at, NodeId client, const std::vector<WriteOp>& ops) {
    StoreCommit c;
    c.index = commits.size();
    c.at = c.store_time = t0 + at;
    c.client = client;
    c.state = StoreCommit::State::kDurable;
    facts.observe(c, ops);
    commits.push_back(c);
  }
  // One commit at t0 + `at` writing `run` (and optionally a leader record).
  void commit(absl::Duration at, NodeId client, std::optional<RunRecord> run,
              std::optional<std::pair<std::uint32_t, LeaderRecord>> leader = {}) {
    std::vector<WriteOp> ops;
    if (run) ops.push_back(put(*run));
    if (leader)
      ops.push_back({WriteOp::Kind::kPut, keys::leader(leader->first), encode(leader->second)});
    commit_ops(at, client, ops);
  }
  static WriteOp put(const RunRecord& run) {
    return {WriteOp::Kind::kPut, keys::run(run.id), encode(run)};
  }
  static WriteOp put(const std::string& job, const LedgerRecord& l) {
    return {WriteOp::Kind::kPut, keys::ledger(job, l.nominal, l.incarnation), encode(l)};
  }
  History history() const {
    History h;
    h.start = t0;
    h.end = t0 + absl::Hours(1);
    h.quiet_tail = absl::Minutes(10);
    h.sink = &sink;
    h.commits = &commits;
    h.events = &events;
    h.facts = &facts;
    h.node_names = &names;
    h.expected = &expected;
    h.cancels = &cancels;
    h.jobs = &jobs;
    h.faults = &faults;
    h.bounds.start = absl::Seconds(3);
    h.bounds.done = absl::Minutes(1);
    return h;
  }
};

inline std::set<std::string> violated(const History& h) {
  std::set<std::string> names;
  for (const auto& v : Checker::with_defaults().run(h, {}).violations) names.insert(v.invariant);
  return names;
}

}  // namespace kairos::sim::testing
