#include "model/likelihood/alergia.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "model/likelihood/reber_grammar.h"

namespace jackdaw::model::likelihood {
namespace {

std::vector<uint32_t> Encode(const std::string& s) {
  std::vector<uint32_t> out;
  for (char c : s) out.push_back(static_cast<uint32_t>(c - 'A'));
  return out;
}

TEST(Hoeffding, TellsApartOnlyWhatTheCountsSupport) {
  EXPECT_FALSE(HoeffdingDifferent(5, 10, 50, 100, 0.05));      // same frequency
  EXPECT_FALSE(HoeffdingDifferent(1, 2, 2, 2, 0.05));          // too few strings to tell
  EXPECT_TRUE(HoeffdingDifferent(100, 1000, 900, 1000, 0.05));  // clearly different
  EXPECT_FALSE(HoeffdingDifferent(0, 0, 900, 1000, 0.05));     // an empty side never differs
}

TEST(Alergia, GeometricStringsLearnOneLoop) {
  // a^n, ending with probability 1/2 after each a: one state with a loop.
  std::mt19937_64 rng(7);
  PrefixTree t;
  for (int i = 0; i < 2000; ++i) {
    std::vector<uint32_t> s;
    while (rng() & 1) s.push_back(0);
    t.Add(s);
  }
  Learned l = LearnAlergia(t);
  ASSERT_EQ(l.automaton.num_states(), 1u);
  EXPECT_EQ(l.automaton.Next(0, 0), 0u);
  EXPECT_NEAR(l.automaton.Probability(0, kEndSymbol), 0.5, 0.02);
  // Every tree state maps to the loop.
  for (uint32_t s : l.state_of) EXPECT_EQ(s, 0u);
}

TEST(Alergia, DifferentFuturesStayApart) {
  // After x the string always ends; after y it always continues with z.
  PrefixTree t;
  for (int i = 0; i < 500; ++i) {
    t.Add(std::vector<uint32_t>{0});
    t.Add(std::vector<uint32_t>{1, 2});
  }
  Learned l = LearnAlergia(t);
  const Automaton& a = l.automaton;
  const uint32_t after_x = a.Next(0, 0), after_y = a.Next(0, 1);
  ASSERT_NE(after_x, kNoState);
  ASSERT_NE(after_y, kNoState);
  EXPECT_NE(after_x, after_y);
  EXPECT_GT(a.Probability(after_x, kEndSymbol), 0.99);
  EXPECT_GT(a.Probability(after_y, 2), 0.99);
}

// A request that skipped two events (a worker that was awake, no hand-off)
// rejoins the usual path: its rare state is judged after the core is
// built, and merges into the state that expects what it did next.
TEST(Alergia, RareSkipRejoinsTheUsualPath) {
  PrefixTree t;
  const std::vector<uint32_t> usual{0, 1, 2, 3, 4}, skipped{0, 3, 4};
  t.Add(usual);
  t.Add(skipped);  // early, as the first requests of a trace are
  for (int i = 0; i < 300; ++i) t.Add(usual);
  Learned l = LearnAlergia(t);
  const Automaton& a = l.automaton;
  const uint32_t after_skip = a.Next(a.Next(0, 0), 3);
  uint32_t after_usual = 0;
  for (uint32_t sym : {0, 1, 2, 3}) after_usual = a.Next(after_usual, sym);
  ASSERT_NE(after_skip, kNoState);
  EXPECT_EQ(after_skip, after_usual);
  // So only the skip is unlikely: the rest is the usual path's.
  std::vector<Automaton::Step> steps;
  a.Score(skipped, &steps);
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_LT(steps[1].probability, 0.01);
  EXPECT_EQ(steps[1].expected, 1u);
  EXPECT_GT(steps[2].probability, 0.99);
  EXPECT_GT(steps[3].probability, 0.99);
  // Judged in plain breadth-first order it would have merged into a state
  // near the start instead (only those were red yet).
  AlergiaOptions plain;
  plain.min_strings = 0;
  const Automaton b = LearnAlergia(t, plain).automaton;
  uint32_t usual_b = 0;
  for (uint32_t sym : {0, 1, 2, 3}) usual_b = b.Next(usual_b, sym);
  EXPECT_NE(b.Next(b.Next(0, 0), 3), usual_b);
}

// HotOS 2003 §4.2: learn the Reber grammar back from its strings.
TEST(Alergia, LearnsTheReberGrammar) {
  std::mt19937_64 rng(2003);
  PrefixTree t;
  for (int i = 0; i < 1000; ++i) t.Add(Encode(reber::Generate(rng)));
  const auto start = std::chrono::steady_clock::now();
  Learned l = LearnAlergia(t, AlergiaOptions{0.05});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const Automaton& a = l.automaton;
  // The grammar's 7 states and the one after E.
  EXPECT_EQ(a.num_states(), 8u);

  // Accepts the language: fresh grammar strings never leave the automaton
  // and end where it saw strings end.
  std::mt19937_64 fresh(99);
  for (int i = 0; i < 500; ++i) {
    const std::string s = reber::Generate(fresh);
    uint32_t state = 0;
    for (uint32_t sym : Encode(s)) {
      state = a.Next(state, sym);
      ASSERT_NE(state, kNoState) << s;
    }
    EXPECT_GT(a.states()[state].ends, 0u) << s;
  }

  // Its strings' probabilities: every string of the grammar down to 1/128.
  std::vector<std::string> strings;
  std::mt19937_64 enumerate(5);
  std::map<std::string, double> seen;
  for (int i = 0; i < 20000; ++i) {
    const std::string s = reber::Generate(enumerate);
    if (reber::TrueProbability(s) >= 1.0 / 128) seen[s] = reber::TrueProbability(s);
  }
  ASSERT_GE(seen.size(), 20u);
  double worst = 0;
  for (const auto& [s, truth] : seen) {
    const double learned = std::exp(a.LogProbability(Encode(s)));
    worst = std::max(worst, std::abs(learned - truth));
    EXPECT_NEAR(learned, truth, 0.02) << s;
  }
  // A string outside the language is much less likely than any inside.
  EXPECT_LT(a.Score(Encode("BTTE")), a.Score(Encode("BTSSSSSSXXTTTTVVE")));
  printf("reber: %zu strings checked, max |p - p_true| = %.4f; learned in %.4f s (%zu tree states -> %zu)\n",
         seen.size(), worst, seconds, t.states().size(), a.num_states());
}

}  // namespace
}  // namespace jackdaw::model::likelihood
