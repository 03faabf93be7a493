#include "metrics/live_metrics.h"

#include <algorithm>

#include "metrics/exposition.h"
#include "metrics/record_metrics.h"

namespace jackdaw::metrics {
namespace {

// model::LatencyHistogram bucket k ends at 1 us * 2^((k+1)/4): every fourth
// bucket, from k = 11 (8 us) to k = 99 (2^25 us = 33.6 s), ends on a power
// of two.
constexpr int kFirstBucket = 11;
constexpr int kLastBucket = 99;
constexpr int kStride = 4;

}  // namespace

const std::vector<double>& LiveMetrics::BucketBounds() {
  static const std::vector<double> bounds = [] {
    std::vector<double> b;
    for (int k = kFirstBucket; k <= kLastBucket; k += kStride) b.push_back(model::LatencyHistogram::UpperEdgeNs(k) / 1e9);
    return b;
  }();
  return bounds;
}

std::vector<uint64_t> LiveMetrics::BucketCounts(const model::LatencyHistogram& h) {
  std::vector<uint64_t> out(BucketBounds().size() + 1, 0);
  for (int k = 0; k < model::LatencyHistogram::kBuckets; ++k) {
    // Bucket k lands in the first exported bound at or above its own edge.
    size_t slot = out.size() - 1;
    if (k <= kLastBucket) slot = k <= kFirstBucket ? 0 : static_cast<size_t>((k - kFirstBucket + kStride - 1) / kStride);
    out[slot] += h.bucket(k);
  }
  return out;
}

const std::vector<double>& LiveMetrics::LikelihoodBounds() {
  // -0.002 is the usual test-server request, -0.1 live's default threshold,
  // -0.2 a 1 % branch there, -4.6 one 1 % step in a one-event string.
  static const std::vector<double> bounds = {-10, -5, -2, -1, -0.5, -0.2, -0.1, -0.05, -0.02, -0.01, -0.005, -0.001, 0};
  return bounds;
}

void LiveMetrics::OnLikelihood(double log_likelihood, bool unlikely) {
  const auto& b = LikelihoodBounds();
  if (likelihood_counts_.empty()) likelihood_counts_.assign(b.size() + 1, 0);
  const size_t slot = static_cast<size_t>(std::lower_bound(b.begin(), b.end(), log_likelihood) - b.begin());
  ++likelihood_counts_[slot];
  likelihood_sum_ += log_likelihood;
  unlikely_ += unlikely;
}

void LiveMetrics::OnRequest(const model::Request& r) {
  // Its demand and latency are what was left of it: in the totals they
  // would read as a faster, cheaper request.
  if (r.incomplete) {
    ++incomplete_;
    return;
  }
  ++requests_;
  latency_.Add(r.end_ns >= r.start_ns ? r.latency_ns() : 0);
  for (const model::RequestEvent& e : r.events) {
    cpu_ns_ += e.cpu_ns;
    disk_bytes_ += e.disk_bytes;
    net_bytes_ += e.net_bytes;
  }
}

std::string LiveMetrics::Render(const LiveState& s) const {
  Exposition x;
  const Labels schema{{"schema", schema_}};
  const auto& bounds = BucketBounds();

  x.Family("jackdaw_schema_requests_total", "Requests extracted by the schema's join.", MetricType::kCounter);
  x.Sample(schema, static_cast<double>(requests_));
  x.Family("jackdaw_schema_request_latency_seconds", "Request latency, first to last event.", MetricType::kHistogram);
  x.Histogram(schema, bounds, BucketCounts(latency_), latency_.sum_ns() / 1e9);
  x.Family("jackdaw_schema_cpu_seconds_total", "CPU time demanded by requests.", MetricType::kCounter);
  x.Sample(schema, static_cast<double>(cpu_ns_) / 1e9);
  x.Family("jackdaw_schema_disk_bytes_total", "Disk bytes demanded by requests.", MetricType::kCounter);
  x.Sample(schema, static_cast<double>(disk_bytes_));
  x.Family("jackdaw_schema_net_bytes_total", "Network bytes demanded by requests.", MetricType::kCounter);
  x.Sample(schema, static_cast<double>(net_bytes_));
  x.Family("jackdaw_schema_anomalies_total",
           "Requests that founded a new cluster after the warm-up (a behaviour not seen before).",
           MetricType::kCounter);
  x.Sample(schema, static_cast<double>(anomalies_));
  x.Family("jackdaw_schema_incomplete_requests_total",
           "Requests the capture lost records of while they ran: counted here, kept out of every other series.",
           MetricType::kCounter);
  x.Sample(schema, static_cast<double>(incomplete_));
  x.Family("jackdaw_schema_request_log_likelihood",
           "Likelihood of each scored request: mean natural-log probability per canonical event (<= 0).",
           MetricType::kHistogram);
  x.Histogram(schema, LikelihoodBounds(),
              likelihood_counts_.empty() ? std::vector<uint64_t>(LikelihoodBounds().size() + 1, 0) : likelihood_counts_,
              likelihood_sum_);
  x.Family("jackdaw_schema_unlikely_requests_total",
           "Requests whose log-likelihood fell below the threshold (a rare path under the likelihood model).",
           MetricType::kCounter);
  x.Sample(schema, static_cast<double>(unlikely_));
  x.Family("jackdaw_likelihood_model_states", "States of the automaton scoring requests (0: still warming up).",
           MetricType::kGauge);
  x.Sample(schema, static_cast<double>(s.likelihood_states));

  std::vector<Labels> cl;
  cl.reserve(s.clusters.size());
  for (const auto& c : s.clusters) cl.push_back({{"schema", schema_}, {"cluster", std::to_string(c.id)}});
  x.Family("jackdaw_cluster_requests_total", "Requests assigned to the cluster.", MetricType::kCounter);
  for (size_t i = 0; i < s.clusters.size(); ++i) x.Sample(cl[i], static_cast<double>(s.clusters[i].count));
  x.Family("jackdaw_cluster_request_latency_seconds", "Latency of the cluster's requests.", MetricType::kHistogram);
  for (size_t i = 0; i < s.clusters.size(); ++i)
    x.Histogram(cl[i], bounds, BucketCounts(s.clusters[i].latency), s.clusters[i].latency.sum_ns() / 1e9);
  x.Family("jackdaw_cluster_cpu_seconds_total", "CPU time demanded by the cluster's requests.", MetricType::kCounter);
  for (size_t i = 0; i < s.clusters.size(); ++i) x.Sample(cl[i], s.clusters[i].demand_sum.cpu_ns / 1e9);
  x.Family("jackdaw_cluster_disk_bytes_total", "Disk bytes demanded by the cluster's requests.", MetricType::kCounter);
  for (size_t i = 0; i < s.clusters.size(); ++i) x.Sample(cl[i], s.clusters[i].demand_sum.disk_bytes);
  x.Family("jackdaw_cluster_net_bytes_total", "Network bytes demanded by the cluster's requests.", MetricType::kCounter);
  for (size_t i = 0; i < s.clusters.size(); ++i) x.Sample(cl[i], s.clusters[i].demand_sum.net_bytes);
  x.Family("jackdaw_cluster_anomalous", "1 if the cluster is small enough to count as an anomaly.", MetricType::kGauge);
  for (size_t i = 0; i < s.clusters.size(); ++i) x.Sample(cl[i], s.clusters[i].anomalous ? 1 : 0);
  // Requests across processes: each process's part of the cluster's
  // demand (a stack's proxy, app server and database), for clusters whose
  // requests crossed processes; a process is its name and its tier. The
  // means times the count give the totals back.
  struct ProcessPart {
    Labels labels;
    double cpu_ns, disk_bytes;
  };
  std::vector<ProcessPart> parts;
  for (size_t i = 0; i < s.clusters.size(); ++i) {
    const double n = static_cast<double>(s.clusters[i].count);
    for (const model::ProcessDemand& d : s.clusters[i].processes.Means(s.clusters[i].count)) {
      Labels l = cl[i];
      l.push_back({"process", d.comm.empty() ? "?" : d.comm});
      l.push_back({"tier", std::to_string(d.tier)});
      parts.push_back({std::move(l), d.cpu_ns * n, d.disk_bytes * n});
    }
  }
  if (!parts.empty()) {
    x.Family("jackdaw_cluster_process_cpu_seconds_total",
             "CPU time demanded by the cluster's requests in one process of the stack.", MetricType::kCounter);
    for (const ProcessPart& p : parts) x.Sample(p.labels, p.cpu_ns / 1e9);
    x.Family("jackdaw_cluster_process_disk_bytes_total",
             "Disk bytes demanded by the cluster's requests in one process of the stack.", MetricType::kCounter);
    for (const ProcessPart& p : parts) x.Sample(p.labels, p.disk_bytes);
  }

  RenderGroups(x, s.groups);

  x.Family("jackdaw_records_total", "Records read from the kernel.", MetricType::kCounter);
  x.Sample({}, static_cast<double>(s.records));
  x.Family("jackdaw_clusters", "Clusters in the model now.", MetricType::kGauge);
  x.Sample(schema, static_cast<double>(s.clusters.size()));
  x.Family("jackdaw_model_warmed_up", "1 once the warm-up batch has been clustered.", MetricType::kGauge);
  x.Sample(schema, s.warmed_up ? 1 : 0);
  x.Family("jackdaw_pipeline_delay_seconds",
           "Longest time from a request's last event to its arrival in the model, last refresh.", MetricType::kGauge);
  x.Sample({}, s.pipeline_delay_s);
  RenderProcess(x, s.rss_bytes);
  return x.Take();
}

}  // namespace jackdaw::metrics
