#include "sim/world/lease_tap.h"

#include <utility>

#include "core/kernel/wire.h"

namespace kairos::sim {

namespace {
// Requests remembered per worker: far more than one rpc timeout's worth.
constexpr std::size_t kRemembered = 64;

// The frame's message type, or 0 when it is not a frame of the types the tap
// reads (decoding only those keeps the tap cheap).
std::uint8_t tapped_type(std::string_view m) {
  if (m.size() < wire::kFrameHeaderSize) return 0;
  const auto t = static_cast<std::uint8_t>(m[3]);
  switch (static_cast<wire::MessageType>(t)) {
    case wire::MessageType::kClaimRequest:
    case wire::MessageType::kClaimResponse:
    case wire::MessageType::kRenewRequest:
    case wire::MessageType::kRenewResponse:
    case wire::MessageType::kCompleteRequest:
    case wire::MessageType::kCompleteResponse:
    case wire::MessageType::kError:
      return t;
    default:
      return 0;
  }
}

template <typename Map>
void bound(Map& m) {
  while (m.size() > kRemembered) m.erase(m.begin());
}
}  // namespace

LeaseTap::LeaseTap(const World& world, Transport& inner, const SimClock& clock,
                   RefusalObserver on_refusal, ReportObserver on_report)
    : world_(world),
      inner_(inner),
      clock_(clock),
      on_refusal_(std::move(on_refusal)),
      on_report_(std::move(on_report)) {}

void LeaseTap::send(PeerId to, std::string message) {
  if (tapped_type(message) != 0) {
    auto decoded = wire::decode(message);
    if (decoded.ok()) {
      if (auto* c = std::get_if<wire::ClaimRequest>(&*decoded)) {
        for (const CompleteItem& item : c->reports)
          on_report_(item, nullptr, false, c->request_id, true);
        claims_[c->request_id] = Claim{clock_.now(), std::move(c->reports)};
        bound(claims_);
      } else if (auto* r = std::get_if<wire::RenewRequest>(&*decoded)) {
        renewals_[r->request_id] = Renewal{world_.now(), clock_.now(), std::move(r->items)};
        bound(renewals_);
      } else if (auto* q = std::get_if<wire::CompleteRequest>(&*decoded)) {
        for (const CompleteItem& item : q->items)
          on_report_(item, nullptr, false, q->request_id, false);
        completes_[q->request_id] = std::move(q->items);
        bound(completes_);
      }
    }
  }
  inner_.send(to, std::move(message));
}

void LeaseTap::set_handler(Handler handler) {
  if (!handler) {
    inner_.set_handler(nullptr);
    return;
  }
  inner_.set_handler([this, handler = std::move(handler)](PeerId from, std::string_view m) {
    before(m);
    handler(from, m);
    handling_.clear();
  });
}

void LeaseTap::before(std::string_view message) {
  handling_.clear();
  if (tapped_type(message) == 0) return;
  auto decoded = wire::decode(message);
  if (!decoded.ok()) return;
  if (const auto* c = std::get_if<wire::ClaimResponse>(&*decoded)) {
    auto it = claims_.find(c->request_id);
    if (it == claims_.end()) return;
    for (const wire::WireGrant& g : c->grants)
      handling_.push_back(Grant{g.run, g.token, g.lease_ttl, it->second.sent});
    answered(it->second.reports, c->results, c->request_id, true);
    claims_.erase(it);
  } else if (const auto* r = std::get_if<wire::RenewResponse>(&*decoded)) {
    auto it = renewals_.find(r->request_id);
    if (it == renewals_.end()) return;
    const Renewal renewal = std::move(it->second);
    renewals_.erase(it);
    if (r->results.size() != renewal.items.size()) return;
    for (std::size_t i = 0; i < renewal.items.size(); ++i)
      if (r->results[i].verdict != WriteVerdict::kAccepted)
        on_refusal_(renewal.items[i].run, renewal.items[i].token, renewal.sent_at, renewal.sent,
                    clock_.now());
  } else if (const auto* q = std::get_if<wire::CompleteResponse>(&*decoded)) {
    auto it = completes_.find(q->request_id);
    if (it == completes_.end()) return;
    answered(it->second, q->results, q->request_id, false);
    completes_.erase(it);
  } else if (const auto* e = std::get_if<wire::ErrorMessage>(&*decoded)) {
    // The first answer to a request, an error: nothing more is waited for.
    // The reports it carried were answered, if not decided.
    if (auto c = claims_.find(e->request_id); c != claims_.end())
      for (const CompleteItem& item : c->second.reports)
        on_report_(item, nullptr, true, e->request_id, true);
    if (auto q = completes_.find(e->request_id); q != completes_.end())
      for (const CompleteItem& item : q->second)
        on_report_(item, nullptr, true, e->request_id, false);
    claims_.erase(e->request_id);
    renewals_.erase(e->request_id);
    completes_.erase(e->request_id);
  }
}

void LeaseTap::answered(const std::vector<CompleteItem>& items,
                        const std::vector<wire::WireVerdict>& results, std::uint64_t request,
                        bool by_claim) const {
  // An answer whose verdicts do not line up with the request is ignored by
  // the worker too (Worker::on_complete_response).
  if (results.size() != items.size()) return;
  for (std::size_t i = 0; i < items.size(); ++i)
    on_report_(items[i], &results[i], false, request, by_claim);
}

const LeaseTap::Grant* LeaseTap::grant_for(const RunRequest& r) const {
  for (const Grant& g : handling_)
    if (g.token == r.fencing_token && g.run.job_id == r.job_id &&
        g.run.incarnation == r.incarnation && g.run.nominal == r.nominal_time)
      return &g;
  return nullptr;
}

void LeaseTap::reset() {
  claims_.clear();
  renewals_.clear();
  completes_.clear();
  handling_.clear();
}

}  // namespace kairos::sim
