#include "model/likelihood/calibration.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "model/likelihood/alergia.h"

namespace jackdaw::model::likelihood {
namespace {

const std::vector<uint32_t> kUsual{0, 1, 2};
const std::vector<uint32_t> kRare{0, 3, 2};

struct Learnt {
  PrefixTree tree;
  Automaton automaton;
};

Learnt Learn(int usual, int rare) {
  Learnt l;
  for (int i = 0; i < usual; ++i) l.tree.Add(kUsual);
  for (int i = 0; i < rare; ++i) l.tree.Add(kRare);
  l.automaton = LearnAlergia(l.tree, AlergiaOptions{0.05}).automaton;
  return l;
}

// One string in a thousand lies below the 0.1 % quantile: the threshold is
// the usual string's score, and only the rare one scores below it.
TEST(CalibratedThreshold, AOneInAThousandStringIsBelowIt) {
  const Learnt l = Learn(999, 1);
  const double t = CalibratedThreshold(l.tree, l.automaton);
  EXPECT_DOUBLE_EQ(t, l.automaton.Score(kUsual));
  EXPECT_LT(l.automaton.Score(kRare), t);
}

// A branch taken by 1 % of the requests is part of the workload.
TEST(CalibratedThreshold, AOnePercentBranchIsNot) {
  const Learnt l = Learn(990, 10);
  const double t = CalibratedThreshold(l.tree, l.automaton);
  EXPECT_DOUBLE_EQ(t, l.automaton.Score(kRare));
  EXPECT_FALSE(l.automaton.Score(kRare) < t);
  EXPECT_FALSE(l.automaton.Score(kUsual) < t);
}

TEST(CalibratedThreshold, TheQuantileIsTheCallers) {
  const Learnt l = Learn(990, 10);
  EXPECT_DOUBLE_EQ(CalibratedThreshold(l.tree, l.automaton, 0.05), l.automaton.Score(kUsual));
}

TEST(CalibratedThreshold, AnEmptyTreeGivesZero) {
  const Learnt l = Learn(1, 0);
  EXPECT_EQ(CalibratedThreshold(PrefixTree(), l.automaton), 0);
}

}  // namespace
}  // namespace jackdaw::model::likelihood
