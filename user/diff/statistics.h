// The statistics `jackdaw diff` decides with: two-sample tests on
// per-request values, a test of two proportions, the Benjamini–Hochberg
// correction over all of them, and the effect sizes a change must reach.
//
// Normal approximations throughout: the samples diff compares are clusters
// of a recording (tens to millions of requests), where the approximation is
// close and exact distributions would cost O(n^2).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace jackdaw::diff {

struct TestResult {
  double statistic = 0;  // U of `a` (Mann–Whitney), z (proportions)
  double z = 0;          // signed: positive when `b` is larger
  double p_value = 1;    // two-sided
};

// Mann–Whitney U (Wilcoxon rank-sum) of `a` against `b`: average ranks for
// ties, the variance corrected for them, a continuity correction of 1/2.
// p = 1 when either side is empty or every value is tied (nothing to rank).
TestResult MannWhitneyU(std::span<const double> a, std::span<const double> b);

// Two-proportion z-test of k_a/n_a against k_b/n_b with the pooled
// proportion. p = 1 when either n is 0 or the pooled proportion is 0 or 1.
TestResult TwoProportionZ(uint64_t k_a, uint64_t n_a, uint64_t k_b, uint64_t n_b);

// Benjamini–Hochberg adjusted p-values (as R's p.adjust(method = "BH")), in
// the input's order: controls the expected share of false discoveries among
// the changes called significant, whatever the number of tests.
std::vector<double> BenjaminiHochberg(std::span<const double> p_values);

// Median with linear interpolation between the middle order statistics
// (0 for an empty sample).
double Median(std::vector<double> v);

// Relative change (after - before) / before. A change from 0 has no ratio:
// +1 (from nothing to something, a 100 % effect) or 0 when both are 0.
double RelativeChange(double before, double after);

// Cliff's delta: P(b > a) - P(b < a), in [-1, 1]; computed from ranks in
// O(n log n).
double CliffsDelta(std::span<const double> a, std::span<const double> b);

}  // namespace jackdaw::diff
