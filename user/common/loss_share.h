// Loss as every closing line and status shows it: a share of the events
// the probes produced, kept and lost together.
#pragma once

#include <cstdint>

namespace jackdaw {

inline double LostPercent(uint64_t lost, uint64_t kept) {
  return lost ? 100.0 * double(lost) / double(lost + kept) : 0.0;
}

}  // namespace jackdaw
