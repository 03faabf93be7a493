#include "predict/script.h"

#include <gtest/gtest.h>

#include "request/synthetic.h"

namespace jackdaw::predict {
namespace {

using model::SyntheticKind;
using model::synthetic::RequestBuilder;

constexpr uint32_t kWorker = 11, kHelper = 12;

std::vector<StepKind> Kinds(const ThreadScript& t) {
  std::vector<StepKind> k;
  for (const Step& s : t.steps) k.push_back(s.kind);
  return k;
}

TEST(Script, PreemptionIsNotReplayedButABlockedWaitIs) {
  RequestBuilder b(1);
  b.Add(kWorker, 0, "usdt:request_start", SyntheticKind::kNone, 100);
  b.Add(kWorker, 1'000'000, "switch_out:preempted", SyntheticKind::kNone, 999'900);
  // 3 ms in the run queue, then 1 ms of CPU.
  b.Add(kWorker, 5'000'000, "sys_enter:recvfrom", SyntheticKind::kNone, 1'000'000);
  b.Add(kWorker, 5'000'100, "switch_out:blocked", SyntheticKind::kNone, 100);
  // 2 ms blocked on the network, 0.5 ms of which was the run queue after
  // the wake-up (the recorded run-queue total is 3.5 ms).
  b.Add(kWorker, 7'100'100, "usdt:request_end", SyntheticKind::kNone, 100'000);
  b.AddRunqWait(3'500'000);
  RequestScript s = BuildScript(std::move(b).Build());
  ASSERT_EQ(s.threads.size(), 1u);
  EXPECT_EQ(Kinds(s.threads[0]), (std::vector<StepKind>{StepKind::kCpu, StepKind::kDelay, StepKind::kCpu}));
  EXPECT_EQ(s.threads[0].steps[0].ns, 100u + 999'900 + 1'000'000 + 100);
  EXPECT_EQ(s.threads[0].steps[1].ns, 2'000'000u - 500'000);
  EXPECT_EQ(s.cpu_ns, 2'100'100u);
  EXPECT_EQ(s.recorded_latency_ns, 7'100'100u);
}

TEST(Script, ABlockedReadWaitsForItsDiskIo) {
  RequestBuilder b(2);
  b.Add(kWorker, 0, "sys_enter:read", SyntheticKind::kNone, 10'000);
  b.Add(kWorker, 20'000, "io_start:read", SyntheticKind::kIoStart, 10'000);
  b.Add(kWorker, 25'000, "switch_out:blocked", SyntheticKind::kNone, 5'000);
  b.Add(0, 220'000, "block_complete:read", SyntheticKind::kNone, 2'000, 4096);
  b.Add(kWorker, 260'000, "sys_exit:read", SyntheticKind::kNone, 1'000);
  RequestScript s = BuildScript(std::move(b).Build());
  ASSERT_EQ(s.threads.size(), 1u);
  EXPECT_EQ(s.ios, 1u);
  EXPECT_EQ(Kinds(s.threads[0]), (std::vector<StepKind>{StepKind::kCpu, StepKind::kDiskSubmit, StepKind::kCpu,
                                                        StepKind::kDiskWait, StepKind::kCpu}));
  EXPECT_EQ(s.threads[0].steps[1].ns, 200'000u);  // io_start to completion
  EXPECT_EQ(s.disk_ns, 200'000u);
  // The interrupt's CPU rides on the next task event.
  EXPECT_EQ(s.threads[0].steps[4].ns, 3'000u);
  EXPECT_EQ(s.delay_ns, 0u);
}

TEST(Script, AnRpcToAHelperIsSignalAndWaitOnBothThreads) {
  RequestBuilder b(3);
  b.Add(kWorker, 0, "usdt:request_start", SyntheticKind::kNone, 1'000);
  const uint32_t sig = b.Add(kWorker, 7'500'000, "signal", SyntheticKind::kSignal, 7'499'000);
  b.Add(kWorker, 7'510'000, "switch_out:blocked", SyntheticKind::kNone, 10'000);
  const uint32_t res = b.Add(kHelper, 7'600'000, "resume", SyntheticKind::kResume, 0);
  const uint32_t back = b.Add(kHelper, 22'600'000, "signal", SyntheticKind::kSignal, 15'000'000);
  const uint32_t wake = b.Add(kWorker, 22'700'000, "resume", SyntheticKind::kResume, 0);
  b.Add(kWorker, 29'950'000, "usdt:request_end", SyntheticKind::kNone, 7'250'000);
  b.Edge(sig, res);
  b.Edge(back, wake);
  RequestScript s = BuildScript(std::move(b).Build());
  ASSERT_EQ(s.threads.size(), 2u);
  EXPECT_EQ(s.edges, 2u);
  EXPECT_EQ(Kinds(s.threads[0]),
            (std::vector<StepKind>{StepKind::kCpu, StepKind::kSignal, StepKind::kCpu, StepKind::kWait, StepKind::kCpu}));
  EXPECT_EQ(Kinds(s.threads[1]), (std::vector<StepKind>{StepKind::kWait, StepKind::kCpu, StepKind::kSignal}));
  EXPECT_EQ(s.threads[1].steps[1].ns, 15'000'000u);
  // The worker's wait for the helper is not a delay: the simulation makes it.
  EXPECT_EQ(s.delay_ns, 0u);
  // Both wake-ups found their thread asleep: signal to resume, 100 us each.
  EXPECT_EQ(s.wake_gaps_ns, (std::vector<uint32_t>{100'000, 100'000}));
  EXPECT_EQ(s.recorded_wakeups, 2u);  // the worker's, and the helper's into the request
}

TEST(Script, AThreadStartsAsLateAsItDidAfterTheRequestsFirstEvent) {
  RequestBuilder b(5);
  b.Add(0, 0, "net_recv", SyntheticKind::kNone, 3'000);  // the connection's first packet
  b.Add(kWorker, 200'000, "sys_exit:accept4", SyntheticKind::kNone, 10'000);
  b.Add(kWorker, 300'000, "usdt:request_end", SyntheticKind::kNone, 90'000);
  RequestScript s = BuildScript(std::move(b).Build());
  ASSERT_EQ(s.threads.size(), 1u);
  EXPECT_EQ(Kinds(s.threads[0]), (std::vector<StepKind>{StepKind::kDelay, StepKind::kCpu}));
  EXPECT_EQ(s.threads[0].steps[0].ns, 200'000u);
  EXPECT_EQ(s.threads[0].steps[0].arg, 1u);  // its wake-up is in it
  EXPECT_EQ(s.threads[0].steps[1].ns, 103'000u);
}

TEST(Script, BackwardAndSameThreadEdgesAreDropped) {
  RequestBuilder b(4);
  const uint32_t a = b.Add(kWorker, 0, "signal", SyntheticKind::kSignal, 10);
  const uint32_t c = b.Add(kWorker, 100, "resume", SyntheticKind::kResume, 10);
  const uint32_t d = b.Add(kHelper, 200, "signal", SyntheticKind::kSignal, 10);
  b.Edge(a, c);  // same thread
  b.Edge(d, a);  // backward in time
  RequestScript s = BuildScript(std::move(b).Build());
  EXPECT_EQ(s.edges, 0u);
  for (const ThreadScript& t : s.threads)
    for (const Step& st : t.steps) EXPECT_TRUE(st.kind == StepKind::kCpu || st.kind == StepKind::kDelay);
}

}  // namespace
}  // namespace jackdaw::predict
