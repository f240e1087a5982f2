// write_run, the one owner of run transitions: for each allowed state change
// it writes exactly the index entries the new state needs (ready queue iff
// ready, lease expiry iff leased, open set iff not terminal), deletes those
// the old state had and the new one has not, and refuses an illegal change.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/kernel/keyspace.h"
#include "core/kernel/records.h"
#include "core/kernel/run_lifecycle.h"
#include "core/ports/storage.h"

namespace kairos {
namespace {

using job_store_internal::legal_transition;
using job_store_internal::Legality;
using job_store_internal::run_index_keys;
using job_store_internal::write_counters;
using job_store_internal::write_run;

const absl::Time kT0 = absl::FromUnixSeconds(1'767'225'600);  // 2026-01-01

// A map-backed Txn that logs every write.
class LogTxn final : public Txn {
 public:
  absl::Time now() const override { return kT0; }
  std::optional<std::string> get(std::string_view key) override {
    auto it = kv.find(std::string(key));
    if (it == kv.end()) return std::nullopt;
    return it->second;
  }
  std::vector<KeyValue> scan(std::string_view begin, std::string_view end, std::size_t limit,
                             Direction) override {
    std::vector<KeyValue> out;
    for (auto it = kv.lower_bound(std::string(begin));
         it != kv.end() && (end.empty() || it->first < end) && out.size() < limit; ++it)
      out.push_back({it->first, it->second});
    return out;
  }
  void put(std::string_view key, std::string_view value) override {
    kv[std::string(key)] = std::string(value);
    puts.insert(std::string(key));
  }
  void erase(std::string_view key) override {
    kv.erase(std::string(key));
    erases.insert(std::string(key));
  }
  void erase_range(std::string_view, std::string_view) override { ADD_FAILURE(); }

  std::map<std::string, std::string> kv;
  std::set<std::string> puts;
  std::set<std::string> erases;
};

RunRecord base_run() {
  RunRecord r;
  r.id = RunId{"job", 1, kT0};
  r.shard = 3;
  r.priority = 5;
  r.ready_at = kT0;
  r.state = RunState::kReady;
  r.token = 7;  // granted once before (tokens never go backwards)
  return r;
}

RunRecord in_state(RunState s) {
  RunRecord r = base_run();
  r.state = s;
  if (s == RunState::kLeased) {
    r.owner = "w";
    r.lease_expiry = kT0 + absl::Seconds(30);
  }
  return r;
}

// Every index key the store holds (everything but the run record).
std::set<std::string> index_keys(const LogTxn& t) {
  std::set<std::string> out;
  for (const auto& [k, v] : t.kv)
    if (k != keys::run(base_run().id)) out.insert(k);
  return out;
}

std::set<std::string> expected(const RunRecord& r) {
  const auto k = run_index_keys(r);
  std::set<std::string> out;
  for (const auto& e : {k.ready, k.expiry, k.open})
    if (e) out.insert(*e);
  return out;
}

const std::vector<RunState> kAll = {RunState::kReady,  RunState::kLeased,    RunState::kSucceeded,
                                    RunState::kFailed, RunState::kCancelled, RunState::kWaiting};

TEST(RunIndex, EntriesFollowTheState) {
  const RunRecord r = base_run();
  const std::string ready = keys::ready(r.shard, r.priority, r.ready_at, r.id);
  const std::string open = keys::open_run(r.id);
  EXPECT_EQ(expected(in_state(RunState::kReady)), (std::set<std::string>{ready, open}));
  EXPECT_EQ(expected(in_state(RunState::kWaiting)), (std::set<std::string>{open}));
  const RunRecord leased = in_state(RunState::kLeased);
  EXPECT_EQ(expected(leased),
            (std::set<std::string>{keys::expiry(r.shard, leased.lease_expiry, r.id), open}));
  for (RunState s : {RunState::kSucceeded, RunState::kFailed, RunState::kCancelled})
    EXPECT_TRUE(expected(in_state(s)).empty()) << to_string(s);
}

TEST(RunIndex, TheTableOfAllowedChanges) {
  const std::set<std::pair<int, int>> allowed = {
      {-1, int(RunState::kReady)},
      {-1, int(RunState::kWaiting)},
      {int(RunState::kWaiting), int(RunState::kWaiting)},
      {int(RunState::kWaiting), int(RunState::kReady)},
      {int(RunState::kWaiting), int(RunState::kCancelled)},
      {int(RunState::kReady), int(RunState::kReady)},
      {int(RunState::kReady), int(RunState::kLeased)},
      {int(RunState::kReady), int(RunState::kCancelled)},
      {int(RunState::kLeased), int(RunState::kLeased)},
      {int(RunState::kLeased), int(RunState::kReady)},
      {int(RunState::kLeased), int(RunState::kSucceeded)},
      {int(RunState::kLeased), int(RunState::kFailed)},
      {int(RunState::kLeased), int(RunState::kCancelled)},
  };
  for (RunState to : kAll) {
    EXPECT_EQ(legal_transition(std::nullopt, to), allowed.count({-1, int(to)}) == 1);
    for (RunState from : kAll)
      EXPECT_EQ(legal_transition(from, to), allowed.count({int(from), int(to)}) == 1)
          << to_string(from) << " -> " << to_string(to);
  }
}

// Every legal transition, from a store holding exactly the old run's
// entries: afterwards it holds exactly the new run's entries, and only keys
// that differ were written.
TEST(RunIndex, EveryLegalTransitionWritesExactlyTheChangedEntries) {
  int checked = 0;
  for (RunState from : kAll) {
    for (RunState to : kAll) {
      if (!legal_transition(from, to)) continue;
      const RunRecord old = in_state(from);
      RunRecord next = in_state(to);
      if (from == to) {  // a move within the state: new key time
        next.ready_at = old.ready_at + absl::Seconds(1);
        next.lease_expiry = old.lease_expiry + absl::Seconds(1);
      }
      LogTxn t;
      write_run(t, std::nullopt, old, Legality::kPlantedBug);  // seed
      ASSERT_EQ(index_keys(t), expected(old));
      t.puts.clear();
      t.erases.clear();
      write_run(t, old, next);
      EXPECT_EQ(index_keys(t), expected(next)) << to_string(from) << " -> " << to_string(to);
      EXPECT_EQ(*decode_run(*t.get(keys::run(next.id))), next);
      // Written: the run record, plus exactly the index keys that changed.
      const auto before = expected(old), after = expected(next);
      std::set<std::string> want_puts = {keys::run(next.id)}, want_erases;
      for (const auto& k : after)
        if (!before.count(k)) want_puts.insert(k);
      for (const auto& k : before)
        if (!after.count(k)) want_erases.insert(k);
      EXPECT_EQ(t.puts, want_puts) << to_string(from) << " -> " << to_string(to);
      EXPECT_EQ(t.erases, want_erases) << to_string(from) << " -> " << to_string(to);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 11);
}

TEST(RunIndex, UnchangedKeysAreNotRewritten) {
  const RunRecord old = in_state(RunState::kLeased);
  RunRecord next = old;
  next.detail = "same lease, new detail";
  LogTxn t;
  write_run(t, std::nullopt, old, Legality::kPlantedBug);
  t.puts.clear();
  write_run(t, old, next);
  EXPECT_EQ(t.puts, (std::set<std::string>{keys::run(old.id)}));
  EXPECT_TRUE(t.erases.empty());
}

TEST(RunIndex, CreatingARun) {
  for (RunState s : {RunState::kReady, RunState::kWaiting}) {
    LogTxn t;
    const RunRecord r = in_state(s);
    write_run(t, std::nullopt, r);
    EXPECT_EQ(index_keys(t), expected(r));
    EXPECT_TRUE(t.erases.empty());
    EXPECT_TRUE(t.get(keys::open_run(r.id)).has_value());
  }
}

TEST(RunIndex, FinishingARunLeavesNoEntry) {
  for (RunState end : {RunState::kSucceeded, RunState::kFailed, RunState::kCancelled}) {
    LogTxn t;
    const RunRecord old = in_state(RunState::kLeased);
    write_run(t, std::nullopt, old, Legality::kPlantedBug);
    RunRecord next = old;
    next.state = end;
    next.owner.clear();
    write_run(t, old, next);
    EXPECT_TRUE(index_keys(t).empty()) << to_string(end);
    EXPECT_EQ(decode_run(*t.get(keys::run(old.id)))->state, end);
  }
}

using RunIndexDeathTest = ::testing::Test;

TEST(RunIndexDeathTest, AnIllegalTransitionIsRefused) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const RunRecord done = in_state(RunState::kSucceeded);
  RunRecord again = done;
  again.state = RunState::kReady;
  EXPECT_DEATH(
      {
        LogTxn t;
        write_run(t, done, again);
      },
      "illegal run transition succeeded -> ready");
  EXPECT_DEATH(
      {
        LogTxn t;
        write_run(t, std::nullopt, in_state(RunState::kLeased));
      },
      "illegal run transition \\(none\\) -> leased");
  EXPECT_DEATH(
      {
        LogTxn t;
        write_run(t, in_state(RunState::kWaiting), in_state(RunState::kLeased));
      },
      "illegal run transition waiting -> leased");
}

TEST(RunIndexDeathTest, OldAndNewMustNameTheSameRun) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  RunRecord other = in_state(RunState::kReady);
  other.id.nominal += absl::Seconds(1);
  EXPECT_DEATH(
      {
        LogTxn t;
        write_run(t, in_state(RunState::kReady), other);
      },
      "different runs");
}

TEST(RunIndexDeathTest, TokensAndMarksNeverGoBackwards) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  RunRecord older = in_state(RunState::kLeased);
  older.token = 3;
  EXPECT_DEATH(
      {
        LogTxn t;
        write_run(t, in_state(RunState::kLeased), older);
      },
      "next.token >= old->token");
  JobCounters before;
  before.incarnation_hw = 2;
  before.token_hw = 9;
  JobCounters after = before;
  after.token_hw = 8;
  EXPECT_DEATH(
      {
        LogTxn t;
        write_counters(t, "job", before, after);
      },
      "token high-water mark went backwards");
  after = before;
  after.incarnation_hw = 1;
  EXPECT_DEATH(
      {
        LogTxn t;
        write_counters(t, "job", before, after);
      },
      "incarnation high-water mark went backwards");
}

}  // namespace
}  // namespace kairos
