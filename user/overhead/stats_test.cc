#include "overhead/stats.h"

#include <random>

#include <gtest/gtest.h>

namespace jackdaw::overhead {
namespace {

TEST(Summarize, MedianMinMaxOfOddAndEvenSamples) {
  Summary s = Summarize({5, 1, 3});
  EXPECT_EQ(s.median, 3);
  EXPECT_EQ(s.min, 1);
  EXPECT_EQ(s.max, 5);
  EXPECT_EQ(Summarize({4, 1, 3, 2}).median, 2.5);
  EXPECT_EQ(Summarize({}).n, 0u);
}

TEST(PairedRatio, ExactRatioGivesADegenerateInterval) {
  RatioEstimate r = PairedRatio({1, 2, 3, 4}, {1.5, 3, 4.5, 6});
  EXPECT_DOUBLE_EQ(r.ratio, 1.5);
  EXPECT_GT(r.lo, 1.0);
  EXPECT_LE(r.lo, 1.5);
  EXPECT_GE(r.hi, 1.5);
  EXPECT_FALSE(NoiseExceedsEffect(r));
}

TEST(PairedRatio, NoisyRunsWithoutEffectAreFlagged) {
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(100, 10);
  std::vector<double> u, t;
  for (int i = 0; i < 9; ++i) u.push_back(noise(rng)), t.push_back(noise(rng));
  RatioEstimate r = PairedRatio(u, t);
  EXPECT_LT(r.lo, r.hi);
  EXPECT_TRUE(NoiseExceedsEffect(r)) << r.lo << " " << r.hi;
}

TEST(PairedRatio, KnownEffectIsInsideItsIntervalUnderNoise) {
  std::mt19937 rng(11);
  std::normal_distribution<double> noise(0, 2);
  std::vector<double> u, t;
  for (int i = 0; i < 15; ++i) {
    const double base = 100 + noise(rng);
    u.push_back(base);
    t.push_back(base * 1.3 + noise(rng));
  }
  RatioEstimate r = PairedRatio(u, t);
  EXPECT_LE(r.lo, 1.3);
  EXPECT_GE(r.hi, 1.3);
  EXPECT_FALSE(NoiseExceedsEffect(r));
}

TEST(PairedRatio, TooFewPairsOrNonPositiveBaseGiveNoEstimate) {
  EXPECT_EQ(PairedRatio({1}, {2}).ratio, 0);
  EXPECT_EQ(PairedRatio({0, 1}, {2, 2}).ratio, 0);
}

}  // namespace
}  // namespace jackdaw::overhead
