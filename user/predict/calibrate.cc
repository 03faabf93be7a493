#include "predict/calibrate.h"

#include <algorithm>
#include <cstdio>

namespace jackdaw::predict {

void Calibration::Apply(SimConfig* c) const {
  c->cpu_capacity = 0;
  c->background_threads = 0;
  if (model == OtherWork::kShare && other_cpus > 0)
    c->cpu_capacity = std::max(0.05 * c->cpus, static_cast<double>(c->cpus) - other_cpus);
  if (model == OtherWork::kThreads) c->background_threads = background_threads;
}

std::string Calibration::Describe() const {
  char buf[200];
  switch (model) {
    case OtherWork::kNone: return "none (--other-work none)";
    case OtherWork::kShare:
      snprintf(buf, sizeof(buf), "%.2f CPUs taken by other work (--other-work share)", other_cpus);
      return buf;
    case OtherWork::kThreads:
      snprintf(buf, sizeof(buf), "%.2f always-runnable threads of other work (--other-work threads)",
               background_threads);
      return buf;
  }
  return "";
}

Calibration Calibrate(OtherWork model, const std::vector<SimKind>& kinds, const SimConfig& recorded,
                      double recorded_stretch) {
  Calibration c;
  c.model = model;
  c.recorded_stretch = recorded_stretch;
  SimConfig probe = recorded;
  probe.requests = std::min<uint64_t>(recorded.requests, 20000);
  probe.cpu_capacity = probe.background_threads = 0;
  auto stretch = [&](double x) {
    if (model == OtherWork::kShare) probe.cpu_capacity = x;
    else probe.background_threads = x;
    return Simulate(kinds, probe).cpu_stretch;
  };
  c.simulated_stretch = stretch(model == OtherWork::kShare ? recorded.cpus : 0);
  // The requests alone explain their waits: nothing else to model.
  if (model == OtherWork::kNone || c.simulated_stretch >= recorded_stretch) return c;
  double value = 0;
  if (model == OtherWork::kShare) {
    // Fewer CPUs left, more stretch: bisect the CPUs left.
    double lo = 0.01 * recorded.cpus, hi = recorded.cpus;
    for (int i = 0; i < 14; ++i) {
      const double mid = (lo + hi) / 2;
      (stretch(mid) > recorded_stretch ? lo : hi) = mid;
    }
    value = (lo + hi) / 2;
    c.cpu_capacity = value;
    c.other_cpus = recorded.cpus - value;
  } else {
    const double limit = 64.0 * recorded.cpus;
    double lo = 0, hi = recorded.cpus;
    while (stretch(hi) < recorded_stretch && hi < limit) lo = hi, hi *= 2;
    for (int i = 0; i < 12; ++i) {
      const double mid = (lo + hi) / 2;
      (stretch(mid) < recorded_stretch ? lo : hi) = mid;
    }
    value = (lo + hi) / 2;
    c.background_threads = value;
  }
  c.simulated_stretch = stretch(value);
  return c;
}

}  // namespace jackdaw::predict
