#include "predict/calibrate.h"

#include <algorithm>

namespace jackdaw::predict {

Calibration CalibrateBackground(const std::vector<SimKind>& kinds, const SimConfig& recorded,
                                double recorded_stretch) {
  Calibration c;
  c.recorded_stretch = recorded_stretch;
  SimConfig probe = recorded;
  probe.requests = std::min<uint64_t>(recorded.requests, 20000);
  auto stretch = [&](double b) {
    probe.background_threads = b;
    return Simulate(kinds, probe).cpu_stretch;
  };
  c.simulated_stretch = stretch(0);
  if (c.simulated_stretch >= recorded_stretch) return c;  // the requests alone explain the waits
  const double limit = 64.0 * recorded.cpus;
  double lo = 0, hi = recorded.cpus;
  while (stretch(hi) < recorded_stretch && hi < limit) lo = hi, hi *= 2;
  for (int i = 0; i < 12; ++i) {
    const double mid = (lo + hi) / 2;
    (stretch(mid) < recorded_stretch ? lo : hi) = mid;
  }
  c.background_threads = (lo + hi) / 2;
  c.simulated_stretch = stretch(c.background_threads);
  return c;
}

}  // namespace jackdaw::predict
