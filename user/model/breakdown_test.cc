#include "model/breakdown.h"

#include <gtest/gtest.h>

#include "request/synthetic.h"

namespace jackdaw::model {
namespace {

using synthetic::Jitter;
using synthetic::RequestFactory;

// 20 identical B requests; the last two are slowed down by `slow`.
template <typename Slow>
LatencyBreakdown Analyze(Slow slow) {
  Jitter j;
  j.spin = 0;
  j.small = 0;
  RequestFactory f(1, j);
  std::vector<Request> reqs;
  for (uint64_t i = 0; i < 20; ++i) {
    reqs.push_back(f.Make('B', i + 1, i * 100'000'000ull, 10, 11));
    if (i >= 18) slow(&reqs.back());
  }
  ModelOptions o;
  o.cluster.threshold = 1.0;
  StatusOr<WorkloadModel> m = BuildModel(reqs, o);
  EXPECT_TRUE(m.ok());
  EXPECT_EQ(m->clusters.size(), 1u);
  EXPECT_EQ(m->breakdowns.size(), 1u);
  return m->breakdowns.at(0);
}

TEST(LatencyBreakdownTest, RunQueueContention) {
  LatencyBreakdown b = Analyze([](Request* r) {
    r->end_ns += 20'000'000;
    r->totals.runq_wait_ns += 20'000'000;
  });
  EXPECT_EQ(b.group_size, 2u);
  EXPECT_EQ(b.verdict, LatencyBreakdown::Verdict::kRunQueue);
  EXPECT_DOUBLE_EQ(b.delta_latency_ns, 20e6);
  EXPECT_DOUBLE_EQ(b.delta_runq_ns, 20e6);
  EXPECT_DOUBLE_EQ(b.delta_work_ns, 0);
  EXPECT_NE(b.explanation.find("contention: run queue"), std::string::npos) << b.explanation;
}

TEST(LatencyBreakdownTest, OwnWork) {
  LatencyBreakdown b = Analyze([](Request* r) {
    for (RequestEvent& e : r->events)
      if (e.symbol == "sys_enter:sendto") e.cpu_ns += 3'000'000;
    r->end_ns += 3'000'000;
    r->totals.cpu_ns += 3'000'000;
  });
  EXPECT_EQ(b.verdict, LatencyBreakdown::Verdict::kWork);
  EXPECT_DOUBLE_EQ(b.delta_work_ns, 3e6);
  EXPECT_DOUBLE_EQ(b.slow.cpu_ns - b.fast.cpu_ns, 3e6);
}

TEST(LatencyBreakdownTest, IoAndLockContention) {
  LatencyBreakdown io = Analyze([](Request* r) {
    r->end_ns += 5'000'000;
    r->totals.blocked_disk_ns += 5'000'000;
  });
  EXPECT_EQ(io.verdict, LatencyBreakdown::Verdict::kIo);
  LatencyBreakdown locks = Analyze([](Request* r) {
    r->end_ns += 5'000'000;
    r->totals.blocked_futex_ns += 5'000'000;
  });
  EXPECT_EQ(locks.verdict, LatencyBreakdown::Verdict::kLocks);
}

TEST(LatencyBreakdownTest, NegligibleSpreadHasNoVerdict) {
  LatencyBreakdown b = Analyze([](Request* r) { r->end_ns += 1'000; });
  EXPECT_EQ(b.verdict, LatencyBreakdown::Verdict::kNone);
}

}  // namespace
}  // namespace jackdaw::model
