// The overhead harness: runs a workload untraced and under each tracer in
// turn (untraced, jackdaw, perf, bpftrace; one round runs each once, so a
// slow spell of the machine hits all of them), after warm-up rounds that
// are not kept, for each probe configuration.
//
// Tracers:
//  - jackdaw: a Recorder in this process, probes limited to the workload's
//    processes (and their forks), written to a trace file;
//  - perf: `perf record -p PID` on the tracepoints of the same groups,
//    started with its events disabled and enabled through its control fifo
//    (acknowledged) before the workload is released;
//  - bpftrace: a script on the same tracepoints printing each event's
//    fields, filtered to the workload's pid, released once BEGIN has run.
// perf and bpftrace rows appear where they apply: installed, the groups have
// tracepoints, and (bpftrace) the workload is one process.
//
// The workload sees JACKDAW_OVERHEAD_MODE=untraced|jackdaw|perf|bpftrace.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "overhead/workloads.h"

namespace jackdaw::overhead {

enum class TracerKind { kUntraced, kJackdaw, kPerf, kBpftrace };
const char* TracerName(TracerKind t);

struct HarnessOptions {
  std::vector<uint32_t> configs;  // probe group masks, one configuration each
  int runs = 5;
  int warmup = 1;
  bool compare_tools = true;  // perf and bpftrace rows
  std::string work_dir = "/var/tmp";
  bool progress = true;  // one line per round on stderr
};

struct Sample {
  RunCost cost;
  uint64_t events = 0, lost = 0, bytes = 0;
  double tracer_cpu_s = 0;  // the tracer's own CPU time (jackdaw: this process)
};

struct TracerRuns {
  TracerKind tracer;
  std::vector<Sample> samples;
  std::string unavailable;  // why this tracer has no rows, if so
};

struct ConfigResult {
  uint32_t groups = 0;
  std::vector<TracerRuns> tracers;  // [0] is untraced
};

// Runs every configuration. A workload that fails ends the measurement with
// its error (exit status named); a tracer that cannot run is marked
// unavailable and the others go on.
StatusOr<std::vector<ConfigResult>> RunHarness(Workload& workload, const HarnessOptions& opts);

// perf / bpftrace event specs for a set of groups ("" if none applies).
std::vector<std::string> PerfTracepoints(uint32_t groups);
std::string BpftraceScript(uint32_t groups, pid_t pid);

// What a run of BpftraceScript printed: the event lines (one per event,
// each a one-letter tag and a space) and the events bpftrace reports lost
// ("Lost N events", on stdout in the bpftrace Debian ships, on stderr in
// later ones; once per loss). Its other lines ("Attaching N probes...",
// the ready marker) are neither.
struct BpftraceCount {
  uint64_t events = 0;
  uint64_t lost = 0;
};
BpftraceCount CountBpftraceOutput(const std::string& out, const std::string& err);

}  // namespace jackdaw::overhead
