// Statistics for `jackdaw overhead`: robust summaries of a few noisy runs.
//
// Runs come in pairs (one untraced, one traced, interleaved), so the ratio
// is estimated from the pairs: the ratio of the medians, with a percentile
// bootstrap confidence interval that resamples whole pairs (a slow spell of
// the machine hits both halves of a pair alike). The bootstrap uses a fixed
// seed so the same samples always give the same interval.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace jackdaw::overhead {

struct Summary {
  double median = 0, min = 0, max = 0;
  size_t n = 0;
};

// Median, min and max; all 0 for an empty sample.
Summary Summarize(std::vector<double> v);

struct RatioEstimate {
  double ratio = 0;     // median(traced) / median(untraced)
  double lo = 0, hi = 0;  // confidence interval
  double level = 0.95;
};

// traced[i] and untraced[i] are one pair. Needs at least 2 pairs and
// positive untraced values; otherwise ratio == 0.
RatioEstimate PairedRatio(const std::vector<double>& untraced, const std::vector<double>& traced,
                          double level = 0.95, int resamples = 2000);

// True when the interval cannot tell the ratio from 1 (no overhead): the
// noise is larger than the effect.
inline bool NoiseExceedsEffect(const RatioEstimate& r) { return r.lo <= 1.0 && r.hi >= 1.0; }

}  // namespace jackdaw::overhead
