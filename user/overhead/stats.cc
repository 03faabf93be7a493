#include "overhead/stats.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace jackdaw::overhead {
namespace {

double MedianOf(std::vector<double>& v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double Quantile(std::vector<double>& sorted, double q) {
  const double pos = q * double(sorted.size() - 1);
  const size_t i = static_cast<size_t>(pos);
  const double frac = pos - double(i);
  if (i + 1 >= sorted.size()) return sorted.back();
  return sorted[i] * (1 - frac) + sorted[i + 1] * frac;
}

}  // namespace

Summary Summarize(std::vector<double> v) {
  Summary s;
  s.n = v.size();
  if (v.empty()) return s;
  s.median = MedianOf(v);
  s.min = v.front();
  s.max = v.back();
  return s;
}

RatioEstimate PairedRatio(const std::vector<double>& untraced, const std::vector<double>& traced, double level,
                          int resamples) {
  RatioEstimate r;
  r.level = level;
  const size_t n = std::min(untraced.size(), traced.size());
  if (n < 2) return r;
  std::vector<double> u(untraced.begin(), untraced.begin() + n), t(traced.begin(), traced.begin() + n);
  for (double x : u)
    if (!(x > 0)) return r;
  {
    std::vector<double> a = u, b = t;
    r.ratio = MedianOf(b) / MedianOf(a);
  }
  std::mt19937_64 rng(0x6a61636b646177ull);  // fixed: reproducible intervals
  std::uniform_int_distribution<size_t> pick(0, n - 1);
  std::vector<double> ratios, a(n), b(n);
  ratios.reserve(resamples);
  for (int k = 0; k < resamples; ++k) {
    for (size_t i = 0; i < n; ++i) {
      const size_t j = pick(rng);
      a[i] = u[j];
      b[i] = t[j];
    }
    ratios.push_back(MedianOf(b) / MedianOf(a));
  }
  std::sort(ratios.begin(), ratios.end());
  r.lo = Quantile(ratios, (1 - level) / 2);
  r.hi = Quantile(ratios, 1 - (1 - level) / 2);
  // The point estimate lies inside its own interval even for tiny samples.
  r.lo = std::min(r.lo, r.ratio);
  r.hi = std::max(r.hi, r.ratio);
  return r;
}

}  // namespace jackdaw::overhead
