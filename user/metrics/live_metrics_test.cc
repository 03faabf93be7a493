#include "metrics/live_metrics.h"

#include <map>
#include <sstream>

#include <gtest/gtest.h>

namespace jackdaw::metrics {
namespace {

// name{labels} -> value, for every sample line.
std::map<std::string, double> Samples(const std::string& text) {
  std::map<std::string, double> out;
  std::stringstream ss(text);
  std::string l;
  while (std::getline(ss, l)) {
    if (l.empty() || l[0] == '#') continue;
    const size_t sp = l.rfind(' ');
    out[l.substr(0, sp)] = std::stod(l.substr(sp + 1));
  }
  return out;
}

model::Request MakeRequest(uint64_t start, uint64_t latency, uint64_t cpu, uint64_t net) {
  model::Request r;
  r.start_ns = start;
  r.end_ns = start + latency;
  model::RequestEvent a, b;
  a.cpu_ns = cpu / 2;
  b.cpu_ns = cpu - cpu / 2;
  b.net_bytes = net;
  r.events = {a, b};
  return r;
}

TEST(LiveMetrics, SchemaCountersFollowRequests) {
  LiveMetrics m("web \"1\"");
  m.OnRequest(MakeRequest(0, 5'000, 2'000'000, 100));        // 5 us
  m.OnRequest(MakeRequest(0, 3'000'000, 1'000'000, 50));     // 3 ms
  m.OnRequest(MakeRequest(0, 100'000'000'000, 0, 0));        // 100 s: above every bound
  m.OnAnomaly();
  auto s = Samples(m.Render({}));
  const std::string l = "{schema=\"web \\\"1\\\"\"";
  EXPECT_EQ(s["jackdaw_schema_requests_total" + l + "}"], 3);
  EXPECT_DOUBLE_EQ(s["jackdaw_schema_cpu_seconds_total" + l + "}"], 0.003);
  EXPECT_EQ(s["jackdaw_schema_net_bytes_total" + l + "}"], 150);
  EXPECT_EQ(s["jackdaw_schema_anomalies_total" + l + "}"], 1);
  EXPECT_EQ(s["jackdaw_schema_request_latency_seconds_count" + l + "}"], 3);
  EXPECT_EQ(s["jackdaw_schema_request_latency_seconds_bucket" + l + ",le=\"8e-06\"}"], 1);
  EXPECT_EQ(s["jackdaw_schema_request_latency_seconds_bucket" + l + ",le=\"0.004096\"}"], 2);
  EXPECT_EQ(s["jackdaw_schema_request_latency_seconds_bucket" + l + ",le=\"33.554432\"}"], 2);
  EXPECT_EQ(s["jackdaw_schema_request_latency_seconds_bucket" + l + ",le=\"+Inf\"}"], 3);
}

// An incomplete request is counted apart and adds to no other series: its
// demand and latency are only what the capture kept of it.
TEST(LiveMetrics, IncompleteRequestsHaveTheirOwnCounter) {
  LiveMetrics m("s");
  m.OnRequest(MakeRequest(0, 3'000'000, 1'000'000, 50));
  model::Request lossy = MakeRequest(0, 1'000, 7'000'000, 900);
  lossy.incomplete = true;
  m.OnRequest(lossy);
  m.OnRequest(lossy);
  auto s = Samples(m.Render({}));
  EXPECT_EQ(s["jackdaw_schema_incomplete_requests_total{schema=\"s\"}"], 2);
  EXPECT_EQ(s["jackdaw_schema_requests_total{schema=\"s\"}"], 1);
  EXPECT_DOUBLE_EQ(s["jackdaw_schema_cpu_seconds_total{schema=\"s\"}"], 0.001);
  EXPECT_EQ(s["jackdaw_schema_net_bytes_total{schema=\"s\"}"], 50);
  EXPECT_EQ(s["jackdaw_schema_request_latency_seconds_count{schema=\"s\"}"], 1);
  EXPECT_EQ(m.incomplete(), 2u);
}

// The likelihood watchdog's histogram: cumulative over ascending negative
// bounds, every score (<= 0) at or under le="0", the unlikely ones counted.
TEST(LiveMetrics, LikelihoodHistogramAndUnlikelyCounter) {
  LiveMetrics m("s");
  auto s = Samples(m.Render({}));
  EXPECT_EQ(s["jackdaw_schema_request_log_likelihood_count{schema=\"s\"}"], 0);  // present before any score
  EXPECT_EQ(s["jackdaw_schema_unlikely_requests_total{schema=\"s\"}"], 0);
  m.OnLikelihood(-0.002, false);
  m.OnLikelihood(-0.1, false);  // on a bound: in its bucket (le is <=)
  m.OnLikelihood(-0.25, true);
  m.OnLikelihood(-12, true);  // below every bound
  metrics::LiveState st;
  st.likelihood_states = 9;
  s = Samples(m.Render(st));
  const std::string h = "jackdaw_schema_request_log_likelihood";
  EXPECT_EQ(s[h + "_bucket{schema=\"s\",le=\"-10\"}"], 1);
  EXPECT_EQ(s[h + "_bucket{schema=\"s\",le=\"-0.2\"}"], 2);
  EXPECT_EQ(s[h + "_bucket{schema=\"s\",le=\"-0.1\"}"], 3);
  EXPECT_EQ(s[h + "_bucket{schema=\"s\",le=\"-0.001\"}"], 4);
  EXPECT_EQ(s[h + "_bucket{schema=\"s\",le=\"0\"}"], 4);
  EXPECT_EQ(s[h + "_bucket{schema=\"s\",le=\"+Inf\"}"], 4);
  EXPECT_EQ(s[h + "_count{schema=\"s\"}"], 4);
  EXPECT_DOUBLE_EQ(s[h + "_sum{schema=\"s\"}"], -12.352);
  EXPECT_EQ(s["jackdaw_schema_unlikely_requests_total{schema=\"s\"}"], 2);
  EXPECT_EQ(s["jackdaw_likelihood_model_states{schema=\"s\"}"], 9);
}

TEST(LiveMetrics, BucketsMatchTheModelHistogramAtTheirBounds) {
  model::LatencyHistogram h;
  for (uint64_t ns = 500; ns < 60'000'000'000ull; ns = ns * 13 / 10 + 7) h.Add(ns);
  const auto& bounds = LiveMetrics::BucketBounds();
  const auto counts = LiveMetrics::BucketCounts(h);
  ASSERT_EQ(counts.size(), bounds.size() + 1);
  uint64_t total = 0;
  for (uint64_t c : counts) total += c;
  EXPECT_EQ(total, h.count());
  // Every bound is an edge of the model's histogram, so the cumulative
  // count at it is exact: the values added below the bound.
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds.size(); ++i) {
    cumulative += counts[i];
    uint64_t below = 0;
    for (uint64_t ns = 500; ns < 60'000'000'000ull; ns = ns * 13 / 10 + 7)
      if (static_cast<double>(ns) < bounds[i] * 1e9 * (1 - 1e-12)) ++below;
    EXPECT_EQ(cumulative, below) << "le=" << bounds[i];
  }
  EXPECT_NEAR(bounds.front(), 8e-6, 1e-12);
  EXPECT_NEAR(bounds.back(), 33.554432, 1e-9);
}

TEST(LiveMetrics, ClustersAndGroups) {
  LiveMetrics m("s");
  LiveState st;
  model::ClusterRunning c;
  c.id = 17;
  c.count = 40;
  c.demand_sum.cpu_ns = 2e9;
  c.demand_sum.disk_bytes = 4096;
  c.anomalous = true;
  for (int i = 0; i < 40; ++i) c.latency.Add(1'000'000);
  st.clusters.push_back(c);
  st.groups.push_back({"sched", true, 1000, 3});
  st.groups.push_back({"net", false, 20, 0});
  st.pipeline_delay_s = 0.3;
  auto s = Samples(m.Render(st));
  EXPECT_EQ(s["jackdaw_cluster_requests_total{schema=\"s\",cluster=\"17\"}"], 40);
  EXPECT_EQ(s["jackdaw_cluster_cpu_seconds_total{schema=\"s\",cluster=\"17\"}"], 2);
  EXPECT_EQ(s["jackdaw_cluster_disk_bytes_total{schema=\"s\",cluster=\"17\"}"], 4096);
  EXPECT_EQ(s["jackdaw_cluster_anomalous{schema=\"s\",cluster=\"17\"}"], 1);
  EXPECT_EQ(s["jackdaw_cluster_request_latency_seconds_count{schema=\"s\",cluster=\"17\"}"], 40);
  EXPECT_EQ(s["jackdaw_cluster_request_latency_seconds_bucket{schema=\"s\",cluster=\"17\",le=\"0.000512\"}"], 0);
  EXPECT_EQ(s["jackdaw_cluster_request_latency_seconds_bucket{schema=\"s\",cluster=\"17\",le=\"0.001024\"}"], 40);
  EXPECT_EQ(s["jackdaw_probe_events_total{group=\"sched\"}"], 1000);
  EXPECT_EQ(s["jackdaw_probe_lost_total{group=\"sched\"}"], 3);
  EXPECT_EQ(s["jackdaw_probe_enabled{group=\"net\"}"], 0);
  EXPECT_EQ(s["jackdaw_clusters{schema=\"s\"}"], 1);
  EXPECT_DOUBLE_EQ(s["jackdaw_pipeline_delay_seconds"], 0.3);
}

// A cluster whose requests crossed processes: each process's share of its
// CPU and disk, by name and tier; a cluster served by one process has none.
TEST(LiveMetrics, ClustersBreakDownByProcess) {
  LiveMetrics m("s");
  LiveState st;
  model::ClusterRunning stack, alone;
  stack.id = 3;
  alone.id = 4;
  for (int i = 0; i < 10; ++i) {
    model::ProcessSegment front, db;
    front.comm = "nginx", front.tier = 0, front.cpu_ns = 100'000;
    db.comm = "mariadbd", db.tier = 1, db.cpu_ns = 2'000'000, db.disk_bytes = 4096;
    stack.processes.Add({front, db});
    stack.count++;
    model::ProcessSegment only;
    only.comm = "nginx", only.cpu_ns = 50'000;
    alone.processes.Add({only});
    alone.count++;
  }
  st.clusters = {stack, alone};
  const std::string text = m.Render(st);
  auto s = Samples(text);
  EXPECT_DOUBLE_EQ(
      s["jackdaw_cluster_process_cpu_seconds_total{schema=\"s\",cluster=\"3\",process=\"mariadbd\",tier=\"1\"}"], 0.02);
  EXPECT_DOUBLE_EQ(
      s["jackdaw_cluster_process_cpu_seconds_total{schema=\"s\",cluster=\"3\",process=\"nginx\",tier=\"0\"}"], 0.001);
  EXPECT_DOUBLE_EQ(
      s["jackdaw_cluster_process_disk_bytes_total{schema=\"s\",cluster=\"3\",process=\"mariadbd\",tier=\"1\"}"], 40960);
  EXPECT_EQ(text.find("cluster=\"4\",process="), std::string::npos);
}

}  // namespace
}  // namespace jackdaw::metrics
