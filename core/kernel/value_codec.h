// Encodings of the composite values that both the job record
// (core/kernel/records.h) and the claim grant (core/kernel/wire.h) carry: a
// job's schedule and its payload. Built on the strict field codec of
// core/base/codec.h; every decode error names the field.
#pragma once

#include "absl/status/statusor.h"
#include "core/base/codec.h"
#include "core/ports/payload.h"
#include "core/schedule/schedule.h"

namespace kairos {

void encode_schedule(ByteWriter& w, const ScheduleSpec& spec);
absl::StatusOr<ScheduleSpec> decode_schedule(ByteReader& r);
void encode_payload(ByteWriter& w, const Payload& payload);
absl::StatusOr<Payload> decode_payload(ByteReader& r);

}  // namespace kairos
