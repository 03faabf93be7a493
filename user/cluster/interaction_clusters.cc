#include "cluster/interaction_clusters.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <tuple>

namespace jackdaw::cluster {
namespace {

constexpr int kDims = 6;
using Vec = std::array<double, kDims>;

uint64_t Span(uint64_t from, uint64_t to) { return from && to > from ? to - from : 0; }

struct Split {
  uint64_t kernel, app, send, total;
};

Split SplitOf(const jdw_interaction& ia) {
  Split s{};
  if (ia.role == JDW_ROLE_SERVER) {
    s.kernel = Span(ia.req_start, ia.in_read);
    s.app = Span(ia.in_read, ia.resp_start);
  } else {
    s.kernel = Span(ia.resp_start, ia.in_read);
    s.app = Span(ia.req_end, ia.resp_start);
  }
  s.send = Span(ia.resp_start, ia.resp_end);
  s.total = Span(ia.req_start, ia.resp_end);
  return s;
}

Vec Features(const jdw_interaction& ia) {
  const Split s = SplitOf(ia);
  auto l = [](double v) { return std::log2(1.0 + v); };
  return {l(double(ia.req_bytes)), l(double(ia.resp_bytes)), l(s.kernel / 1e3),
          l(s.app / 1e3),         l(s.send / 1e3),          l(ia.oncpu_ns / 1e3)};
}

double Dist(const Vec& a, const Vec& b) {
  double d = 0;
  for (int i = 0; i < kDims; ++i) d += (a[i] - b[i]) * (a[i] - b[i]);
  return std::sqrt(d);
}

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * double(v.size())))];
}

}  // namespace

std::vector<InteractionCluster> ClusterInteractions(const std::vector<InteractionPoint>& points,
                                                    const InteractionClusterOptions& opts) {
  struct Work {
    InteractionCluster c;
    Vec sum{};
    Vec centroid{};
  };
  std::vector<Vec> feats(points.size());
  std::vector<Work> work;
  // Partition: (role, server port, process) -> clusters in it.
  std::map<std::tuple<uint8_t, uint16_t, uint32_t>, std::vector<size_t>> parts;
  for (size_t i = 0; i < points.size(); ++i) {
    const jdw_interaction& ia = points[i].ia;
    feats[i] = Features(ia);
    const uint16_t port = ia.role == JDW_ROLE_SERVER ? ia.lport : ia.rport;
    auto& list = parts[{ia.role, port, points[i].tgid}];
    size_t best = SIZE_MAX;
    double best_d = opts.threshold;
    for (size_t w : list) {
      const double d = Dist(feats[i], work[w].centroid);
      if (d <= best_d) best_d = d, best = w;
    }
    if (best == SIZE_MAX) {
      Work w;
      w.c.role = ia.role;
      w.c.port = port;
      w.c.tgid = points[i].tgid;
      best = work.size();
      work.push_back(w);
      list.push_back(best);
    }
    Work& w = work[best];
    w.c.members.push_back(i);
    for (int d = 0; d < kDims; ++d) {
      w.sum[d] += feats[i][d];
      w.centroid[d] = w.sum[d] / double(w.c.members.size());
    }
  }
  std::vector<InteractionCluster> out;
  for (Work& w : work) {
    InteractionCluster& c = w.c;
    c.size = c.members.size();
    double best = INFINITY, dia = 0;
    std::vector<double> lat;
    for (size_t m : c.members) {
      const double d = Dist(feats[m], w.centroid);
      dia += d;
      if (d < best) best = d, c.representative = m;
      const jdw_interaction& ia = points[m].ia;
      const Split s = SplitOf(ia);
      c.mean_req_bytes += double(ia.req_bytes);
      c.mean_resp_bytes += double(ia.resp_bytes);
      c.mean_kernel_ms += s.kernel / 1e6;
      c.mean_app_ms += s.app / 1e6;
      c.mean_send_ms += s.send / 1e6;
      c.mean_oncpu_ms += ia.oncpu_ns / 1e6;
      lat.push_back(s.total / 1e6);
    }
    const double n = double(c.size);
    c.diameter = dia / n;
    c.mean_req_bytes /= n;
    c.mean_resp_bytes /= n;
    c.mean_kernel_ms /= n;
    c.mean_app_ms /= n;
    c.mean_send_ms /= n;
    c.mean_oncpu_ms /= n;
    c.p50_ms = Quantile(lat, 0.5);
    c.p99_ms = Quantile(lat, 0.99);
    out.push_back(std::move(c));
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.size > b.size; });
  return out;
}

}  // namespace jackdaw::cluster
