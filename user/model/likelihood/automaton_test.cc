#include "model/likelihood/automaton.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "model/likelihood/prefix_tree.h"

namespace jackdaw::model::likelihood {
namespace {

// The prefix tree of {ab x3, ac x1} as an automaton (no merging).
Automaton Small() {
  PrefixTree t;
  for (int i = 0; i < 3; ++i) t.Add(std::vector<uint32_t>{0, 1});
  t.Add(std::vector<uint32_t>{0, 2});
  return Automaton(t.states(), t.alphabet_size());
}

double SumOverOutcomes(const Automaton& a, uint32_t state) {
  double sum = a.Probability(state, kEndSymbol) + a.Probability(state, a.alphabet_size());  // end + unknown
  for (uint32_t s = 0; s < a.alphabet_size(); ++s) sum += a.Probability(state, s);
  return sum;
}

TEST(Automaton, SmoothedProbabilitiesSumToOne) {
  Automaton a = Small();
  for (uint32_t s = 0; s < a.num_states(); ++s) EXPECT_NEAR(SumOverOutcomes(a, s), 1, 1e-12) << "state " << s;
  EXPECT_NEAR(SumOverOutcomes(a, kNoState), 1, 1e-12);
}

TEST(Automaton, SeenOutcomesFollowTheCountsWittenBell) {
  Automaton a = Small();
  const uint32_t after_a = a.Next(0, 0);
  ASSERT_NE(after_a, kNoState);
  // 4 strings, 2 distinct outcomes seen: 3/(4+2) and 1/(4+2).
  EXPECT_DOUBLE_EQ(a.Probability(after_a, 1), 3.0 / 6);
  EXPECT_DOUBLE_EQ(a.Probability(after_a, 2), 1.0 / 6);
  // The rest, 2/6, shared by the 3 unseen outcomes (symbol 0, end, unknown).
  EXPECT_DOUBLE_EQ(a.Probability(after_a, kEndSymbol), 2.0 / 6 / 3);
  EXPECT_EQ(a.MostProbable(after_a), 1u);
}

TEST(Automaton, ScoreIsTheMeanLogProbabilityPerSymbolWithTheEnd) {
  Automaton a = Small();
  const std::vector<uint32_t> ab{0, 1};
  const uint32_t s1 = a.Next(0, 0), s2 = a.Next(s1, 1);
  const double expected = (std::log(a.Probability(0, 0)) + std::log(a.Probability(s1, 1)) +
                           std::log(a.Probability(s2, kEndSymbol))) / 3;
  EXPECT_DOUBLE_EQ(a.Score(ab), expected);
  EXPECT_DOUBLE_EQ(a.LogProbability(ab), expected * 3);
  // The rarer branch scores lower.
  EXPECT_LT(a.Score(std::vector<uint32_t>{0, 2}), a.Score(ab));
}

TEST(Automaton, UnseenStringsHaveAFiniteScoreAndNameTheExpectedStep) {
  Automaton a = Small();
  // b first: a transition the start state has not got, then off the model.
  const std::vector<uint32_t> weird{1, 1, 7};
  std::vector<Automaton::Step> steps;
  const double score = a.Score(weird, &steps);
  EXPECT_TRUE(std::isfinite(score));
  EXPECT_LT(score, a.Score(std::vector<uint32_t>{0, 2}));
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_EQ(steps[0].state, 0u);
  EXPECT_EQ(steps[0].expected, 0u);  // the model expected symbol 0
  EXPECT_NEAR(steps[0].expected_probability, 4.0 / 5, 1e-12);
  EXPECT_EQ(steps[1].state, kNoState);  // left the automaton
  EXPECT_EQ(steps[3].symbol, kEndSymbol);
}

}  // namespace
}  // namespace jackdaw::model::likelihood
