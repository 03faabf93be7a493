#include "export/clickhouse/tables.h"

#include <gtest/gtest.h>

namespace jackdaw::clickhouse {
namespace {

bool Has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(Tables, DatabaseFirstThenEveryTableIfAbsent) {
  const std::vector<std::string> st = CreateStatements(TableLayout{});
  ASSERT_EQ(st.size(), 1 + TableNames().size());
  EXPECT_EQ(st[0], "CREATE DATABASE IF NOT EXISTS jackdaw");
  const std::vector<std::string> names = TableNames();
  EXPECT_EQ(names, (std::vector<std::string>{"requests", "connections", "interactions", "models"}));
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(st[i + 1].rfind("CREATE TABLE IF NOT EXISTS jackdaw." + names[i] + " (", 0), 0u) << st[i + 1];
    EXPECT_TRUE(Has(st[i + 1], "ENGINE = MergeTree()")) << st[i + 1];
    EXPECT_FALSE(Has(st[i + 1], "DateTime64")) << "ClickHouse 18.16 has none";
    EXPECT_FALSE(Has(st[i + 1], ";")) << "one statement per POST";
  }
  // Nanosecond times in UInt64; the columns stitching joins hosts by.
  EXPECT_TRUE(Has(st[1], "start_ns UInt64"));
  EXPECT_TRUE(Has(st[1], "calls Nested("));
  EXPECT_TRUE(Has(st[1], "seq_out_start UInt32"));
  EXPECT_TRUE(Has(st[1], "processes Nested("));
}

TEST(Tables, ClusterLayoutIsLocalTablesUnderDistributedOnes) {
  TableLayout l;
  l.cluster = "two_shards";
  const std::vector<std::string> st = CreateStatements(l);
  ASSERT_EQ(st.size(), 1 + 2 * TableNames().size());
  EXPECT_TRUE(Has(st[1], "CREATE TABLE IF NOT EXISTS jackdaw.requests_local ("));
  EXPECT_TRUE(Has(st[1], "MergeTree"));
  EXPECT_EQ(st[2],
            "CREATE TABLE IF NOT EXISTS jackdaw.requests AS jackdaw.requests_local ENGINE = "
            "Distributed(two_shards, jackdaw, requests_local, cityHash64(host, request_id))");
  for (const std::string& s : st) EXPECT_FALSE(Has(s, "ON CLUSTER")) << "needs ZooKeeper: " << s;
}

TEST(Tables, InsertHeadNamesTheTableAndFormat) {
  EXPECT_EQ(InsertHead(TableLayout{}, "requests"), "INSERT INTO jackdaw.requests FORMAT JSONEachRow\n");
}

}  // namespace
}  // namespace jackdaw::clickhouse
