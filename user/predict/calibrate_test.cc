#include "predict/calibrate.h"

#include <gtest/gtest.h>

namespace jackdaw::predict {
namespace {

class CalibrateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    s_.threads.resize(1);
    s_.threads[0].steps = {{StepKind::kCpu, 0, 1'000'000}};
    s_.cpu_ns = 1'000'000;
    k_.label = "c0";
    k_.share = 1;
    k_.scripts = {&s_};
    c_.cpus = 2;
    c_.clients = 2;
    c_.requests = 5000;
  }
  RequestScript s_;
  SimKind k_;
  SimConfig c_;
};

TEST_F(CalibrateTest, NothingToFindWhenTheRequestsAloneExplainTheirWaits) {
  // Alone, two clients on two CPUs never wait.
  for (OtherWork m : {OtherWork::kShare, OtherWork::kThreads}) {
    Calibration none = Calibrate(m, {k_}, c_, 1.0);
    EXPECT_EQ(none.other_cpus, 0);
    EXPECT_EQ(none.background_threads, 0);
    EXPECT_NEAR(none.simulated_stretch, 1.0, 1e-9);
  }
}

TEST_F(CalibrateTest, FindsTheThreadsThatStretchedTheRecordedCpuWork) {
  // Recorded twice as long as their CPU: two more runnable threads made
  // (2 + 2) / 2 CPUs.
  Calibration two = Calibrate(OtherWork::kThreads, {k_}, c_, 2.0);
  EXPECT_NEAR(two.background_threads, 2.0, 0.01);
  EXPECT_NEAR(two.simulated_stretch, 2.0, 0.01);
}

TEST_F(CalibrateTest, FindsTheCpusTheOtherWorkTookAndKeepsThemTaken) {
  // Twice as long: the two clients had one CPU between them.
  Calibration share = Calibrate(OtherWork::kShare, {k_}, c_, 2.0);
  EXPECT_NEAR(share.other_cpus, 1.0, 0.01);
  SimConfig four = c_;
  four.cpus = 4;
  share.Apply(&four);
  EXPECT_NEAR(four.cpu_capacity, 3.0, 0.01);
}

}  // namespace
}  // namespace jackdaw::predict
