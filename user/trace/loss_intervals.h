// Where and when the capture lost records: the rings' cumulative loss
// counters, read by the recorder at every sweep, turned into intervals (per
// CPU and probe group) within which the lost records were produced. A count
// alone says a trace is damaged; an interval says which requests are.
//
// In the trace (format 2 and 3 alike; readers before this ignore the key):
// every metadata chunk and the footer may carry "loss_intervals", an array
// of [cpu, group, from_ns, to_ns, lost] with CLOCK_MONOTONIC bounds, each
// interval written once (readers append them), and the header carries
// "loss_intervals_version": 1 when the recorder located its losses. A trace
// without that key counted its losses but did not locate them.
#pragma once

#include <cstdint>

namespace jackdaw::trace {

inline constexpr uint32_t kLossIntervalsVersion = 1;

struct LossInterval {
  uint32_t cpu = 0;
  uint32_t group = 0;    // JDW_GROUP_*
  uint64_t from_ns = 0;  // CLOCK_MONOTONIC: no lost record is older
  uint64_t to_ns = 0;    // ... or newer
  uint64_t lost = 0;     // records lost within it
};

}  // namespace jackdaw::trace
