#include "predict/calibrate.h"

#include <gtest/gtest.h>

namespace jackdaw::predict {
namespace {

TEST(Calibrate, FindsTheBackgroundThatStretchedTheRecordedCpuWork) {
  RequestScript s;
  s.threads.resize(1);
  s.threads[0].steps = {{StepKind::kCpu, 0, 1'000'000}};
  s.cpu_ns = 1'000'000;
  SimKind k;
  k.label = "c0";
  k.share = 1;
  k.scripts = {&s};
  SimConfig c;
  c.cpus = 2;
  c.clients = 2;
  c.requests = 5000;
  // Alone, two clients on two CPUs never wait: nothing to calibrate.
  Calibration none = CalibrateBackground({k}, c, 1.0);
  EXPECT_EQ(none.background_threads, 0);
  EXPECT_NEAR(none.simulated_stretch, 1.0, 1e-9);
  // Recorded twice as long as their CPU: two more runnable threads made
  // (2 + 2) / 2 CPUs.
  Calibration two = CalibrateBackground({k}, c, 2.0);
  EXPECT_NEAR(two.background_threads, 2.0, 0.01);
  EXPECT_NEAR(two.simulated_stretch, 2.0, 0.01);
}

}  // namespace
}  // namespace jackdaw::predict
