// Client event kinds: every kind of Event the simulated client
// (sim/scenario/workload.h) records on its node's log, as named constants,
// and kAllClientEventKinds, their registry. They are the checker's record of
// what the client was told (sim/oracle/: the jobs it controlled); the
// kernel's own kinds are core/kernel/event_kinds.h. Every kind is
// "client.<what>", the prefix the cluster keeps client events by.
#pragma once

#include <array>
#include <string_view>

namespace kairos::sim::client_events {

inline constexpr std::string_view kPrefix = "client.";
inline constexpr std::string_view kJobCreated = "client.job_created";
inline constexpr std::string_view kCancelAcked = "client.cancel_acked";
inline constexpr std::string_view kPaused = "client.paused";
inline constexpr std::string_view kResumed = "client.resumed";
inline constexpr std::string_view kRescheduled = "client.rescheduled";
inline constexpr std::string_view kTriggered = "client.triggered";
inline constexpr std::string_view kControlRefused = "client.control_refused";
// A read whose answer contradicts what the client had been told
// (sim/scenario/workload.h, "Reads"): op, job, detail.
inline constexpr std::string_view kReadAnomaly = "client.read_anomaly";

// Every kind above, once (kPrefix is not a kind).
inline constexpr std::array kAllClientEventKinds = {
    kJobCreated,  kCancelAcked, kPaused,         kResumed,
    kRescheduled, kTriggered,   kControlRefused, kReadAnomaly,
};

// Whether `kind` is in kAllClientEventKinds.
constexpr bool is_client_event_kind(std::string_view kind) {
  for (std::string_view k : kAllClientEventKinds)
    if (k == kind) return true;
  return false;
}

}  // namespace kairos::sim::client_events
