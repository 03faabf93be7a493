#include "diff/change_detection.h"

#include <algorithm>
#include <cmath>
#include <span>

#include "diff/statistics.h"

namespace jackdaw::diff {
namespace {

// A matched kind's members on one side, pooled over its clusters.
struct Pooled {
  std::vector<double> latency_ms, cpu_ms, disk_bytes, net_bytes;
  double cpu_sum_ns = 0;
  uint64_t requests() const { return latency_ms.size(); }
  double mean_cpu_ns() const { return latency_ms.empty() ? 0 : cpu_sum_ns / double(requests()); }
};

Pooled Pool(const Side& side, const std::vector<uint32_t>& kinds) {
  Pooled p;
  for (uint32_t i : kinds) {
    const Kind& k = side.kinds[i];
    p.latency_ms.insert(p.latency_ms.end(), k.latency_ms.begin(), k.latency_ms.end());
    p.cpu_ms.insert(p.cpu_ms.end(), k.cpu_ms.begin(), k.cpu_ms.end());
    p.disk_bytes.insert(p.disk_bytes.end(), k.disk_bytes.begin(), k.disk_bytes.end());
    p.net_bytes.insert(p.net_bytes.end(), k.net_bytes.begin(), k.net_bytes.end());
    p.cpu_sum_ns += k.mean_cpu_ns * double(k.requests());
  }
  return p;
}

std::vector<std::string> Labels(const Side& side, const std::vector<uint32_t>& kinds) {
  std::vector<std::string> out;
  for (uint32_t i : kinds) out.push_back(side.kinds[i].label);
  return out;
}

std::string Join(const std::vector<std::string>& labels) {
  std::string s;
  for (const std::string& l : labels) s += (s.empty() ? "" : "+") + l;
  return s;
}

double Rate(uint64_t requests, double duration_s) { return duration_s > 0 ? double(requests) / duration_s : 0; }

bool AllZero(std::span<const double> v) {
  return std::all_of(v.begin(), v.end(), [](double x) { return x == 0; });
}

// A per-request metric of one matched kind, or nothing when neither side has it.
void AddDistributionChange(std::vector<Change>& out, const std::string& kind, Metric metric,
                           const std::vector<double>& before, const std::vector<double>& after,
                           double cpu_rate_delta = 0) {
  if (AllZero(before) && AllZero(after)) return;
  Change c;
  c.kind = kind;
  c.metric = metric;
  c.before = Median(before);
  c.after = Median(after);
  c.effect = RelativeChange(c.before, c.after);
  c.raw_p = MannWhitneyU(before, after).p_value;
  c.cpu_rate_delta = cpu_rate_delta;
  out.push_back(c);
}

// A kind's share of the mix on both sides (0 where it is absent: a
// structure change), tested as two proportions; its CPU part is its rate
// change at the CPU per request given.
Change ShareChange(const std::string& kind, Metric metric, uint64_t n_before, uint64_t n_after, const Side& before,
                   const Side& after, double cpu_per_request_ns) {
  Change c;
  c.kind = kind;
  c.metric = metric;
  c.before = before.requests ? double(n_before) / double(before.requests) : 0;
  c.after = after.requests ? double(n_after) / double(after.requests) : 0;
  c.effect = RelativeChange(c.before, c.after);
  c.raw_p = TwoProportionZ(n_before, before.requests, n_after, after.requests).p_value;
  c.rate_before = Rate(n_before, before.duration_s);
  c.rate_after = Rate(n_after, after.duration_s);
  c.cpu_rate_delta = (c.rate_after - c.rate_before) * cpu_per_request_ns / 1e9;
  if (metric == Metric::kStructure) c.structure_requests = std::max(n_before, n_after);
  return c;
}

// CPU-seconds per second the side's requests demanded.
double CpuRate(const Side& side) {
  double ns = 0;
  for (const Kind& k : side.kinds) ns += k.mean_cpu_ns * double(k.requests());
  return side.duration_s > 0 ? ns / 1e9 / side.duration_s : 0;
}

}  // namespace

const char* MetricName(Metric m) {
  switch (m) {
    case Metric::kFrequency: return "frequency";
    case Metric::kLatency: return "latency";
    case Metric::kCpu: return "cpu";
    case Metric::kDisk: return "disk";
    case Metric::kNet: return "net";
    case Metric::kStructure: return "structure";
  }
  return "?";
}

const char* MetricUnit(Metric m) {
  switch (m) {
    case Metric::kFrequency:
    case Metric::kStructure: return "share";
    case Metric::kLatency:
    case Metric::kCpu: return "ms";
    case Metric::kDisk:
    case Metric::kNet: return "bytes";
  }
  return "";
}

void CorrectAndRank(std::vector<Change>& changes, const DiffOptions& o) {
  std::vector<double> raw;
  for (const Change& c : changes) raw.push_back(c.raw_p);
  const std::vector<double> adjusted = BenjaminiHochberg(raw);
  for (size_t i = 0; i < changes.size(); ++i) {
    Change& c = changes[i];
    c.p_value = adjusted[i];
    const bool of_the_mix = c.metric == Metric::kFrequency || c.metric == Metric::kStructure;
    const double min_effect = of_the_mix ? o.min_effect : o.min_request_effect;
    c.significant = adjusted[i] < o.alpha && std::fabs(c.effect) >= min_effect;
    if (c.metric == Metric::kStructure && c.structure_requests < o.min_structure_requests) c.significant = false;
  }
  std::stable_sort(changes.begin(), changes.end(), [](const Change& x, const Change& y) {
    if (x.significant != y.significant) return x.significant;
    if (x.share != y.share) return x.share > y.share;
    return std::fabs(x.effect) > std::fabs(y.effect);
  });
}

DiffResult DetectChanges(const Side& before, const Side& after, const KindMatching& matching,
                         const DiffOptions& options) {
  DiffResult r;
  r.before_requests = before.requests;
  r.after_requests = after.requests;
  r.before_duration_s = before.duration_s;
  r.after_duration_s = after.duration_s;
  std::vector<Change> changes;

  for (const MatchedKind& m : matching.matched) {
    const Pooled b = Pool(before, m.before), a = Pool(after, m.after);
    KindSummary s;
    s.before_labels = Labels(before, m.before);
    s.after_labels = Labels(after, m.after);
    s.kind = Join(s.before_labels);
    s.before_requests = b.requests();
    s.after_requests = a.requests();
    s.distance = m.distance;
    r.matched.push_back(s);

    const Change f = ShareChange(s.kind, Metric::kFrequency, b.requests(), a.requests(), before, after,
                                 b.mean_cpu_ns());
    changes.push_back(f);
    // With the frequency part above, this sums to the kind's CPU-rate change.
    AddDistributionChange(changes, s.kind, Metric::kCpu, b.cpu_ms, a.cpu_ms,
                          f.rate_after * (a.mean_cpu_ns() - b.mean_cpu_ns()) / 1e9);
    AddDistributionChange(changes, s.kind, Metric::kLatency, b.latency_ms, a.latency_ms);
    AddDistributionChange(changes, s.kind, Metric::kDisk, b.disk_bytes, a.disk_bytes);
    AddDistributionChange(changes, s.kind, Metric::kNet, b.net_bytes, a.net_bytes);
  }

  for (const NewKind& n : matching.added) {
    const Kind& k = after.kinds[n.after];
    KindSummary s;
    s.kind = "new:" + k.label;
    s.after_labels = {k.label};
    s.after_requests = k.requests();
    s.distance = n.distance;
    if (n.nearest_before >= 0) s.nearest_before = before.kinds[n.nearest_before].label;
    s.representative = k.representative_text;
    r.new_kinds.push_back(s);
    changes.push_back(ShareChange(s.kind, Metric::kStructure, 0, k.requests(), before, after, k.mean_cpu_ns));
  }

  for (uint32_t g : matching.gone) {
    const Kind& k = before.kinds[g];
    KindSummary s;
    s.kind = k.label;
    s.before_labels = {k.label};
    s.before_requests = k.requests();
    s.representative = k.representative_text;
    r.gone_kinds.push_back(s);
    changes.push_back(ShareChange(s.kind, Metric::kStructure, k.requests(), 0, before, after, k.mean_cpu_ns));
  }
  r.cpu_rate_before = CpuRate(before);
  r.cpu_rate_after = CpuRate(after);

  double total = 0;
  for (const Change& c : changes) total += std::fabs(c.cpu_rate_delta);
  for (Change& c : changes) c.share = total > 0 ? std::fabs(c.cpu_rate_delta) / total : 0;
  CorrectAndRank(changes, options);
  r.changes = std::move(changes);
  return r;
}

}  // namespace jackdaw::diff
