// The event-kind registries: every kind a simulated run records -- the
// kernel's (core/kernel/event_kinds.h) and the client's
// (sim/scenario/client_events.h) -- is registered, and the registries list
// each kind once.
#include "core/kernel/event_kinds.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "sim/scenario/client_events.h"
#include "sim/world/cluster.h"
#include "sim/world/fault_plan.h"

namespace kairos::sim {
namespace {

TEST(EventKinds, EachKindIsRegisteredOnceAndDotted) {
  std::set<std::string_view> all;
  for (std::string_view k : event_kinds::kAllEventKinds) {
    EXPECT_TRUE(all.insert(k).second) << k << " is listed twice";
    EXPECT_NE(k.find('.'), std::string_view::npos) << k;
    EXPECT_NE(k.substr(0, client_events::kPrefix.size()), client_events::kPrefix) << k;
  }
  for (std::string_view k : client_events::kAllClientEventKinds) {
    EXPECT_TRUE(all.insert(k).second) << k << " is listed twice";
    EXPECT_EQ(k.substr(0, client_events::kPrefix.size()), client_events::kPrefix) << k;
  }
}

TEST(EventKinds, EveryKindASwarmRunRecordsIsRegistered) {
  std::map<std::string, int> seen;
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    Random r(seed);  // as kairos-sim --swarm draws it
    Scenario s = swarm_scenario(default_swarm_base(), r);
    s.store.record_writes = true;  // the history keeps every node event
    Cluster c(s, seed);
    c.run();
    const History h = c.history();
    ASSERT_NE(h.events, nullptr);
    for (const NodeEvent& e : *h.events) ++seen[std::string(e.event.kind)];
  }
  for (const auto& [kind, n] : seen)
    EXPECT_TRUE(event_kinds::is_event_kind(kind) || client_events::is_client_event_kind(kind))
        << "\"" << kind << "\" (recorded " << n << " times) is in no registry";
  // The runs are long enough to mean something: most of the vocabulary shows.
  EXPECT_GE(seen.size(), 20u);
  EXPECT_TRUE(seen.count(std::string(event_kinds::kRunCompleted)));
  EXPECT_TRUE(seen.count(std::string(client_events::kJobCreated)));
}

}  // namespace
}  // namespace kairos::sim
