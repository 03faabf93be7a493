#include "export/clickhouse/model_rows.h"

#include <algorithm>
#include <string>

namespace jackdaw::clickhouse {

std::vector<ModelCluster> ClustersOf(const std::vector<model::ClusterRunning>& running) {
  std::vector<ModelCluster> out;
  out.reserve(running.size());
  for (size_t k = 0; k < running.size(); ++k) {
    const model::ClusterRunning& c = running[k];
    const double n = static_cast<double>(std::max<uint64_t>(c.count, 1));
    ModelCluster m;
    m.cluster = static_cast<int64_t>(c.id);
    m.label = "c" + std::to_string(k);
    m.requests = c.count;
    m.mean_cpu_ns = c.demand_sum.cpu_ns / n;
    m.mean_disk_bytes = c.demand_sum.disk_bytes / n;
    m.mean_net_bytes = c.demand_sum.net_bytes / n;
    m.mean_latency_ns = c.latency.sum_ns() / n;
    m.p50_latency_ns = c.latency.QuantileNs(0.5);
    m.p99_latency_ns = c.latency.QuantileNs(0.99);
    m.anomalous = c.anomalous;
    m.representative = c.representative_text;
    out.push_back(std::move(m));
  }
  return out;
}

namespace {

// The q-quantile of sorted values: the smallest with at least q of them at
// or below it.
double Quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  size_t i = static_cast<size_t>(q * static_cast<double>(sorted.size()) + 0.999999);
  if (i > 0) --i;
  return sorted[std::min(i, sorted.size() - 1)];
}

}  // namespace

std::vector<ModelCluster> ClustersOf(const model::WorkloadModel& m) {
  std::vector<ModelCluster> out;
  out.reserve(m.clusters.size());
  for (const model::ClusterSummary& cs : m.clusters) {
    ModelCluster c;
    c.cluster = cs.id;
    c.label = cs.label;
    c.requests = cs.size;
    c.mean_cpu_ns = cs.mean.cpu_ns;
    c.mean_disk_bytes = cs.mean.disk_bytes;
    c.mean_net_bytes = cs.mean.net_bytes;
    std::vector<double> lat;
    lat.reserve(cs.members.size());
    for (uint32_t i : cs.members)
      if (i < m.requests.size()) lat.push_back(static_cast<double>(m.requests[i].latency_ns));
    std::sort(lat.begin(), lat.end());
    double sum = 0;
    for (double v : lat) sum += v;
    c.mean_latency_ns = lat.empty() ? 0 : sum / static_cast<double>(lat.size());
    c.p50_latency_ns = Quantile(lat, 0.5);
    c.p99_latency_ns = Quantile(lat, 0.99);
    c.anomalous = cs.anomalous;
    c.representative = cs.representative_text;
    out.push_back(std::move(c));
  }
  return out;
}

std::unordered_map<uint64_t, int64_t> ClusterOfRequests(const model::WorkloadModel& m) {
  std::unordered_map<uint64_t, int64_t> out;
  out.reserve(m.requests.size());
  for (const model::RequestSummary& r : m.requests) out[r.id] = r.cluster;
  return out;
}

}  // namespace jackdaw::clickhouse
