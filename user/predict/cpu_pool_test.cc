#include "predict/cpu_pool.h"

#include <gtest/gtest.h>

namespace jackdaw::predict {
namespace {

TEST(CpuPool, ABurstAloneRunsAtFullSpeed) {
  CpuPool p(2);
  p.Add(100, 7, 1000);
  EXPECT_DOUBLE_EQ(p.NextCompletion(), 1100);
  EXPECT_EQ(p.PopCompleted(1100), 7u);
  EXPECT_EQ(p.NextCompletion(), std::numeric_limits<double>::infinity());
  EXPECT_DOUBLE_EQ(p.BusyNs(5000), 1000);
}

TEST(CpuPool, ThreeBurstsOnTwoCpusShareThemEqually) {
  CpuPool p(2);
  for (uint64_t j = 0; j < 3; ++j) p.Add(0, j, 1000);
  // Each progresses at 2/3 of a CPU: all finish at 1500, in arrival order.
  EXPECT_DOUBLE_EQ(p.NextCompletion(), 1500);
  EXPECT_EQ(p.PopCompleted(1500), 0u);
  EXPECT_EQ(p.PopCompleted(p.NextCompletion()), 1u);
  EXPECT_EQ(p.PopCompleted(p.NextCompletion()), 2u);
  EXPECT_NEAR(p.BusyNs(1500), 3000, 1e-6);
}

TEST(CpuPool, ALateArrivalSlowsTheOthersFromThenOn) {
  CpuPool p(1);
  p.Add(0, 1, 1000);  // alone until 500: half done
  p.Add(500, 2, 1000);
  // From 500 both run at half speed: job 1 needs 500 more -> finishes at 1500.
  EXPECT_DOUBLE_EQ(p.NextCompletion(), 1500);
  EXPECT_EQ(p.PopCompleted(1500), 1u);
  // Job 2 got 500 by then and runs alone: done at 2000.
  EXPECT_DOUBLE_EQ(p.NextCompletion(), 2000);
  EXPECT_EQ(p.PopCompleted(2000), 2u);
  EXPECT_DOUBLE_EQ(p.BusyNs(2000), 2000);
}

TEST(CpuPool, BackgroundThreadsTakeTheirShare) {
  CpuPool p(2, /*capacity=*/0, /*background=*/2);
  p.Add(0, 1, 1000);
  // One burst and two background threads on two CPUs: 2/3 of a CPU each.
  EXPECT_DOUBLE_EQ(p.NextCompletion(), 1500);
  EXPECT_EQ(p.PopCompleted(1500), 1u);
  EXPECT_NEAR(p.BusyNs(1500), 1000, 1e-9);  // only the burst's CPU counts
}

TEST(CpuPool, AWokenBurstRunsAheadOfThoseThatKeptRunning) {
  CpuPool p(1);
  p.Add(0, 1, 10'000);                 // running on
  p.Add(1'000, 2, 500, /*woken=*/true);  // woken: takes the CPU at once
  EXPECT_DOUBLE_EQ(p.NextCompletion(), 1'500);
  EXPECT_EQ(p.PopCompleted(1'500), 2u);
  // Job 1 had 1000 of its 10000 by then: done 9000 later.
  EXPECT_DOUBLE_EQ(p.NextCompletion(), 10'500);
  EXPECT_EQ(p.PopCompleted(10'500), 1u);
  EXPECT_DOUBLE_EQ(p.BusyNs(10'500), 10'500);
}

TEST(CpuPool, ACapacityCapsTheBurstsTogether) {
  CpuPool p(2, /*capacity=*/0.5);
  p.Add(0, 1, 1000);
  // Half a CPU for everything the requests run: one burst alone takes twice
  // its work, two take four times.
  EXPECT_DOUBLE_EQ(p.NextCompletion(), 2000);
  p.Add(0, 2, 1000);
  EXPECT_DOUBLE_EQ(p.NextCompletion(), 4000);
}

}  // namespace
}  // namespace jackdaw::predict
