#include "export/clickhouse/rows.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace jackdaw::clickhouse {
namespace {

using nlohmann::json;

model::Request TwoTierRequest() {
  model::Request r;
  r.id = 42;
  r.start_ns = 1'000'000;
  r.end_ns = 1'250'000;
  r.start_wall_ns = 1'700'000'000'000'000'000;
  r.tgid = 7;
  r.threads = {7, 8};
  r.totals.cpu_ns = 90'000;
  r.totals.disk_bytes = 4096;
  r.totals.net_bytes_in = 100;
  r.totals.net_bytes_out = 2000;
  r.connections.push_back({"10.0.0.1:80", "10.0.0.9:5555"});
  model::ProcessSegment front;
  front.tgid = 7;
  front.comm = "nginx";
  front.cpu_ns = 30'000;
  model::ProcessSegment back;
  back.tgid = 9;
  back.comm = "caf\xe9";  // Latin-1, not UTF-8
  back.tier = 1;
  back.cpu_ns = 60'000;
  r.processes = {front, back};
  model::Call c;
  c.start_ns = 1'010'000;
  c.end_ns = 1'200'000;
  c.caller_tgid = 7;
  c.endpoint = {"10.0.0.1:40000", "10.0.0.2:9000"};
  c.bytes_out = 300;
  c.seq_out_start = 1000;
  c.seq_out_end = 1300;
  c.answered = true;
  r.calls = {c};
  return r;
}

TEST(RequestRow, SummaryColumnsOneClockAndCluster) {
  std::string row = RequestRowHead({"web1", "tcp-threadpool"}, TwoTierRequest());
  EndRequestRow(&row, 3);
  ASSERT_EQ(row.back(), '\n');
  ASSERT_EQ(row.find('\n'), row.size() - 1) << "one line";
  const json j = json::parse(row);
  EXPECT_EQ(j["host"], "web1");
  EXPECT_EQ(j["schema"], "tcp-threadpool");
  EXPECT_EQ(j["request_id"], 42);
  EXPECT_EQ(j["cluster"], 3);
  EXPECT_EQ(j["start_ns"], 1'700'000'000'000'000'000ull);
  EXPECT_EQ(j["end_ns"].get<uint64_t>() - j["start_ns"].get<uint64_t>(), 250'000u);
  EXPECT_EQ(j["latency_ns"], 250'000);
  EXPECT_EQ(j["mono_start_ns"], 1'000'000);
  EXPECT_EQ(j["cpu_ns"], 90'000);
  EXPECT_EQ(j["threads"], 2);
  EXPECT_EQ(j["processes.tgid"], json({7, 9}));
  EXPECT_EQ(j["processes.tier"], json({0, 1}));
  EXPECT_EQ(j["processes.cpu_ns"], json({30'000, 60'000}));
  EXPECT_EQ(j["processes.comm"][0], "nginx");
  EXPECT_EQ(j["processes.comm"][1], "caf\xEF\xBF\xBD") << "invalid UTF-8 replaced, the row still valid JSON";
  EXPECT_EQ(j["connections.local"], json({"10.0.0.1:80"}));
  EXPECT_EQ(j["connections.remote"], json({"10.0.0.9:5555"}));
  // A call sits inside its request on the wall clock.
  EXPECT_EQ(j["calls.start_ns"][0].get<uint64_t>() - j["start_ns"].get<uint64_t>(), 10'000u);
  EXPECT_EQ(j["calls.end_ns"][0].get<uint64_t>() - j["start_ns"].get<uint64_t>(), 200'000u);
  EXPECT_EQ(j["calls.remote"], json({"10.0.0.2:9000"}));
  EXPECT_EQ(j["calls.seq_out_start"], json({1000}));
  EXPECT_EQ(j["calls.seq_out_end"], json({1300}));
  EXPECT_EQ(j["calls.answered"], json({1}));
  // Every Nested column of one group has one value per element.
  EXPECT_EQ(j["processes.comm"].size(), j["processes.blocked_ns"].size());
  EXPECT_FALSE(j.contains("connection_id")) << "no message exchange: left to the column's default";
}

TEST(RequestRow, EmptyRequestIsStillOneValidRow) {
  std::string row = RequestRowHead({"h", "s"}, model::Request{});
  EndRequestRow(&row, -1);
  const json j = json::parse(row);
  EXPECT_EQ(j["cluster"], -1);
  EXPECT_EQ(j["calls.start_ns"], json::array());
}

TEST(ConnectionRow, WallClockFromTheOffset) {
  model::Connection c;
  c.id = 5;
  c.tgid = 7;
  c.endpoint = {"127.0.0.1:8080", "127.0.0.1:4000"};
  c.start_ns = 100;
  c.end_ns = 900;
  c.closed = true;
  c.requests = 3;
  const json j = json::parse(ConnectionRow({"h", "s"}, c, 1'000'000));
  EXPECT_EQ(j["connection_id"], 5);
  EXPECT_EQ(j["start_ns"], 1'000'100);
  EXPECT_EQ(j["end_ns"], 1'000'900);
  EXPECT_EQ(j["mono_start_ns"], 100);
  EXPECT_EQ(j["closed"], 1);
  EXPECT_EQ(j["requests"], 3);
  EXPECT_EQ(j["remote"], "127.0.0.1:4000");
}

TEST(InteractionRow, ItsConnectionTimesAndBytes) {
  InteractionSummary ia;
  ia.tgid = 9;
  ia.role = "server";
  ia.local = "127.0.0.1:80";
  ia.remote = "127.0.0.1:5000";
  ia.start_wall_ns = 1'700'000'000'000'000'000;
  ia.latency_ns = 180'000;
  ia.request_bytes = 91;
  ia.response_bytes = 12'408;
  const json j = json::parse(InteractionRow({"h", ""}, ia));
  EXPECT_EQ(j["host"], "h");
  EXPECT_EQ(j["role"], "server");
  EXPECT_EQ(j["remote"], "127.0.0.1:5000");
  EXPECT_EQ(j["start_ns"], 1'700'000'000'000'000'000ull);
  EXPECT_EQ(j["latency_ns"], 180'000);
  EXPECT_EQ(j["response_bytes"], 12'408);
  EXPECT_FALSE(j.contains("schema")) << "the table has no schema column";
}

TEST(ModelRow, OneClusterOfASnapshot) {
  ModelCluster c;
  c.cluster = 12;
  c.label = "c0";
  c.requests = 640;
  c.mean_cpu_ns = 1.5e5;
  c.p99_latency_ns = 0.0 / 0.0;  // NaN is not JSON: written 0
  c.representative = "T0 sys_enter:read \"quoted\"";
  const json j = json::parse(ModelRow({"h", "s"}, "live", 77, c));
  EXPECT_EQ(j["source"], "live");
  EXPECT_EQ(j["snapshot_ns"], 77);
  EXPECT_EQ(j["cluster"], 12);
  EXPECT_EQ(j["requests"], 640);
  EXPECT_DOUBLE_EQ(j["mean_cpu_ns"].get<double>(), 1.5e5);
  EXPECT_EQ(j["p99_latency_ns"], 0);
  EXPECT_EQ(j["representative"], "T0 sys_enter:read \"quoted\"");
}

}  // namespace
}  // namespace jackdaw::clickhouse
