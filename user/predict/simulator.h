// A discrete-event simulation of one machine serving replayed requests:
// CPUs under processor sharing (cpu_pool.h), one FIFO disk, external waits
// as fixed delays, requests' threads synchronized by their edges
// (script.h). Load is closed-loop (N clients, each sending its next request
// when the last one finished, after its think time) or open-loop (Poisson
// arrivals).
//
// Deterministic: the same kinds, scripts and config give the same result.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "predict/script.h"

namespace jackdaw::predict {

// One kind of request (a cluster of the workload model): recorded requests
// to replay, chosen uniformly, and its share of the arrivals.
struct SimKind {
  std::string label;
  std::vector<const RequestScript*> scripts;
  double share = 0;
  // What-if multipliers on this kind's demands (1 = as recorded).
  double cpu_scale = 1, disk_scale = 1, wait_scale = 1;
};

struct SimConfig {
  uint32_t cpus = 1;
  double cpu_speed = 1, disk_speed = 1;  // 2 = twice as fast
  // Other work sharing the CPUs (cpu_pool.h): the CPUs left to the
  // requests (0: all), or always-runnable threads beside them.
  double cpu_capacity = 0;
  double background_threads = 0;
  // From a thread's wake-up (a signal, its disk I/O done, its wait over)
  // to its running again on an idle CPU: the kernel's wake-up latency.
  double wakeup_ns = 0;
  // A woken thread's first CPU, up to this much, runs ahead of threads
  // that kept running (the kernel's placement of a woken task, EEVDF's
  // base slice); 0: plain processor sharing.
  double woken_slice_ns = 0;
  // Closed loop when clients > 0: each client's cycle is its request, a
  // fixed gap (the client's own time between requests) and an exponential
  // think time of mean think_ns.
  uint32_t clients = 0;
  double client_gap_ns = 0;
  double think_ns = 0;
  // Open loop when rate_per_s > 0: Poisson arrivals.
  double rate_per_s = 0;
  uint64_t requests = 100000;   // completions measured
  uint64_t warmup = 0;          // completions before measuring (default: requests / 10)
  uint64_t seed = 1;
  uint64_t max_in_flight = 200000;  // open loop beyond saturation stops here
};

struct KindStats {
  std::string label;
  uint64_t completed = 0;
  double throughput_per_s = 0;
  double mean_ms = 0, p50_ms = 0, p95_ms = 0, p99_ms = 0;
  // Mean time per request spent, summed over its threads: on a CPU or in
  // its run queue, waiting for the disk, in external waits.
  double cpu_ms = 0, cpu_queue_ms = 0, disk_ms = 0, wait_ms = 0;
  std::string bottleneck;  // "cpu", "disk" or "wait": where most of that time went
};

struct SimResult {
  std::vector<KindStats> kinds;  // in SimKind order
  double throughput_per_s = 0;
  double cpu_utilisation = 0;   // busy CPU time over cpus x measured time
  double disk_utilisation = 0;
  double measured_s = 0;        // simulated time measured (after warm-up)
  uint64_t completed = 0;
  double mean_in_flight = 0;
  // Time requests' CPU bursts took over the CPU they needed (1: never
  // waited for a CPU), over every measured request.
  double cpu_stretch = 1;
  bool saturated = false;       // open loop: arrivals outran the machine
  std::string bottleneck;       // the most utilised resource, "cpu" or "disk"
  uint64_t events = 0;          // simulation events processed
};

// Quantile q of `v` (reordered), linear between order statistics.
double Quantile(std::vector<double>& v, double q);

// Kinds with no scripts or no share never arrive. Config must be valid
// (cpus > 0, one of clients / rate_per_s): the caller checks user input.
SimResult Simulate(const std::vector<SimKind>& kinds, const SimConfig& config);

}  // namespace jackdaw::predict
