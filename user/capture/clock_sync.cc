#include "capture/clock_sync.h"

#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include <cmath>

#include "common/clock.h"

namespace jackdaw::capture {

uint64_t ReadTsc() { return __rdtsc(); }

ClockPair SampleClockPair() {
  ClockPair best;
  best.window_cycles = UINT64_MAX;
  for (int i = 0; i < 16; ++i) {
    timespec mono, wall;
    unsigned aux;
    const uint64_t t0 = __rdtscp(&aux);
    clock_gettime(CLOCK_MONOTONIC, &mono);
    const uint64_t t1 = __rdtscp(&aux);
    clock_gettime(CLOCK_REALTIME, &wall);
    if (t1 - t0 < best.window_cycles) {
      best.window_cycles = t1 - t0;
      best.tsc = t0 + (t1 - t0) / 2;
      best.mono_ns = uint64_t(mono.tv_sec) * 1000000000ull + mono.tv_nsec;
      const uint64_t wall_ns = uint64_t(wall.tv_sec) * 1000000000ull + wall.tv_nsec;
      best.wall_minus_mono_ns = int64_t(wall_ns - best.mono_ns);
    }
  }
  return best;
}

double KernelTscPerNs() {
  perf_event_attr attr{};
  attr.size = sizeof(attr);
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_DUMMY;
  attr.disabled = 1;
  attr.exclude_kernel = 1;
  int fd = static_cast<int>(syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC));
  if (fd < 0) return 0;
  const long page = sysconf(_SC_PAGESIZE);
  void* p = mmap(nullptr, page, PROT_READ, MAP_SHARED, fd, 0);
  double freq = 0;
  if (p != MAP_FAILED) {
    const auto* pg = static_cast<const perf_event_mmap_page*>(p);
    if (pg->cap_user_time_zero && pg->time_mult != 0) {
      // ns = (cyc * mult) >> shift, so cycles per ns = 2^shift / mult.
      freq = std::ldexp(1.0, pg->time_shift) / pg->time_mult;
    }
    munmap(p, page);
  }
  close(fd);
  return freq;
}

trace::ClockMapping ClockFit::Mapping() const {
  trace::ClockMapping m;
  if (pairs_.empty()) return m;
  const ClockPair& ref = pairs_.front();
  m.ref_mono_ns = ref.mono_ns;
  m.ref_tsc = ref.tsc;
  m.wall_minus_mono_ns = pairs_.back().wall_minus_mono_ns;
  const double kernel = kernel_tsc_per_ns_;
  if (kernel > 0) {
    m.method = "perf-mmap";
    m.tsc_per_ns = kernel;
  } else if (pairs_.size() >= 2) {
    // Least squares of tsc on mono through all pairs, relative to the first
    // to keep the doubles exact.
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (const auto& p : pairs_) {
      const double x = double(int64_t(p.mono_ns - ref.mono_ns));
      const double y = double(int64_t(p.tsc - ref.tsc));
      sx += x, sy += y, sxx += x * x, sxy += x * y;
    }
    const double n = double(pairs_.size());
    const double den = n * sxx - sx * sx;
    m.method = "tsc-fit";
    m.tsc_per_ns = den > 0 ? (n * sxy - sx * sy) / den : 1.0;
    // Re-anchor at the fit's own line through the centroid.
    const double x0 = sx / n, y0 = sy / n;
    m.ref_tsc = ref.tsc + int64_t(y0 - m.tsc_per_ns * x0);
  } else {
    // One pair fixes an offset, not a frequency: claim none rather than the
    // placeholder 1 GHz (a recording killed before its first sync).
    m.method = "none";
    m.tsc_per_ns = 1.0;
  }
  double worst = 0;
  for (const auto& p : pairs_) {
    const double err = std::fabs(double(int64_t(m.TscToMono(p.tsc) - p.mono_ns)));
    worst = std::max(worst, err);
  }
  m.fit_max_residual_ns = worst;
  return m;
}

}  // namespace jackdaw::capture
