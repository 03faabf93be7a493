// What `jackdaw predict` prints and writes: the prediction per kind, the
// machine's utilisations and bottleneck, and beside it the self-check (the
// recorded conditions simulated, compared with what was recorded), so the
// reader sees how far to trust the prediction.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "predict/calibrate.h"
#include "predict/simulator.h"
#include "predict/workload.h"

namespace jackdaw::predict {

// The measures a recording and a simulation both give.
struct Figures {
  struct Kind {
    std::string label;
    double throughput_per_s = 0, p50_ms = 0, p95_ms = 0;
    uint64_t requests = 0;  // recorded or simulated (measured) requests of the kind
  };
  double throughput_per_s = 0, cpu_utilisation = 0, disk_utilisation = 0;
  double cpu_stretch = 1;  // (CPU + run-queue wait) / CPU of the requests
  std::vector<Kind> kinds;
};

Figures RecordedFigures(const RecordedWorkload& w);
Figures SimulatedFigures(const SimResult& r);
// (simulated - recorded) / recorded; 0 when both are 0.
double RelativeError(double simulated, double recorded);

struct PredictReport {
  std::string scenario;       // "4 clients, 2 CPUs"
  std::string recorded_conditions;  // "2 clients (estimated), 2 CPUs"
  SimResult prediction;
  Figures recorded, self_check;
  // Other work sharing the CPUs (calibrate.h), calibrated from the
  // recording, in the self-check and the prediction.
  Calibration other_work;
  // When the recording shared its CPUs: the prediction under the other
  // model of that work (calibrate.h). One recording cannot tell which
  // holds; the two bracket what was measured more often than either.
  std::optional<SimResult> alternative;
  Calibration alternative_work;
};

void WriteText(const PredictReport& r, std::ostream& out);
// {kinds: [{kind, p50_ms, p95_ms, p99_ms, throughput, ...}], utilisation,
//  bottleneck, self_check: {...}}
nlohmann::ordered_json ToJson(const PredictReport& r);

}  // namespace jackdaw::predict
