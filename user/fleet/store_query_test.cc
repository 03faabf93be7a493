#include "fleet/store_query.h"

#include <gtest/gtest.h>

#include "fleet/fleet_report.h"

namespace jackdaw::fleet {
namespace {

TEST(StoreQuery, StatementsCarryTheWindowAndQuotedHosts) {
  StoreQuery q;
  q.from_ns = 123;
  q.hosts = {"web-1", "o'brien\\"};
  const std::string r = RequestsSql(q), m = ModelsSql(q);
  EXPECT_NE(r.find("start_ns >= 123"), std::string::npos) << r;
  EXPECT_NE(r.find("host IN ('web-1', 'o\\'brien\\\\')"), std::string::npos) << r;
  EXPECT_NE(r.find("FORMAT JSONEachRow"), std::string::npos);
  EXPECT_EQ(m.find("start_ns"), std::string::npos) << m;
  EXPECT_NE(m.find("max(snapshot_ns)"), std::string::npos) << m;
}

TEST(StoreQuery, AnswersJoinedOnHostSchemaAndCluster) {
  // 64-bit integers quoted as ClickHouse writes them.
  const std::string requests =
      "{\"host\":\"web-1\",\"schema\":\"s\",\"cluster\":\"0\",\"requests\":\"40\",\"p50_latency_ns\":1000000,"
      "\"p95_latency_ns\":2000000,\"mean_cpu_ns\":50000,\"mean_disk_bytes\":0,\"mean_net_bytes\":300,"
      "\"first_start_ns\":\"1000000000\",\"last_end_ns\":\"11000000000\"}\n"
      "{\"host\":\"web-2\",\"schema\":\"s\",\"cluster\":\"3\",\"requests\":\"10\"}\n";
  const std::string models =
      "{\"host\":\"web-1\",\"schema\":\"s\",\"cluster\":\"0\",\"label\":\"c0\",\"representative\":\"a b\"}\n";
  auto rows = JoinAnswers(requests, models);
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].requests, 40u);
  EXPECT_EQ((*rows)[0].representative, "a b");
  EXPECT_EQ((*rows)[0].label, "c0");
  EXPECT_DOUBLE_EQ((*rows)[0].p50_latency_ns, 1e6);
  EXPECT_EQ((*rows)[1].representative, "");
  EXPECT_EQ((*rows)[1].cluster, 3);
  EXPECT_DOUBLE_EQ(WindowSeconds(*rows, 0), 10.0);
  EXPECT_DOUBLE_EQ(WindowSeconds(*rows, 6000000000), 5.0);
}

TEST(StoreQuery, MalformedAnswerIsAnErrorNotACrash) {
  EXPECT_FALSE(JoinAnswers("{\"host\":", "").ok());
  EXPECT_FALSE(JoinAnswers("", "[1,2]").ok());
  auto empty = JoinAnswers("", "");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(StoreQuery, UnreachableStoreOneLineWithTheFix) {
  StoreQuery q;
  q.url = "http://127.0.0.1:1";
  q.timeout_ms = 2000;
  auto r = ReadFleet(q);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("start clickhouse-server there"), std::string::npos) << r.status().message();
  q.url = "127.0.0.1:8123";
  EXPECT_FALSE(ReadFleet(q).ok());
}

}  // namespace
}  // namespace jackdaw::fleet
