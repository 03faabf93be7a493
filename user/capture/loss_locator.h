// Locates the rings' losses in time: fed the cumulative loss counters at
// every sweep, it turns each (CPU, group) whose count grew since the last
// reading into an interval bounded by the two readings (the lost records
// were produced after the one and before the other). The recorder writes
// what it finds with each metadata chunk and in the footer.
#pragma once

#include <cstdint>
#include <vector>

#include "trace/loss_intervals.h"

namespace jackdaw::capture {

class LossLocator {
 public:
  // The reading at the start of the recording (counters of a fresh session
  // may already be non-zero: those losses precede `now_ns`).
  void Start(uint64_t now_ns, const std::vector<std::vector<uint64_t>>& counts) {
    last_ = counts;
    last_ns_ = now_ns;
  }
  // A reading at `now_ns` (CLOCK_MONOTONIC), taken after a drain that began
  // at `drain_from_ns`: what the next reading finds lost was produced after
  // that (records the reader drops are counted when drained, and a drain
  // reads records produced since the previous one began).
  void Observe(uint64_t now_ns, const std::vector<std::vector<uint64_t>>& counts, uint64_t drain_from_ns);
  // The intervals found since the last call.
  std::vector<trace::LossInterval> TakeNew() {
    std::vector<trace::LossInterval> out;
    out.swap(new_);
    return out;
  }
  uint64_t intervals() const { return intervals_; }

 private:
  std::vector<std::vector<uint64_t>> last_;
  uint64_t last_ns_ = 0;
  std::vector<trace::LossInterval> new_;
  uint64_t intervals_ = 0;
};

}  // namespace jackdaw::capture
