#include "report/interactions.h"

#include <gtest/gtest.h>

#include <sstream>

namespace jackdaw::report {
namespace {

// The BPF side's bucket function (bpf/interact.bpf.c hist_bucket), restated
// only to generate inputs; the bounds under test come from the report.
uint32_t Bucket(uint64_t us) {
  if (us < 4) return us;
  uint32_t msb = 63 - __builtin_clzll(us);
  if (msb > 27) return JDW_IA_HIST_BUCKETS - 1;
  return 4 * (msb - 1) + ((us >> (msb - 2)) & 3);
}

TEST(InteractionsReport, BucketBoundsContainTheirValues) {
  for (uint64_t us : {0ull, 1ull, 3ull, 4ull, 5ull, 7ull, 8ull, 9ull, 15ull, 16ull, 100ull, 1000ull,
                      12345ull, 999999ull, 100000000ull}) {
    double lo, hi;
    HistBucketBounds(Bucket(us), &lo, &hi);
    EXPECT_LE(lo, double(us)) << us;
    EXPECT_LT(double(us), hi) << us;
  }
}

TEST(InteractionsReport, QuantilesFollowTheHistogram) {
  uint32_t hist[JDW_IA_HIST_BUCKETS] = {};
  hist[Bucket(1000)] = 98;   // 1 ms
  hist[Bucket(30000)] = 2;   // 30 ms
  const double p50 = HistQuantileNs(hist, 0.5), p99 = HistQuantileNs(hist, 0.99);
  EXPECT_GE(p50, 1000e3 * 0.75);
  EXPECT_LE(p50, 1000e3 * 1.25);
  EXPECT_GE(p99, 30000e3 * 0.75);
  EXPECT_LE(p99, 30000e3 * 1.25);
  uint32_t empty[JDW_IA_HIST_BUCKETS] = {};
  EXPECT_EQ(HistQuantileNs(empty, 0.5), 0);
}

TEST(InteractionsReport, SplitAddsUpForAServer) {
  jdw_interaction ia{};
  ia.role = JDW_ROLE_SERVER;
  ia.req_start = 1000;
  ia.req_end = 1100;
  ia.in_read = 1500;
  ia.resp_start = 4000;
  ia.resp_end = 4200;
  LatencySplit l = SplitLatency(ia);
  EXPECT_EQ(l.kernel_ns, 500u);
  EXPECT_EQ(l.app_ns, 2500u);
  EXPECT_EQ(l.send_ns, 200u);
  EXPECT_EQ(l.total_ns, 3200u);
  EXPECT_EQ(l.kernel_ns + l.app_ns + l.send_ns, l.total_ns);
}

TEST(InteractionsReport, ClassTableAndJson) {
  ClassRow r;
  r.key.family = 2;
  r.key.raddr[0] = 127;
  r.key.raddr[3] = 1;
  r.key.port = 8080;
  r.key.role = JDW_ROLE_SERVER;
  r.stats.count = 10;
  r.stats.req_bytes = 1000;
  r.stats.resp_bytes = 50000;
  r.stats.total_ns = 10'000'000;
  r.stats.hist[Bucket(1000)] = 10;
  std::ostringstream out;
  WriteClassTable({r}, 2.0, 32, 128, out);
  EXPECT_NE(out.str().find("server 127.0.0.1 :8080"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("5.0"), std::string::npos) << out.str();  // 10 per 2 s
  nlohmann::json j = ClassRowsJson({r}, 2.0, 24, 128);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["count"], 10);
  EXPECT_EQ(j[0]["class"], "server 127.0.0.1/24 :8080");
  EXPECT_DOUBLE_EQ(j[0]["per_second"].get<double>(), 5.0);
}

}  // namespace
}  // namespace jackdaw::report
