// Calibrated CPU spins, as in Magpie §6: "CPU is consumed within a tight loop
// of a fixed number of iterations". A spin of D ms runs D * iters_per_ms
// iterations of a dependent multiply-add chain; it neither sleeps nor polls a
// clock, so the work per request type is constant and what varies (cache,
// frequency, SMT neighbours) shows up in the CPU time a tracer measures.
//
// Calibration runs the same loop several times under CLOCK_THREAD_CPUTIME_ID
// (so preemption by other processes does not count) and takes the median
// iterations/ms, which is robust to the odd run that shares its core's caches
// or an SMT sibling with a busy neighbour.
#pragma once

#include <cstdint>
#include <string>
#include <sys/types.h>
#include <vector>

#include "common/status.h"

namespace jackdaw::testserver {

// Runs `iters` iterations of the spin loop. The loop's state passes through
// an empty asm statement each iteration, so the compiler can neither
// collapse nor drop it.
uint64_t SpinIterations(uint64_t iters);

// CLOCK_THREAD_CPUTIME_ID / CLOCK_MONOTONIC / CLOCK_REALTIME in ns.
uint64_t ThreadCpuNs();
uint64_t MonotonicNs();
uint64_t WallNs();

struct Calibration {
  uint64_t iters_per_ms = 0;  // the estimate used (median of runs)
  uint64_t min_iters_per_ms = 0;
  uint64_t max_iters_per_ms = 0;
  int runs = 0;
};

// Measures the loop's speed on the calling thread: `runs` runs of about
// `run_ms` ms of thread CPU time each, after a warm-up.
Calibration Calibrate(int runs = 7, int run_ms = 4);
// The calibration of measured iterations/ms, one per run (any order, at
// least one): their median, minimum and maximum.
Calibration Summarize(std::vector<uint64_t> rates);

// One spin as it actually ran, for the X-Spin-Trace header.
struct SpinRecord {
  std::string label;         // "spin", "spin1", "helper", ...
  pid_t tid = 0;             // thread that spun
  uint64_t nominal_ns = 0;   // what Table 1 asks for
  uint64_t iterations = 0;
  uint64_t cpu_ns = 0;       // CLOCK_THREAD_CPUTIME_ID delta over the loop
  uint64_t start_mono_ns = 0;
  uint64_t end_mono_ns = 0;
};

// Spins for `us` microseconds' worth of iterations on the calling thread.
SpinRecord Spin(const char* label, uint32_t us, uint64_t iters_per_ms);

}  // namespace jackdaw::testserver
