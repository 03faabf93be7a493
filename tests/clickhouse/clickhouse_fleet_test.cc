// `jackdaw fleet` over a private clickhouse-server: the golden trace
// analyzed as two identical hosts (web-1, web-2) and a third host (web-3)
// whose rows are web-1's with its largest cluster four times as slow, plus a
// kind of request only web-3 serves. fleet merges the three hosts' clusters
// kind by kind with analyze's cluster sizes, names web-3 on the slow kind
// only, and web-3's own kind as a kind on one host.
#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "private_clickhouse.h"
#include "support/test_support.h"

namespace jackdaw {
namespace {

using nlohmann::json;
using testing::PrivateClickHouse;

const std::string kTrace = std::string(JDW_GOLDEN_DIR) + "/testserver-mix.jdw";

testing::CommandResult Jackdaw(std::vector<std::string> args) {
  args.insert(args.begin(), testing::BinDir() + "/jackdaw");
  return testing::RunCommand(args);
}

// analyze's --json clusters of one host: id -> size.
std::map<int64_t, uint64_t> AnalyzeAs(const PrivateClickHouse& ch, const std::string& host) {
  const std::string model_file = testing::TempPath("fleet-" + host);
  const testing::CommandResult r = Jackdaw({"analyze", kTrace, "--schema", "testserver", "-q", "--json", model_file,
                                            "--clickhouse", ch.url(), "--host-id", host});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::map<int64_t, uint64_t> sizes;
  const json model = json::parse(testing::ReadWholeFile(model_file));
  for (const json& c : model["clusters"]) sizes[c["id"]] = c["size"];
  return sizes;
}

// web-3: web-1's requests and model rows, cluster `slow`'s latencies times
// four, and 5 requests of a cluster (99) no other host has.
void AddDeviatingHost(const PrivateClickHouse& ch, int64_t slow) {
  const std::string scale = "if(cluster = " + std::to_string(slow) + ", 4, 1)";
  auto q = ch.Query(
      "INSERT INTO jackdaw.requests (host, schema, request_id, start_ns, end_ns, latency_ns, cluster, incomplete, "
      "cpu_ns, disk_bytes, net_bytes_in, net_bytes_out) SELECT 'web-3', schema, request_id, start_ns, "
      "start_ns + latency_ns * " + scale + ", latency_ns * " + scale +
      ", cluster, incomplete, cpu_ns, disk_bytes, net_bytes_in, net_bytes_out FROM jackdaw.requests "
      "WHERE host = 'web-1'");
  ASSERT_TRUE(q.ok()) << q.status().message();
  q = ch.Query(
      "INSERT INTO jackdaw.models (host, schema, source, snapshot_ns, cluster, label, requests, mean_cpu_ns, "
      "representative) SELECT 'web-3', schema, source, snapshot_ns, cluster, label, requests, mean_cpu_ns, "
      "representative FROM jackdaw.models WHERE host = 'web-1'");
  ASSERT_TRUE(q.ok()) << q.status().message();
  q = ch.Query(
      "INSERT INTO jackdaw.requests (host, schema, request_id, start_ns, end_ns, latency_ns, cluster, cpu_ns) "
      "SELECT 'web-3', 'testserver', 1000000 + number, t + number, t + number + 80000000, 80000000, 99, 50000000 "
      "FROM (SELECT number, (SELECT min(start_ns) FROM jackdaw.requests) AS t FROM system.numbers LIMIT 5)");
  ASSERT_TRUE(q.ok()) << q.status().message();
  q = ch.Query(
      "INSERT INTO jackdaw.models (host, schema, source, snapshot_ns, cluster, label, requests, mean_cpu_ns, "
      "representative) SELECT 'web-3', 'testserver', 'analyze', max(snapshot_ns), 99, 'c9', 5, 50000000, "
      "'fleet_test_only{cpu=50.000000ms}' FROM jackdaw.models WHERE host = 'web-1'");
  ASSERT_TRUE(q.ok()) << q.status().message();
}

// The kind holding `host`'s cluster `cluster`, or null.
const json* KindOf(const json& fleet, const std::string& host, int64_t cluster) {
  for (const json& k : fleet["kinds"])
    for (const json& h : k["hosts"])
      if (h["host"] == host && h["cluster"].get<int64_t>() == cluster) return &k;
  return nullptr;
}

TEST(ClickHouseFleet, IdenticalHostsMergeAndTheDeviatingHostIsNamed) {
  JDW_REQUIRE_CLICKHOUSE();
  PrivateClickHouse ch;
  ASSERT_TRUE(ch.Start().ok());

  // Nothing stored yet: no database, one line saying what to do.
  const testing::CommandResult none = Jackdaw({"fleet", "--clickhouse", ch.url()});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("jackdaw: --clickhouse " + ch.url() + ": no jackdaw tables there"), std::string::npos)
      << none.err;
  EXPECT_EQ(std::count(none.err.begin(), none.err.end(), '\n'), 1) << none.err;

  const auto sizes1 = AnalyzeAs(ch, "web-1");
  const auto sizes2 = AnalyzeAs(ch, "web-2");
  ASSERT_FALSE(sizes1.empty());
  ASSERT_EQ(sizes1, sizes2) << "one trace, one model";
  int64_t largest = sizes1.begin()->first;
  for (const auto& [id, n] : sizes1)
    if (n > sizes1.at(largest)) largest = id;
  AddDeviatingHost(ch, largest);

  const testing::CommandResult r = Jackdaw({"fleet", "--clickhouse", ch.url(), "--json", "-"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json fleet = json::parse(r.out);
  EXPECT_EQ(fleet["hosts"], json::array({"web-1", "web-2", "web-3"}));

  // Every cluster of web-1 is a kind with web-2's cluster of the same id and
  // web-3's, each counting analyze's cluster size.
  std::set<std::string> slow_kinds;
  for (const auto& [id, size] : sizes1) {
    const json* k = KindOf(fleet, "web-1", id);
    ASSERT_NE(k, nullptr) << "cluster " << id;
    EXPECT_EQ(k, KindOf(fleet, "web-2", id)) << "cluster " << id;
    EXPECT_EQ(k, KindOf(fleet, "web-3", id)) << "cluster " << id;
    ASSERT_EQ((*k)["hosts"].size(), 3u) << k->dump();
    for (const json& h : (*k)["hosts"]) EXPECT_EQ(h["requests"].get<uint64_t>(), size) << h.dump();
    if (id == largest) slow_kinds.insert((*k)["kind"].get<std::string>());
  }
  ASSERT_EQ(slow_kinds.size(), 1u);

  // web-3 named on the slow kind's latency, and on nothing else; never web-1
  // nor web-2.
  bool named = false;
  for (const json& d : fleet["deviations"]) {
    EXPECT_EQ(d["host"], "web-3") << d.dump();
    EXPECT_EQ(d["kind"], *slow_kinds.begin()) << d.dump();
    if (d["metric"] == "p50_latency_ns") {
      named = true;
      EXPECT_NEAR(d["relative"].get<double>(), 3.0, 0.01) << d.dump();
      EXPECT_EQ(d["other_hosts"], 2);
    }
  }
  EXPECT_TRUE(named) << fleet["deviations"].dump();

  // web-3's own kind: on one host only.
  ASSERT_EQ(fleet["single_host_kinds"].size(), 1u) << fleet["single_host_kinds"].dump();
  EXPECT_EQ(fleet["single_host_kinds"][0]["host"], "web-3");
  EXPECT_EQ(fleet["single_host_kinds"][0]["requests"], 5);
  EXPECT_GT(fleet["single_host_kinds"][0]["nearest_distance"].get<double>(), 0.5);

  // The text report says the same.
  const testing::CommandResult text = Jackdaw({"fleet", "--clickhouse", ch.url()});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("Fleet: 3 hosts"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("  web-3 on " + *slow_kinds.begin() + ": p50 latency"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("  web-1 on "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("Kinds on one host only:"), std::string::npos) << text.out;
  RecordProperty("text_report", text.out);

  // Two hosts only: web-3 left out, nothing deviates.
  const testing::CommandResult two =
      Jackdaw({"fleet", "--clickhouse", ch.url(), "--host", "web-1", "--host", "web-2", "--json", "-"});
  ASSERT_EQ(two.exit_code, 0) << two.err;
  const json pair = json::parse(two.out);
  EXPECT_EQ(pair["hosts"], json::array({"web-1", "web-2"}));
  EXPECT_TRUE(pair["deviations"].empty()) << pair["deviations"].dump();
  EXPECT_EQ(pair["kinds"].size(), sizes1.size());

  // A window or host with nothing in it: said so, exit 1.
  const testing::CommandResult empty = Jackdaw({"fleet", "--clickhouse", ch.url(), "--host", "nosuch"});
  EXPECT_EQ(empty.exit_code, 1);
  EXPECT_NE(empty.err.find("the store holds no clustered requests"), std::string::npos) << empty.err;
  EXPECT_EQ(std::count(empty.err.begin(), empty.err.end(), '\n'), 1) << empty.err;
  // The golden trace was recorded long before the last minute.
  const testing::CommandResult recent = Jackdaw({"fleet", "--clickhouse", ch.url(), "--since", "60"});
  EXPECT_EQ(recent.exit_code, 1);
  EXPECT_NE(recent.err.find("the store holds no clustered requests from "), std::string::npos) << recent.err;
}

TEST(ClickHouseFleet, StoreDownIsOneLineWithTheFix) {
  PrivateClickHouse nobody;
  nobody.ChoosePorts();
  const testing::CommandResult r = Jackdaw({"fleet", "--clickhouse", nobody.url()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "jackdaw: --clickhouse " + nobody.url() +
                       ": connection refused: start clickhouse-server there (or fix the URL: its HTTP port, 8123 "
                       "by default)\n");
  EXPECT_EQ(r.out, "");
  const testing::CommandResult bad = Jackdaw({"fleet", "--clickhouse", "localhost:8123"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("not an http:// URL"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace jackdaw
