#include "model/likelihood/request_likelihood.h"

#include <gtest/gtest.h>

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
  uint64_t rare_id = 0;
  uint32_t rare_state = 0, normal_state = 0;
  for (uint64_t id = 1; id <= 300; ++id) {
    if (id == 150) {
      rare_state = rl.Add(Sequence(id, rare));
      rare_id = id;
    } else {
      normal_state = rl.Add(Sequence(id, normal));
    }
  }
  EXPECT_EQ(rl.Add(Sequence(301, rare, /*incomplete=*/true)), kNoState);  // not learned
  rl.Learn();
  EXPECT_FALSE(rl.ScoreOfState(kNoState).has_value());
  ASSERT_TRUE(rl.ScoreOfState(normal_state).has_value());
  ASSERT_TRUE(rl.ScoreOfState(rare_state).has_value());
  EXPECT_LT(*rl.ScoreOfState(rare_state), *rl.ScoreOfState(normal_state));
  // Scoring afresh agrees with the score of the state it was learned at.
  EXPECT_EQ(rl.Score(Sequence(150, rare)), rl.ScoreOfState(rare_state));
  EXPECT_FALSE(rl.Score(Sequence(302, rare, true)).has_value());
  // A request with an event never seen is less likely still, and finite.
  std::vector<std::string> novel = normal;
  novel[1] = "sys_enter:recvfrom";
  ASSERT_TRUE(rl.Score(Sequence(303, novel)).has_value());
  EXPECT_LT(*rl.Score(Sequence(303, novel)), *rl.ScoreOfState(normal_state));

  LikelihoodSummary s = rl.Summary();
  ASSERT_TRUE(s.present);
  EXPECT_EQ(s.requests_learned, 300u);
  EXPECT_EQ(s.alphabet, 5u);
  ASSERT_FALSE(s.unlikely.empty());
  const UnlikelyRequest& top = s.unlikely[0];
  EXPECT_EQ(top.request_id, rare_id);
  EXPECT_DOUBLE_EQ(top.log_likelihood, *rl.ScoreOfState(rare_state));
  EXPECT_EQ(top.off_model_events, 0u);  // it rejoined the usual path
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
  for (uint64_t id = 5; id >= 1; --id) rl.AddSymbols(id, {"a", id % 2 ? "b" : "c"});
  rl.Learn();
  EXPECT_EQ(rl.Summary().unlikely.size(), 2u);
  // Ties rank by id: 2 and 4 (the rarer "c") first.
  EXPECT_EQ(rl.Summary().unlikely[0].request_id, 2u);
  EXPECT_EQ(rl.Summary().unlikely[1].request_id, 4u);
}

TEST(RequestLikelihood, TiesKeepTheSmallestIdsWhateverTheArrivalOrder) {
  LikelihoodOptions o;
  o.unlikely = 2;
  RequestLikelihood rl({}, o);
  for (uint64_t id : {9, 7, 8, 3, 5}) rl.AddSymbols(id, {"a"});
  rl.Learn();
  const LikelihoodSummary s = rl.Summary();
  ASSERT_EQ(s.unlikely.size(), 2u);
  EXPECT_EQ(s.unlikely[0].request_id, 3u);
  EXPECT_EQ(s.unlikely[1].request_id, 5u);
}

}  // namespace
}  // namespace jackdaw::model::likelihood
