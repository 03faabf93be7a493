#include "model/likelihood/request_likelihood.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "request/synthetic.h"

namespace jackdaw::model::likelihood {
namespace {

// A request whose one thread does `symbols` in order, 1 us of CPU each.
Request Sequence(uint64_t id, const std::vector<std::string>& symbols, bool incomplete = false) {
  synthetic::RequestBuilder b(id);
  uint64_t ts = 1000;
  for (const std::string& s : symbols) b.Add(7, ts += 1000, s, SyntheticKind::kNone, 1000);
  Request r = std::move(b).Build();
  r.incomplete = incomplete;
  return r;
}

TEST(RequestLikelihood, TheRareBranchRanksFirstAndIsExplained) {
  RequestLikelihood rl({}, LikelihoodOptions{});
  const std::vector<std::string> normal{"sys_enter:accept", "sys_enter:read", "sys_enter:write", "sys_enter:close"};
  std::vector<std::string> rare = normal;
  rare.insert(rare.begin() + 2, "sys_enter:pread64");  // the extra disk read
  std::mt19937_64 rng(1);
  uint64_t rare_id = 0;
  for (uint64_t id = 1; id <= 300; ++id) {
    if (id == 150) {
      rl.Add(Sequence(id, rare));
      rare_id = id;
    } else {
      rl.Add(Sequence(id, normal));
    }
  }
  rl.Add(Sequence(301, rare, /*incomplete=*/true));
  rl.Learn();
  EXPECT_EQ(rl.arrivals(), 301u);
  EXPECT_FALSE(rl.ScoreAt(300).has_value());  // incomplete: not learned, not scored
  ASSERT_TRUE(rl.ScoreAt(0).has_value());
  EXPECT_LT(*rl.ScoreAt(149), *rl.ScoreAt(0));

  LikelihoodSummary s = rl.Summary();
  ASSERT_TRUE(s.present);
  EXPECT_EQ(s.requests_learned, 300u);
  EXPECT_EQ(s.alphabet, 5u);
  ASSERT_FALSE(s.unlikely.empty());
  const UnlikelyRequest& top = s.unlikely[0];
  EXPECT_EQ(top.request_id, rare_id);
  EXPECT_DOUBLE_EQ(top.log_likelihood, *rl.ScoreAt(149));
  EXPECT_EQ(top.events, 5u);
  ASSERT_FALSE(top.steps.empty());
  EXPECT_EQ(top.steps[0].symbol, "sys_enter:pread64");
  EXPECT_EQ(top.steps[0].expected, "sys_enter:write");
  EXPECT_EQ(top.steps[0].position, 2u);
  EXPECT_LT(top.steps[0].probability, 0.01);
  EXPECT_GT(top.steps[0].expected_probability, 0.98);
  EXPECT_NEAR(top.steps[0].state_cpu_mean_ns, 1000, 1);  // each event took 1 us
  // Normal requests all score the same, above the rare one.
  for (size_t i = 1; i < s.unlikely.size(); ++i) EXPECT_GT(s.unlikely[i].log_likelihood, top.log_likelihood);
}

TEST(RequestLikelihood, ListIsCutAtK) {
  LikelihoodOptions o;
  o.unlikely = 2;
  RequestLikelihood rl({}, o);
  for (uint64_t id = 1; id <= 5; ++id) rl.AddSymbols(id, {"a", id % 2 ? "b" : "c"});
  rl.Learn();
  EXPECT_EQ(rl.Summary().unlikely.size(), 2u);
  // Ties keep arrival order: ids 2 and 4 (the rarer "c") first.
  EXPECT_EQ(rl.Summary().unlikely[0].request_id, 2u);
  EXPECT_EQ(rl.Summary().unlikely[1].request_id, 4u);
}

}  // namespace
}  // namespace jackdaw::model::likelihood
