#include "model/likelihood/online_likelihood.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "canonical/canonical.h"
#include "request/synthetic.h"

namespace jackdaw::model::likelihood {
namespace {

const std::vector<std::string> kNormal{"accept", "read", "write", "close"};
const std::vector<std::string> kRare{"accept", "read", "pread64", "write", "close"};

TEST(OnlineLikelihood, WarmsUpThenFlagsTheRareBranch) {
  OnlineOptions o;
  o.warmup = 1000;
  OnlineLikelihood ol(o);
  for (int i = 0; i < 999; ++i) EXPECT_FALSE(ol.ObserveSymbols(kNormal).scored);  // warming up
  EXPECT_FALSE(ol.ObserveSymbols(kRare).scored);  // the 1000th: the first model is learned after it
  EXPECT_TRUE(ol.stats().has_model);
  const auto normal = ol.ObserveSymbols(kNormal);
  ASSERT_TRUE(normal.scored);
  EXPECT_FALSE(normal.unlikely);
  EXPECT_GT(normal.log_likelihood, -0.01);
  const auto rare = ol.ObserveSymbols(kRare);
  ASSERT_TRUE(rare.scored);
  EXPECT_TRUE(rare.unlikely);
  EXPECT_LT(rare.log_likelihood, ol.threshold());  // one in 1,000 learned: below the 0.1 % quantile
  EXPECT_EQ(rare.events, 5u);
  const auto novel = ol.ObserveSymbols({"accept", "recvfrom", "write", "close"});
  EXPECT_TRUE(novel.unlikely);
  EXPECT_LT(novel.log_likelihood, rare.log_likelihood);
  const auto s = ol.stats();
  EXPECT_EQ(s.scored, 3u);
  EXPECT_EQ(s.unlikely, 2u);
  EXPECT_EQ(s.learned, 1003u);
  EXPECT_EQ(s.learnings, 1u);
}

// Four equally common kinds put a 25 % branch in every request, so every
// request scores far below a fixed -0.1; the calibrated threshold flags
// none of them, and still flags a branch the model has rarely seen.
TEST(OnlineLikelihood, ACommonBranchingWorkloadIsNotUnlikely) {
  const std::vector<std::vector<std::string>> kinds{{"read", "write", "a"}, {"read", "write", "b"},
                                                    {"read", "write", "c"}, {"read", "write", "d"}};
  OnlineOptions o;
  o.warmup = 400;
  OnlineLikelihood ol(o);
  for (int i = 0; i < 400; ++i) ol.ObserveSymbols(kinds[i % 4]);
  int unlikely = 0;
  double lowest = 0;
  for (int i = 0; i < 2000; ++i) {
    const auto r = ol.ObserveSymbols(kinds[i % 4]);
    ASSERT_TRUE(r.scored);
    unlikely += r.unlikely;
    lowest = std::min(lowest, r.log_likelihood);
  }
  EXPECT_LT(lowest, -0.1);  // a fixed threshold would have flagged them all
  EXPECT_EQ(unlikely, 0);
  EXPECT_TRUE(ol.ObserveSymbols({"read", "write", "e"}).unlikely);
}

// A threshold the user sets is used as it is.
TEST(OnlineLikelihood, AFixedThresholdIsKept) {
  OnlineOptions o;
  o.warmup = 100;
  o.threshold = -0.5;
  OnlineLikelihood ol(o);
  for (int i = 0; i < 100; ++i) ol.ObserveSymbols(i % 2 ? kNormal : kRare);
  EXPECT_EQ(ol.threshold(), -0.5);
  EXPECT_FALSE(ol.ObserveSymbols(kRare).unlikely);
}

// Relearning makes a behaviour that became common usual.
TEST(OnlineLikelihood, RelearnsPeriodically) {
  OnlineOptions o;
  o.warmup = 100;
  o.relearn_every = 300;
  OnlineLikelihood ol(o);
  for (int i = 0; i < 100; ++i) ol.ObserveSymbols(kNormal);
  EXPECT_TRUE(ol.ObserveSymbols(kRare).unlikely);
  for (int i = 0; i < 299; ++i) ol.ObserveSymbols(kRare);  // the workload changed
  EXPECT_EQ(ol.stats().learnings, 2u);
  EXPECT_FALSE(ol.ObserveSymbols(kRare).unlikely);
}

// The prefix tree never passes its cap, whatever the strings.
TEST(OnlineLikelihood, TheTreeStaysUnderItsCap) {
  OnlineOptions o;
  o.warmup = 50;
  o.relearn_every = 1000;
  o.max_tree_states = 300;
  OnlineLikelihood ol(o);
  size_t largest = 0;
  for (int i = 0; i < 2000; ++i) {
    // Every request a string of its own: 3 new states each.
    ol.ObserveSymbols({"accept", "id" + std::to_string(i % 97), "n" + std::to_string(i / 97), "close"});
    largest = std::max(largest, ol.stats().tree_states);
  }
  EXPECT_LT(largest, o.max_tree_states);
  EXPECT_GT(ol.stats().tree_restarts, 0u);
  EXPECT_TRUE(ol.stats().has_model);
  EXPECT_LE(ol.stats().model_states, o.max_tree_states + 4);
}

TEST(OnlineLikelihood, SymbolsPastTheCapAreUnknownAndNotLearned) {
  OnlineOptions o;
  o.warmup = 10;
  o.max_symbols = 4;
  OnlineLikelihood ol(o);
  for (int i = 0; i < 10; ++i) ol.ObserveSymbols(kNormal);
  const auto r = ol.ObserveSymbols({"accept", "mmap", "write", "close"});
  EXPECT_TRUE(r.unlikely);
  EXPECT_EQ(ol.stats().not_learned, 1u);
}

TEST(OnlineLikelihood, BaselineIsFixedAndIncompleteRequestsAreNotScored) {
  OnlineOptions o;
  o.warmup = 100;
  OnlineLikelihood learner(o);
  for (int i = 0; i < 100; ++i) learner.ObserveSymbols(kNormal);
  SavedModel m;
  m.automaton = learner.automaton();
  m.symbols = kNormal;  // ids in first-seen order
  OnlineLikelihood ol(m, o);
  EXPECT_TRUE(ol.stats().baseline);
  for (int i = 0; i < 5000; ++i) EXPECT_TRUE(ol.ObserveSymbols(kRare).unlikely);  // never learned
  EXPECT_EQ(ol.stats().tree_states, 0u);

  synthetic::RequestBuilder b(1);
  b.Add(7, 2000, "sys_enter:read", SyntheticKind::kNone, 1000);
  Request r = std::move(b).Build();
  r.incomplete = true;
  EXPECT_FALSE(ol.Observe(r, canonical::Canonicalize(r)).scored);
  r.incomplete = false;
  const auto scored = ol.Observe(r, canonical::Canonicalize(r));
  EXPECT_TRUE(scored.scored);
  EXPECT_TRUE(scored.unlikely);  // not a string the baseline knows
}

}  // namespace
}  // namespace jackdaw::model::likelihood
