#include "export/clickhouse/clickhouse_sink.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "export/http/test_receiver.h"

namespace jackdaw::clickhouse {
namespace {

using nlohmann::json;

SinkOptions Options(const std::string& url) {
  SinkOptions o;
  o.url = url;
  o.context = {"web1", "testserver"};
  o.sender.initial_backoff_ms = 10;
  o.sender.timeout_ms = 2000;
  o.sender.drain_timeout_ms = 5000;
  return o;
}

model::Request Req(uint64_t id, bool incomplete = false) {
  model::Request r;
  r.id = id;
  r.start_ns = id * 1000;
  r.end_ns = id * 1000 + 500;
  r.start_wall_ns = 1'700'000'000'000'000'000 + id * 1000;
  r.incomplete = incomplete;
  return r;
}

// The inserts a receiver got, as table -> rows.
std::vector<std::pair<std::string, std::vector<json>>> Inserts(const std::vector<std::string>& bodies) {
  std::vector<std::pair<std::string, std::vector<json>>> out;
  for (const std::string& b : bodies) {
    if (b.rfind("INSERT INTO ", 0) != 0) continue;
    std::istringstream in(b);
    std::string head, line;
    std::getline(in, head);
    std::vector<json> rows;
    while (std::getline(in, line)) rows.push_back(json::parse(line));
    out.push_back({head, rows});
  }
  return out;
}

TEST(ClickHouseSink, TablesFirstThenRowsWhenTheirClusterIsKnown) {
  http::TestReceiver rx;
  auto sink = ClickHouseSink::Create(Options(rx.url("/")));
  ASSERT_TRUE(sink.ok()) << sink.status().message();
  ClickHouseSink& s = **sink;
  s.AddRequest(Req(1));
  s.AddRequest(Req(2, /*incomplete=*/true));  // never in the model: out at once
  s.AddRequest(Req(3));
  EXPECT_EQ(s.pending(), 2u);
  s.AssignCluster(3, 7);
  s.SettlePending([](uint64_t id) { return id == 1 ? int64_t{4} : int64_t{-1}; });
  EXPECT_EQ(s.pending(), 0u);
  ModelCluster c0, c1;
  c0.cluster = 7, c0.label = "c0", c0.requests = 1;
  c1.cluster = 4, c1.label = "c1", c1.requests = 1;
  s.AddModel("analyze", 123, {c0, c1});
  const http::SenderStats st = s.Finish();
  EXPECT_EQ(st.requests_sent, 3u);
  EXPECT_EQ(st.items_sent, 5u);  // 3 request rows, 2 model rows

  const std::vector<std::string> got = rx.accepted();
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got[0], "CREATE DATABASE IF NOT EXISTS jackdaw");
  for (const std::string& h : rx.heads()) EXPECT_NE(h.find("Content-Type: text/plain"), std::string::npos);
  const auto ins = Inserts(got);
  ASSERT_EQ(ins.size(), 2u);
  EXPECT_EQ(ins[0].first, "INSERT INTO jackdaw.models FORMAT JSONEachRow");  // a snapshot is sent whole at once
  EXPECT_EQ(ins[1].first, "INSERT INTO jackdaw.requests FORMAT JSONEachRow");
  std::map<uint64_t, int64_t> cluster;
  for (const json& r : ins[1].second) cluster[r["request_id"]] = r["cluster"];
  EXPECT_EQ(cluster, (std::map<uint64_t, int64_t>{{1, 4}, {2, -1}, {3, 7}}));
  EXPECT_EQ(ins[0].second[1]["label"], "c1");
}

TEST(ClickHouseSink, BatchesOfBatchRows) {
  http::TestReceiver rx;
  SinkOptions o = Options(rx.url("/"));
  o.batch_rows = 10;
  auto sink = ClickHouseSink::Create(o);
  ASSERT_TRUE(sink.ok());
  for (uint64_t id = 1; id <= 25; ++id) {
    (*sink)->AddRequest(Req(id));
    (*sink)->AssignCluster(id, 0);
  }
  model::Connection c;
  c.id = 9;
  (*sink)->AddConnection(c);
  const http::SenderStats st = (*sink)->Finish();
  EXPECT_EQ(st.requests_sent, 25u);
  EXPECT_EQ(st.batches_sent, 4u);  // 10 + 10 + 5 requests, 1 connection
  size_t rows = 0;
  for (const auto& [head, r] : Inserts(rx.accepted())) {
    EXPECT_LE(r.size(), 10u);
    rows += r.size();
  }
  EXPECT_EQ(rows, 26u);
  EXPECT_NE((*sink)->Summary(st).find("25 of 25 requests stored"), std::string::npos) << (*sink)->Summary(st);
}

TEST(ClickHouseSink, WaitingIsBoundedAndTheUnplacedAreCounted) {
  http::TestReceiver rx;
  SinkOptions o = Options(rx.url("/"));
  o.max_pending = 2;
  auto sink = ClickHouseSink::Create(o);
  ASSERT_TRUE(sink.ok());
  for (uint64_t id = 1; id <= 3; ++id) (*sink)->AddRequest(Req(id));
  EXPECT_EQ((*sink)->pending(), 1u) << "the first two went out when the third would have made three wait";
  const http::SenderStats s = (*sink)->Finish();
  EXPECT_EQ(s.requests_sent, 3u);
  for (const auto& [head, rows] : Inserts(rx.accepted()))
    for (const json& r : rows) EXPECT_EQ(r["cluster"], -1);
  EXPECT_NE((*sink)->Summary(s).find("; 3 stored without a cluster\n"), std::string::npos) << (*sink)->Summary(s);
}

TEST(ClickHouseSink, StoreDownSaysSoInOneLineAndDropsWithoutBlocking) {
  const std::string url = "http://127.0.0.1:" + std::to_string(http::UnusedLoopbackPort());
  SinkOptions o = Options(url);
  o.batch_rows = 1;
  o.sender.max_queued_batches = 2;
  o.sender.wait_when_full = true;  // even so: a store known down drops
  auto sink = ClickHouseSink::Create(o);
  ASSERT_TRUE(sink.ok());
  const Status st = (*sink)->CreateTables();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(), "--clickhouse " + url +
                              ": connection refused: start clickhouse-server there (or fix the URL: its HTTP port, "
                              "8123 by default)");
  for (uint64_t id = 1; id <= 100; ++id) (*sink)->AddRequest(Req(id, true));
  const http::SenderStats s = (*sink)->Finish();
  EXPECT_EQ(s.requests_sent, 0u);
  EXPECT_EQ(s.requests_dropped + s.requests_failed, 100u);
  EXPECT_GT(s.requests_dropped, 50u);
  EXPECT_EQ(s.last_error, "connection refused");
}

TEST(ClickHouseSink, ARefusedInsertReportsClickHousesExplanation) {
  http::TestReceiver rx({200, 200, 200, 200, 200, 500});  // the 5 statements, then the insert
  SinkOptions o = Options(rx.url("/"));
  auto sink = ClickHouseSink::Create(o);
  ASSERT_TRUE(sink.ok());
  (*sink)->AddRequest(Req(1, true));
  const http::SenderStats s = (*sink)->Finish();
  EXPECT_EQ(s.requests_failed, 1u);
  EXPECT_EQ(s.retries, 0u) << "a refused insert would be refused again";
  EXPECT_EQ(s.last_error.rfind("HTTP 500: ", 0), 0u) << s.last_error;
}

TEST(ClickHouseSink, BadUrlNamesTheOption) {
  auto sink = ClickHouseSink::Create(Options("clickhouse:9000"));
  ASSERT_FALSE(sink.ok());
  EXPECT_EQ(sink.status().message(),
            "--clickhouse clickhouse:9000: not an http:// URL; give one like http://127.0.0.1:8123");
}

}  // namespace
}  // namespace jackdaw::clickhouse
