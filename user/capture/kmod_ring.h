// Reading one CPU's jackdaw.ko ring (layout: include/jackdaw/kmod.h).
//
// The module publishes head after a record's bytes; the reader walks from
// its tail to head and hands each record out. A record never straddles the
// ring's end: the space left there is a padding header (type NONE) when a
// header fits, else nothing, and the walk continues at offset 0. Anything
// else — a size that is not a multiple of 8, smaller than a header, or
// running past head or the ring's end — means the ring is not what the
// module writes and is reported, never skipped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "common/status.h"
#include "trace/clock.h"

namespace jackdaw::capture {

struct RingWalk {
  uint64_t tail = 0;     // new tail: everything before it was handed out
  uint64_t records = 0;  // records handed out (padding not counted)
};

// Walks ring[0, ring_bytes) from tail to head (byte positions since the
// ring was created; ring_bytes a power of two).
StatusOr<RingWalk> WalkRing(const uint8_t* ring, uint32_t ring_bytes, uint64_t tail, uint64_t head,
                            const std::function<void(const uint8_t*, size_t)>& on_record);

// Rewrites a record's TSC times (hdr.ts, and block_complete.issue_ts when
// set; 0 means no issue was seen) to CLOCK_MONOTONIC ns through `clock`.
void RecordTimesToMono(uint8_t* rec, size_t size, const trace::ClockMapping& clock);

}  // namespace jackdaw::capture
