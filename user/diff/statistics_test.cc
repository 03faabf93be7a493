#include "diff/statistics.h"

#include <vector>

#include <gtest/gtest.h>

namespace jackdaw::diff {
namespace {

// R's own example (?wilcox.test): W = 35 for x against y; the two-sided
// normal approximation with continuity correction is
// erfc((35 - 25 - 0.5) / sqrt(10 * 5 * 16 / 12) / sqrt(2)) = 0.24462.
TEST(MannWhitneyU, MatchesRsWilcoxExample) {
  const std::vector<double> x = {0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46};
  const std::vector<double> y = {1.15, 0.88, 0.90, 0.74, 1.21};
  const TestResult r = MannWhitneyU(x, y);
  EXPECT_DOUBLE_EQ(r.statistic, 35);
  EXPECT_NEAR(r.p_value, 0.24462, 1e-5);
  EXPECT_LT(r.z, 0);  // y is the smaller sample
}

// Ties share ranks and shrink the variance: by hand, U = 3, variance
// 16/12 * (9 - 48/56) = 10.857, z = 4.5 / sqrt(10.857), p = 0.17203.
TEST(MannWhitneyU, CorrectsForTies) {
  const std::vector<double> a = {1, 2, 2, 3}, b = {2, 3, 3, 4};
  const TestResult r = MannWhitneyU(a, b);
  EXPECT_DOUBLE_EQ(r.statistic, 3);
  EXPECT_NEAR(r.p_value, 0.17203, 1e-5);
  EXPECT_GT(r.z, 0);
}

TEST(MannWhitneyU, SeparatedSamplesAreSignificantAndEqualOnesAreNot) {
  std::vector<double> low, high;
  for (int i = 0; i < 50; ++i) low.push_back(i), high.push_back(100 + i);
  EXPECT_LT(MannWhitneyU(low, high).p_value, 1e-10);
  EXPECT_NEAR(MannWhitneyU(low, low).p_value, 1.0, 1e-9);
}

TEST(MannWhitneyU, NothingToRankGivesPOne) {
  const std::vector<double> zeros(20, 0.0), empty;
  EXPECT_EQ(MannWhitneyU(zeros, zeros).p_value, 1.0);
  EXPECT_EQ(MannWhitneyU(zeros, empty).p_value, 1.0);
}

// R: prop.test(c(50, 65), c(100, 100), correct = FALSE): X-squared = 4.6036,
// p-value = 0.03191.
TEST(TwoProportionZ, MatchesRsPropTest) {
  const TestResult r = TwoProportionZ(50, 100, 65, 100);
  EXPECT_NEAR(r.z * r.z, 4.6036, 1e-4);
  EXPECT_NEAR(r.p_value, 0.03191, 1e-5);
  EXPECT_GT(r.z, 0);
}

TEST(TwoProportionZ, DegenerateInputsGivePOne) {
  EXPECT_EQ(TwoProportionZ(0, 0, 5, 10).p_value, 1.0);
  EXPECT_EQ(TwoProportionZ(10, 10, 20, 20).p_value, 1.0);  // pooled proportion 1
}

// R: p.adjust(c(0.01, 0.04, 0.03, 0.005), "BH") = 0.02 0.04 0.04 0.02.
TEST(BenjaminiHochberg, MatchesRsPAdjust) {
  const std::vector<double> p = {0.01, 0.04, 0.03, 0.005};
  const std::vector<double> q = BenjaminiHochberg(p);
  ASSERT_EQ(q.size(), 4u);
  EXPECT_NEAR(q[0], 0.02, 1e-12);
  EXPECT_NEAR(q[1], 0.04, 1e-12);
  EXPECT_NEAR(q[2], 0.04, 1e-12);
  EXPECT_NEAR(q[3], 0.02, 1e-12);
}

TEST(BenjaminiHochberg, NeverExceedsOne) {
  const std::vector<double> p = {0.9, 0.95, 0.99};
  for (double q : BenjaminiHochberg(p)) EXPECT_LE(q, 1.0);
  EXPECT_TRUE(BenjaminiHochberg(std::vector<double>{}).empty());
}

TEST(Median, InterpolatesEvenSamples) {
  EXPECT_EQ(Median({3, 1, 2}), 2);
  EXPECT_EQ(Median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(Median({}), 0);
}

TEST(RelativeChange, HandlesZeroBefore) {
  EXPECT_DOUBLE_EQ(RelativeChange(10, 13), 0.3);
  EXPECT_DOUBLE_EQ(RelativeChange(10, 5), -0.5);
  EXPECT_EQ(RelativeChange(0, 0), 0);
  EXPECT_EQ(RelativeChange(0, 4), 1);
}

TEST(CliffsDelta, SpansMinusOneToOne) {
  const std::vector<double> low = {1, 2, 3}, high = {4, 5, 6};
  EXPECT_DOUBLE_EQ(CliffsDelta(low, high), 1);
  EXPECT_DOUBLE_EQ(CliffsDelta(high, low), -1);
  EXPECT_DOUBLE_EQ(CliffsDelta(low, low), 0);
}

}  // namespace
}  // namespace jackdaw::diff
