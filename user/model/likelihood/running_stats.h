// Count, mean and variance of a stream of values (Welford's update), with
// Combine() for the state merges of the automaton: two states' demands
// folded together are the statistics of both streams, as if seen as one.
#pragma once

#include <cmath>
#include <cstdint>

namespace jackdaw::model::likelihood {

struct RunningStats {
  uint64_t count = 0;
  double mean = 0;
  double m2 = 0;  // sum of squared deviations from the mean

  void Add(double x) {
    ++count;
    const double delta = x - mean;
    mean += delta / static_cast<double>(count);
    m2 += delta * (x - mean);
  }
  // Chan et al.'s pairwise update: exact for any split of the stream.
  void Combine(const RunningStats& o) {
    if (o.count == 0) return;
    if (count == 0) {
      *this = o;
      return;
    }
    const double n = static_cast<double>(count), m = static_cast<double>(o.count);
    const double delta = o.mean - mean;
    mean += delta * m / (n + m);
    m2 += o.m2 + delta * delta * n * m / (n + m);
    count += o.count;
  }
  // Population variance (0 below two values).
  double variance() const { return count > 1 ? m2 / static_cast<double>(count) : 0; }
  double stddev() const { return std::sqrt(variance()); }
};

}  // namespace jackdaw::model::likelihood
