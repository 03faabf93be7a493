#include "model/workload_model.h"

#include <algorithm>
#include <cmath>

#include "model/breakdown.h"
#include "model/explain.h"

namespace jackdaw::model {
Resources FromDemand(const canonical::Demand& d) {
  return Resources{static_cast<double>(d.cpu_ns), static_cast<double>(d.disk_bytes),
                   static_cast<double>(d.net_bytes)};
}

// Linear interpolation between order statistics.
Distribution Describe(std::vector<double> v) {
  Distribution d;
  if (v.empty()) return d;
  std::sort(v.begin(), v.end());
  auto q = [&](double p) {
    double pos = p * static_cast<double>(v.size() - 1);
    size_t lo = static_cast<size_t>(std::floor(pos));
    size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
  };
  d.min = v.front();
  d.p25 = q(0.25);
  d.median = q(0.5);
  d.p75 = q(0.75);
  d.max = v.back();
  double sum = 0;
  for (double x : v) sum += x;
  d.mean = sum / static_cast<double>(v.size());
  return d;
}


const char* VerdictName(LatencyBreakdown::Verdict v) {
  switch (v) {
    case LatencyBreakdown::Verdict::kNone:
      return "none";
    case LatencyBreakdown::Verdict::kWork:
      return "work";
    case LatencyBreakdown::Verdict::kRunQueue:
      return "contention: run queue";
    case LatencyBreakdown::Verdict::kIo:
      return "contention: I/O";
    case LatencyBreakdown::Verdict::kLocks:
      return "contention: locks";
    case LatencyBreakdown::Verdict::kOther:
      return "waiting: other";
  }
  return "?";
}

ModelError ComputeModelError(std::span<const RequestSummary> requests,
                             std::span<const ClusterSummary> clusters,
                             const cluster::Normalization& norm) {
  ModelError e;
  for (const RequestSummary& r : requests) {
    Resources d = FromDemand(r.demand);
    for (int k = 0; k < cluster::kNumResources; ++k)
      e.measured_total.set(k, e.measured_total.get(k) + d.get(k));
  }
  for (const ClusterSummary& c : clusters) {
    Resources rep = FromDemand(requests[c.representative].demand);
    for (int k = 0; k < cluster::kNumResources; ++k)
      e.model_total.set(k, e.model_total.get(k) + static_cast<double>(c.size) * rep.get(k));
  }
  double abs_norm = 0, total_norm = 0;
  for (int k = 0; k < cluster::kNumResources; ++k) {
    double measured = e.measured_total.get(k);
    double diff = std::abs(e.model_total.get(k) - measured);
    e.per_resource[k] = measured > 0 ? diff / measured : 0;
    abs_norm += diff / norm.scale(k);
    total_norm += measured / norm.scale(k);
  }
  e.combined = total_norm > 0 ? abs_norm / total_norm : 0;
  return e;
}

void FindAnomalies(WorkloadModel& m, const std::function<cluster::NormString(uint32_t)>& norm_of,
                   size_t max_reasons) {
  const double noticeable = std::max(kNoticeableDelta, m.threshold.threshold / 2);
  // Anomalies: members of small clusters, compared with the nearest other
  // cluster; members of ordinary clusters beyond the threshold, compared
  // with their own representative.
  for (const ClusterSummary& cs : m.clusters) {
    for (uint32_t i : cs.members) {
      Anomaly a;
      a.request = i;
      a.request_id = m.requests[i].id;
      a.cluster = cs.id;
      if (cs.anomalous) {
        a.kind = Anomaly::Kind::kSmallCluster;
        a.compared_cluster = cs.nearest_cluster;
        if (a.compared_cluster >= 0) {
          uint32_t rep = m.clusters[a.compared_cluster].representative;
          a.distance = cluster::Distance(norm_of(i), norm_of(rep));
        }
      } else if (m.requests[i].distance > m.threshold.threshold) {
        a.kind = Anomaly::Kind::kBeyondThreshold;
        a.compared_cluster = static_cast<int32_t>(cs.id);
        a.distance = m.requests[i].distance;
      } else {
        continue;
      }
      if (a.compared_cluster >= 0) {
        uint32_t rep = m.clusters[a.compared_cluster].representative;
        a.compared_request_id = m.requests[rep].id;
        Explanation ex = Explain(m.serialized[i], norm_of(i), m.serialized[rep], norm_of(rep), m.symbols,
                                 m.normalization, noticeable, max_reasons);
        a.reasons = std::move(ex.reasons);
        a.events = std::move(ex.events);
      } else {
        a.reasons.push_back("the only cluster: nothing to compare with");
        for (const canonical::Token& t : m.serialized[i].tokens)
          a.events.push_back(AnomalyEvent{m.symbols.Name(t.symbol), t.demand, false});
      }
      m.requests[i].anomaly = true;
      m.anomalies.push_back(std::move(a));
    }
  }
  std::stable_sort(m.anomalies.begin(), m.anomalies.end(),
                   [](const Anomaly& a, const Anomaly& b) { return a.distance > b.distance; });
}

StatusOr<WorkloadModel> BuildModel(std::span<const Request> requests, const ModelOptions& options) {
  if (options.normalization) {
    const cluster::Normalization& n = *options.normalization;
    if (!(n.cpu_ns > 0 && n.disk_bytes > 0 && n.net_bytes > 0))
      return ErrStatus("model: normalisation scales must be positive (cpu %g, disk %g, net %g)",
                       n.cpu_ns, n.disk_bytes, n.net_bytes);
  }
  if (!(options.breakdown_fraction > 0 && options.breakdown_fraction <= 0.5))
    return ErrStatus("model: breakdown fraction %g is outside (0, 0.5]",
                     options.breakdown_fraction);

  WorkloadModel m;
  m.streamed_requests = requests.size();
  m.accounted_cpu_fraction = options.accounted_cpu_fraction;
  const size_t n = requests.size();
  const auto& progress = options.cluster.progress;
  m.canonical.reserve(n);
  m.serialized.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    m.canonical.push_back(canonical::Canonicalize(requests[i], options.canonical));
    const canonical::CanonicalStats& s = m.canonical.back().stats;
    m.stats.dropped_scheduling_events += s.dropped_scheduling_events;
    m.stats.ignored_backward_edges += s.ignored_backward_edges;
    m.stats.duplicate_edges += s.duplicate_edges;
    m.stats.merged_repeats += s.merged_repeats;
    m.stats.merged_edges += s.merged_edges;
    m.stats.elided_wakeup_forks += s.elided_wakeup_forks;
    m.stats.inferred_joins += s.inferred_joins;
    m.stats.idle_wakeups += s.idle_wakeups;
    m.serialized.push_back(canonical::Serialize(m.canonical.back(), &m.symbols));
    if (progress && ((i + 1) % 1024 == 0 || i + 1 == n)) progress("canonicalize", i + 1, n);
  }

  m.normalization =
      options.normalization ? *options.normalization : cluster::DeriveNormalization(m.serialized);
  std::vector<cluster::NormString> norm;
  norm.reserve(n);
  for (const canonical::SerializedRequest& s : m.serialized)
    norm.push_back(cluster::Normalize(s, m.normalization));

  cluster::Clustering c = cluster::ClusterRequests(norm, options.cluster);
  m.threshold = c.threshold;
  m.avg_diameter = c.avg_diameter;
  m.avg_inter_cluster_distance = c.avg_inter_cluster_distance;
  m.stats.distance_computations = c.distance_computations;
  m.stats.refine_moves = c.refine_moves;
  m.stats.merged_clusters = c.merged_clusters;
  m.stats.outlier_clusters = c.outlier_clusters;
  m.stats.outlier_requests = c.outlier_requests;

  m.requests.resize(n);
  for (size_t i = 0; i < n; ++i) {
    RequestSummary& r = m.requests[i];
    r.id = requests[i].id;
    r.cluster = c.assignment[i];
    r.distance = c.distance[i];
    r.start_ns = requests[i].start_ns;
    r.latency_ns = requests[i].end_ns >= requests[i].start_ns ? requests[i].latency_ns() : 0;
    r.canonical_latency_ns = m.canonical[i].latency_ns;
    r.demand = m.canonical[i].total;
    r.num_events = static_cast<uint32_t>(m.canonical[i].events.size());
    r.num_threads = m.canonical[i].num_threads;
    r.processes = requests[i].processes;
  }

  m.clusters.resize(c.clusters.size());
  for (size_t k = 0; k < c.clusters.size(); ++k) {
    const cluster::Cluster& src = c.clusters[k];
    ClusterSummary& cs = m.clusters[k];
    cs.id = static_cast<uint32_t>(k);
    cs.label = "c" + std::to_string(k);
    cs.size = static_cast<uint32_t>(src.members.size());
    cs.representative = src.representative;
    cs.representative_id = m.requests[src.representative].id;
    cs.members = src.members;
    cs.diameter = src.diameter;
    cs.max_distance = src.max_distance;
    cs.min_separation = src.min_separation;
    cs.nearest_cluster = src.nearest_cluster;
    cs.representative_demand = FromDemand(m.requests[src.representative].demand);
    cs.representative_text = canonical::ToText(m.serialized[src.representative], m.symbols);
    cs.anomalous = cs.size <= options.anomaly_max_cluster_size;
    std::vector<double> cpu, disk, net, lat, canon;
    ProcessMix mix;
    for (uint32_t i : src.members) {
      const RequestSummary& r = m.requests[i];
      mix.Add(r.processes);
      cs.member_ids.push_back(r.id);
      cs.mean.cpu_ns += static_cast<double>(r.demand.cpu_ns);
      cs.mean.disk_bytes += static_cast<double>(r.demand.disk_bytes);
      cs.mean.net_bytes += static_cast<double>(r.demand.net_bytes);
      cpu.push_back(static_cast<double>(r.demand.cpu_ns) / 1e6);
      disk.push_back(static_cast<double>(r.demand.disk_bytes) / 1024.0);
      net.push_back(static_cast<double>(r.demand.net_bytes) / 1024.0);
      lat.push_back(static_cast<double>(r.latency_ns) / 1e6);
      canon.push_back(static_cast<double>(r.canonical_latency_ns) / 1e6);
    }
    for (int d = 0; d < cluster::kNumResources; ++d)
      cs.mean.set(d, cs.mean.get(d) / static_cast<double>(cs.size));
    cs.cpu_ms = Describe(std::move(cpu));
    cs.disk_kb = Describe(std::move(disk));
    cs.net_kb = Describe(std::move(net));
    cs.latency_ms = Describe(std::move(lat));
    cs.canonical_latency_ms = Describe(std::move(canon));
    cs.processes = mix.Means(cs.size);
  }

  m.error = ComputeModelError(m.requests, m.clusters, m.normalization);

  FindAnomalies(m, [&](uint32_t p) { return norm[p]; }, options.max_reasons);

  for (const ClusterSummary& cs : m.clusters) {
    if (cs.size < 2) continue;
    m.breakdowns.push_back(
        AnalyzeLatency(cs.id, cs.members, requests, m.requests, options.breakdown_fraction));
  }
  return m;
}

}  // namespace jackdaw::model
