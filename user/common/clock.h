// The monotonic clock in nanoseconds: the time base jackdaw's traces are
// mapped to, and the one its harnesses and clients time themselves with.
#pragma once

#include <time.h>

#include <cstdint>

namespace jackdaw {

inline uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

}  // namespace jackdaw
