#include "model/likelihood/prefix_tree.h"

#include <gtest/gtest.h>

#include <vector>

namespace jackdaw::model::likelihood {
namespace {

TEST(PrefixTree, CountsPrefixesAndEnds) {
  PrefixTree t;
  const std::vector<uint32_t> ab{0, 1}, a{0}, ac{0, 2};
  const uint32_t end_ab = t.Add(ab);
  EXPECT_EQ(t.Add(ab), end_ab);  // the same string ends at the same state
  const uint32_t end_a = t.Add(a);
  t.Add(ac);
  EXPECT_EQ(t.strings(), 4u);
  EXPECT_EQ(t.states().size(), 4u);  // root, a, ab, ac
  const State& root = t.states()[0];
  ASSERT_EQ(root.out.size(), 1u);
  EXPECT_EQ(root.out[0].count, 4u);
  const State& sa = t.states()[end_a];
  EXPECT_EQ(sa.visits, 4u);
  EXPECT_EQ(sa.ends, 1u);
  ASSERT_EQ(sa.out.size(), 2u);
  EXPECT_EQ(sa.out[0].symbol, 1u);  // sorted by symbol
  EXPECT_EQ(sa.out[0].count, 2u);
  EXPECT_EQ(sa.out[1].count, 1u);
  EXPECT_EQ(t.states()[end_ab].ends, 2u);
  EXPECT_EQ(t.alphabet_size(), 3u);
}

TEST(PrefixTree, PathRebuildsTheString) {
  PrefixTree t;
  const std::vector<uint32_t> s{3, 1, 4, 1, 5};
  const uint32_t end = t.Add(s);
  EXPECT_EQ(t.Path(end), s);
  EXPECT_EQ(t.depth(end), 5u);
  EXPECT_TRUE(t.Path(0).empty());
  // The empty string ends at the root.
  EXPECT_EQ(t.Add({}), 0u);
  EXPECT_EQ(t.states()[0].ends, 1u);
}

TEST(PrefixTree, DemandPerStateIsAccumulated) {
  PrefixTree t;
  const std::vector<uint32_t> s{0};
  const std::vector<uint64_t> c1{100}, c2{300};
  const uint32_t end = t.Add(s, c1);
  t.Add(s, c2);
  const RunningStats& d = t.states()[end].cpu_ns;
  EXPECT_EQ(d.count, 2u);
  EXPECT_DOUBLE_EQ(d.mean, 200);
  EXPECT_DOUBLE_EQ(d.stddev(), 100);
}

TEST(RunningStats, CombineEqualsOneStream) {
  RunningStats a, b, all;
  const double xs[] = {1, 5, 9, 2, 8, 100, 3};
  for (int i = 0; i < 7; ++i) {
    (i < 3 ? a : b).Add(xs[i]);
    all.Add(xs[i]);
  }
  a.Combine(b);
  EXPECT_EQ(a.count, all.count);
  EXPECT_NEAR(a.mean, all.mean, 1e-12);
  EXPECT_NEAR(a.variance(), all.variance(), 1e-9);
}

}  // namespace
}  // namespace jackdaw::model::likelihood
