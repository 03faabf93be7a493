#include "capture/loss_locator.h"

#include <gtest/gtest.h>

#include "trace/loss_intervals_json.h"

namespace jackdaw::capture {
namespace {

TEST(LossLocator, GrowthBetweenReadingsBecomesAnIntervalBoundedByThem) {
  LossLocator l;
  l.Start(100, {{0, 0}, {0, 5}});  // cpu 1 group 1 lost 5 before the recording began
  l.Observe(200, {{0, 0}, {0, 5}}, 150);
  EXPECT_TRUE(l.TakeNew().empty());
  l.Observe(300, {{0, 3}, {0, 5}}, 290);
  l.Observe(400, {{0, 3}, {2, 9}}, 380);
  auto v = l.TakeNew();
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].cpu, 0u);
  EXPECT_EQ(v[0].group, 1u);
  EXPECT_EQ(v[0].from_ns, 150u);  // the drain before the reading that found nothing
  EXPECT_EQ(v[0].to_ns, 300u);
  EXPECT_EQ(v[0].lost, 3u);
  EXPECT_EQ(v[1].cpu, 1u);
  EXPECT_EQ(v[1].group, 0u);
  EXPECT_EQ(v[1].from_ns, 290u);
  EXPECT_EQ(v[1].to_ns, 400u);
  EXPECT_EQ(v[2].lost, 4u);
  EXPECT_TRUE(l.TakeNew().empty());  // each interval is handed out once
  EXPECT_EQ(l.intervals(), 3u);
}

TEST(LossIntervals, JsonRoundTripAndMalformedEntriesRejected) {
  std::vector<trace::LossInterval> in = {{1, 2, 10, 20, 7}, {0, 0, 5, 5, 1}};
  std::vector<trace::LossInterval> out;
  EXPECT_TRUE(trace::AppendLossIntervals(trace::LossIntervalsJson(in), &out));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].group, 2u);
  EXPECT_EQ(out[0].to_ns, 20u);
  EXPECT_EQ(out[1].lost, 1u);
  // Reversed bounds and a wrong arity are refused, the good one kept.
  auto bad = nlohmann::json::parse("[[0,1,30,20,1],[0,1,2],[3,1,1,2,4]]");
  out.clear();
  EXPECT_FALSE(trace::AppendLossIntervals(bad, &out));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].cpu, 3u);
}

}  // namespace
}  // namespace jackdaw::capture
