#include "diff/diff_side.h"

#include <algorithm>
#include <limits>

namespace jackdaw::diff {

Side SideFromModel(const model::WorkloadModel& m) {
  Side side;
  side.symbols = m.symbols;
  side.normalization = m.normalization;
  side.threshold = m.threshold.threshold;
  side.requests = m.requests.size();
  uint64_t first = std::numeric_limits<uint64_t>::max(), last = 0;
  for (const model::RequestSummary& r : m.requests) {
    first = std::min(first, r.start_ns);
    last = std::max(last, r.start_ns + r.latency_ns);
  }
  side.duration_s = last > first ? double(last - first) / 1e9 : 0;
  for (const model::ClusterSummary& c : m.clusters) {
    Kind k;
    k.label = c.label;
    if (c.representative < m.serialized.size()) k.representative = m.serialized[c.representative];
    k.representative_text = c.representative_text;
    double cpu_sum = 0;
    for (uint32_t i : c.members) {
      const model::RequestSummary& r = m.requests[i];
      k.latency_ms.push_back(double(r.latency_ns) / 1e6);
      k.cpu_ms.push_back(double(r.demand.cpu_ns) / 1e6);
      k.disk_bytes.push_back(double(r.demand.disk_bytes));
      k.net_bytes.push_back(double(r.demand.net_bytes));
      cpu_sum += double(r.demand.cpu_ns);
    }
    k.mean_cpu_ns = c.members.empty() ? 0 : cpu_sum / double(c.members.size());
    side.kinds.push_back(std::move(k));
  }
  return side;
}

}  // namespace jackdaw::diff
