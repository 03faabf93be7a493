#include "fleet/deviation.h"

#include <algorithm>
#include <cmath>

namespace jackdaw::fleet {

double MedianNearest(std::vector<double> others, double own) {
  if (others.empty()) return 0;
  std::sort(others.begin(), others.end());
  const size_t n = others.size();
  if (n % 2 == 1) return others[n / 2];
  const double lo = others[n / 2 - 1], hi = others[n / 2];
  return std::fabs(own - lo) <= std::fabs(own - hi) ? lo : hi;
}

std::vector<Deviation> FindDeviations(const std::vector<FleetKind>& kinds, const std::vector<HostCluster>& rows,
                                      const DeviationOptions& options) {
  struct Metric {
    const char* name;
    double HostCluster::*field;
    double min_abs;
  };
  const Metric metrics[] = {{"p50_latency_ns", &HostCluster::p50_latency_ns, options.min_latency_ns},
                            {"cpu_ns_per_request", &HostCluster::mean_cpu_ns, options.min_cpu_ns}};
  std::vector<Deviation> out;
  for (const FleetKind& k : kinds) {
    if (k.members.size() < 2) continue;
    std::vector<size_t> by_host;
    for (const KindMember& m : k.members) by_host.push_back(m.row);
    std::sort(by_host.begin(), by_host.end(), [&](size_t a, size_t b) { return rows[a].host < rows[b].host; });
    for (size_t row : by_host) {
      for (const Metric& metric : metrics) {
        const double own = rows[row].*metric.field;
        std::vector<double> others;
        for (size_t other : by_host)
          if (other != row) others.push_back(rows[other].*metric.field);
        const double mid = MedianNearest(others, own);
        if (!(mid > 0) || !std::isfinite(own) || std::fabs(own - mid) < metric.min_abs) continue;
        const double relative = (own - mid) / mid;
        if (std::fabs(relative) <= options.threshold) continue;
        Deviation d;
        d.kind = k.name;
        d.host = rows[row].host;
        d.metric = metric.name;
        d.value = own;
        d.others = mid;
        d.relative = relative;
        d.other_hosts = others.size();
        out.push_back(std::move(d));
      }
    }
  }
  return out;
}

}  // namespace jackdaw::fleet
