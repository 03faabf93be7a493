#include "model/scoring.h"

#include <gtest/gtest.h>

namespace jackdaw::model {
namespace {

TEST(ScoringTest, AdjustedRandIndexKnownValues) {
  std::vector<uint32_t> a = {0, 0, 1, 1};
  EXPECT_DOUBLE_EQ(AdjustedRandIndex(a, std::vector<uint32_t>{0, 0, 1, 1}), 1.0);
  EXPECT_DOUBLE_EQ(AdjustedRandIndex(a, std::vector<uint32_t>{1, 1, 0, 0}), 1.0);  // renamed
  EXPECT_NEAR(AdjustedRandIndex(a, std::vector<uint32_t>{0, 0, 1, 2}), 0.5714285714285715, 1e-12);
  EXPECT_DOUBLE_EQ(AdjustedRandIndex(a, std::vector<uint32_t>{0, 1, 0, 1}), -0.5);
  // Everything in one cluster vs everything apart: no agreement beyond chance.
  EXPECT_DOUBLE_EQ(
      AdjustedRandIndex(std::vector<uint32_t>{0, 0, 0}, std::vector<uint32_t>{0, 1, 2}), 0.0);
  EXPECT_DOUBLE_EQ(
      AdjustedRandIndex(std::vector<uint32_t>{0, 0, 0}, std::vector<uint32_t>{5, 5, 5}), 1.0);
}

TEST(ScoringTest, PurityKnownValues) {
  std::vector<uint32_t> clusters = {0, 0, 0, 1, 1, 1};
  std::vector<uint32_t> truth = {0, 0, 1, 1, 1, 1};
  EXPECT_DOUBLE_EQ(Purity(clusters, truth), 5.0 / 6.0);
  EXPECT_DOUBLE_EQ(Purity(std::vector<uint32_t>{0, 1, 2}, std::vector<uint32_t>{0, 0, 0}), 1.0);
}

TEST(ScoringTest, AgainstTruthSkipsUnlabeled) {
  WorkloadModel m;
  for (uint64_t id = 1; id <= 5; ++id) {
    RequestSummary r;
    r.id = id;
    r.cluster = id <= 2 ? 0 : 1;
    m.requests.push_back(r);
  }
  ClusterSummary c;
  c.member_ids = {1, 2, 3};
  std::unordered_map<uint64_t, std::string> truth = {{1, "A"}, {2, "A"}, {3, "B"}, {4, "B"}};
  AgreementScore s = ScoreAgainstTruth(m, truth);
  EXPECT_EQ(s.scored, 4u);
  EXPECT_EQ(s.unlabeled, 1u);
  EXPECT_DOUBLE_EQ(s.purity, 1.0);
  EXPECT_DOUBLE_EQ(s.adjusted_rand_index, 1.0);
  EXPECT_EQ(Composition(c, truth), "2A+1B");
}

}  // namespace
}  // namespace jackdaw::model
