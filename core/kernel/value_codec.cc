#include "core/kernel/value_codec.h"

#include <string>
#include <utility>
#include <vector>

#include "core/base/absl_compat.h"
#include "core/base/check.h"

namespace kairos {

namespace {
constexpr std::uint32_t kMaxListItems = 4096;

void encode_pairs(ByteWriter& w, const std::vector<std::pair<std::string, std::string>>& v) {
  w.u32(static_cast<std::uint32_t>(v.size()));
  for (const auto& [k, val] : v) w.str(k).str(val);
}
absl::StatusOr<std::vector<std::pair<std::string, std::string>>> decode_pairs(
    ByteReader& r, std::string_view field) {
  KAIROS_ASSIGN_OR_RETURN(auto n, r.count(field, kMaxListItems, 8));
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    KAIROS_ASSIGN_OR_RETURN(auto k, r.str(field));
    KAIROS_ASSIGN_OR_RETURN(auto v, r.str(field));
    out.emplace_back(std::move(k), std::move(v));
  }
  return out;
}
}  // namespace

void encode_schedule(ByteWriter& w, const ScheduleSpec& s) {
  w.u8(static_cast<std::uint8_t>(s.kind));
  w.str(s.cron).str(s.zone);
  w.u8(static_cast<std::uint8_t>(s.dst_gap)).u8(static_cast<std::uint8_t>(s.dst_fold));
  w.time(s.at).duration(s.every).time(s.start).time(s.end).duration(s.jitter);
}

absl::StatusOr<ScheduleSpec> decode_schedule(ByteReader& r) {
  ScheduleSpec s;
  KAIROS_ASSIGN_OR_RETURN(auto kind, r.u8("schedule.kind"));
  if (kind > static_cast<std::uint8_t>(ScheduleSpec::Kind::kInterval))
    return absl::InvalidArgumentError(absl::StrCat("schedule.kind: unknown value ", kind));
  s.kind = static_cast<ScheduleSpec::Kind>(kind);
  KAIROS_ASSIGN_OR_RETURN(s.cron, r.str("schedule.cron"));
  KAIROS_ASSIGN_OR_RETURN(s.zone, r.str("schedule.zone"));
  KAIROS_ASSIGN_OR_RETURN(auto gap, r.u8("schedule.dst_gap"));
  if (gap > static_cast<std::uint8_t>(DstGap::kSkip))
    return absl::InvalidArgumentError(absl::StrCat("schedule.dst_gap: unknown value ", gap));
  s.dst_gap = static_cast<DstGap>(gap);
  KAIROS_ASSIGN_OR_RETURN(auto fold, r.u8("schedule.dst_fold"));
  if (fold > static_cast<std::uint8_t>(DstFold::kBoth))
    return absl::InvalidArgumentError(absl::StrCat("schedule.dst_fold: unknown value ", fold));
  s.dst_fold = static_cast<DstFold>(fold);
  KAIROS_ASSIGN_OR_RETURN(s.at, r.time("schedule.at"));
  KAIROS_ASSIGN_OR_RETURN(s.every, r.duration("schedule.every"));
  KAIROS_ASSIGN_OR_RETURN(s.start, r.time("schedule.start"));
  KAIROS_ASSIGN_OR_RETURN(s.end, r.time("schedule.end"));
  KAIROS_ASSIGN_OR_RETURN(s.jitter, r.duration("schedule.jitter"));
  return s;
}

void encode_payload(ByteWriter& w, const Payload& payload) {
  if (const auto* c = std::get_if<CommandPayload>(&payload)) {
    w.u8(1);
    w.u32(static_cast<std::uint32_t>(c->argv.size()));
    for (const auto& a : c->argv) w.str(a);
    encode_pairs(w, c->env);
    w.str(c->working_dir);
    return;
  }
  const auto& h = std::get<HttpPayload>(payload);
  w.u8(2);
  w.str(h.method).str(h.url);
  encode_pairs(w, h.headers);
  w.str(h.body);
}

absl::StatusOr<Payload> decode_payload(ByteReader& r) {
  KAIROS_ASSIGN_OR_RETURN(auto kind, r.u8("payload.kind"));
  if (kind == 1) {
    CommandPayload c;
    KAIROS_ASSIGN_OR_RETURN(auto n, r.count("payload.command.argv", kMaxListItems, 4));
    c.argv.reserve(n);
    for (std::uint32_t i = 0; i < n; ++i) {
      KAIROS_ASSIGN_OR_RETURN(auto a, r.str("payload.command.argv"));
      c.argv.push_back(std::move(a));
    }
    KAIROS_ASSIGN_OR_RETURN(c.env, decode_pairs(r, "payload.command.env"));
    KAIROS_ASSIGN_OR_RETURN(c.working_dir, r.str("payload.command.working_dir"));
    return Payload(std::move(c));
  }
  if (kind == 2) {
    HttpPayload h;
    KAIROS_ASSIGN_OR_RETURN(h.method, r.str("payload.http.method"));
    KAIROS_ASSIGN_OR_RETURN(h.url, r.str("payload.http.url"));
    KAIROS_ASSIGN_OR_RETURN(h.headers, decode_pairs(r, "payload.http.headers"));
    KAIROS_ASSIGN_OR_RETURN(h.body, r.str("payload.http.body"));
    return Payload(std::move(h));
  }
  return absl::InvalidArgumentError(absl::StrCat("payload.kind: unknown value ", kind));
}

}  // namespace kairos
