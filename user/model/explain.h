// Why an anomaly differs from a representative (Magpie §6.3: "a 100ms chunk
// of CPU was being consumed inside a DPC").
//
// Explain() aligns the anomaly's serialized string with the representative's
// (cluster::Align) and turns the costliest alignment steps into sentences:
// events the anomaly has and the representative lacks, events it lacks,
// events with a different symbol, and matched events whose demand differs
// noticeably. A leading sentence states the per-resource total differences
// that are noticeable. Reasons are ordered by their contribution to the
// distance. "Noticeable" is a normalised delta of at least `noticeable`;
// BuildModel passes max(kNoticeableDelta, threshold / 2) so that ordinary
// jitter inside a cluster is not reported as a difference.
#pragma once

#include <string>
#include <vector>

#include "canonical/serialize.h"
#include "cluster/distance.h"
#include "model/workload_model.h"

namespace jackdaw::model {

inline constexpr double kNoticeableDelta = 0.05;

struct Explanation {
  std::vector<std::string> reasons;
  std::vector<AnomalyEvent> events;  // the anomaly's tokens, `differs` set
};

Explanation Explain(const canonical::SerializedRequest& anomaly,
                    const cluster::NormString& anomaly_norm,
                    const canonical::SerializedRequest& representative,
                    const cluster::NormString& representative_norm,
                    const canonical::SymbolTable& symbols, const cluster::Normalization& norm,
                    double noticeable, uint32_t max_reasons);

// "1.500 ms", "12.0 KiB", "250 B": human units for reasons and reports.
std::string FormatResource(int resource, double value);

}  // namespace jackdaw::model
