#include "fleet/fleet_report.h"

#include <sstream>

#include <gtest/gtest.h>

#include "fleet/deviation.h"
#include "fleet/merge.h"

namespace jackdaw::fleet {
namespace {

HostCluster Row(const std::string& host, uint64_t requests, double p50, const std::string& rep) {
  HostCluster c;
  c.host = host;
  c.schema = "s";
  c.cluster = 0;
  c.label = "c0";
  c.requests = requests;
  c.p50_latency_ns = p50;
  c.mean_cpu_ns = 2e6;
  c.representative = rep;
  c.first_start_ns = 1'000'000'000;
  c.last_end_ns = 11'000'000'000;
  return c;
}

TEST(FleetReport, TextAndJsonSayTheSame) {
  FleetReport r;
  r.store = "http://store:8123";
  r.deviation_threshold = 0.5;
  r.rows = {Row("a", 60, 1e6, "x{cpu=2.000000ms}"), Row("b", 20, 1e6, "x{cpu=2.000000ms}"),
            Row("c", 20, 5e6, "x{cpu=2.000000ms}"), Row("c", 10, 1e6, "y z{net=99B}")};
  r.rows[3].cluster = 1;
  r.rows[3].label = "c1";
  r.window_s = WindowSeconds(r.rows, 0);
  r.kinds = MergeKinds(r.rows, {});
  r.deviations = FindDeviations(r.kinds, r.rows, {});
  const auto j = FleetToJson(r);
  EXPECT_EQ(j["requests"], 110);
  EXPECT_DOUBLE_EQ(j["window_s"].get<double>(), 10.0);
  ASSERT_EQ(j["kinds"].size(), 2u);
  EXPECT_DOUBLE_EQ(j["kinds"][0]["requests_per_s"].get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(j["kinds"][0]["share"].get<double>(), 100.0 / 110);
  ASSERT_EQ(j["deviations"].size(), 1u);
  EXPECT_EQ(j["deviations"][0]["host"], "c");
  ASSERT_EQ(j["single_host_kinds"].size(), 1u);
  EXPECT_EQ(j["single_host_kinds"][0]["kind"], "k1");
  std::ostringstream text;
  WriteFleetText(r, text);
  EXPECT_NE(text.str().find("Fleet: 3 hosts, 110 requests, 2 kinds"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("  c on k0: p50 latency 5.000 ms against 1.000 ms on the other 2 hosts (+400 %)"),
            std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find("  k1 on c: 10 requests (nearest kind k0"), std::string::npos) << text.str();
}

TEST(FleetReport, NothingToReportNoCrash) {
  FleetReport r;
  std::ostringstream text;
  WriteFleetText(r, text);
  EXPECT_NE(text.str().find("Fleet: 0 hosts"), std::string::npos);
  EXPECT_TRUE(FleetToJson(r)["kinds"].empty());
  EXPECT_EQ(WindowSeconds({}, 5), 0);
}

}  // namespace
}  // namespace jackdaw::fleet
