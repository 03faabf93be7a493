#include "predict/scenario.h"

#include <gtest/gtest.h>

namespace jackdaw::predict {
namespace {

RecordedWorkload ThreeKinds() {
  RecordedWorkload w;
  const uint64_t counts[] = {60, 30, 10};
  for (int i = 0; i < 3; ++i) {
    RecordedKind k;
    k.label = "c" + std::to_string(i);
    k.count = counts[i];
    k.scripts.resize(2);
    w.kinds.push_back(std::move(k));
    w.requests += counts[i];
  }
  return w;
}

TEST(Scenario, ScalesParseAndRefuseWhatTheModelCannotReplay) {
  auto s = ParseScale("c1:cpu=0.7");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->kind, "c1");
  EXPECT_EQ(s->resource, "cpu");
  EXPECT_DOUBLE_EQ(s->factor, 0.7);
  EXPECT_FALSE(ParseScale("c1:cpu=-1").ok());
  EXPECT_FALSE(ParseScale("c1:gpu=2").ok());
  EXPECT_FALSE(ParseScale("c1=2").ok());
  EXPECT_FALSE(ParseScale("c1:cpu=x").ok());
  // One line, cause then fix.
  const std::string m = ParseScale("c1:cpu=-1").status().message();
  EXPECT_EQ(m.find('\n'), std::string::npos);
  EXPECT_NE(m.find("; "), std::string::npos) << m;
}

TEST(Scenario, MixSharesParseWithinZeroAndOne) {
  auto m = ParseMix("c2=0.5");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->kind, "c2");
  EXPECT_DOUBLE_EQ(m->share, 0.5);
  EXPECT_FALSE(ParseMix("c2=1.5").ok());
  EXPECT_FALSE(ParseMix("c2=-0.1").ok());
  EXPECT_FALSE(ParseMix("c2").ok());
}

TEST(Scenario, RecordedSharesUnlessTheMixSaysOtherwise) {
  RecordedWorkload w = ThreeKinds();
  auto kinds = MakeKinds(w, {}, {});
  ASSERT_TRUE(kinds.ok());
  EXPECT_DOUBLE_EQ((*kinds)[0].share, 0.6);
  EXPECT_DOUBLE_EQ((*kinds)[2].share, 0.1);
  EXPECT_EQ((*kinds)[1].scripts.size(), 2u);
  // c2 becomes half; c0 and c1 keep their 2:1 proportion of the rest.
  kinds = MakeKinds(w, {}, {{"c2", 0.5}});
  ASSERT_TRUE(kinds.ok());
  EXPECT_NEAR((*kinds)[0].share, 1.0 / 3, 1e-12);
  EXPECT_NEAR((*kinds)[1].share, 1.0 / 6, 1e-12);
  EXPECT_DOUBLE_EQ((*kinds)[2].share, 0.5);
}

TEST(Scenario, ScalesApplyToTheirKindOnly) {
  auto kinds = MakeKinds(ThreeKinds(), {{"c1", "cpu", 2}, {"c1", "disk", 0.5}, {"c0", "wait", 3}}, {});
  ASSERT_TRUE(kinds.ok());
  EXPECT_DOUBLE_EQ((*kinds)[1].cpu_scale, 2);
  EXPECT_DOUBLE_EQ((*kinds)[1].disk_scale, 0.5);
  EXPECT_DOUBLE_EQ((*kinds)[0].wait_scale, 3);
  EXPECT_DOUBLE_EQ((*kinds)[0].cpu_scale, 1);
}

TEST(Scenario, RefusesKindsTheRecordingNeverSawAndMixesThatDoNotAddUp) {
  RecordedWorkload w = ThreeKinds();
  auto unknown = MakeKinds(w, {{"c7", "cpu", 2}}, {});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("c0, c1, c2"), std::string::npos) << unknown.status().message();
  EXPECT_FALSE(MakeKinds(w, {}, {{"c9", 0.1}}).ok());
  EXPECT_FALSE(MakeKinds(w, {}, {{"c0", 0.7}, {"c1", 0.6}}).ok());               // past 1
  EXPECT_FALSE(MakeKinds(w, {}, {{"c0", 0.2}, {"c1", 0.2}, {"c2", 0.2}}).ok());  // all given, 0.6
  EXPECT_FALSE(MakeKinds(w, {}, {{"c0", 0.2}, {"c0", 0.2}}).ok());               // twice
  EXPECT_TRUE(MakeKinds(w, {}, {{"c0", 0.5}, {"c1", 0.25}, {"c2", 0.25}}).ok());
}

}  // namespace
}  // namespace jackdaw::predict
