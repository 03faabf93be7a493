#include "cluster/distance.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace jackdaw::cluster {
namespace {

// The disk demand the distance compares: block writes are batched by
// timing (distance.h), reads are the request's own.
uint64_t ComparedDiskBytes(const canonical::Demand& d) { return d.disk_bytes - std::min(d.disk_bytes, d.disk_write_bytes); }

inline float SubstitutionCost(const NormToken& a, const NormToken& b, float symbol_cost) {
  float dx = a.r[0] - b.r[0];
  float dy = a.r[1] - b.r[1];
  float dz = a.r[2] - b.r[2];
  return (a.symbol != b.symbol ? symbol_cost : 0.0f) + std::sqrt(dx * dx + dy * dy + dz * dz);
}

float SumIndel(const NormString& s);
float EditDistance(const NormString& a, const NormString& b, float cutoff);

float SumIndel(const NormString& s) {
  float sum = 0;
  for (const NormToken& t : s.tokens) sum += t.indel;
  return sum;
}

}  // namespace

Normalization DeriveNormalization(std::span<const canonical::SerializedRequest> requests) {
  double sum[kNumResources] = {0, 0, 0};
  uint64_t count[kNumResources] = {0, 0, 0};
  for (const canonical::SerializedRequest& r : requests) {
    const uint64_t v[kNumResources] = {r.total.cpu_ns, ComparedDiskBytes(r.total), r.total.net_bytes};
    for (int d = 0; d < kNumResources; ++d) {
      if (v[d] == 0) continue;
      sum[d] += static_cast<double>(v[d]);
      count[d]++;
    }
  }
  const double floors[kNumResources] = {kMinCpuScaleNs, kMinDiskScaleBytes, kMinNetScaleBytes};
  auto scale = [&](int d) {
    return count[d] ? std::max(floors[d], sum[d] / static_cast<double>(count[d])) : 1.0;
  };
  Normalization n;
  n.cpu_ns = scale(0);
  n.disk_bytes = scale(1);
  n.net_bytes = scale(2);
  return n;
}

NormString Normalize(const canonical::SerializedRequest& request, const Normalization& norm) {
  NormString s;
  s.tokens.reserve(request.tokens.size());
  const double inv[kNumResources] = {1.0 / norm.cpu_ns, 1.0 / norm.disk_bytes,
                                     norm.token_net_weight / norm.net_bytes};
  double total[kNumResources] = {0, 0, 0};
  const double raw[kNumResources] = {static_cast<double>(request.total.cpu_ns),
                                     static_cast<double>(ComparedDiskBytes(request.total)),
                                     static_cast<double>(request.total.net_bytes)};
  for (const canonical::Token& t : request.tokens) {
    NormToken n;
    n.symbol = t.symbol;
    const double v[kNumResources] = {static_cast<double>(t.demand.cpu_ns) * inv[0],
                                     static_cast<double>(ComparedDiskBytes(t.demand)) * inv[1],
                                     static_cast<double>(t.demand.net_bytes) * inv[2]};
    for (int d = 0; d < kNumResources; ++d) {
      n.r[d] = static_cast<float>(v[d]);
      total[d] += v[d];
    }
    n.indel =
        static_cast<float>(norm.symbol_cost + std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]));
    s.tokens.push_back(n);
  }
  for (int d = 0; d < kNumResources; ++d) s.total[d] = static_cast<float>(total[d]);
  s.symbol_cost = static_cast<float>(norm.symbol_cost);
  // Raw totals on a log scale with fixed granularities, so the term does
  // not depend on the mix of requests (distance.h).
  const double granularity[kNumResources] = {kCpuGranularityNs, kMinDiskScaleBytes, kMinNetScaleBytes};
  for (int d = 0; d < kNumResources; ++d)
    s.log_total[d] = static_cast<float>(norm.totals_weight * std::log1p(raw[d] / granularity[d]));
  // A message on both sides (distance.h): the request's exchange.
  if (request.msg_in_bytes && request.msg_out_bytes) {
    const double msg[2] = {static_cast<double>(request.msg_in_bytes), static_cast<double>(request.msg_out_bytes)};
    for (int d = 0; d < 2; ++d)
      s.log_msg[d] = static_cast<float>(norm.message_weight * std::log1p(msg[d] / kMessageGranularityBytes));
  }
  return s;
}

float TotalsDistance(const NormString& a, const NormString& b) {
  float sum = 0;
  for (int d = 0; d < kNumResources; ++d) {
    const float x = a.log_total[d] - b.log_total[d];
    sum += x * x;
  }
  float msg = 0;
  for (int d = 0; d < 2; ++d) {
    const float x = a.log_msg[d] - b.log_msg[d];
    msg += x * x;
  }
  return std::sqrt(sum) + std::sqrt(msg);
}

float LowerBound(const NormString& a, const NormString& b) {
  float len = a.symbol_cost *
              std::abs(static_cast<float>(a.tokens.size()) - static_cast<float>(b.tokens.size()));
  float dx = a.total[0] - b.total[0];
  float dy = a.total[1] - b.total[1];
  float dz = a.total[2] - b.total[2];
  // Shaved so float rounding can never push the bound above the distance.
  return (len + std::sqrt(dx * dx + dy * dy + dz * dz) + TotalsDistance(a, b)) * 0.9999f;
}

float Distance(const NormString& a, const NormString& b, float cutoff) {
  const float t = TotalsDistance(a, b);
  if (t > cutoff) return t;
  return t + EditDistance(a, b, cutoff - t);
}

namespace {

float EditDistance(const NormString& a, const NormString& b, float cutoff) {
  const size_t n = a.tokens.size(), m = b.tokens.size();
  if (n == 0) return SumIndel(b);
  if (m == 0) return SumIndel(a);
  const float w = a.symbol_cost;
  // Band (Ukkonen): a path through cell (i, j) makes at least |i - j|
  // insertions/deletions before it and |(n - i) - (m - j)| after it, each
  // costing >= w, so with a finite cutoff only diagonals d = j - i with
  // w (|d| + |D - d|) <= cutoff (D = m - n) can carry a path of cost <= cutoff.
  const long D = static_cast<long>(m) - static_cast<long>(n);
  long dlo = -static_cast<long>(n), dhi = static_cast<long>(m);  // everything
  if (std::isfinite(cutoff) && w > 0) {
    const float min_cost = w * static_cast<float>(std::labs(D));
    if (min_cost > cutoff) return min_cost;
    const float slack_f = (cutoff - min_cost) / (2 * w);
    if (slack_f < static_cast<float>(n + m)) {
      const long slack = static_cast<long>(slack_f);
      dlo = std::max(dlo, std::min(0L, D) - slack);
      dhi = std::min(dhi, std::max(0L, D) + slack);
    }
  }
  constexpr float kInf = std::numeric_limits<float>::infinity();
  thread_local std::vector<float> prev_row, cur_row;
  prev_row.assign(m + 1, kInf);
  cur_row.assign(m + 1, kInf);
  float* prev = prev_row.data();
  float* cur = cur_row.data();
  const NormToken* ta = a.tokens.data();
  const NormToken* tb = b.tokens.data();
  prev[0] = 0;
  const size_t first_hi = static_cast<size_t>(std::min<long>(static_cast<long>(m), dhi));
  for (size_t j = 1; j <= first_hi; ++j) prev[j] = prev[j - 1] + tb[j - 1].indel;
  for (size_t i = 1; i <= n; ++i) {
    const NormToken& x = ta[i - 1];
    const long li = static_cast<long>(i);
    const size_t jlo = static_cast<size_t>(std::max(0L, li + dlo));
    const size_t jhi = static_cast<size_t>(std::min(static_cast<long>(m), li + dhi));
    // Lower bound of any complete path through this row: its cost so far
    // plus w per token the two remainders differ in length.
    const long rest_a = static_cast<long>(n - i);
    float row_min = kInf;
    size_t j = jlo;
    if (j == 0) {
      cur[0] = prev[0] + x.indel;
      row_min = cur[0] + w * static_cast<float>(std::labs(rest_a - static_cast<long>(m)));
      j = 1;
    } else {
      cur[j - 1] = kInf;
    }
    for (; j <= jhi; ++j) {
      const NormToken& y = tb[j - 1];
      float v = prev[j - 1] + SubstitutionCost(x, y, w);
      v = std::min(v, prev[j] + x.indel);
      v = std::min(v, cur[j - 1] + y.indel);
      cur[j] = v;
      row_min = std::min(row_min,
                         v + w * static_cast<float>(std::labs(rest_a - static_cast<long>(m - j))));
    }
    if (jhi + 1 <= m) cur[jhi + 1] = kInf;
    if (row_min > cutoff) return row_min;
    std::swap(prev, cur);
  }
  return prev[m];
}

}  // namespace

std::vector<AlignmentStep> Align(const NormString& a, const NormString& b) {
  const size_t n = a.tokens.size(), m = b.tokens.size();
  const float w = a.symbol_cost;
  std::vector<float> d((n + 1) * (m + 1));
  auto at = [&](size_t i, size_t j) -> float& { return d[i * (m + 1) + j]; };
  at(0, 0) = 0;
  for (size_t j = 1; j <= m; ++j) at(0, j) = at(0, j - 1) + b.tokens[j - 1].indel;
  for (size_t i = 1; i <= n; ++i) {
    at(i, 0) = at(i - 1, 0) + a.tokens[i - 1].indel;
    for (size_t j = 1; j <= m; ++j) {
      float v = at(i - 1, j - 1) + SubstitutionCost(a.tokens[i - 1], b.tokens[j - 1], w);
      v = std::min(v, at(i - 1, j) + a.tokens[i - 1].indel);
      v = std::min(v, at(i, j - 1) + b.tokens[j - 1].indel);
      at(i, j) = v;
    }
  }
  // Trace back, preferring pairs, then extras, then missing, so equal-cost
  // alignments come out the same way every time.
  std::vector<AlignmentStep> steps;
  size_t i = n, j = m;
  while (i > 0 || j > 0) {
    if (i > 0 && j > 0) {
      float sub = SubstitutionCost(a.tokens[i - 1], b.tokens[j - 1], w);
      if (at(i, j) == at(i - 1, j - 1) + sub) {
        steps.push_back(
            {EditOp::kPair, static_cast<int32_t>(i - 1), static_cast<int32_t>(j - 1), sub});
        --i;
        --j;
        continue;
      }
    }
    if (i > 0 && (j == 0 || at(i, j) == at(i - 1, j) + a.tokens[i - 1].indel)) {
      steps.push_back({EditOp::kExtra, static_cast<int32_t>(i - 1), -1, a.tokens[i - 1].indel});
      --i;
      continue;
    }
    steps.push_back({EditOp::kMissing, -1, static_cast<int32_t>(j - 1), b.tokens[j - 1].indel});
    --j;
  }
  std::reverse(steps.begin(), steps.end());
  return steps;
}

}  // namespace jackdaw::cluster
