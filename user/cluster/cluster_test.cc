#include "cluster/cluster.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

namespace jackdaw::cluster {
namespace {

// One token per (symbol, cpu in units of the scale): r[0] = cpu.
// Symbol cost 1, to keep the arithmetic obvious.
NormString S(std::vector<std::pair<uint32_t, float>> toks) {
  NormString s;
  s.symbol_cost = 1;
  for (auto [sym, cpu] : toks) {
    NormToken t;
    t.symbol = sym;
    t.r[0] = cpu;
    t.indel = 1 + std::abs(cpu);
    s.total[0] += cpu;
    s.tokens.push_back(t);
  }
  return s;
}

std::vector<NormString> ThreeGroups(std::vector<uint32_t>* truth, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> jitter(-0.05f, 0.05f);
  std::vector<NormString> out;
  for (int i = 0; i < 90; ++i) {
    uint32_t g = static_cast<uint32_t>(rng() % 3);
    truth->push_back(g);
    if (g == 0) out.push_back(S({{0, 0.01f}, {1, 1.0f + jitter(rng)}, {2, 0}}));
    if (g == 1) out.push_back(S({{0, 0.01f}, {1, 2.0f + jitter(rng)}, {2, 0}}));
    if (g == 2) out.push_back(S({{0, 0.01f}, {3, 0.1f}, {1, 1.0f + jitter(rng)}, {2, 0}}));
  }
  return out;
}

TEST(ClusterTest, WellSeparatedGroupsWithDerivedThreshold) {
  std::vector<uint32_t> truth;
  std::vector<NormString> s = ThreeGroups(&truth, 1);
  Clustering c = ClusterRequests(s);
  EXPECT_EQ(c.threshold.source, ThresholdEstimate::Source::kGap);
  EXPECT_GT(c.threshold.threshold, 0.1);  // above jitter (<= 0.1 apart)
  EXPECT_LT(c.threshold.threshold, 1.0);  // below the groups' separation
  ASSERT_EQ(c.clusters.size(), 3u);
  for (const Cluster& cl : c.clusters) {
    std::set<uint32_t> labels;
    for (uint32_t i : cl.members) labels.insert(truth[i]);
    EXPECT_EQ(labels.size(), 1u);
    EXPECT_LT(cl.diameter, 0.06);
    EXPECT_GT(cl.min_separation, 0.8);
    EXPECT_GE(cl.nearest_cluster, 0);
  }
  for (size_t k = 1; k < c.clusters.size(); ++k)
    EXPECT_GE(c.clusters[k - 1].members.size(), c.clusters[k].members.size());
}

TEST(ClusterTest, OneScaleOfVariationUsesTheFloor) {
  std::vector<NormString> s;
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<float> jitter(-0.02f, 0.02f);
  for (int i = 0; i < 50; ++i) s.push_back(S({{0, 0}, {1, 1.0f + jitter(rng)}}));
  Clustering c = ClusterRequests(s);
  EXPECT_EQ(c.threshold.source, ThresholdEstimate::Source::kFloor);
  EXPECT_DOUBLE_EQ(c.threshold.threshold, kFloorThreshold);
  EXPECT_EQ(c.clusters.size(), 1u);
}

TEST(ClusterTest, BeyondThresholdStartsNewCluster) {
  std::vector<NormString> s = {S({{0, 1.0f}}), S({{0, 1.5f}}), S({{0, 3.0f}})};
  ClusterOptions o;
  o.threshold = 0.6;
  Clustering c = ClusterRequests(s, o);
  ASSERT_EQ(c.clusters.size(), 2u);
  EXPECT_EQ(c.threshold.source, ThresholdEstimate::Source::kUser);
  EXPECT_EQ(c.assignment[0], c.assignment[1]);
  EXPECT_NE(c.assignment[0], c.assignment[2]);
}

TEST(ClusterTest, RefinementMovesRequestsToTheirNearestRepresentative) {
  // Online: 0.0 founds A, 0.8 joins A (B does not exist yet), 1.5 founds B.
  // A's medoid stays 0.0, so 0.8 is nearer B's representative (0.7 < 0.8).
  std::vector<NormString> s = {S({{0, 0.0f}}), S({{0, 0.8f}}), S({{0, 1.5f}})};
  ClusterOptions o;
  o.threshold = 1.0;
  o.refine = false;
  Clustering online = ClusterRequests(s, o);
  EXPECT_EQ(online.assignment[1], online.assignment[0]);
  o.refine = true;
  Clustering refined = ClusterRequests(s, o);
  EXPECT_EQ(refined.refine_moves, 1u);
  EXPECT_EQ(refined.assignment[1], refined.assignment[2]);
  EXPECT_NEAR(refined.distance[1], 0.7, 1e-6);
}

TEST(ClusterTest, DiameterSeparationAndRepresentative) {
  std::vector<NormString> s = {S({{0, 0.0f}}), S({{0, 0.2f}}), S({{0, 0.4f}}), S({{0, 5.0f}})};
  ClusterOptions o;
  o.threshold = 1.0;
  Clustering c = ClusterRequests(s, o);
  ASSERT_EQ(c.clusters.size(), 2u);
  const Cluster& big = c.clusters[0];
  EXPECT_EQ(big.representative, 1u);  // the medoid
  EXPECT_NEAR(big.diameter, 0.4 / 3, 1e-6);
  EXPECT_NEAR(big.max_distance, 0.2, 1e-6);
  EXPECT_NEAR(big.min_separation, 4.8, 1e-5);
  EXPECT_EQ(big.nearest_cluster, 1);
  EXPECT_NEAR(c.clusters[1].min_separation, 4.8, 1e-5);
  EXPECT_NEAR(c.avg_inter_cluster_distance, 4.8, 1e-5);
  EXPECT_NEAR(c.avg_diameter, 0.4 / 4, 1e-6);
}

TEST(ClusterTest, DeterministicForTheSameInput) {
  std::vector<uint32_t> truth;
  std::vector<NormString> s = ThreeGroups(&truth, 9);
  Clustering a = ClusterRequests(s), b = ClusterRequests(s);
  EXPECT_EQ(a.assignment, b.assignment);
  EXPECT_EQ(a.distance, b.distance);
}

TEST(ClusterTest, IncrementalClustererOnline) {
  std::vector<NormString> s;
  for (int i = 0; i < 40; ++i) s.push_back(S({{0, 1.0f + 0.001f * static_cast<float>(i % 7)}}));
  s.push_back(S({{1, 9.0f}}));
  IncrementalClusterer inc(0.5);
  for (size_t i = 0; i + 1 < s.size(); ++i) EXPECT_EQ(inc.Add(&s[i]), 0u);
  EXPECT_EQ(inc.Add(&s.back()), 1u);
  EXPECT_EQ(inc.num_clusters(), 2u);
  EXPECT_EQ(inc.members(0).size(), 40u);
  EXPECT_LT(inc.AverageDiameter(), 0.01);
  EXPECT_GT(inc.distance_computations(), 0u);
}

TEST(ClusterTest, EmptyInput) {
  Clustering c = ClusterRequests(std::span<const NormString>());
  EXPECT_TRUE(c.clusters.empty());
  EXPECT_TRUE(c.assignment.empty());
}

}  // namespace
}  // namespace jackdaw::cluster
