#include "cluster/interaction_clusters.h"

#include <gtest/gtest.h>

#include <random>

namespace jackdaw::cluster {
namespace {

InteractionPoint Make(uint64_t req, uint64_t resp, uint64_t app_us, uint16_t port, std::mt19937& rng) {
  std::uniform_real_distribution<double> jitter(0.9, 1.1);
  InteractionPoint p;
  p.tgid = 100;
  p.ia.role = JDW_ROLE_SERVER;
  p.ia.lport = port;
  p.ia.req_bytes = req;
  p.ia.resp_bytes = resp;
  p.ia.req_start = 1'000'000;
  p.ia.in_read = p.ia.req_start + 20'000;
  p.ia.resp_start = p.ia.in_read + static_cast<uint64_t>(app_us * 1000 * jitter(rng));
  p.ia.resp_end = p.ia.resp_start + 5'000;
  p.ia.oncpu_ns = static_cast<uint64_t>(app_us * 900 * jitter(rng));
  return p;
}

TEST(InteractionClusters, SeparatesKindsAndPorts) {
  std::mt19937 rng(1);
  std::vector<InteractionPoint> pts;
  for (int i = 0; i < 60; ++i) pts.push_back(Make(90, 12'500, 200, 80, rng));     // small static
  for (int i = 0; i < 30; ++i) pts.push_back(Make(90, 150, 30'000, 80, rng));     // long spin
  for (int i = 0; i < 10; ++i) pts.push_back(Make(90, 12'500, 200, 8080, rng));   // other port
  pts.push_back(Make(90, 5'000'000, 900'000, 80, rng));                           // outlier
  auto cs = ClusterInteractions(pts);
  ASSERT_EQ(cs.size(), 4u);
  EXPECT_EQ(cs[0].size, 60u);
  EXPECT_EQ(cs[1].size, 30u);
  EXPECT_EQ(cs[2].size, 10u);
  EXPECT_EQ(cs[2].port, 8080);
  EXPECT_EQ(cs[3].size, 1u);
  EXPECT_NEAR(cs[1].mean_app_ms, 30.0, 3.0);
  EXPECT_NEAR(cs[0].mean_resp_bytes, 12'500, 1);
  size_t total = 0;
  for (const auto& c : cs) total += c.members.size();
  EXPECT_EQ(total, pts.size());
}

TEST(InteractionClusters, EmptyInput) { EXPECT_TRUE(ClusterInteractions({}).empty()); }

}  // namespace
}  // namespace jackdaw::cluster
