// A recorded request turned into what the simulator replays: per thread, a
// sequence of demands (CPU bursts, disk I/Os, external waits) and the
// synchronization between the request's threads (its causal edges).
//
// What is kept and what is not (docs/predict.md):
//  * CPU: every event's cpu_ns, in place; interrupt work (tid 0) is charged
//    to the next task event's thread, so the machine carries it.
//  * Disk: each block I/O (io_start paired FIFO with block_complete) is
//    submitted to the disk queue where the thread started it, with its
//    recorded service time; a thread that blocked until an I/O completed
//    waits for that I/O in the simulation too.
//  * Synchronization: an edge between two task threads of the request is a
//    Signal on the source's thread and a Wait on the target's; the time the
//    target spent waiting for it is not replayed (the simulation produces
//    it). Only edges that go forward in event order are kept, so replaying
//    in recorded order is always possible (no deadlock).
//  * Other blocking (network, timers, anything woken from outside the
//    request) is a fixed delay of the recorded length, less the run-queue
//    wait the recording saw after the wake-up.
//  * Run-queue waiting (after preemption, or after a wake-up) is never
//    replayed: it is what the simulated scheduler produces.
//  * A thread that does not begin with a wait starts when it did in the
//    recording, after the request's first event (a connection's packets
//    arriving, say): that offset is an external delay, its wake-up in it.
#pragma once

#include <cstdint>
#include <vector>

#include "request/request.h"

namespace jackdaw::predict {

enum class StepKind : uint8_t {
  kCpu,         // ns of CPU at speed 1
  kDelay,       // ns of external wait (network, timers, other processes);
                // arg 1: the wake-up that ends it is in ns already
  kDiskSubmit,  // I/O `arg` enters the disk queue; its service is ns
  kDiskWait,    // block until I/O `arg` of this request has completed
  kSignal,      // edge `arg` fires (wakes its target if it is waiting)
  kWait,        // block until edge `arg` has fired
};

struct Step {
  StepKind kind = StepKind::kCpu;
  uint32_t arg = 0;
  uint64_t ns = 0;
};

struct ThreadScript {
  std::vector<Step> steps;
};

struct RequestScript {
  std::vector<ThreadScript> threads;
  uint32_t edges = 0;  // Signal/Wait ids are 0..edges-1
  uint32_t ios = 0;    // DiskSubmit/DiskWait ids are 0..ios-1
  uint64_t recorded_latency_ns = 0;
  uint64_t recorded_runq_ns = 0;  // the request's run-queue waits, as recorded
  // Times a thread of the request woke from blocking, and for wake-ups by
  // another of its threads, the time from the signal to the wakee running
  // (wake-up latency, plus run-queue wait when the CPUs were busy).
  uint32_t recorded_wakeups = 0;
  std::vector<uint32_t> wake_gaps_ns;
  // Totals of what the script replays (for utilisations and tests).
  uint64_t cpu_ns = 0, disk_ns = 0, delay_ns = 0;
};

RequestScript BuildScript(const model::Request& request);

}  // namespace jackdaw::predict
