#include "metrics/exposition.h"

#include <cmath>
#include <sstream>

#include <gtest/gtest.h>

namespace jackdaw::metrics {
namespace {

std::vector<std::string> Lines(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string l;
  while (std::getline(ss, l)) out.push_back(l);
  return out;
}

TEST(Exposition, FamilyHeaderAndSamples) {
  Exposition x;
  x.Family("jackdaw_requests_total", "Requests.", MetricType::kCounter);
  x.Sample({{"schema", "a"}}, 3);
  x.Sample({{"schema", "b"}, {"cluster", "7"}}, 0.5);
  x.Family("jackdaw_up", "Up.", MetricType::kGauge);
  x.Sample({}, 1);
  EXPECT_EQ(x.text(),
            "# HELP jackdaw_requests_total Requests.\n"
            "# TYPE jackdaw_requests_total counter\n"
            "jackdaw_requests_total{schema=\"a\"} 3\n"
            "jackdaw_requests_total{schema=\"b\",cluster=\"7\"} 0.5\n"
            "# HELP jackdaw_up Up.\n"
            "# TYPE jackdaw_up gauge\n"
            "jackdaw_up 1\n");
}

TEST(Exposition, LabelValuesAndHelpAreEscaped) {
  Exposition x;
  x.Family("m", "a \\ help\nwith \"quotes\"", MetricType::kUntyped);
  x.Sample({{"l", "back\\slash \"quoted\"\nnewline"}}, 1);
  const auto lines = Lines(x.text());
  ASSERT_EQ(lines.size(), 3u);
  // In HELP only backslash and newline are escaped; quotes stay.
  EXPECT_EQ(lines[0], "# HELP m a \\\\ help\\nwith \"quotes\"");
  EXPECT_EQ(lines[1], "# TYPE m untyped");
  EXPECT_EQ(lines[2], "m{l=\"back\\\\slash \\\"quoted\\\"\\nnewline\"} 1");
}

TEST(Exposition, ValuesReadBackExactly) {
  EXPECT_EQ(FormatValue(0), "0");
  EXPECT_EQ(FormatValue(42), "42");
  EXPECT_EQ(FormatValue(-7), "-7");
  EXPECT_EQ(FormatValue(1.0 / 0.0), "+Inf");
  EXPECT_EQ(FormatValue(-1.0 / 0.0), "-Inf");
  EXPECT_EQ(FormatValue(std::nan("")), "NaN");
  for (double v : {0.1, 1e-9, 123.456, 6.02e23, 9007199254740993.0, 3e-300}) {
    const std::string s = FormatValue(v);
    EXPECT_EQ(std::stod(s), v) << s;
    EXPECT_EQ(s.find(' '), std::string::npos);
  }
}

TEST(Exposition, HistogramBucketsAreCumulativeAndEndWithInf) {
  Exposition x;
  x.Family("lat_seconds", "Latency.", MetricType::kHistogram);
  // 2 at or below 0.001, 0 in (0.001, 0.01], 5 in (0.01, 0.1], 3 above.
  x.Histogram({{"cluster", "1"}}, {0.001, 0.01, 0.1}, {2, 0, 5, 3}, 4.25);
  const auto lines = Lines(x.text());
  ASSERT_EQ(lines.size(), 2u + 4 + 2);
  EXPECT_EQ(lines[2], "lat_seconds_bucket{cluster=\"1\",le=\"0.001\"} 2");
  EXPECT_EQ(lines[3], "lat_seconds_bucket{cluster=\"1\",le=\"0.01\"} 2");
  EXPECT_EQ(lines[4], "lat_seconds_bucket{cluster=\"1\",le=\"0.1\"} 7");
  EXPECT_EQ(lines[5], "lat_seconds_bucket{cluster=\"1\",le=\"+Inf\"} 10");
  EXPECT_EQ(lines[6], "lat_seconds_sum{cluster=\"1\"} 4.25");
  EXPECT_EQ(lines[7], "lat_seconds_count{cluster=\"1\"} 10");
}

TEST(Exposition, EmptyHistogramStillHasInfBucket) {
  Exposition x;
  x.Family("h", "H.", MetricType::kHistogram);
  x.Histogram({}, {1}, {0, 0}, 0);
  EXPECT_EQ(x.text(),
            "# HELP h H.\n# TYPE h histogram\n"
            "h_bucket{le=\"1\"} 0\nh_bucket{le=\"+Inf\"} 0\nh_sum 0\nh_count 0\n");
}

TEST(Exposition, NameRules) {
  EXPECT_TRUE(ValidMetricName("jackdaw_requests_total"));
  EXPECT_TRUE(ValidMetricName("a:b_c9"));
  EXPECT_FALSE(ValidMetricName("9lives"));
  EXPECT_FALSE(ValidMetricName("has-dash"));
  EXPECT_FALSE(ValidMetricName(""));
  EXPECT_TRUE(ValidLabelName("schema"));
  EXPECT_FALSE(ValidLabelName("__name__"));
  EXPECT_FALSE(ValidLabelName("a:b"));
}

}  // namespace
}  // namespace jackdaw::metrics
