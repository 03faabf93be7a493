#include "export/clickhouse/model_rows.h"

#include <gtest/gtest.h>

namespace jackdaw::clickhouse {
namespace {

TEST(ModelRows, BatchModelClustersWithQuantilesFromTheirMembers) {
  model::WorkloadModel m;
  for (uint64_t i = 0; i < 100; ++i) {
    model::RequestSummary r;
    r.id = 1000 + i;
    r.cluster = i < 90 ? 0 : 1;
    r.latency_ns = (i + 1) * 1000;  // 1..100 us
    m.requests.push_back(r);
  }
  model::ClusterSummary big, small;
  big.id = 0, big.label = "c0", big.size = 90, big.mean.cpu_ns = 5e4, big.representative_text = "T0 read";
  small.id = 1, small.label = "c1", small.size = 10, small.anomalous = true;
  for (uint32_t i = 0; i < 100; ++i) (i < 90 ? big : small).members.push_back(i);
  m.clusters = {big, small};

  const std::vector<ModelCluster> cs = ClustersOf(m);
  ASSERT_EQ(cs.size(), 2u);
  EXPECT_EQ(cs[0].cluster, 0);
  EXPECT_EQ(cs[0].label, "c0");
  EXPECT_EQ(cs[0].requests, 90u);
  EXPECT_DOUBLE_EQ(cs[0].mean_cpu_ns, 5e4);
  EXPECT_DOUBLE_EQ(cs[0].mean_latency_ns, 45'500);  // mean of 1..90 us
  EXPECT_DOUBLE_EQ(cs[0].p50_latency_ns, 45'000);
  EXPECT_DOUBLE_EQ(cs[0].p99_latency_ns, 90'000);
  EXPECT_EQ(cs[0].representative, "T0 read");
  EXPECT_TRUE(cs[1].anomalous);
  EXPECT_DOUBLE_EQ(cs[1].p50_latency_ns, 95'000);

  const auto of = ClusterOfRequests(m);
  EXPECT_EQ(of.at(1000), 0);
  EXPECT_EQ(of.at(1095), 1);
}

TEST(ModelRows, RunningClustersKeepTheirStableIdsAndRank) {
  model::ClusterRunning a, b;
  a.id = 17, a.count = 4, a.demand_sum.cpu_ns = 400, a.representative_text = "x";
  for (int i = 0; i < 4; ++i) a.latency.Add(10'000);
  b.id = 3, b.count = 1;
  b.latency.Add(1'000'000);
  const std::vector<ModelCluster> cs = ClustersOf(std::vector<model::ClusterRunning>{a, b});
  ASSERT_EQ(cs.size(), 2u);
  EXPECT_EQ(cs[0].cluster, 17);
  EXPECT_EQ(cs[0].label, "c0");
  EXPECT_DOUBLE_EQ(cs[0].mean_cpu_ns, 100);
  EXPECT_DOUBLE_EQ(cs[0].mean_latency_ns, 10'000);
  EXPECT_GE(cs[0].p99_latency_ns, 10'000);  // a histogram bucket's upper edge
  EXPECT_EQ(cs[1].cluster, 3);
  EXPECT_EQ(cs[1].label, "c1");
}

}  // namespace
}  // namespace jackdaw::clickhouse
