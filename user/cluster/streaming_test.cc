#include "cluster/streaming.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

namespace jackdaw::cluster {
namespace {

NormString Tok(std::vector<std::pair<uint32_t, float>> toks) {
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

// Kind g of three: distinct structure or demand, +-5 % jitter.
NormString Kind(int g, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> j(-0.05f, 0.05f);
  if (g == 0) return Tok({{0, 0.01f}, {1, 1.0f + j(rng)}, {2, 0}});
  if (g == 1) return Tok({{0, 0.01f}, {1, 2.0f + j(rng)}, {2, 0}});
  return Tok({{0, 0.01f}, {3, 0.1f}, {1, 1.0f + j(rng)}, {2, 0}});
}

std::set<uint64_t> HeldKeys(const StreamingClusterer& c) {
  std::set<uint64_t> held;
  for (const auto& cl : c.clusters())
    for (const auto& m : cl.sample) EXPECT_TRUE(held.insert(m.key).second) << "key held twice";
  return held;
}

TEST(StreamingClusterer, FindsKindsAndKeepsOnlyItsSample) {
  StreamingClusterer c({.threshold = 0.5, .sample_per_cluster = 8});
  std::mt19937_64 rng(7);
  std::set<uint64_t> live;  // keys handed in and not yet released
  std::vector<int> truth;
  std::map<uint64_t, std::set<int>> kinds_of_cluster;
  for (uint64_t k = 0; k < 20000; ++k) {
    int g = static_cast<int>(rng() % 3);
    live.insert(k);
    auto a = c.Add(Kind(g, rng), k, k * 1000);
    kinds_of_cluster[a.cluster_id].insert(g);
    for (uint64_t r : a.released) EXPECT_EQ(live.erase(r), 1u) << "released twice or never added: " << r;
  }
  ASSERT_EQ(c.clusters().size(), 3u);
  uint64_t total = 0;
  for (const auto& cl : c.clusters()) {
    EXPECT_LE(cl.sample.size(), 8u);
    EXPECT_EQ(kinds_of_cluster[cl.id].size(), 1u) << "a cluster mixes kinds";
    EXPECT_GT(cl.count, 5000u);
    EXPECT_LT(cl.rep, cl.sample.size());
    EXPECT_LT(cl.diameter(), 0.1);
    total += cl.count;
  }
  EXPECT_EQ(total, 20000u);
  // What the caller still holds is exactly the union of the samples.
  EXPECT_EQ(HeldKeys(c), live);
  EXPECT_GE(c.stats().recentres, 3u);
}

TEST(StreamingClusterer, SameStreamSameClusters) {
  auto run = [] {
    StreamingClusterer c({.threshold = 0.5, .sample_per_cluster = 4});
    std::mt19937_64 rng(11);
    for (uint64_t k = 0; k < 3000; ++k) c.Add(Kind(static_cast<int>(rng() % 3), rng), k, k);
    std::vector<std::pair<uint64_t, std::vector<uint64_t>>> out;
    for (const auto& cl : c.clusters()) {
      std::vector<uint64_t> keys;
      for (const auto& m : cl.sample) keys.push_back(m.key);
      keys.push_back(cl.representative().key);
      out.emplace_back(cl.count, keys);
    }
    return out;
  };
  EXPECT_EQ(run(), run());
}

TEST(StreamingClusterer, IdleClustersAgeOut) {
  StreamingClusterer c({.threshold = 0.5, .sample_per_cluster = 4, .idle_ns = 2'000'000'000});
  std::mt19937_64 rng(3);
  uint64_t t = 0;
  for (int i = 0; i < 100; ++i, t += 10'000'000) c.Add(Kind(0, rng), i, t);  // 1 s of kind 0
  ASSERT_EQ(c.clusters().size(), 1u);
  const uint64_t first_id = c.clusters()[0].id;
  std::set<uint64_t> first_sample;
  for (const auto& m : c.clusters()[0].sample) first_sample.insert(m.key);
  std::set<uint64_t> released;
  for (int i = 100; i < 600; ++i, t += 10'000'000) {  // 5 s of kind 1 only
    auto a = c.Add(Kind(1, rng), i, t);
    released.insert(a.released.begin(), a.released.end());
  }
  ASSERT_EQ(c.clusters().size(), 1u);
  EXPECT_NE(c.clusters()[0].id, first_id);
  EXPECT_EQ(c.stats().clusters_aged_out, 1u);
  for (uint64_t k : first_sample) EXPECT_TRUE(released.count(k)) << "kind 0's sample key " << k << " not released";
  // A kind that comes back founds a fresh cluster.
  auto a = c.Add(Kind(0, rng), 1000, t);
  EXPECT_TRUE(a.founded);
}

TEST(StreamingClusterer, ClusterCountIsCapped) {
  StreamingClusterer c({.threshold = 0.5, .sample_per_cluster = 4, .max_clusters = 16});
  std::mt19937_64 rng(5);
  // Two real kinds, fed throughout, and a flood of distinct one-off strings.
  for (uint64_t k = 0; k < 4000; ++k) {
    if (k % 2 == 0) {
      c.Add(Kind(static_cast<int>(k % 4 / 2), rng), k, k);
    } else {
      c.Add(Tok({{static_cast<uint32_t>(100 + k), 5.0f}}), k, k);
    }
    ASSERT_LE(c.clusters().size(), 16u);
  }
  EXPECT_GT(c.stats().clusters_evicted, 1900u);
  uint64_t big = 0;
  for (const auto& cl : c.clusters()) big += cl.count >= 1000;
  EXPECT_EQ(big, 2u) << "the real kinds must survive the flood";
}

TEST(StreamingClusterer, SeedKeepsRepresentativeAndAnEvenSample) {
  StreamingClusterer c({.threshold = 0.5, .sample_per_cluster = 4});
  std::mt19937_64 rng(1);
  std::vector<StreamingClusterer::Member> members;
  for (uint64_t k = 0; k < 10; ++k) members.push_back({Kind(0, rng), k, 0.01f});
  auto released = c.Seed(std::move(members), 7, 10, 0.1, 0.02, 0, 100);
  ASSERT_EQ(c.clusters().size(), 1u);
  const auto& cl = c.clusters()[0];
  EXPECT_EQ(cl.representative().key, 7u);
  EXPECT_LE(cl.sample.size(), 4u);
  EXPECT_EQ(released.size() + cl.sample.size(), 10u);
  EXPECT_EQ(cl.count, 10u);
  // The next member of that kind joins it.
  auto a = c.Add(Kind(0, rng), 10, 200);
  EXPECT_FALSE(a.founded);
  EXPECT_EQ(a.cluster_id, cl.id);
}

}  // namespace
}  // namespace jackdaw::cluster
