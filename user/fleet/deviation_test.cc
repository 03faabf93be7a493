#include "fleet/deviation.h"

#include <gtest/gtest.h>

#include "fleet/fleet_report.h"

namespace jackdaw::fleet {
namespace {

HostCluster Row(const std::string& host, double p50, double cpu) {
  HostCluster c;
  c.host = host;
  c.requests = 10;
  c.p50_latency_ns = p50;
  c.mean_cpu_ns = cpu;
  return c;
}

FleetKind KindOf(const std::string& name, std::vector<size_t> rows) {
  FleetKind k;
  k.name = name;
  for (size_t r : rows) k.members.push_back({r, 0});
  return k;
}

TEST(MedianNearest, OddMiddleEvenTheNearerMiddle) {
  EXPECT_EQ(MedianNearest({3, 1, 2}, 100), 2);
  EXPECT_EQ(MedianNearest({1, 4}, 1), 1);
  EXPECT_EQ(MedianNearest({1, 4}, 5), 4);
  EXPECT_EQ(MedianNearest({}, 5), 0);
}

TEST(FindDeviations, TheSlowHostNamedNotTheIdenticalOnes) {
  const std::vector<HostCluster> rows = {Row("web-1", 1e6, 50e3), Row("web-2", 1e6, 50e3), Row("web-3", 3e6, 50e3)};
  const auto d = FindDeviations({KindOf("k0", {0, 1, 2})}, rows, {});
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].host, "web-3");
  EXPECT_EQ(d[0].kind, "k0");
  EXPECT_EQ(d[0].metric, "p50_latency_ns");
  EXPECT_DOUBLE_EQ(d[0].relative, 2.0);
  EXPECT_EQ(d[0].other_hosts, 2u);
}

TEST(FindDeviations, CpuAndFasterHostsCountToo) {
  const std::vector<HostCluster> rows = {Row("a", 1e6, 100e3), Row("b", 1e6, 100e3), Row("c", 0.2e6, 300e3),
                                         Row("d", 1.1e6, 110e3)};
  const auto d = FindDeviations({KindOf("k0", {0, 1, 2, 3})}, rows, {});
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].host, "c");
  EXPECT_EQ(d[0].metric, "p50_latency_ns");
  EXPECT_LT(d[0].relative, -0.5);
  EXPECT_EQ(d[1].metric, "cpu_ns_per_request");
}

TEST(FindDeviations, ThresholdAbsoluteFloorAndSingleHostKinds) {
  const std::vector<HostCluster> rows = {Row("a", 1e6, 50e3), Row("b", 1.4e6, 50e3), Row("a", 2e3, 1e3),
                                         Row("b", 6e3, 3e3), Row("c", 1e6, 1e6)};
  DeviationOptions o;
  // b 40 % above a, a 29 % below b: under 0.5; over 0.25 both ways (two
  // hosts: both named); at 0.3 only b.
  EXPECT_TRUE(FindDeviations({KindOf("k0", {0, 1})}, rows, o).empty());
  o.threshold = 0.25;
  EXPECT_EQ(FindDeviations({KindOf("k0", {0, 1})}, rows, o).size(), 2u);
  o.threshold = 0.3;
  const auto one = FindDeviations({KindOf("k0", {0, 1})}, rows, o);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].host, "b");
  // Three times as slow but 4 us apart: noise.
  EXPECT_TRUE(FindDeviations({KindOf("k1", {2, 3})}, rows, o).empty());
  // One host: nothing to compare with.
  EXPECT_TRUE(FindDeviations({KindOf("k2", {4})}, rows, o).empty());
  FleetReport r;
  r.rows = rows;
  r.kinds = {KindOf("k0", {0, 1}), KindOf("k2", {4})};
  const auto single = SingleHostKinds(r);
  ASSERT_EQ(single.size(), 1u);
  EXPECT_EQ(single[0]->name, "k2");
}

TEST(FindDeviations, ZerosAndNaNsNeverNamedNorCrash) {
  const std::vector<HostCluster> rows = {Row("a", 0, 0), Row("b", 0, 0), Row("c", 1e9, std::nan(""))};
  const auto d = FindDeviations({KindOf("k0", {0, 1, 2})}, rows, {});
  EXPECT_TRUE(d.empty());
}

}  // namespace
}  // namespace jackdaw::fleet
