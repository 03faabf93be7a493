// The machine the recording ran on was not necessarily the requests' alone:
// other processes (a build, a backup, the load generator) took CPU, and the
// requests waited in the run queue for them. The trace shows it only as
// the requests' run-queue waits. Calibration finds the other work under
// which the simulated recorded conditions make requests wait for the CPUs
// as much as the recorded ones did (the same CPU stretch, (CPU + run-queue
// wait) / CPU), in one of two forms (cpu_pool.h):
//  * kShare: the CPUs left to the requests, whatever their number of
//    threads (other work in another cgroup: CFS shares the CPUs between
//    groups first; what a server beside other services gets);
//  * kThreads: always-runnable threads competing with each request thread
//    (other work in the server's own group).
// One recording cannot tell the two apart (they differ only at other
// loads); predictions keep the other work as calibrated: kShare keeps the
// CPUs it took, kThreads its threads.
#pragma once

#include <string>
#include <vector>

#include "predict/simulator.h"

namespace jackdaw::predict {

enum class OtherWork { kNone, kShare, kThreads };

struct Calibration {
  OtherWork model = OtherWork::kShare;
  double cpu_capacity = 0;        // kShare: CPUs left to the requests (0: all)
  double background_threads = 0;  // kThreads
  double recorded_stretch = 1;
  double simulated_stretch = 1;   // at the calibrated value
  // The CPUs the other work took from the requests in the recording.
  double other_cpus = 0;

  // Sets the other work on `c`, a machine with c->cpus CPUs.
  void Apply(SimConfig* c) const;
  std::string Describe() const;
};

// `recorded`: the simulated recorded conditions (cpus, clients, gaps).
// Bisection; each step is a short simulation.
Calibration Calibrate(OtherWork model, const std::vector<SimKind>& kinds, const SimConfig& recorded,
                      double recorded_stretch);

}  // namespace jackdaw::predict
