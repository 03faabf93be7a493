#include "capture/sample_controller.h"

#include <gtest/gtest.h>

namespace jackdaw::capture {
namespace {

constexpr uint64_t kMs = 1'000'000;

TEST(SampleController, LossHalvesTheRateOncePerSettlePeriod) {
  SampleController c(1.0);
  EXPECT_FALSE(c.Observe(0, 0, 0.01, 0));
  EXPECT_TRUE(c.Observe(300 * kMs, 10, 0.9, 0));
  EXPECT_DOUBLE_EQ(c.rate(), 0.5);
  // Still losing 10 ms later: the rings have not shown the new rate yet.
  EXPECT_FALSE(c.Observe(310 * kMs, 20, 0.9, 0));
  EXPECT_DOUBLE_EQ(c.rate(), 0.5);
  EXPECT_TRUE(c.Observe(600 * kMs, 30, 0.2, 0));
  EXPECT_DOUBLE_EQ(c.rate(), 0.25);
}

TEST(SampleController, AFullRingLowersTheRateBeforeAnythingIsLost) {
  SampleController c(1.0);
  c.Observe(0, 0, 0, 0);
  // Half full though the reader napped only 50 of the 300 ms: it is behind.
  EXPECT_TRUE(c.Observe(300 * kMs, 0, 0.55, 50 * kMs));
  EXPECT_DOUBLE_EQ(c.rate(), 0.5);
}

TEST(SampleController, ARingFilledDuringALongNapIsThePacersToShorten) {
  // Idle, the reader naps a second; a burst starts during the nap and finds
  // the ring half full: the next nap is short, nothing to shed.
  SampleController c(1.0);
  c.Observe(0, 0, 0, 0);
  EXPECT_FALSE(c.Observe(1000 * kMs, 0, 0.55, 990 * kMs));
  EXPECT_DOUBLE_EQ(c.rate(), 1.0);
  // But a loss is a loss, nap or not.
  EXPECT_TRUE(c.Observe(2000 * kMs, 5, 0.95, 990 * kMs));
  EXPECT_DOUBLE_EQ(c.rate(), 0.5);
}

TEST(SampleController, NeverBelowTheFloor) {
  SampleController::Options o;
  o.min_rate = 0.25;
  SampleController c(1.0, o);
  uint64_t lost = 0;
  for (uint64_t t = 0; t < 10'000 * kMs; t += 100 * kMs) c.Observe(t, lost += 5, 0.9, 0);
  EXPECT_DOUBLE_EQ(c.rate(), 0.25);
}

// Sweeps every 100 ms in which the reader waited `waited_ms` of the 100.
bool CalmSweeps(SampleController* c, uint64_t* t, uint64_t until, double fill, uint64_t waited_ms) {
  bool changed = false;
  for (; *t < until && !changed; *t += 100 * kMs) changed = c->Observe(*t, 0, fill, waited_ms * kMs);
  return changed;
}

TEST(SampleController, RisesAfterACalmSpellInWhichTheReaderMostlyWaited) {
  SampleController c(0.25);
  uint64_t t = 0;
  // A ring a third full at the sweeps: a stall like the worst of them would
  // fill it past half at twice the rate: hold.
  EXPECT_FALSE(CalmSweeps(&c, &t, 8000 * kMs, 0.3, 90));
  // The reader busy 70 % of the time: twice the records would overrun it.
  EXPECT_FALSE(CalmSweeps(&c, &t, 16'000 * kMs, 0.06, 30));
  EXPECT_DOUBLE_EQ(c.rate(), 0.25);
  // Waiting 80 % of the time, the rings a sixteenth full as the pacer keeps
  // them: doubled once, within two spells (the spell that straddles the
  // change may still be judged busy).
  const uint64_t calm_from = t;
  EXPECT_TRUE(CalmSweeps(&c, &t, 30'000 * kMs, 0.06, 80));
  EXPECT_GE(t - calm_from, 5000 * kMs);
  EXPECT_LE(t - calm_from, 10'100 * kMs);
  EXPECT_DOUBLE_EQ(c.rate(), 0.5);
  // The spell starts over after a rise.
  EXPECT_FALSE(c.Observe(t, 0, 0.06, 80 * kMs));
}

TEST(SampleController, ABusySpellStartsTheSpellOver) {
  SampleController c(0.5);
  uint64_t t = 0;
  // 5 s of a busy reader, then waiting: the raise needs 5 s of the waiting
  // alone, not an average with the busy past.
  EXPECT_FALSE(CalmSweeps(&c, &t, 5200 * kMs, 0.06, 10));
  const uint64_t idle_from = t;
  EXPECT_TRUE(CalmSweeps(&c, &t, 20'000 * kMs, 0.06, 95));
  EXPECT_GE(t - idle_from, 4900 * kMs);
  EXPECT_DOUBLE_EQ(c.rate(), 1.0);
}

TEST(SampleController, AWaitLongerThanTheSweepIntervalCountsOnlyTheInterval) {
  SampleController c(0.5);
  uint64_t t = 0;
  // A wait reported longer than the time since the last sweep counts as
  // that time: here the reader waited 100 ms of every 200 (190 claimed), a
  // busy share of a half, too busy to double.
  for (; t < 12'000 * kMs; t += 100 * kMs) EXPECT_FALSE(c.Observe(t, 0, 0.06, (t / kMs) % 200 ? 0 : 190 * kMs));
  EXPECT_DOUBLE_EQ(c.rate(), 0.5);
}

TEST(SampleController, AtFullRateCalmChangesNothing) {
  SampleController c(1.0);
  for (uint64_t t = 0; t < 20'000 * kMs; t += 100 * kMs) EXPECT_FALSE(c.Observe(t, 0, 0.0, 100 * kMs));
  EXPECT_DOUBLE_EQ(c.rate(), 1.0);
}

}  // namespace
}  // namespace jackdaw::capture
