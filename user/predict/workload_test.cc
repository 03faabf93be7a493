#include "predict/workload.h"

#include <gtest/gtest.h>

#include "request/synthetic.h"

namespace jackdaw::predict {
namespace {

using model::SyntheticKind;
using model::synthetic::RequestBuilder;

// One thread: `cpu_ns` of CPU from start_ns, ending at end_ns.
model::Request Simple(uint64_t id, uint64_t start_ns, uint64_t end_ns, uint64_t cpu_ns) {
  RequestBuilder b(id);
  b.Add(7, start_ns, "usdt:request_start", SyntheticKind::kNone, 0);
  b.Add(7, end_ns, "usdt:request_end", SyntheticKind::kNone, cpu_ns);
  return std::move(b).Build();
}

TEST(Workload, KindsFollowTheModelsLabelsAndKeepEveryLatency) {
  WorkloadCollector c(/*scripts_per_kind=*/3);
  // Two clients back to back for 1 s: kind 10 takes 4 ms, kind 20 takes 1 ms.
  uint64_t id = 1;
  for (uint64_t t = 0; t < 1'000'000'000; t += 5'000'000) {
    c.Add(Simple(id, t, t + 4'000'000, 2'000'000));
    c.Assign(id++, 10);
    c.Add(Simple(id, t, t + 1'000'000, 1'000'000));
    c.Assign(id++, 20);
  }
  c.Add(Simple(id, 0, 10, 10));  // never assigned (e.g. incomplete): left out
  RecordedWorkload w = c.Finish({{20, "c0"}, {10, "c1"}}, 2);
  ASSERT_EQ(w.kinds.size(), 2u);
  EXPECT_EQ(w.kinds[0].label, "c0");
  EXPECT_EQ(w.kinds[0].count, 200u);
  EXPECT_EQ(w.kinds[0].latencies_ns.size(), 200u);
  EXPECT_EQ(w.kinds[0].scripts.size(), 3u);  // a sample
  EXPECT_EQ(w.requests, 400u);
  EXPECT_DOUBLE_EQ(w.duration_ns(), 999'000'000.0);
  EXPECT_NEAR(w.throughput_per_s(), 400.4, 0.1);
  // In flight: (4 + 1) ms per 5 ms -> 1 on average.
  EXPECT_NEAR(w.mean_in_flight(), 1.0, 0.01);
  EXPECT_EQ(w.EstimatedClients(), 1u);
  // One client making 400 req/s of 2.5 ms requests spends none between them.
  EXPECT_NEAR(w.ClientGapNs(1), 0, 1e4);
  // 600 ms of CPU over 2 CPUs x 0.999 s.
  EXPECT_NEAR(w.cpu_utilisation(), 0.3, 0.001);
  EXPECT_EQ(w.Find("c1")->count, 200u);
  EXPECT_EQ(w.Find("c9"), nullptr);
}

TEST(Workload, WakeUpLatencyIsTheLowerQuartileAndLeavesTheRunQueue) {
  WorkloadCollector c;
  // Requests whose worker hands a helper work: signal to resume takes
  // 40, 60, 80 or 400 us (the last found the CPUs busy).
  const uint64_t gaps[] = {40'000, 60'000, 80'000, 400'000};
  for (uint64_t i = 0; i < 4; ++i) {
    RequestBuilder b(i + 1);
    const uint32_t sig = b.Add(1, 0, "signal", SyntheticKind::kSignal, 1'000'000);
    b.Add(1, 10'000, "switch_out:blocked", SyntheticKind::kNone, 0);
    const uint32_t res = b.Add(2, gaps[i], "resume", SyntheticKind::kResume, 0);
    const uint32_t back = b.Add(2, gaps[i] + 1'000'000, "signal", SyntheticKind::kSignal, 1'000'000);
    const uint32_t wake = b.Add(1, gaps[i] + 1'050'000, "resume", SyntheticKind::kResume, 0);
    b.Edge(sig, res);
    b.Edge(back, wake);
    b.AddRunqWait(gaps[i] + 50'000);
    c.Add(std::move(b).Build());
    c.Assign(i + 1, 1);
  }
  RecordedWorkload w = c.Finish({{1, "c0"}}, 2);
  // Eight wake-up gaps: 50 us (the worker's, four times), 40, 60, 80, 400.
  EXPECT_DOUBLE_EQ(w.wakeup_ns, 50'000);
  // The run-queue wait less 50 us for each of the 8 wake-ups (two a
  // request: the helper's and the worker's), over 8 ms of CPU.
  const double runq = (40'000 + 60'000 + 80'000 + 400'000) + 4 * 50'000.0;
  EXPECT_NEAR(w.cpu_stretch(), 1.0 + (runq - 8 * 50'000.0) / 8e6, 1e-9);
}

TEST(Workload, ClustersTheModelNoLongerHasAreCountedNotKept) {
  WorkloadCollector c;
  c.Add(Simple(1, 0, 100, 50));
  c.Assign(1, 5);
  c.Add(Simple(2, 0, 100, 50));
  c.Assign(2, 6);
  RecordedWorkload w = c.Finish({{5, "c0"}}, 1);
  EXPECT_EQ(w.kinds.size(), 1u);
  EXPECT_EQ(w.unassigned, 1u);
}

}  // namespace
}  // namespace jackdaw::predict
