#include "testserver/spin.h"

#include <gtest/gtest.h>

#include <string>

#include "testserver/docroot.h"

namespace jackdaw::testserver {
namespace {

TEST(SpinTest, CalibrationIsOrderedAndPositive) {
  Calibration c = Calibrate(5, 2);
  EXPECT_EQ(c.runs, 5);
  EXPECT_GT(c.min_iters_per_ms, 0u);
  EXPECT_LE(c.min_iters_per_ms, c.iters_per_ms);
  EXPECT_LE(c.iters_per_ms, c.max_iters_per_ms);
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
  EXPECT_EQ(SpinIterations(1000), SpinIterations(1000));  // deterministic state
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
