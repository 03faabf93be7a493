#include "metrics/record_metrics.h"

#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include "metrics/exposition.h"

namespace jackdaw::metrics {
namespace {

// name{labels} -> value, and the TYPE of each family.
struct Parsed {
  std::map<std::string, double> samples;
  std::map<std::string, std::string> types;
};

Parsed Parse(const std::string& text) {
  Parsed p;
  std::stringstream ss(text);
  std::string l;
  while (std::getline(ss, l)) {
    if (l.rfind("# TYPE ", 0) == 0) {
      const size_t sp = l.find(' ', 7);
      p.types[l.substr(7, sp - 7)] = l.substr(sp + 1);
      continue;
    }
    if (l.empty() || l[0] == '#') continue;
    const size_t sp = l.rfind(' ');
    p.samples[l.substr(0, sp)] = std::stod(l.substr(sp + 1));
  }
  return p;
}

TEST(RecordMetrics, GroupsWriterAndRing) {
  RecordState s;
  s.groups = {{"sched", true, 1200, 3}, {"net", false, 0, 0}};
  s.records = 1200;
  s.bytes_written = 4096;
  s.record_bytes_raw = 57600;
  s.record_bytes_stored = 4000;
  s.writer_stalls = 2;
  s.ring_fill = 0.25;
  s.rss_bytes = 10 << 20;
  const Parsed p = Parse(RenderRecordMetrics(s));
  EXPECT_EQ(p.samples.at("jackdaw_probe_events_total{group=\"sched\"}"), 1200);
  EXPECT_EQ(p.samples.at("jackdaw_probe_lost_total{group=\"sched\"}"), 3);
  EXPECT_EQ(p.samples.at("jackdaw_probe_enabled{group=\"sched\"}"), 1);
  EXPECT_EQ(p.samples.at("jackdaw_probe_enabled{group=\"net\"}"), 0);
  EXPECT_EQ(p.samples.at("jackdaw_records_total"), 1200);
  EXPECT_EQ(p.samples.at("jackdaw_record_written_bytes_total"), 4096);
  EXPECT_EQ(p.samples.at("jackdaw_record_bytes_total{stage=\"raw\"}"), 57600);
  EXPECT_EQ(p.samples.at("jackdaw_record_bytes_total{stage=\"stored\"}"), 4000);
  EXPECT_EQ(p.samples.at("jackdaw_record_writer_stalls_total"), 2);
  EXPECT_EQ(p.samples.at("jackdaw_ring_fill_ratio"), 0.25);
  EXPECT_EQ(p.samples.at("process_resident_memory_bytes"), 10 << 20);
  EXPECT_EQ(p.samples.count("jackdaw_resident_memory_bytes"), 0u);
  bool build_info = false;
  for (const auto& [name, v] : p.samples) build_info |= name.rfind("jackdaw_build_info{version=\"", 0) == 0 && v == 1;
  EXPECT_TRUE(build_info);
  EXPECT_EQ(p.types.at("jackdaw_probe_events_total"), "counter");
  EXPECT_EQ(p.types.at("jackdaw_ring_fill_ratio"), "gauge");
  for (const auto& [name, type] : p.types) EXPECT_TRUE(ValidMetricName(name)) << name;
  // The module backend reports no fill: the series is absent, not 0 or -1.
  s.ring_fill = -1;
  EXPECT_EQ(Parse(RenderRecordMetrics(s)).samples.count("jackdaw_ring_fill_ratio"), 0u);
}

// live and record export the probe groups under the same names, so one
// dashboard serves both.
TEST(RecordMetrics, ProbeFamiliesAreLives) {
  LiveMetrics live("s");
  LiveState ls;
  ls.groups = {{"syscall", true, 7, 1}};
  RecordState rs;
  rs.groups = ls.groups;
  const Parsed a = Parse(live.Render(ls)), b = Parse(RenderRecordMetrics(rs));
  for (const char* k : {"jackdaw_probe_events_total{group=\"syscall\"}", "jackdaw_probe_lost_total{group=\"syscall\"}",
                        "jackdaw_probe_enabled{group=\"syscall\"}"})
    EXPECT_EQ(a.samples.at(k), b.samples.at(k)) << k;
}

}  // namespace
}  // namespace jackdaw::metrics
