// LeaseTap: a worker's Transport seen from outside its process, recording the
// lease facts the true-time checks need without changing what is delivered.
//
// It wraps the worker's Transport (core/ports/transport.h) and decodes, with
// the wire format (core/kernel/wire.h: the data format, no kernel decision),
// the worker's claim and renewal requests as they are sent (stamped with the
// worker's own clock) and the answers as the worker's handler runs on them
// (the instant the simulated process acts: a paused node's deliveries wait
// with the rest of its events). From those it keeps:
//   - while the worker handles a claim answer, the grants it carries with the
//     worker's clock at the send of the claim they answer (grant_for());
//   - for the first answer to a renewal request the worker sent, every
//     (run, token) the store refused (the refusal callback), with the
//     worker's clock at the request's send and at the handling;
//   - every completion report the worker sends (in a CompleteRequest or
//     carried by a ClaimRequest), as it is sent, and the verdict of the first
//     answer to it, as the worker handles that answer (the report callback).
// Bytes pass through untouched, in the same order; no randomness is drawn
// and nothing is traced, so a run with the tap is the run without it. Only
// recent requests are remembered (the answers to older ones are not
// recorded); reset() forgets all of them when the process crashes.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "core/kernel/records.h"
#include "core/kernel/run_ref.h"
#include "core/kernel/wire.h"
#include "core/ports/runner.h"
#include "core/ports/transport.h"
#include "sim/world/sim_clock.h"
#include "sim/world/world.h"

namespace kairos::sim {

class LeaseTap final : public Transport {
 public:
  struct Grant {
    RunId run;
    std::uint64_t token = 0;
    absl::Duration ttl;  // the lease length the grant carries
    absl::Time sent;     // the worker's clock at the send of the claim
  };
  // (run, token, true time of the request's send, the worker's clock at the
  // send and at the handling).
  using RefusalObserver = std::function<void(const RunId&, std::uint64_t token, absl::Time sent_at,
                                             absl::Time sent, absl::Time local)>;

  // A report as the worker sent it (answer null, error false), the verdict
  // of the first answer to it as the worker handles it, or (error true) an
  // error message answering the request that carried it; with the id of
  // that request and whether it was a claim (the report rode with it).
  using ReportObserver = std::function<void(const CompleteItem&, const wire::WireVerdict* answer,
                                            bool error, std::uint64_t request, bool by_claim)>;

  LeaseTap(const World& world, Transport& inner, const SimClock& clock, RefusalObserver on_refusal,
           ReportObserver on_report);

  void send(PeerId to, std::string message) override;
  void set_handler(Handler handler) override;

  // While the worker handles a claim answer: its grant for `request`'s run
  // and token, or null.
  const Grant* grant_for(const RunRequest& request) const;
  // The process crashed: its outstanding requests died with it.
  void reset();

 private:
  void before(std::string_view message);
  struct Renewal {
    absl::Time sent_at, sent;
    std::vector<RenewItem> items;
  };
  const World& world_;
  Transport& inner_;
  const SimClock& clock_;
  RefusalObserver on_refusal_;
  ReportObserver on_report_;
  struct Claim {
    absl::Time sent;                    // the worker's clock
    std::vector<CompleteItem> reports;  // the reports it carries
  };
  std::map<std::uint64_t, Claim> claims_;  // by request id
  std::map<std::uint64_t, Renewal> renewals_;
  std::map<std::uint64_t, std::vector<CompleteItem>> completes_;  // by request id
  void answered(const std::vector<CompleteItem>& items,
                const std::vector<wire::WireVerdict>& results, std::uint64_t request,
                bool by_claim) const;
  std::vector<Grant> handling_;  // the claim answer being handled
};

}  // namespace kairos::sim
