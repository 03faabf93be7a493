#include "diff/kind_matching.h"

#include <gtest/gtest.h>

#include "diff/test_sides.h"

namespace jackdaw::diff {
namespace {

using testing::MakeSide;

TEST(MatchKinds, SameMixRecordedTwiceMatchesEveryKindToItsType) {
  const auto before = MakeSide(1, {{'A', 30}, {'B', 30}, {'C', 30}});
  const auto after = MakeSide(2, {{'A', 30}, {'B', 30}, {'C', 30}});
  ASSERT_EQ(before.side.kinds.size(), 3u);
  ASSERT_EQ(after.side.kinds.size(), 3u);
  const KindMatching m = MatchKinds(before.side, after.side, BaselineMatchOptions(before.side));
  EXPECT_TRUE(m.added.empty());
  EXPECT_TRUE(m.gone.empty());
  ASSERT_EQ(m.matched.size(), 3u);
  for (const MatchedKind& k : m.matched) {
    ASSERT_EQ(k.before.size(), 1u);
    ASSERT_EQ(k.after.size(), 1u);
    EXPECT_EQ(before.kind_type[k.before[0]], after.kind_type[k.after[0]]);
    EXPECT_LE(k.distance, before.side.threshold);
  }
}

TEST(MatchKinds, AKindOnlyAfterIsNewWithItsNearestPrecursor) {
  const auto before = MakeSide(3, {{'A', 30}, {'C', 30}});
  const auto after = MakeSide(4, {{'A', 30}, {'C', 30}, {'B', 30}});
  const KindMatching m = MatchKinds(before.side, after.side, BaselineMatchOptions(before.side));
  EXPECT_EQ(m.matched.size(), 2u);
  EXPECT_TRUE(m.gone.empty());
  ASSERT_EQ(m.added.size(), 1u);
  EXPECT_EQ(after.kind_type[m.added[0].after], 'B');
  // B spins 15 ms on one thread as A does 30 ms; C serves a file.
  ASSERT_GE(m.added[0].nearest_before, 0);
  EXPECT_EQ(before.kind_type[m.added[0].nearest_before], 'A');
  EXPECT_GT(m.added[0].distance, before.side.threshold);
}

TEST(MatchKinds, AKindOnlyBeforeIsGone) {
  const auto before = MakeSide(5, {{'A', 30}, {'C', 30}, {'E', 30}});
  const auto after = MakeSide(6, {{'A', 30}, {'C', 30}});
  const KindMatching m = MatchKinds(before.side, after.side, BaselineMatchOptions(before.side));
  EXPECT_EQ(m.matched.size(), 2u);
  EXPECT_TRUE(m.added.empty());
  ASSERT_EQ(m.gone.size(), 1u);
  EXPECT_EQ(before.kind_type[m.gone[0]], 'E');
}

// One behaviour clustered as one kind before and split in two after stays
// one matched kind, not a kind and a new one.
TEST(MatchKinds, ASplitClusterIsOneMatchedKind) {
  const std::vector<std::vector<double>> d = {{0.1, 0.2, 5.0}, {4.0, 6.0, 0.05}, {7.0, 7.0, 7.0}};
  const KindMatching m = MatchKinds(d, 0.5);
  ASSERT_EQ(m.matched.size(), 2u);
  EXPECT_EQ(m.matched[0].before, (std::vector<uint32_t>{0}));
  EXPECT_EQ(m.matched[0].after, (std::vector<uint32_t>{0, 1}));
  EXPECT_DOUBLE_EQ(m.matched[0].distance, 0.1);
  EXPECT_EQ(m.matched[1].after, (std::vector<uint32_t>{2}));
  EXPECT_EQ(m.gone, (std::vector<uint32_t>{2}));
  EXPECT_TRUE(m.added.empty());
}

TEST(MatchKinds, KindsBeyondTheThresholdAreNewAndGone) {
  const KindMatching none = MatchKinds(std::vector<std::vector<double>>{}, 1.0);
  EXPECT_TRUE(none.matched.empty());
  EXPECT_TRUE(none.added.empty());
  const std::vector<std::vector<double>> one_before = {{9.0}};
  const KindMatching far = MatchKinds(one_before, 1.0);
  ASSERT_EQ(far.added.size(), 1u);
  EXPECT_EQ(far.added[0].nearest_before, 0);
  EXPECT_DOUBLE_EQ(far.added[0].distance, 9.0);
  EXPECT_EQ(far.gone, (std::vector<uint32_t>{0}));
}

}  // namespace
}  // namespace jackdaw::diff
