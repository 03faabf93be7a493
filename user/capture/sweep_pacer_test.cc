#include "capture/sweep_pacer.h"

#include <gtest/gtest.h>

namespace jackdaw::capture {
namespace {

constexpr uint64_t kMs = 1'000'000;

TEST(SweepPacer, NapsOneMillisecondUntilAnIntervalIsKnown) {
  SweepPacer p(1.0 / 8, 500);
  EXPECT_EQ(p.NapMs(), 1);
  p.OnSweep(100 * kMs, 0.01);  // a fill, but no interval it piled up over
  EXPECT_EQ(p.NapMs(), 1);
}

TEST(SweepPacer, EmptySweepsDoubleTheNapUpToTheMaximum) {
  SweepPacer p(1.0 / 8, 500);
  uint64_t t = 1;
  p.OnSweep(t, 0);
  int naps = 0;
  while (p.NapMs() < 500 && naps < 100) {
    t += uint64_t(p.NapMs()) * kMs;
    p.OnSweep(t, 0);
    ++naps;
  }
  EXPECT_EQ(p.NapMs(), 500);
  EXPECT_LE(naps, 10);
  EXPECT_LE(t, 1000 * kMs);
}

TEST(SweepPacer, AnEmptySweepStraightAfterABurstDoesNotNapLong) {
  // Live's loop at nginx's rate with 256 KB rings: a sweep drains a full
  // ring, the next (at once) finds nothing yet; napping the maximum then
  // would let the ring overflow.
  SweepPacer p(1.0 / 8, 500);
  p.OnSweep(1, 0);
  p.OnSweep(20 * kMs, 0.99);
  EXPECT_EQ(p.NapMs(), 0);
  p.OnSweep(20 * kMs + 200'000, 0);
  EXPECT_EQ(p.NapMs(), 1);
}

TEST(SweepPacer, AnEarlyWakeThatFindsNothingKeepsTheNap) {
  // Idle at the longest nap, a control request wakes the reader 66 ms
  // after its last sweep: nothing there, and no reason to nap less.
  SweepPacer p(1.0 / 8, 1000);
  p.OnSweep(1, 0);
  p.OnSweep(2000 * kMs, 0);
  ASSERT_EQ(p.NapMs(), 1000);
  p.OnSweep(2066 * kMs, 0);
  EXPECT_EQ(p.NapMs(), 1000);
}

TEST(SweepPacer, IdleAndSlowRingsGetTheMaximumNap) {
  SweepPacer p(1.0 / 8, 500);
  p.OnSweep(0 + 1, 0);
  p.OnSweep(500 * kMs, 0);
  EXPECT_EQ(p.NapMs(), 500);
  // 1 % of a ring in 500 ms: 6.25 s to reach 1/8, capped.
  p.OnSweep(1000 * kMs, 0.01);
  EXPECT_EQ(p.NapMs(), 500);
}

TEST(SweepPacer, FastRingsShortenTheNapInProportion) {
  SweepPacer p(1.0 / 8, 500);
  p.OnSweep(1, 0);
  // 1/16 of a ring in 400 ms: 1/8 in 800 ms, capped at 500.
  p.OnSweep(400 * kMs + 1, 1.0 / 16);
  EXPECT_EQ(p.NapMs(), 500);
  // 1/16 in 100 ms: 1/8 in 200 ms.
  p.OnSweep(500 * kMs + 1, 1.0 / 16);
  EXPECT_EQ(p.NapMs(), 200);
  // 1/32 in 10 ms: 1/8 in 40 ms.
  p.OnSweep(510 * kMs + 1, 1.0 / 32);
  EXPECT_EQ(p.NapMs(), 40);
  // Never below 1 ms while under the target.
  p.OnSweep(510 * kMs + 2, 0.1);
  EXPECT_EQ(p.NapMs(), 1);
}

TEST(SweepPacer, ARingAtTheTargetIsSweptAgainAtOnce) {
  SweepPacer p(1.0 / 16, 30);
  p.OnSweep(1, 0);
  p.OnSweep(30 * kMs, 0.5);
  EXPECT_EQ(p.NapMs(), 0);
  // and the nap grows back once the burst is drained
  p.OnSweep(31 * kMs, 0.001);
  EXPECT_EQ(p.NapMs(), 30);
}

TEST(SweepPacer, NapsAreSizedToTheAimBelowTheTarget) {
  SweepPacer p(1.0 / 8, 1000, 1.0 / 16);
  p.OnSweep(1, 0);
  // 1/32 in 100 ms: the aim, 1/16, in 200 ms (the target's 400 ms not used).
  p.OnSweep(100 * kMs + 1, 1.0 / 32);
  EXPECT_EQ(p.NapMs(), 200);
  // A steady load then lands on the aim, under the target: the same nap,
  // never a sweep at once.
  p.OnSweep(300 * kMs + 1, 1.0 / 16);
  EXPECT_EQ(p.NapMs(), 200);
  // Past the target: at once.
  p.OnSweep(500 * kMs + 1, 1.0 / 8);
  EXPECT_EQ(p.NapMs(), 0);
  // An aim above the target is the target.
  SweepPacer q(1.0 / 8, 1000, 0.5);
  q.OnSweep(1, 0);
  q.OnSweep(100 * kMs + 1, 1.0 / 16);
  EXPECT_EQ(q.NapMs(), 200);
}

TEST(SweepPacer, AMaximumBelowOneMillisecondIsOne) {
  SweepPacer p(0.5, 0);
  EXPECT_EQ(p.max_nap_ms(), 1);
  p.OnSweep(1, 0);
  p.OnSweep(50 * kMs, 0);
  EXPECT_EQ(p.NapMs(), 1);
}

}  // namespace
}  // namespace jackdaw::capture
