#include "capture/sample_controller.h"

#include <gtest/gtest.h>

namespace jackdaw::capture {
namespace {

constexpr uint64_t kMs = 1'000'000;

TEST(SampleController, LossHalvesTheRateOncePerSettlePeriod) {
  SampleController c(1.0);
  EXPECT_FALSE(c.Observe(0, 0, 0.01));
  EXPECT_TRUE(c.Observe(300 * kMs, 10, 0.9));
  EXPECT_DOUBLE_EQ(c.rate(), 0.5);
  // Still losing 10 ms later: the rings have not shown the new rate yet.
  EXPECT_FALSE(c.Observe(310 * kMs, 20, 0.9));
  EXPECT_DOUBLE_EQ(c.rate(), 0.5);
  EXPECT_TRUE(c.Observe(600 * kMs, 30, 0.2));
  EXPECT_DOUBLE_EQ(c.rate(), 0.25);
}

TEST(SampleController, AFullRingLowersTheRateBeforeAnythingIsLost) {
  SampleController c(1.0);
  c.Observe(0, 0, 0);
  EXPECT_TRUE(c.Observe(300 * kMs, 0, 0.55));
  EXPECT_DOUBLE_EQ(c.rate(), 0.5);
}

TEST(SampleController, NeverBelowTheFloor) {
  SampleController::Options o;
  o.min_rate = 0.25;
  SampleController c(1.0, o);
  uint64_t lost = 0;
  for (uint64_t t = 0; t < 10'000 * kMs; t += 100 * kMs) c.Observe(t, lost += 5, 0.9);
  EXPECT_DOUBLE_EQ(c.rate(), 0.25);
}

TEST(SampleController, RisesOnlyAfterACalmSpellWithRoomToDouble) {
  SampleController c(0.25);
  c.Observe(0, 0, 0.01);
  // Calm but a ring a tenth full: twice the rate would be a fifth: hold.
  for (uint64_t t = 100 * kMs; t < 8000 * kMs; t += 100 * kMs) EXPECT_FALSE(c.Observe(t, 0, 0.1));
  // Below low_fill for 5 s: doubled once, then the calm spell starts over.
  bool rose = false;
  uint64_t t = 8000 * kMs;
  for (; t < 14'000 * kMs && !rose; t += 100 * kMs) rose = c.Observe(t, 0, 0.01);
  EXPECT_TRUE(rose);
  EXPECT_GE(t, 13'000 * kMs);
  EXPECT_DOUBLE_EQ(c.rate(), 0.5);
  EXPECT_FALSE(c.Observe(t, 0, 0.01));
}

TEST(SampleController, AtFullRateCalmChangesNothing) {
  SampleController c(1.0);
  for (uint64_t t = 0; t < 20'000 * kMs; t += 100 * kMs) EXPECT_FALSE(c.Observe(t, 0, 0.0));
  EXPECT_DOUBLE_EQ(c.rate(), 1.0);
}

}  // namespace
}  // namespace jackdaw::capture
