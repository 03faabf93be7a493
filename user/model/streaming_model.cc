#include "model/streaming_model.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <unordered_map>
#include <utility>

#include "model/breakdown.h"
#include "model/explain.h"

namespace jackdaw::model {
namespace {

RequestSummary Summarize(const Request& r, const canonical::CanonicalRequest& c) {
  RequestSummary s;
  s.id = r.id;
  s.start_ns = r.start_ns;
  s.latency_ns = r.end_ns >= r.start_ns ? r.latency_ns() : 0;
  s.canonical_latency_ns = c.latency_ns;
  s.demand = c.total;
  s.num_events = static_cast<uint32_t>(c.events.size());
  s.num_threads = c.num_threads;
  s.processes = r.processes;
  return s;
}

void AddStats(ModelStats* m, const canonical::CanonicalStats& s) {
  m->dropped_scheduling_events += s.dropped_scheduling_events;
  m->ignored_backward_edges += s.ignored_backward_edges;
  m->duplicate_edges += s.duplicate_edges;
  m->merged_repeats += s.merged_repeats;
  m->merged_edges += s.merged_edges;
  m->elided_wakeup_forks += s.elided_wakeup_forks;
  m->inferred_joins += s.inferred_joins;
  m->idle_wakeups += s.idle_wakeups;
}

}  // namespace

void LatencyHistogram::Add(uint64_t ns) {
  int k = 0;
  if (static_cast<double>(ns) >= kBaseNs)
    k = std::min(kBuckets - 1, static_cast<int>(4 * std::log2(static_cast<double>(ns) / kBaseNs)));
  ++buckets_[k];
  ++count_;
  sum_ns_ += static_cast<double>(ns);
}

double LatencyHistogram::UpperEdgeNs(int bucket) {
  return kBaseNs * std::exp2(static_cast<double>(bucket + 1) / 4);
}

double LatencyHistogram::QuantileNs(double q) const {
  if (count_ == 0) return 0;
  const double want = std::clamp(q, 0.0, 1.0) * static_cast<double>(count_);
  uint64_t seen = 0;
  for (int k = 0; k < kBuckets; ++k) {
    seen += buckets_[k];
    if (buckets_[k] && static_cast<double>(seen) >= want) return UpperEdgeNs(k);
  }
  return UpperEdgeNs(kBuckets - 1);
}

class StreamingModel::Impl {
 public:
  struct Retained {
    Request request;
    canonical::CanonicalRequest canonical;
    canonical::SerializedRequest serialized;
    RequestSummary summary;
  };

  StreamingModelOptions options;
  std::optional<canonical::Canonicalizer> canonicalize;  // options.model.canonical's
  AssignCallback on_assign;
  StreamingModelStats stats;
  std::vector<Request> buffer;  // warm-up
  uint64_t first_start_ns = 0;
  canonical::SymbolTable symbols;
  cluster::Normalization norm;
  cluster::ThresholdEstimate threshold;
  ModelStats model_stats;
  std::unique_ptr<cluster::StreamingClusterer> clusterer;
  std::map<uint64_t, Retained> retained;  // by key = arrival order
  std::unordered_map<uint64_t, ClusterRunning> running;
  uint64_t next_key = 0;

  void Track(uint64_t key_count_delta) {
    stats.retained = retained.size() + buffer.size();
    stats.peak_retained = std::max(stats.peak_retained, stats.retained);
    (void)key_count_delta;
  }

  void Account(ClusterRunning* c, const RequestSummary& s) {
    ++c->count;
    Resources d = FromDemand(s.demand);
    for (int r = 0; r < cluster::kNumResources; ++r) c->demand_sum.set(r, c->demand_sum.get(r) + d.get(r));
    c->latency.Add(s.latency_ns);
    c->processes.Add(s.processes);
    if (c->count == 1 || s.start_ns < c->first_ns) c->first_ns = s.start_ns;
    c->last_ns = std::max(c->last_ns, s.start_ns);
  }

  void Release(const std::vector<uint64_t>& keys) {
    for (uint64_t k : keys) retained.erase(k);
  }

  // Drops the running statistics of clusters the clusterer no longer has.
  void Prune() {
    if (running.size() == clusterer->clusters().size()) return;
    std::unordered_map<uint64_t, ClusterRunning> kept;
    for (const auto& c : clusterer->clusters()) kept.emplace(c.id, std::move(running[c.id]));
    running = std::move(kept);
  }

  Status EndWarmup() {
    ASSIGN_OR_RETURN(WorkloadModel wm, BuildModel(buffer, options.model));
    norm = wm.normalization;
    threshold = wm.threshold;
    symbols = std::move(wm.symbols);
    model_stats = wm.stats;
    cluster::StreamingOptions so;
    so.threshold = threshold.threshold;
    so.sample_per_cluster = options.sample_per_cluster;
    so.max_clusters = options.max_clusters;
    so.idle_ns = options.idle_ns;
    so.medoid_sample = std::min<uint32_t>(options.model.cluster.medoid_sample, 24);
    clusterer = std::make_unique<cluster::StreamingClusterer>(so);
    std::vector<uint64_t> cluster_id(wm.clusters.size());
    std::vector<bool> keep(buffer.size(), false);
    for (const ClusterSummary& cs : wm.clusters) {
      std::vector<cluster::StreamingClusterer::Member> members;
      uint32_t rep = 0;
      ClusterRunning run;
      for (uint32_t i : cs.members) {
        if (i == cs.representative) rep = static_cast<uint32_t>(members.size());
        members.push_back({cluster::Normalize(wm.serialized[i], norm), i, static_cast<float>(wm.requests[i].distance)});
        Account(&run, wm.requests[i]);
      }
      std::vector<uint64_t> released =
          clusterer->Seed(std::move(members), rep, cs.size, cs.diameter * cs.size, cs.max_distance,
                          run.first_ns, run.last_ns);
      const auto& seeded = clusterer->clusters().back();
      for (const auto& m : seeded.sample) keep[m.key] = true;
      run.id = seeded.id;
      cluster_id[cs.id] = seeded.id;
      running.emplace(run.id, std::move(run));
    }
    for (size_t i = 0; i < buffer.size(); ++i) {
      if (on_assign)
        on_assign(Assigned{wm.requests[i].id, cluster_id[wm.requests[i].cluster], wm.requests[i].distance, false});
      if (!keep[i]) continue;
      retained.emplace(i, Retained{std::move(buffer[i]), std::move(wm.canonical[i]),
                                   std::move(wm.serialized[i]), wm.requests[i]});
    }
    next_key = buffer.size();
    std::vector<Request>().swap(buffer);
    stats.warmed_up = true;
    Track(0);
    return Status::Ok();
  }

  void AddStreaming(Request&& request, canonical::CanonicalRequest* made) {
    Retained x;
    x.canonical = made ? std::move(*made) : (*canonicalize)(request);
    AddStats(&model_stats, x.canonical.stats);
    x.serialized = canonical::Serialize(x.canonical, &symbols);
    x.summary = Summarize(request, x.canonical);
    cluster::NormString ns = cluster::Normalize(x.serialized, norm);
    const uint64_t key = next_key++;
    const uint64_t start = request.start_ns;
    const RequestSummary summary = x.summary;
    cluster::StreamingClusterer::Assignment a = clusterer->Add(std::move(ns), key, start);
    // Past a cluster's first samples the reservoir keeps few requests: one
    // it does not keep is dropped here, never entered in `retained`.
    auto self = std::find(a.released.begin(), a.released.end(), key);
    if (self == a.released.end()) {
      x.request = std::move(request);
      retained.emplace(key, std::move(x));
    } else {
      a.released.erase(self);
    }
    Release(a.released);
    if (clusterer->stats().clusters_aged_out + clusterer->stats().clusters_evicted) Prune();
    ClusterRunning& run = running[a.cluster_id];
    run.id = a.cluster_id;
    Account(&run, summary);
    Track(0);
    if (on_assign) on_assign(Assigned{summary.id, a.cluster_id, a.distance, a.founded});
  }
};

StreamingModel::StreamingModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
StreamingModel::~StreamingModel() = default;

StatusOr<std::unique_ptr<StreamingModel>> StreamingModel::Create(const StreamingModelOptions& options,
                                                                 AssignCallback on_assign) {
  // BuildModel() validates the model options; check them now, not at the
  // end of the warm-up.
  RETURN_IF_ERROR(BuildModel({}, options.model).status());
  if (options.warmup_requests < 2)
    return ErrStatus("model: the warm-up needs at least 2 requests (got %u)", options.warmup_requests);
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->canonicalize.emplace(options.model.canonical);
  impl->on_assign = std::move(on_assign);
  return std::unique_ptr<StreamingModel>(new StreamingModel(std::move(impl)));
}

void StreamingModel::Add(Request&& request) { Add(std::move(request), nullptr); }

void StreamingModel::Add(Request&& request, canonical::CanonicalRequest&& canonical) {
  Add(std::move(request), &canonical);
}

void StreamingModel::Add(Request&& request, canonical::CanonicalRequest* canonical) {
  Impl& m = *impl_;
  // A request the capture lost records of would be a finding made of the
  // loss: a cluster of its own, an anomaly, a dent in the totals.
  if (request.incomplete) {
    ++m.stats.incomplete;
    return;
  }
  ++m.stats.requests;
  if (m.stats.warmed_up) return m.AddStreaming(std::move(request), canonical);
  if (m.buffer.empty()) m.first_start_ns = request.start_ns;
  const bool late = m.options.warmup_ns && request.start_ns >= m.first_start_ns + m.options.warmup_ns;
  m.buffer.push_back(std::move(request));
  m.Track(0);
  if (m.buffer.size() >= m.options.warmup_requests || late) {
    // Options were validated by Create(); BuildModel cannot fail here.
    Status s = m.EndWarmup();
    (void)s;
  }
}

Status StreamingModel::Finish() {
  // A stream that ended within its warm-up keeps its buffer: Snapshot() is
  // then BuildModel() over every request, exactly the batch model.
  return Status::Ok();
}

const StreamingModelStats& StreamingModel::stats() const {
  if (impl_->clusterer) impl_->stats.clusters = impl_->clusterer->stats();
  return impl_->stats;
}
const cluster::Normalization& StreamingModel::normalization() const { return impl_->norm; }
double StreamingModel::threshold() const { return impl_->threshold.threshold; }

std::vector<ClusterRunning> StreamingModel::Running() const {
  const Impl& m = *impl_;
  std::vector<ClusterRunning> out;
  if (!m.clusterer) return out;
  for (const auto& c : m.clusterer->clusters()) {
    auto it = m.running.find(c.id);
    if (it == m.running.end()) continue;
    ClusterRunning r = it->second;
    auto rep = m.retained.find(c.representative().key);
    if (rep != m.retained.end()) r.representative_text = canonical::ToText(rep->second.serialized, m.symbols);
    r.anomalous = r.count <= m.options.model.anomaly_max_cluster_size;
    out.push_back(std::move(r));
  }
  std::stable_sort(out.begin(), out.end(), [](const ClusterRunning& a, const ClusterRunning& b) {
    return a.count > b.count || (a.count == b.count && a.id < b.id);
  });
  return out;
}

StatusOr<WorkloadModel> StreamingModel::Snapshot(std::vector<Request>* requests_out) const {
  const Impl& im = *impl_;
  const ModelOptions& options = im.options.model;
  if (!im.stats.warmed_up) {
    ASSIGN_OR_RETURN(WorkloadModel wm, BuildModel(im.buffer, options));
    wm.streamed_requests = im.buffer.size();
    if (requests_out) *requests_out = im.buffer;
    return wm;
  }
  WorkloadModel m;
  m.accounted_cpu_fraction = options.accounted_cpu_fraction;
  m.normalization = im.norm;
  m.threshold = im.threshold;
  m.symbols = im.symbols;
  m.stats = im.model_stats;
  m.stats.distance_computations += im.clusterer->stats().distance_computations;
  m.streamed_requests = im.stats.requests;
  std::unordered_map<uint64_t, uint32_t> pos;
  std::vector<Request> requests;
  for (const auto& [key, x] : im.retained) {
    pos[key] = static_cast<uint32_t>(m.requests.size());
    m.requests.push_back(x.summary);
    m.canonical.push_back(x.canonical);
    m.serialized.push_back(x.serialized);
    requests.push_back(x.request);
  }
  const auto& sc = im.clusterer->clusters();
  std::vector<size_t> order(sc.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return sc[a].count > sc[b].count || (sc[a].count == sc[b].count && sc[a].id < sc[b].id);
  });
  m.clusters.resize(sc.size());
  double weighted_diameter = 0, total = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    const auto& src = sc[order[k]];
    const ClusterRunning& run = im.running.at(src.id);
    ClusterSummary& cs = m.clusters[k];
    cs.id = static_cast<uint32_t>(k);
    cs.label = "c" + std::to_string(k);
    cs.size = static_cast<uint32_t>(src.count);
    cs.representative = pos.at(src.representative().key);
    cs.representative_id = m.requests[cs.representative].id;
    for (const auto& mem : src.sample) {
      uint32_t p = pos.at(mem.key);
      cs.members.push_back(p);
      m.requests[p].cluster = cs.id;
      m.requests[p].distance = mem.distance;
    }
    std::sort(cs.members.begin(), cs.members.end());
    std::vector<double> cpu, disk, net, lat, canon;
    for (uint32_t p : cs.members) {
      const RequestSummary& r = m.requests[p];
      cs.member_ids.push_back(r.id);
      cpu.push_back(static_cast<double>(r.demand.cpu_ns) / 1e6);
      disk.push_back(static_cast<double>(r.demand.disk_bytes) / 1024.0);
      net.push_back(static_cast<double>(r.demand.net_bytes) / 1024.0);
      lat.push_back(static_cast<double>(r.latency_ns) / 1e6);
      canon.push_back(static_cast<double>(r.canonical_latency_ns) / 1e6);
    }
    cs.diameter = src.diameter();
    cs.max_distance = src.max_distance;
    for (int d = 0; d < cluster::kNumResources; ++d)
      cs.mean.set(d, run.demand_sum.get(d) / static_cast<double>(std::max<uint64_t>(run.count, 1)));
    cs.representative_demand = FromDemand(m.requests[cs.representative].demand);
    cs.representative_text = canonical::ToText(m.serialized[cs.representative], m.symbols);
    cs.anomalous = cs.size <= options.anomaly_max_cluster_size;
    // Quantiles from the sample, means over every member.
    cs.cpu_ms = Describe(std::move(cpu));
    cs.cpu_ms.mean = cs.mean.cpu_ns / 1e6;
    cs.disk_kb = Describe(std::move(disk));
    cs.disk_kb.mean = cs.mean.disk_bytes / 1024.0;
    cs.net_kb = Describe(std::move(net));
    cs.net_kb.mean = cs.mean.net_bytes / 1024.0;
    cs.latency_ms = Describe(std::move(lat));
    cs.latency_ms.mean = run.latency.sum_ns() / static_cast<double>(std::max<uint64_t>(run.count, 1)) / 1e6;
    cs.canonical_latency_ms = Describe(std::move(canon));
    cs.processes = run.processes.Means(run.count);
    weighted_diameter += src.sum_distance;
    total += static_cast<double>(src.count);
    for (int d = 0; d < cluster::kNumResources; ++d) {
      m.error.measured_total.set(d, m.error.measured_total.get(d) + run.demand_sum.get(d));
      m.error.model_total.set(d, m.error.model_total.get(d) +
                                     static_cast<double>(src.count) * cs.representative_demand.get(d));
    }
  }
  m.avg_diameter = total > 0 ? weighted_diameter / total : 0;

  // Separations between representatives (LowerBound prunes most pairs).
  std::vector<const cluster::NormString*> reps;
  for (size_t k = 0; k < order.size(); ++k) reps.push_back(&sc[order[k]].representative().string);
  double inter_sum = 0;
  uint64_t inter_pairs = 0;
  const size_t inter_n = std::min<size_t>(reps.size(), 64);
  for (size_t i = 0; i < reps.size(); ++i) {
    float best = std::numeric_limits<float>::infinity();
    int32_t nearest = -1;
    for (size_t j = 0; j < reps.size(); ++j) {
      if (i == j || cluster::LowerBound(*reps[i], *reps[j]) > best) continue;
      float d = cluster::Distance(*reps[i], *reps[j], best);
      if (d < best) best = d, nearest = static_cast<int32_t>(j);
    }
    m.clusters[i].min_separation = nearest >= 0 ? best : 0;
    m.clusters[i].nearest_cluster = nearest;
    if (i < inter_n)
      for (size_t j = i + 1; j < inter_n; ++j, ++inter_pairs) inter_sum += cluster::Distance(*reps[i], *reps[j]);
  }
  m.avg_inter_cluster_distance = inter_pairs ? inter_sum / static_cast<double>(inter_pairs) : 0;

  double abs_norm = 0, total_norm = 0;
  for (int k = 0; k < cluster::kNumResources; ++k) {
    double measured = m.error.measured_total.get(k);
    double diff = std::abs(m.error.model_total.get(k) - measured);
    m.error.per_resource[k] = measured > 0 ? diff / measured : 0;
    abs_norm += diff / m.normalization.scale(k);
    total_norm += measured / m.normalization.scale(k);
  }
  m.error.combined = total_norm > 0 ? abs_norm / total_norm : 0;

  // Anomalies, as BuildModel() defines them, among the retained requests.
  FindAnomalies(
      m, [&](uint32_t p) { return cluster::Normalize(m.serialized[p], m.normalization); }, options.max_reasons);
  for (const ClusterSummary& cs : m.clusters) {
    if (cs.members.size() < 2) continue;
    m.breakdowns.push_back(AnalyzeLatency(cs.id, cs.members, requests, m.requests, options.breakdown_fraction));
  }
  if (requests_out) *requests_out = std::move(requests);
  return m;
}

}  // namespace jackdaw::model
