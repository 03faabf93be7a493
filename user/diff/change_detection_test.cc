#include "diff/change_detection.h"

#include <random>

#include <gtest/gtest.h>

#include "diff/test_sides.h"

namespace jackdaw::diff {
namespace {

using testing::MakeSide;

const Change* Find(const DiffResult& r, const std::string& kind, Metric metric) {
  for (const Change& c : r.changes)
    if (c.kind == kind && c.metric == metric) return &c;
  return nullptr;
}

size_t Significant(const DiffResult& r) {
  size_t n = 0;
  for (const Change& c : r.changes) n += c.significant;
  return n;
}

DiffResult DiffOf(const testing::TypedSide& before, const testing::TypedSide& after, const DiffOptions& o = {}) {
  return DetectChanges(before.side, after.side, MatchKinds(before.side, after.side, BaselineMatchOptions(before.side)),
                       o);
}

std::string LabelOfType(const testing::TypedSide& s, char type) {
  for (size_t i = 0; i < s.kind_type.size(); ++i)
    if (s.kind_type[i] == type) return s.side.kinds[i].label;
  return "";
}

TEST(DetectChanges, SameMixTwiceHasNoSignificantChange) {
  const auto before = MakeSide(11, {{'A', 40}, {'B', 40}, {'C', 40}});
  const auto after = MakeSide(12, {{'A', 40}, {'B', 40}, {'C', 40}});
  const DiffResult r = DiffOf(before, after);
  EXPECT_EQ(r.matched.size(), 3u);
  EXPECT_FALSE(r.changes.empty());
  EXPECT_EQ(Significant(r), 0u);
}

// The mix shifted towards C: A's rate falls, and as A is where the CPU
// goes, its frequency change is most of the change in CPU demand.
TEST(DetectChanges, MixShiftRanksTheCpuHeavyKindsFrequencyFirst) {
  const auto before = MakeSide(13, {{'A', 40}, {'C', 40}});
  const auto after = MakeSide(14, {{'A', 40}, {'C', 120}});
  const DiffResult r = DiffOf(before, after);
  ASSERT_FALSE(r.changes.empty());
  const Change& first = r.changes[0];
  EXPECT_EQ(first.kind, LabelOfType(before, 'A'));
  EXPECT_EQ(first.metric, Metric::kFrequency);
  EXPECT_TRUE(first.significant);
  EXPECT_NEAR(first.before, 0.5, 1e-9);
  EXPECT_NEAR(first.after, 0.25, 1e-9);
  EXPECT_NEAR(first.effect, -0.5, 1e-9);
  EXPECT_GT(first.share, 0.5);
  const Change* c = Find(r, LabelOfType(before, 'C'), Metric::kFrequency);
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->significant);
  EXPECT_NEAR(c->effect, 0.5, 1e-9);
  double shares = 0;
  for (const Change& ch : r.changes) shares += ch.share;
  EXPECT_NEAR(shares, 1.0, 1e-9);
}

TEST(DetectChanges, NewKindIsAStructureChangeNamedAfterItsLabel) {
  const auto before = MakeSide(15, {{'A', 40}, {'C', 40}});
  const auto after = MakeSide(16, {{'A', 40}, {'C', 40}, {'E', 40}});
  const DiffResult r = DiffOf(before, after);
  ASSERT_EQ(r.new_kinds.size(), 1u);
  const Change* s = Find(r, r.new_kinds[0].kind, Metric::kStructure);
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->significant);
  EXPECT_EQ(s->before, 0);
  EXPECT_NEAR(s->after, 1.0 / 3, 1e-9);
  EXPECT_EQ(r.new_kinds[0].kind.rfind("new:", 0), 0u);
}

// Hand-made kinds: CPU per request 10 ms before, 13 ms after, with 2 %
// noise: a 30 % effect, significant at the default minimum effect and not
// when 50 % is asked for.
Side OneKindSide(double cpu_ms, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> noise(0.98, 1.02);
  Side s;
  s.kinds.emplace_back();
  Kind& k = s.kinds.back();
  k.label = "c0";
  for (int i = 0; i < 60; ++i) {
    const double cpu = cpu_ms * noise(rng);
    k.cpu_ms.push_back(cpu);
    k.latency_ms.push_back(cpu + 0.1);
    k.disk_bytes.push_back(0);
    k.net_bytes.push_back(1000);
  }
  k.mean_cpu_ns = cpu_ms * 1e6;
  s.requests = 60;
  s.duration_s = 1;
  return s;
}

TEST(DetectChanges, CpuChangeNeedsBothTheTestAndTheMinimumEffect) {
  const Side before = OneKindSide(10, 1), after = OneKindSide(13, 2);
  KindMatching m;
  m.matched.push_back(MatchedKind{{0}, {0}, 0});
  const DiffResult r = DetectChanges(before, after, m);
  ASSERT_FALSE(r.changes.empty());
  EXPECT_EQ(r.changes[0].metric, Metric::kCpu);  // the only CPU that moved
  EXPECT_TRUE(r.changes[0].significant);
  EXPECT_NEAR(r.changes[0].effect, 0.3, 0.03);
  EXPECT_DOUBLE_EQ(r.changes[0].share, 1.0);
  EXPECT_EQ(Find(r, "c0", Metric::kDisk), nullptr);  // no disk on either side: not tested
  const Change* net = Find(r, "c0", Metric::kNet);
  ASSERT_NE(net, nullptr);
  EXPECT_FALSE(net->significant);
  DiffOptions strict;
  strict.min_request_effect = 0.5;
  const DiffResult s = DetectChanges(before, after, m, strict);
  EXPECT_FALSE(s.changes[0].significant);
  EXPECT_LT(s.changes[0].p_value, 0.05);
}

TEST(CorrectAndRank, SignificantFirstThenByShare) {
  std::vector<Change> cs(3);
  cs[0].kind = "big-but-noise", cs[0].raw_p = 0.5, cs[0].effect = 0.9, cs[0].share = 0.9;
  cs[1].kind = "small", cs[1].raw_p = 0.001, cs[1].effect = 0.2, cs[1].share = 0.05;
  cs[2].kind = "larger", cs[2].raw_p = 0.001, cs[2].effect = 0.2, cs[2].share = 0.05 + 1e-3;
  CorrectAndRank(cs, DiffOptions{});
  EXPECT_EQ(cs[0].kind, "larger");
  EXPECT_EQ(cs[1].kind, "small");
  EXPECT_EQ(cs[2].kind, "big-but-noise");
  EXPECT_NEAR(cs[0].p_value, 0.0015, 1e-12);  // BH: 0.001 * 3 / 2
  EXPECT_FALSE(cs[2].significant);
}

}  // namespace
TEST(CorrectAndRank, PerRequestMetricsNeedALargerEffectThanTheMix) {
  std::vector<Change> cs(2);
  cs[0].kind = "mix", cs[0].metric = Metric::kFrequency, cs[0].raw_p = 1e-6, cs[0].effect = 0.2;
  cs[1].kind = "latency", cs[1].metric = Metric::kLatency, cs[1].raw_p = 1e-6, cs[1].effect = 0.2;
  CorrectAndRank(cs, DiffOptions{});
  EXPECT_TRUE(cs[0].significant);
  EXPECT_FALSE(cs[1].significant);  // a fifth is within run-to-run noise
  cs[1].effect = -0.3;
  CorrectAndRank(cs, DiffOptions{});
  EXPECT_TRUE(cs[0].significant && cs[1].significant);
}

TEST(CorrectAndRank, AStructureChangeNeedsEnoughRequests) {
  std::vector<Change> cs(2);
  for (Change& c : cs) c.metric = Metric::kStructure, c.raw_p = 1e-4, c.effect = -1;
  cs[0].kind = "three", cs[0].structure_requests = 3;
  cs[1].kind = "forty", cs[1].structure_requests = 40;
  CorrectAndRank(cs, DiffOptions{});
  EXPECT_EQ(cs[0].kind, "forty");
  EXPECT_TRUE(cs[0].significant);
  EXPECT_FALSE(cs[1].significant);
  DiffOptions any;
  any.min_structure_requests = 1;
  CorrectAndRank(cs, any);
  EXPECT_TRUE(cs[0].significant && cs[1].significant);
}

}  // namespace jackdaw::diff
