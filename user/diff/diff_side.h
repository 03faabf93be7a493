// One side of a diff (BEFORE or AFTER): what the comparison needs of a
// workload model, taken out of it so the two sides' models (and their
// symbol tables) need not outlive the comparison.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "canonical/serialize.h"
#include "cluster/distance.h"
#include "model/workload_model.h"

namespace jackdaw::diff {

// A behavioural cluster of one side: its representative (for matching)
// and its members' per-request values (for the tests).
struct Kind {
  std::string label;  // the model's: "c0", "c1", ...
  // The representative's serialized canonical string, in Side::symbols.
  canonical::SerializedRequest representative;
  std::string representative_text;
  std::vector<double> latency_ms, cpu_ms, disk_bytes, net_bytes;  // one per member
  double mean_cpu_ns = 0;
  uint64_t requests() const { return latency_ms.size(); }
};

struct Side {
  std::vector<Kind> kinds;  // the model's order (largest first)
  canonical::SymbolTable symbols;
  cluster::Normalization normalization;
  double threshold = 0;  // the model's clustering threshold
  uint64_t requests = 0;
  // First request's start to last request's end: the span the rates are
  // per second of.
  double duration_s = 0;
};

// Requires a model whose `requests` hold every member (BuildModel(), or a
// streaming model that ended within its warm-up): tests on a reservoir
// sample would see a few requests per cluster, not the distributions.
Side SideFromModel(const model::WorkloadModel& model);

}  // namespace jackdaw::diff
