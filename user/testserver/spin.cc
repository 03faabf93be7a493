#include "testserver/spin.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <vector>

namespace jackdaw::testserver {
namespace {

uint64_t ClockNs(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Where each spin's final state goes, so the loop result is observable.
std::atomic<uint64_t> g_spin_sink{0};

}  // namespace

uint64_t ThreadCpuNs() { return ClockNs(CLOCK_THREAD_CPUTIME_ID); }
uint64_t MonotonicNs() { return ClockNs(CLOCK_MONOTONIC); }
uint64_t WallNs() { return ClockNs(CLOCK_REALTIME); }

[[gnu::noinline]] uint64_t SpinIterations(uint64_t iters) {
  uint64_t x = 0x9e3779b97f4a7c15ull ^ iters;
  for (uint64_t i = 0; i < iters; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    asm volatile("" : "+r"(x));
  }
  g_spin_sink.store(x, std::memory_order_relaxed);
  return x;
}

Calibration Calibrate(int runs, int run_ms) {
  // Pilot: size the runs so each takes about run_ms of CPU.
  uint64_t pilot_iters = 200000;
  uint64_t t0 = ThreadCpuNs();
  SpinIterations(pilot_iters);
  uint64_t pilot_ns = std::max<uint64_t>(ThreadCpuNs() - t0, 1);
  uint64_t iters = std::max<uint64_t>(pilot_iters * run_ms * 1000000ull / pilot_ns, 1000);

  SpinIterations(iters);  // warm-up at full length
  std::vector<uint64_t> rates;
  for (int r = 0; r < runs; ++r) {
    uint64_t start = ThreadCpuNs();
    SpinIterations(iters);
    uint64_t ns = std::max<uint64_t>(ThreadCpuNs() - start, 1);
    rates.push_back(iters * 1000000ull / ns);
  }
  return Summarize(std::move(rates));
}

Calibration Summarize(std::vector<uint64_t> rates) {
  std::sort(rates.begin(), rates.end());
  Calibration c;
  c.iters_per_ms = rates[rates.size() / 2];
  c.min_iters_per_ms = rates.front();
  c.max_iters_per_ms = rates.back();
  c.runs = static_cast<int>(rates.size());
  return c;
}

SpinRecord Spin(const char* label, uint32_t us, uint64_t iters_per_ms) {
  SpinRecord rec;
  rec.label = label;
  rec.tid = gettid();
  rec.nominal_ns = static_cast<uint64_t>(us) * 1000;
  rec.iterations = iters_per_ms * us / 1000;
  rec.start_mono_ns = MonotonicNs();
  uint64_t cpu0 = ThreadCpuNs();
  SpinIterations(rec.iterations);
  rec.cpu_ns = ThreadCpuNs() - cpu0;
  rec.end_mono_ns = MonotonicNs();
  return rec;
}

}  // namespace jackdaw::testserver
