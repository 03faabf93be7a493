// `jackdaw analyze --clickhouse` into a private clickhouse-server (Debian's
// 18.16, started by the test): every request of the golden trace stored
// once with the columns jackdaw's own --requests and --json give it; the
// store down ends the analysis with one line; two shards under a
// Distributed table share the rows.
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "export/clickhouse/tables.h"
#include "private_clickhouse.h"
#include "support/test_support.h"

namespace jackdaw {
namespace {

using nlohmann::json;
using testing::PrivateClickHouse;

const std::string kTrace = std::string(JDW_GOLDEN_DIR) + "/testserver-mix.jdw";

// "a\tb\n" lines as rows of fields.
std::vector<std::vector<std::string>> Rows(const std::string& tsv) {
  std::vector<std::vector<std::string>> out;
  std::istringstream in(tsv);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> f;
    std::istringstream fs(line);
    for (std::string x; std::getline(fs, x, '\t');) f.push_back(x);
    out.push_back(f);
  }
  return out;
}

testing::CommandResult Analyze(const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {testing::BinDir() + "/jackdaw", "analyze", kTrace, "--schema", "testserver", "-q"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return testing::RunCommand(argv);
}

TEST(ClickHouseAnalyze, EveryRequestStoredOnceWithItsColumnsAndCluster) {
  JDW_REQUIRE_CLICKHOUSE();
  PrivateClickHouse ch;
  ASSERT_TRUE(ch.Start().ok());
  const std::string model_file = testing::TempPath("ch-model");
  const std::string requests_file = testing::TempPath("ch-requests");
  const testing::CommandResult r = Analyze({"--json", model_file, "--requests", requests_file, "--clickhouse",
                                            ch.url(), "--host-id", "golden-host"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("jackdaw: ClickHouse " + ch.url() + ": "), std::string::npos) << r.err;
  const json model = json::parse(testing::ReadWholeFile(model_file));
  const uint64_t complete = model["summary"]["requests"], incomplete = model["summary"]["incomplete"];
  ASSERT_GT(complete, 0u);

  // The count analyze reports, stored once each.
  EXPECT_EQ(ch.Number("SELECT count() FROM jackdaw.requests"), complete + incomplete);
  EXPECT_EQ(ch.Number("SELECT uniqExact(request_id) FROM jackdaw.requests"), complete + incomplete);
  EXPECT_EQ(ch.Number("SELECT count() FROM jackdaw.requests WHERE incomplete = 0"), complete);
  EXPECT_EQ(ch.Number("SELECT count() FROM jackdaw.requests WHERE host != 'golden-host'"), 0u);

  // Columns against the request lines analyze wrote itself (--requests).
  std::map<uint64_t, json> lines;
  {
    std::istringstream in(testing::ReadWholeFile(requests_file));
    for (std::string line; std::getline(in, line);) {
      const json j = json::parse(line);
      if (j.contains("calls")) lines[j["id"].get<uint64_t>()] = j;  // request lines (not connections')
    }
  }
  ASSERT_EQ(lines.size(), complete + incomplete);
  auto stored = ch.Query(
      "SELECT request_id, latency_ns, end_ns - start_ns, cpu_ns, length(processes.tgid), mono_start_ns "
      "FROM jackdaw.requests ORDER BY request_id");
  ASSERT_TRUE(stored.ok()) << stored.status().message();
  size_t checked = 0;
  for (const auto& f : Rows(*stored)) {
    ASSERT_EQ(f.size(), 6u);
    const json& l = lines.at(std::stoull(f[0]));
    const uint64_t latency = l["end_ns"].get<uint64_t>() - l["start_ns"].get<uint64_t>();
    EXPECT_EQ(std::stoull(f[1]), latency) << f[0];
    EXPECT_EQ(std::stoull(f[2]), latency) << f[0];
    EXPECT_EQ(std::stoull(f[5]), l["start_ns"].get<uint64_t>()) << f[0];
    EXPECT_EQ(std::stoull(f[3]), l["totals"]["cpu_ns"].get<uint64_t>()) << f[0];
    EXPECT_EQ(std::stoull(f[4]), l["processes"].size()) << f[0];
    ++checked;
  }
  EXPECT_EQ(checked, complete + incomplete);

  // Clusters: each request's as --json gives it; the model's rows the
  // clusters' sizes.
  std::map<uint64_t, uint64_t> want_size;
  for (const json& c : model["clusters"]) want_size[c["id"]] = c["size"];
  std::map<uint64_t, uint64_t> got_size;
  auto per_cluster = ch.Query("SELECT cluster, count() FROM jackdaw.requests WHERE cluster >= 0 GROUP BY cluster");
  ASSERT_TRUE(per_cluster.ok());
  for (const auto& f : Rows(*per_cluster)) got_size[std::stoull(f[0])] = std::stoull(f[1]);
  EXPECT_EQ(got_size, want_size);
  size_t compared = 0;
  auto by_request = ch.Query("SELECT request_id, cluster FROM jackdaw.requests WHERE cluster >= 0");
  ASSERT_TRUE(by_request.ok());
  std::map<uint64_t, int64_t> cluster_of;
  for (const auto& f : Rows(*by_request)) cluster_of[std::stoull(f[0])] = std::stoll(f[1]);
  for (const json& rq : model["requests"]) {
    ASSERT_TRUE(cluster_of.count(rq["id"])) << rq["id"];
    EXPECT_EQ(cluster_of[rq["id"]], rq["cluster"].get<int64_t>()) << rq["id"];
    ++compared;
  }
  EXPECT_GT(compared, 0u);
  std::map<uint64_t, uint64_t> model_rows;
  auto models = ch.Query("SELECT cluster, requests FROM jackdaw.models WHERE source = 'analyze'");
  ASSERT_TRUE(models.ok());
  for (const auto& f : Rows(*models)) model_rows[std::stoull(f[0])] = std::stoull(f[1]);
  EXPECT_EQ(model_rows, want_size);
  RecordProperty("stored_requests", std::to_string(complete + incomplete));
}

// Past the model's warm-up (--warmup 20) requests get the streaming
// model's stable cluster ids as they are assigned: every request's cluster
// has its row in `models`, with the count of its requests, and the sizes
// are --json's.
TEST(ClickHouseAnalyze, PastTheWarmUpRequestsJoinTheirModelRows) {
  JDW_REQUIRE_CLICKHOUSE();
  PrivateClickHouse ch;
  ASSERT_TRUE(ch.Start().ok());
  const std::string model_file = testing::TempPath("ch-model-streamed");
  const testing::CommandResult r = Analyze({"--warmup", "20", "--json", model_file, "--clickhouse", ch.url()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json model = json::parse(testing::ReadWholeFile(model_file));
  const uint64_t complete = model["summary"]["requests"];
  EXPECT_EQ(ch.Number("SELECT count() FROM jackdaw.requests WHERE incomplete = 0"), complete);
  EXPECT_EQ(ch.Number("SELECT count() FROM jackdaw.requests WHERE incomplete = 0 AND cluster < 0"), 0u);
  std::map<int64_t, uint64_t> by_requests, by_models;
  auto a = ch.Query("SELECT cluster, count() FROM jackdaw.requests WHERE cluster >= 0 GROUP BY cluster");
  auto b = ch.Query("SELECT cluster, requests FROM jackdaw.models");
  ASSERT_TRUE(a.ok() && b.ok());
  for (const auto& f : Rows(*a)) by_requests[std::stoll(f[0])] = std::stoull(f[1]);
  for (const auto& f : Rows(*b)) by_models[std::stoll(f[0])] = std::stoull(f[1]);
  EXPECT_EQ(by_requests, by_models);
  std::multiset<uint64_t> stored_sizes, json_sizes;
  for (const auto& [c, n] : by_models) stored_sizes.insert(n);
  for (const json& c : model["clusters"]) json_sizes.insert(c["size"].get<uint64_t>());
  EXPECT_EQ(stored_sizes, json_sizes);
  // Labels rank the clusters as the report does: c0 the largest.
  auto top = ch.Query("SELECT requests FROM jackdaw.models WHERE label = 'c0'");
  ASSERT_TRUE(top.ok());
  EXPECT_EQ(std::stoull(*top), model["clusters"][0]["size"].get<uint64_t>());
}

TEST(ClickHouseAnalyze, StoreDownEndsTheAnalysisWithOneLine) {
  // Nothing listens on the port: a server that is not there.
  PrivateClickHouse nobody;
  nobody.ChoosePorts();
  const testing::CommandResult r = Analyze({"--clickhouse", nobody.url()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("jackdaw: --clickhouse " + nobody.url() +
                       ": connection refused: start clickhouse-server there (or fix the URL"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out, "") << "no analysis ran";
  const testing::CommandResult bad = Analyze({"--clickhouse", "localhost:8123"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("jackdaw: --clickhouse localhost:8123: not an http:// URL; give one like "
                         "http://127.0.0.1:8123"),
            std::string::npos)
      << bad.err;
}

TEST(ClickHouseAnalyze, TwoShardsUnderADistributedTable) {
  JDW_REQUIRE_CLICKHOUSE();
  PrivateClickHouse a, b;
  a.ChoosePorts();
  b.ChoosePorts();
  std::ostringstream cluster;
  cluster << "<jackdaw_two><shard><replica><host>127.0.0.1</host><port>" << a.tcp_port()
          << "</port></replica></shard><shard><replica><host>127.0.0.1</host><port>" << b.tcp_port()
          << "</port></replica></shard></jackdaw_two>";
  ASSERT_TRUE(a.Start(cluster.str()).ok());
  ASSERT_TRUE(b.Start(cluster.str()).ok());
  // Shard b gets its tables as jackdaw makes them (no ZooKeeper, so no ON
  // CLUSTER); the analysis inserts through a.
  clickhouse::TableLayout layout;
  layout.cluster = "jackdaw_two";
  for (const std::string& s : clickhouse::CreateStatements(layout)) ASSERT_TRUE(b.Query(s).ok()) << s;
  const std::string model_file = testing::TempPath("ch-model2");
  // insert_distributed_sync: each insert returns once every shard has its
  // rows (otherwise they reach the other shard in the background).
  const testing::CommandResult r = Analyze({"--json", model_file, "--clickhouse",
                                            a.url() + "/?insert_distributed_sync=1", "--clickhouse-cluster",
                                            "jackdaw_two"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json model = json::parse(testing::ReadWholeFile(model_file));
  const uint64_t total = model["summary"]["requests"].get<uint64_t>() + model["summary"]["incomplete"].get<uint64_t>();
  EXPECT_EQ(a.Number("SELECT count() FROM jackdaw.requests"), total);
  const uint64_t on_a = a.Number("SELECT count() FROM jackdaw.requests_local");
  const uint64_t on_b = b.Number("SELECT count() FROM jackdaw.requests_local");
  EXPECT_EQ(on_a + on_b, total);
  EXPECT_GT(on_a, 0u);
  EXPECT_GT(on_b, 0u);
  EXPECT_EQ(b.Number("SELECT count() FROM jackdaw.requests"), total) << "either shard reads the whole table";
  RecordProperty("rows_on_shards", std::to_string(on_a) + "+" + std::to_string(on_b));
}

}  // namespace
}  // namespace jackdaw
