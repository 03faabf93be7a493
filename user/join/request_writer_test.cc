#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "join/extractor.h"

namespace jackdaw::join {
namespace {

model::Request SampleRequest() {
  model::Request r;
  r.id = 7;
  r.tgid = 1000;
  r.start_ns = 100;
  r.end_ns = 600;
  r.start_tsc = 250;
  r.end_tsc = 1500;
  r.start_wall_ns = 1'700'000'000'000'000'100;
  r.end_wall_ns = 1'700'000'000'000'000'600;
  r.threads = {10, 11};
  r.connections.push_back({"127.0.0.1:8080", "127.0.0.1:5555"});
  model::RequestEvent a;
  a.ts_ns = 100;
  a.tsc = 250;
  a.tid = 10;
  a.record_type = JDW_EVENT_USDT;
  a.symbol = "usdt:app:begin";
  a.cpu_ns = 42;
  model::RequestEvent sig;
  sig.ts_ns = 100;
  sig.tid = 10;
  sig.synthetic = model::SyntheticKind::kSignal;
  sig.symbol = "signal";
  model::RequestEvent res = sig;
  res.ts_ns = 600;
  res.tid = 11;
  res.synthetic = model::SyntheticKind::kResume;
  res.symbol = "resume";
  r.events = {a, sig, res};
  r.edges.push_back({1, 2});
  r.totals.cpu_ns = 42;
  r.totals.net_bytes_out = 200;
  r.totals.blocked_ns = 30;
  r.totals.blocked_futex_ns = 30;
  return r;
}

TEST(RequestWriter, OneJsonObjectPerLine) {
  std::string out;
  WriteRequestJson(&out, SampleRequest());
  ASSERT_EQ(out.back(), '\n');
  EXPECT_EQ(out.find('\n'), out.size() - 1);
  const auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["id"], 7);
  EXPECT_EQ(j["latency_ns"], 500);
  EXPECT_EQ(j["start_tsc"], 250);
  EXPECT_EQ(j["end_wall_ns"], 1'700'000'000'000'000'600ULL);
  EXPECT_EQ(j["threads"], nlohmann::json::array({10, 11}));
  EXPECT_EQ(j["connections"][0]["remote"], "127.0.0.1:5555");
  EXPECT_EQ(j["totals"]["cpu_ns"], 42);
  EXPECT_EQ(j["totals"]["blocked"]["futex"], 30);
  EXPECT_EQ(j["totals"]["net_bytes_out"], 200);
  ASSERT_EQ(j["events"].size(), 3u);
  EXPECT_EQ(j["events"][0]["symbol"], "usdt:app:begin");
  EXPECT_EQ(j["events"][0]["cpu_ns"], 42);
  EXPECT_FALSE(j["events"][0].contains("synthetic"));
  EXPECT_EQ(j["events"][1]["synthetic"], "signal");
  EXPECT_FALSE(j["events"][1].contains("cpu_ns"));
  EXPECT_EQ(j["edges"], nlohmann::json::array({nlohmann::json::array({1, 2})}));
  EXPECT_FALSE(j["timed_out"]);
}

TEST(RequestWriter, MarksWakeupEdges) {
  model::Request r = SampleRequest();
  r.edges[0].kind = model::EdgeKind::kWakeup;
  std::string out;
  WriteRequestJson(&out, r);
  const auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["edges"], nlohmann::json::array({nlohmann::json::array({1, 2, "wakeup"})}));
}

TEST(RequestWriter, WritesFileAndReportsErrors) {
  const std::string path = ::testing::TempDir() + "/jdw_requests.jsonl";
  ASSERT_TRUE(WriteRequestsJsonl(path, {SampleRequest(), SampleRequest()}).ok());
  std::ifstream in(path);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    EXPECT_EQ(nlohmann::json::parse(line)["id"], 7);
    n++;
  }
  EXPECT_EQ(n, 2);
  Status bad = WriteRequestsJsonl("/nonexistent-dir/x.jsonl", {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("cannot write /nonexistent-dir/x.jsonl"), std::string::npos);
}

TEST(RequestWriter, SummaryLine) {
  Stats s;
  s.requests_emitted = 500;
  s.events_joined = 18000;
  s.events_in_requests = 17500;
  s.events_discarded = 500;
  s.late_records = 3;
  s.cpu_observed_ns = 280'000'000;
  s.cpu_charged_ns = 270'000'000;
  s.cpu_conn_ns = 6'600'000;
  s.cpu_unattributed_ns = 3'400'000;  // charged to no request or connection
  EXPECT_EQ(FormatSummary(s),
            "requests 500 (timed out 0), events joined 18000 (in requests 17500, discarded 500), late records 3, "
            "unattributed cpu 1.2% (3.400 ms of 280.000 ms)");
  // Anomalies are appended only when they happened.
  s.seed_conflicts = 2;
  s.sched_switches = 1000;
  s.sched_chain_breaks = 3;
  s.sched_running_inferred = 4;
  EXPECT_EQ(FormatSummary(s),
            "requests 500 (timed out 0), events joined 18000 (in requests 17500, discarded 500), late records 3, "
            "unattributed cpu 1.2% (3.400 ms of 280.000 ms), 2 events reached two requests (kept apart), "
            "7 of 1000 switch-ins missing from the trace");
}

}  // namespace
}  // namespace jackdaw::join
