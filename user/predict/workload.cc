#include "predict/workload.h"

#include <algorithm>
#include <cmath>

namespace jackdaw::predict {

double RecordedWorkload::throughput_per_s() const {
  return duration_ns() > 0 ? static_cast<double>(requests) / (duration_ns() / 1e9) : 0;
}

double RecordedWorkload::mean_in_flight() const { return duration_ns() > 0 ? latency_sum_ns / duration_ns() : 0; }

uint32_t RecordedWorkload::EstimatedClients() const {
  return static_cast<uint32_t>(std::max(1.0, std::round(mean_in_flight())));
}

double RecordedWorkload::ClientGapNs(uint32_t clients) const {
  const double x = throughput_per_s();
  if (x <= 0 || requests == 0) return 0;
  const double mean_latency = latency_sum_ns / static_cast<double>(requests);
  return std::max(0.0, clients / x * 1e9 - mean_latency);
}

double RecordedWorkload::cpu_utilisation() const {
  double cpu = 0;
  for (const RecordedKind& k : kinds) cpu += k.cpu_ns;
  return duration_ns() > 0 && cpus ? cpu / (duration_ns() * cpus) : 0;
}

double RecordedWorkload::disk_utilisation() const {
  double disk = 0;
  for (const RecordedKind& k : kinds) disk += k.disk_ns;
  return duration_ns() > 0 ? std::min(1.0, disk / duration_ns()) : 0;
}

double RecordedWorkload::cpu_stretch() const {
  double cpu = 0, runq = 0;
  for (const RecordedKind& k : kinds)
    cpu += k.cpu_ns, runq += std::max(0.0, k.runq_ns - static_cast<double>(k.wakeups) * wakeup_ns);
  return cpu > 0 ? (cpu + runq) / cpu : 1;
}

const RecordedKind* RecordedWorkload::Find(const std::string& label) const {
  for (const RecordedKind& k : kinds)
    if (k.label == label) return &k;
  return nullptr;
}

namespace {
constexpr size_t kMaxWakeGaps = 1 << 18;
}  // namespace

void WorkloadCollector::Add(const model::Request& r) {
  Pending p{BuildScript(r), r.start_ns, r.end_ns};
  for (uint32_t g : p.script.wake_gaps_ns)
    if (wake_gaps_.size() < kMaxWakeGaps) wake_gaps_.push_back(g);
  std::vector<uint32_t>().swap(p.script.wake_gaps_ns);
  pending_[r.id] = std::move(p);
}

void WorkloadCollector::Assign(uint64_t request_id, uint64_t cluster_id) {
  auto it = pending_.find(request_id);
  if (it == pending_.end()) return;
  Pending p = std::move(it->second);
  pending_.erase(it);
  Bucket& b = buckets_[cluster_id];
  RecordedKind& k = b.kind;
  k.count++;
  k.latencies_ns.push_back(static_cast<double>(p.end_ns - p.start_ns));
  k.cpu_ns += static_cast<double>(p.script.cpu_ns);
  k.disk_ns += static_cast<double>(p.script.disk_ns);
  k.runq_ns += static_cast<double>(p.script.recorded_runq_ns);
  k.wakeups += p.script.recorded_wakeups;
  b.first_start = std::min(b.first_start, p.start_ns);
  b.last_end = std::max(b.last_end, p.end_ns);
  // Reservoir sampling: every request of the kind equally likely kept.
  if (k.scripts.size() < per_kind_) {
    k.scripts.push_back(std::move(p.script));
  } else {
    const uint64_t j = std::uniform_int_distribution<uint64_t>(0, k.count - 1)(rng_);
    if (j < per_kind_) k.scripts[j] = std::move(p.script);
  }
}

RecordedWorkload WorkloadCollector::Finish(const std::vector<std::pair<uint64_t, std::string>>& labels,
                                           uint32_t cpus) {
  RecordedWorkload w;
  w.cpus = cpus;
  w.first_start_ns = UINT64_MAX;
  for (const auto& [id, label] : labels) {
    auto it = buckets_.find(id);
    if (it == buckets_.end()) continue;
    Bucket& b = it->second;
    b.kind.label = label;
    w.requests += b.kind.count;
    for (double l : b.kind.latencies_ns) w.latency_sum_ns += l;
    w.first_start_ns = std::min(w.first_start_ns, b.first_start);
    w.last_end_ns = std::max(w.last_end_ns, b.last_end);
    w.kinds.push_back(std::move(b.kind));
    buckets_.erase(it);
  }
  for (const auto& [id, b] : buckets_) w.unassigned += b.kind.count;
  if (w.kinds.empty()) w.first_start_ns = w.last_end_ns = 0;
  if (!wake_gaps_.empty()) {
    auto q = wake_gaps_.begin() + static_cast<ptrdiff_t>(wake_gaps_.size() / 4);
    std::nth_element(wake_gaps_.begin(), q, wake_gaps_.end());
    w.wakeup_ns = *q;
  }
  wake_gaps_.clear();
  buckets_.clear();
  pending_.clear();
  return w;
}

}  // namespace jackdaw::predict
