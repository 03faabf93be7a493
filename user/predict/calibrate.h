// The machine the recording ran on was not necessarily the requests' alone:
// other processes (a build, a backup, the load generator) took CPU, and the
// requests waited in the run queue for them. The trace shows it only as
// the requests' run-queue waits. Calibration finds the background load —
// always-runnable threads sharing the CPUs (cpu_pool.h) — under which the
// simulated recorded conditions make requests wait for the CPUs as much as
// the recorded ones did (the same CPU stretch, (CPU + run-queue) / CPU).
// Predictions then run on the same shared machine unless told otherwise.
#pragma once

#include <vector>

#include "predict/simulator.h"

namespace jackdaw::predict {

struct Calibration {
  double background_threads = 0;
  double recorded_stretch = 1;
  double simulated_stretch = 1;  // at background_threads
};

// `recorded`: the simulated recorded conditions (cpus, clients, gaps).
// Bisection on the background load; each step is a short simulation.
Calibration CalibrateBackground(const std::vector<SimKind>& kinds, const SimConfig& recorded,
                                double recorded_stretch);

}  // namespace jackdaw::predict
