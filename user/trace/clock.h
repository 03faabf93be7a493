// Mapping between the timebase records were stamped in and the TSC, monotonic
// and wall clocks.
//
// The BPF backend stamps CLOCK_MONOTONIC ns (BPF has no TSC helper); the
// module stamps TSC cycles. Either way the trace carries a linear mapping
// tsc = tsc_at_ref + (mono - mono_at_ref) * tsc_per_ns, obtained from the
// kernel's own conversion (perf mmap page, cap_user_time_zero) when it is
// published, else from a least-squares fit of paired rdtsc / clock_gettime
// readings taken at the start, the end and periodically during recording.
#pragma once

#include <cstdint>
#include <string>

namespace jackdaw::trace {

enum class Timebase : uint8_t { kMonoNs = 0, kTsc = 1 };

struct ClockMapping {
  std::string method = "none";  // "perf-mmap" | "tsc-fit" | "tsc-native" | "none"
  double tsc_per_ns = 1.0;      // TSC frequency in GHz
  uint64_t ref_mono_ns = 0;
  uint64_t ref_tsc = 0;
  int64_t wall_minus_mono_ns = 0;  // CLOCK_REALTIME - CLOCK_MONOTONIC
  double fit_max_residual_ns = 0;  // worst pair's distance from the fit

  uint64_t MonoToTsc(uint64_t mono_ns) const {
    const double d = static_cast<double>(static_cast<int64_t>(mono_ns - ref_mono_ns));
    return ref_tsc + static_cast<int64_t>(d * tsc_per_ns);
  }
  uint64_t TscToMono(uint64_t tsc) const {
    const double d = static_cast<double>(static_cast<int64_t>(tsc - ref_tsc));
    return ref_mono_ns + static_cast<int64_t>(d / tsc_per_ns);
  }
  uint64_t MonoToWall(uint64_t mono_ns) const { return mono_ns + wall_minus_mono_ns; }
};

// Converts a record timestamp in `base` to CLOCK_MONOTONIC ns / TSC.
struct TimeConverter {
  Timebase base = Timebase::kMonoNs;
  ClockMapping clock;
  uint64_t ToMonoNs(uint64_t ts) const { return base == Timebase::kMonoNs ? ts : clock.TscToMono(ts); }
  uint64_t ToTsc(uint64_t ts) const { return base == Timebase::kTsc ? ts : clock.MonoToTsc(ts); }
};

}  // namespace jackdaw::trace
