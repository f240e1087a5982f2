// Hand-made histories for checker tests: commits of run, leader and ledger
// records written as the store service records them (sim::FactRecorder), and the
// sim::History the checker reads.
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

namespace kairos::test_support {

// `r` leased to worker-1 under `token` at `now` for 30s, with its attempt
// record (the grant the checker's tests start from).
inline RunRecord granted(RunRecord r, std::uint64_t token, absl::Time now) {
  r.state = RunState::kLeased;
  r.token = token;
  r.owner = "worker-1";
  r.lease_expiry = now + absl::Seconds(30);
  AttemptRecord a;
  a.attempt = r.attempt;
  a.token = token;
  a.worker = r.owner;
  a.claimed_at = now;
  r.attempts.push_back(a);
  return r;
}

struct Hist {
  std::vector<sim::SinkAttempt> sink;
  std::vector<sim::StoreCommit> commits;
  sim::FactRecorder facts;
  std::vector<sim::NodeEvent> events;
  std::vector<sim::Occurrence> expected;
  std::vector<sim::CancelAck> cancels;
  std::vector<sim::FaultWindow> faults;
  std::vector<sim::ClientJob> jobs;
  std::vector<std::string> names{"store", "scheduler-1", "scheduler-2"};
  absl::Time t0 = absl::FromUnixSeconds(1767225600);

  // One commit at t0 + `at` by `client` writing `ops`.
  void commit_ops(absl::Duration at, sim::NodeId client, const std::vector<sim::WriteOp>& ops) {
    sim::StoreCommit c;
    c.index = commits.size();
    c.at = c.store_time = t0 + at;
    c.client = client;
    c.state = sim::StoreCommit::State::kDurable;
    facts.observe(c, ops);
    commits.push_back(c);
  }
  // One commit at t0 + `at` writing `run` (and optionally a leader record).
  void commit(absl::Duration at, sim::NodeId client, std::optional<RunRecord> run,
              std::optional<std::pair<std::uint32_t, LeaderRecord>> leader = {}) {
    std::vector<sim::WriteOp> ops;
    if (run) ops.push_back(put(*run));
    if (leader)
      ops.push_back(
          {sim::WriteOp::Kind::kPut, keys::leader(leader->first), encode(leader->second)});
    commit_ops(at, client, ops);
  }
  static sim::WriteOp put(const RunRecord& run) {
    return {sim::WriteOp::Kind::kPut, keys::run(run.id), encode(run)};
  }
  static sim::WriteOp put(const std::string& job, const LedgerRecord& l) {
    return {sim::WriteOp::Kind::kPut, keys::ledger(job, l.nominal, l.incarnation), encode(l)};
  }
  sim::History history() const {
    sim::History h;
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

inline std::set<std::string> violated(const sim::History& h) {
  std::set<std::string> names;
  for (const auto& v : sim::Checker::with_defaults().run(h, {}).violations)
    names.insert(v.invariant);
  return names;
}

}  // namespace kairos::test_support
