// Client event kinds: every kind of Event the simulated client
// (sim/scenario/workload.h) records on its node's log, as named constants,
// and kAllClientEventKinds, their registry. They are the checker's record of
// what the client was told (sim/oracle/: the jobs it controlled); the
// kernel's own kinds are core/kernel/event_kinds.h. Every kind is
// "client.<what>", the prefix the cluster keeps client events by.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "core/ports/event_log.h"

namespace kairos::sim::client_events {

inline constexpr std::string_view kPrefix = "client.";
inline constexpr std::string_view kJobCreated = "client.job_created";
inline constexpr std::string_view kCancelAcked = "client.cancel_acked";
inline constexpr std::string_view kPaused = "client.paused";
inline constexpr std::string_view kResumed = "client.resumed";
inline constexpr std::string_view kRescheduled = "client.rescheduled";
inline constexpr std::string_view kTriggered = "client.triggered";
inline constexpr std::string_view kControlRefused = "client.control_refused";
// A control request, cancel or re-create answered DataLoss: a record of the
// job does not decode (job, op, error); a cancel or re-create is sent again
// after the retry period, as after any error.
inline constexpr std::string_view kRequestUndecodable = "client.request_undecodable";
// A read whose answer contradicts what the client had been told
// (sim/scenario/workload.h, "Reads"): op, job, detail.
inline constexpr std::string_view kReadAnomaly = "client.read_anomaly";

// The boundary inputs (`inputs`): one definite answer to a request at a
// documented limit or one past it: probe, bound ("at" | "past"), code
// (absl::StatusCodeToString), and for a create its job, namespace, labels.
inline constexpr std::string_view kInputAnswered = "client.input_answered";
// The queries (`queries`): a filtered listing's first send (listing,
// namespace, selector) and its end (listing, limit, ids: the pages' ids in
// order, comma-separated within a page and `|` between pages); a walk of a
// job's runs (job, incarnation, limit, walk: per page `FROM:n1,n2,...`
// with times in Unix microseconds, FROM `-` for none, `;` between pages);
// one ledger answer (job, from, to in Unix microseconds, limit, more,
// records: `incarnation:nominal:through` comma-separated).
inline constexpr std::string_view kListStarted = "client.list_started";
inline constexpr std::string_view kListed = "client.listed";
inline constexpr std::string_view kRunsWalked = "client.runs_walked";
inline constexpr std::string_view kLedgerQueried = "client.ledger_queried";

// The batches (`batches`): one definite answer to a jobs:batch request or a
// conditional apply: probe, op ("batch" | "apply"), code, message, errors
// (the answer's failing item indices, comma-separated), planted (the items
// the client made invalid), field (the field the first of them breaks, or
// "jobs" for the batch's size; empty when the request is valid), and per
// item, comma-separated in item order: ids, sent (spec_digest of the spec
// sent), want (the generation the client expects the answer to carry, `-`
// when it does not know: a fresh create), got (the answer's generation),
// got_spec (spec_digest of the answer's spec), changed (0/1); an apply also
// if_match and mismatch (1 when refused as a generation mismatch).
inline constexpr std::string_view kBatchAnswered = "client.batch_answered";
// The updates (`updates`): one definite answer to an in-place update of a
// workload job: job, incarnation, kind ("change" | "stale" | "noop" |
// "rename"), if_match, known (the generation the client last learned), code,
// mismatch (0/1), and when accepted generation, changed (0/1) and got (the
// answer's spec_digest); want (spec_digest of the spec the update asks for)
// and before (of the spec the client knew).
inline constexpr std::string_view kUpdateAnswered = "client.update_answered";

// Every kind above, once (kPrefix is not a kind).
inline constexpr std::array kAllClientEventKinds = {
    kJobCreated,    kCancelAcked,   kPaused,         kResumed,
    kRescheduled,   kTriggered,     kControlRefused, kReadAnomaly,
    kInputAnswered, kListStarted,   kListed,         kRunsWalked,
    kLedgerQueried, kBatchAnswered, kUpdateAnswered, kRequestUndecodable,
};

// Labels as the client events write them, and a selector: "k=v,k2=v2" in
// key order (the workload's keys and values hold no `,` or `=`).
inline std::string label_text(const std::map<std::string, std::string>& labels) {
  std::string out;
  for (const auto& [k, v] : labels) {
    if (!out.empty()) out += ',';
    out += k;
    out += '=';
    out += v;
  }
  return out;
}
inline std::map<std::string, std::string> parse_label_text(std::string_view text) {
  std::map<std::string, std::string> out;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    const std::size_t eq = item.find('=');
    if (eq != std::string_view::npos)
      out[std::string(item.substr(0, eq))] = std::string(item.substr(eq + 1));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

// A client event's field, as the workload wrote it; empty or 0 when absent or
// of another type (what the checker reads the events back with).
inline std::string text_of(const Event& e, std::string_view name) {
  const auto* v = e.find(name);
  return v != nullptr && std::get_if<std::string>(v) ? std::get<std::string>(*v) : std::string();
}
inline std::uint64_t uint_of(const Event& e, std::string_view name) {
  const auto* v = e.find(name);
  return v != nullptr && std::get_if<std::uint64_t>(v) ? std::get<std::uint64_t>(*v) : 0;
}
inline std::int64_t int_of(const Event& e, std::string_view name) {
  const auto* v = e.find(name);
  return v != nullptr && std::get_if<std::int64_t>(v) ? std::get<std::int64_t>(*v) : 0;
}

// Whether `kind` is in kAllClientEventKinds.
constexpr bool is_client_event_kind(std::string_view kind) {
  for (std::string_view k : kAllClientEventKinds)
    if (k == kind) return true;
  return false;
}

}  // namespace kairos::sim::client_events
