#include "capture/clock_sync.h"

#include <gtest/gtest.h>

namespace jackdaw::capture {
namespace {

ClockPair PairAt(uint64_t mono_ns, double tsc_per_ns) {
  ClockPair p;
  p.mono_ns = mono_ns;
  p.tsc = 1'000'000 + static_cast<uint64_t>(double(mono_ns - 5'000'000'000ull) * tsc_per_ns);
  return p;
}

TEST(ClockFit, TheKernelsFigureGivenAtTheStartIsTheOneUsed) {
  ClockFit fit(2.5);
  fit.Add(PairAt(5'000'000'000ull, 2.0));
  fit.Add(PairAt(6'000'000'000ull, 2.0));
  const trace::ClockMapping m = fit.Mapping();
  EXPECT_EQ(m.method, "perf-mmap");
  EXPECT_DOUBLE_EQ(m.tsc_per_ns, 2.5);
}

TEST(ClockFit, WithoutTheKernelsFigureTheFrequencyIsFittedFromThePairs) {
  ClockFit fit(0);
  for (int i = 0; i < 10; ++i) fit.Add(PairAt(5'000'000'000ull + uint64_t(i) * 1'000'000'000ull, 2.445));
  const trace::ClockMapping m = fit.Mapping();
  EXPECT_EQ(m.method, "tsc-fit");
  EXPECT_NEAR(m.tsc_per_ns, 2.445, 1e-6);
  EXPECT_NEAR(double(m.MonoToTsc(7'000'000'000ull)), 1'000'000 + 2e9 * 2.445, 2.0);
}

}  // namespace
}  // namespace jackdaw::capture
