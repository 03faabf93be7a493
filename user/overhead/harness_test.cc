// The bpftrace comparison's count: event lines and reported losses, from
// output shaped as bpftrace 0.17 (Debian 12) and later versions print it.
#include "overhead/harness.h"

#include <gtest/gtest.h>

namespace jackdaw::overhead {
namespace {

TEST(CountBpftraceOutput, CountsEventLinesAndLossesOnStdoutNotItsOwnMessages) {
  // 0.17: the probe count and the losses go to stdout, between events.
  const std::string out =
      "Attaching 3 probes...\n"
      "jackdaw-ready\n"
      "E 100 7 110 0 0\n"
      "X 101 7 110 6\n"
      "Lost 1234 events\n"
      "E 102 7 110 0 0\n"
      "Lost 66 events\n"
      "X 103 7 110 6\n";
  const BpftraceCount n = CountBpftraceOutput(out, "");
  EXPECT_EQ(n.events, 4u);
  EXPECT_EQ(n.lost, 1300u);
}

TEST(CountBpftraceOutput, LossesOnStderrCountAndAnUnfinishedLastLineIsAnEvent) {
  // Later versions: messages on stderr; SIGINT may cut the last line short.
  const BpftraceCount n = CountBpftraceOutput("jackdaw-ready\nS 1 2 3 0\nW 2 3 4 1\nT 5 6", "Attached 2 probes\nLost 7 events\n");
  EXPECT_EQ(n.events, 3u);
  EXPECT_EQ(n.lost, 7u);
}

TEST(CountBpftraceOutput, NothingPrintedIsNothingCounted) {
  const BpftraceCount n = CountBpftraceOutput("", "");
  EXPECT_EQ(n.events, 0u);
  EXPECT_EQ(n.lost, 0u);
}

}  // namespace
}  // namespace jackdaw::overhead
