#include "testserver/spin.h"

#include <gtest/gtest.h>

#include <string>

#include "testserver/docroot.h"

namespace jackdaw::testserver {
namespace {

TEST(SpinTest, CalibrationTakesTheMedianOfItsRuns) {
  // Unsorted runs, one outlier each way: the estimate is the median.
  Calibration c = Summarize({900, 120, 400, 410, 5000});
  EXPECT_EQ(c.iters_per_ms, 410u);
  EXPECT_EQ(c.min_iters_per_ms, 120u);
  EXPECT_EQ(c.max_iters_per_ms, 5000u);
  EXPECT_EQ(c.runs, 5);
  EXPECT_EQ(Summarize({7}).iters_per_ms, 7u);
  // The real thing: as many runs as asked, each of which measured a rate.
  Calibration real = Calibrate(5, 2);
  EXPECT_EQ(real.runs, 5);
  EXPECT_GT(real.min_iters_per_ms, 0u);
}

TEST(SpinTest, LoopIsNotOptimisedAwayAndScales) {
  // Same iteration count twice the work: CPU time must grow (a removed loop
  // would cost ~0 either way).
  Calibration c = Calibrate(5, 2);
  SpinRecord small = Spin("s", 2000, c.iters_per_ms);
  SpinRecord big = Spin("b", 8000, c.iters_per_ms);
  EXPECT_EQ(small.iterations, c.iters_per_ms * 2);
  EXPECT_GT(small.cpu_ns, 1000000u);
  EXPECT_GT(big.cpu_ns, 2 * small.cpu_ns);
  EXPECT_EQ(small.nominal_ns, 2000000u);
  EXPECT_LE(small.start_mono_ns, small.end_mono_ns);
}

TEST(SpinTest, LoopRunsExactlyTheIterationsAsked) {
  // The documented chain, computed here: a loop that skipped or merged
  // iterations would end elsewhere.
  auto reference = [](uint64_t iters) {
    uint64_t x = 0x9e3779b97f4a7c15ull ^ iters;
    for (uint64_t i = 0; i < iters; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x;
  };
  for (uint64_t n : {0ull, 1ull, 2ull, 1000ull, 123457ull}) EXPECT_EQ(SpinIterations(n), reference(n)) << n;
  EXPECT_NE(SpinIterations(1000), SpinIterations(1001));
}

TEST(DocContentTest, IsDeterministicAndLocatable) {
  std::string a = DocContent("small.dat", 12288);
  EXPECT_EQ(a.size(), 12288u);
  EXPECT_EQ(a, DocContent("small.dat", 12288));
  EXPECT_NE(a, DocContent("other.dat", 12288));
  EXPECT_EQ(a.substr(0, 37), "jackdaw-testserver small.dat offset 0");
  EXPECT_EQ(a[63], '\n');
  EXPECT_EQ(a.substr(64 * 100, 46), "jackdaw-testserver small.dat offset 0000006400");
  EXPECT_EQ(DocContent("tiny.dat", 100).size(), 100u);
}

}  // namespace
}  // namespace jackdaw::testserver
