// TSC <-> CLOCK_MONOTONIC mapping for the BPF backend (DESIGN.md, Capture:
// timestamps). BPF stamps CLOCK_MONOTONIC ns; the trace is read in TSC
// cycles through a linear map. Where the kernel publishes its own TSC
// conversion (perf mmap page with cap_user_time_zero) its frequency is used;
// otherwise the frequency is a least-squares fit of paired rdtsc /
// clock_gettime readings taken at start, periodically, and at the end.
#pragma once

#include <cstdint>
#include <vector>

#include "trace/clock.h"

namespace jackdaw::capture {

struct ClockPair {
  uint64_t tsc = 0;
  uint64_t mono_ns = 0;
  int64_t wall_minus_mono_ns = 0;
  uint64_t window_cycles = 0;  // rdtsc bracket width: the pair's uncertainty
};

uint64_t ReadTsc();
// Takes the tightest of several rdtsc-bracketed clock_gettime readings.
ClockPair SampleClockPair();

// The kernel's TSC frequency from the perf mmap page, when it publishes
// cap_user_time_zero; 0 otherwise.
double KernelTscPerNs();

class ClockFit {
 public:
  // The kernel's figure is read once, here: opening and closing a perf
  // event can sleep for seconds on a loaded machine (the close waits for
  // an RCU grace period), and a reader that sleeps there loses events.
  explicit ClockFit(double kernel_tsc_per_ns = KernelTscPerNs()) : kernel_tsc_per_ns_(kernel_tsc_per_ns) {}
  void Add(const ClockPair& p) { pairs_.push_back(p); }
  size_t size() const { return pairs_.size(); }
  // Mapping from all pairs so far: method "perf-mmap" when the kernel
  // published a frequency, else "tsc-fit".
  trace::ClockMapping Mapping() const;

 private:
  double kernel_tsc_per_ns_;
  std::vector<ClockPair> pairs_;
};

}  // namespace jackdaw::capture
