#include "diff/statistics.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace jackdaw::diff {
namespace {

double TwoSidedP(double z) { return std::erfc(std::fabs(z) / std::sqrt(2.0)); }

struct RankSums {
  double rank_sum_a = 0;
  double tie_term = 0;  // sum over tie groups of t^3 - t
};

// Ranks the pooled sample once; ties share their average rank.
RankSums PooledRanks(std::span<const double> a, std::span<const double> b) {
  std::vector<std::pair<double, bool>> pooled;  // value, from a
  pooled.reserve(a.size() + b.size());
  for (double v : a) pooled.push_back({v, true});
  for (double v : b) pooled.push_back({v, false});
  std::sort(pooled.begin(), pooled.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  RankSums out;
  for (size_t i = 0; i < pooled.size();) {
    size_t j = i;
    while (j < pooled.size() && pooled[j].first == pooled[i].first) ++j;
    const double t = double(j - i);
    const double average_rank = (double(i + 1) + double(j)) / 2;
    for (size_t k = i; k < j; ++k)
      if (pooled[k].second) out.rank_sum_a += average_rank;
    out.tie_term += t * t * t - t;
    i = j;
  }
  return out;
}

}  // namespace

TestResult MannWhitneyU(std::span<const double> a, std::span<const double> b) {
  TestResult r;
  if (a.empty() || b.empty()) return r;
  const double n1 = double(a.size()), n2 = double(b.size()), n = n1 + n2;
  const RankSums ranks = PooledRanks(a, b);
  const double u_a = ranks.rank_sum_a - n1 * (n1 + 1) / 2;
  r.statistic = u_a;
  const double mean = n1 * n2 / 2;
  const double variance = n1 * n2 / 12 * ((n + 1) - ranks.tie_term / (n * (n - 1)));
  if (variance <= 0) return r;
  const double deviation = u_a - mean;
  const double corrected = std::max(0.0, std::fabs(deviation) - 0.5);
  // U of a is large when a is larger; z is signed towards b.
  r.z = (deviation > 0 ? -corrected : corrected) / std::sqrt(variance);
  r.p_value = std::min(1.0, TwoSidedP(r.z));
  return r;
}

TestResult TwoProportionZ(uint64_t k_a, uint64_t n_a, uint64_t k_b, uint64_t n_b) {
  TestResult r;
  if (n_a == 0 || n_b == 0) return r;
  const double pa = double(k_a) / double(n_a), pb = double(k_b) / double(n_b);
  const double pooled = double(k_a + k_b) / double(n_a + n_b);
  const double se = std::sqrt(pooled * (1 - pooled) * (1.0 / double(n_a) + 1.0 / double(n_b)));
  if (!(se > 0)) return r;
  r.z = (pb - pa) / se;
  r.statistic = r.z;
  r.p_value = std::min(1.0, TwoSidedP(r.z));
  return r;
}

std::vector<double> BenjaminiHochberg(std::span<const double> p_values) {
  const size_t m = p_values.size();
  std::vector<size_t> order(m);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return p_values[x] < p_values[y]; });
  std::vector<double> adjusted(m);
  double running_min = 1.0;
  for (size_t rank = m; rank-- > 0;) {
    const size_t i = order[rank];
    running_min = std::min(running_min, p_values[i] * double(m) / double(rank + 1));
    adjusted[i] = running_min;
  }
  return adjusted;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  const double upper = v[mid];
  if (v.size() % 2) return upper;
  const double lower = *std::max_element(v.begin(), v.begin() + mid);
  return (lower + upper) / 2;
}

double RelativeChange(double before, double after) {
  if (before != 0) return (after - before) / std::fabs(before);
  return after == before ? 0.0 : (after > 0 ? 1.0 : -1.0);
}

double CliffsDelta(std::span<const double> a, std::span<const double> b) {
  if (a.empty() || b.empty()) return 0;
  // U of a counts pairs (a > b) + ties / 2, so P(b > a) - P(b < a) = 1 - 2U / (n1 n2).
  const double u_a = MannWhitneyU(a, b).statistic;
  return 1 - 2 * u_a / (double(a.size()) * double(b.size()));
}

}  // namespace jackdaw::diff
