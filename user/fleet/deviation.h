// Comparison-based diagnosis across hosts (docs/clickhouse.md, "jackdaw
// fleet"): on a kind that several hosts serve, the host whose median latency
// or CPU per request is far from what the other hosts show on the same kind.
#pragma once

#include <vector>

#include "fleet/host_cluster.h"

namespace jackdaw::fleet {

struct DeviationOptions {
  // Named when |value - others| / others exceeds this (0.5: 50 %).
  double threshold = 0.5;
  // Differences smaller than these are noise whatever their ratio (a
  // sub-microsecond kind doubling is not a diagnosis).
  double min_latency_ns = 10000;
  double min_cpu_ns = 10000;
};

// The median of `others`; with an even count, of the two middle values the
// one nearer `own`: a host is named only when even the most favourable
// middle of the others is far from it, so one deviating host does not drag
// the identical ones past the threshold with it.
double MedianNearest(std::vector<double> others, double own);

// For every kind on two or more hosts, every host and metric (p50 latency,
// CPU per request) past the threshold, in kind order then host order. With
// exactly two hosts both are named: which one is off needs a third.
std::vector<Deviation> FindDeviations(const std::vector<FleetKind>& kinds, const std::vector<HostCluster>& rows,
                                      const DeviationOptions& options);

}  // namespace jackdaw::fleet
