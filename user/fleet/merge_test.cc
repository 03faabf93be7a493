#include "fleet/merge.h"

#include <gtest/gtest.h>

namespace jackdaw::fleet {
namespace {

HostCluster Row(const std::string& host, int64_t cluster, uint64_t requests, const std::string& rep) {
  HostCluster c;
  c.host = host;
  c.schema = "testserver";
  c.cluster = cluster;
  c.label = "c" + std::to_string(cluster);
  c.requests = requests;
  c.representative = rep;
  return c;
}

const char* kRead = "accept sys_read{cpu=0.050000ms,net=300B} sys_write{cpu=0.020000ms,net=5000B} close";
const char* kDisk = "accept sys_read{cpu=0.050000ms} pread{cpu=0.400000ms,disk=262144B} sys_write{net=262144B} close";

TEST(ParseRepresentative, TokensAndDemandsAsToTextWroteThem) {
  canonical::SymbolTable symbols;
  const canonical::SerializedRequest r = ParseRepresentative(kDisk, &symbols);
  ASSERT_EQ(r.tokens.size(), 5u);
  EXPECT_EQ(symbols.Name(r.tokens[0].symbol), "accept");
  EXPECT_EQ(r.tokens[0].demand.cpu_ns, 0u);
  EXPECT_EQ(r.tokens[2].demand.cpu_ns, 400000u);
  EXPECT_EQ(r.tokens[2].demand.disk_bytes, 262144u);
  EXPECT_EQ(r.tokens[3].demand.net_bytes, 262144u);
  EXPECT_EQ(r.total.cpu_ns, 450000u);
}

TEST(ParseRepresentative, GarbageNeverFails) {
  canonical::SymbolTable symbols;
  for (const char* s : {"", " ", "{", "}", "a{", "{cpu=1ms}", "x{cpu=nan,disk=-1B,net=1e300B}", "a  b", "x{=}"}) {
    const canonical::SerializedRequest r = ParseRepresentative(s, &symbols);
    EXPECT_EQ(r.total.disk_bytes, 0u) << s;
  }
}

TEST(MergeKinds, IdenticalHostsMergeKindByKind) {
  const std::vector<HostCluster> rows = {Row("web-1", 0, 40, kRead), Row("web-1", 1, 10, kDisk),
                                         Row("web-2", 0, 38, kRead), Row("web-2", 1, 12, kDisk)};
  const auto kinds = MergeKinds(rows, {});
  ASSERT_EQ(kinds.size(), 2u);
  EXPECT_EQ(kinds[0].name, "k0");
  EXPECT_EQ(kinds[0].requests, 78u);
  ASSERT_EQ(kinds[0].members.size(), 2u);
  EXPECT_EQ(rows[kinds[0].members[0].row].host, "web-1");
  EXPECT_EQ(rows[kinds[0].members[1].row].host, "web-2");
  EXPECT_EQ(kinds[0].members[1].distance, 0);
  EXPECT_EQ(kinds[1].requests, 22u);
  EXPECT_EQ(kinds[1].representative, kDisk);
}

TEST(MergeKinds, SmallDemandDifferenceMergesLargeOneDoesNot) {
  const std::string near = "accept sys_read{cpu=0.055000ms,net=300B} sys_write{cpu=0.021000ms,net=5000B} close";
  // The same events with 20 ms more CPU: a different kind of request.
  const std::string far = "accept sys_read{cpu=20.050000ms,net=300B} sys_write{cpu=0.020000ms,net=5000B} close";
  const std::vector<HostCluster> rows = {Row("a", 0, 50, kRead), Row("b", 0, 50, near), Row("c", 0, 50, far)};
  const auto kinds = MergeKinds(rows, {});
  ASSERT_EQ(kinds.size(), 2u);
  EXPECT_EQ(kinds[0].members.size(), 2u);
  EXPECT_GT(kinds[0].members[1].distance, 0);
  EXPECT_LT(kinds[0].members[1].distance, 0.5);
  ASSERT_EQ(kinds[1].members.size(), 1u);
  EXPECT_EQ(rows[kinds[1].members[0].row].host, "c");
  EXPECT_EQ(kinds[1].nearest_kind, "k0");
  EXPECT_GT(kinds[1].nearest_distance, 0.5);
  EXPECT_EQ(kinds[0].nearest_distance, -1) << "a kind of several clusters";
}

TEST(MergeKinds, OneClusterPerHostPerKindAndSchemasApart) {
  // Host a has two clusters with one representative (its model kept them
  // apart): the fleet keeps them apart too; b's joins the larger.
  std::vector<HostCluster> rows = {Row("a", 0, 30, kRead), Row("a", 1, 20, kRead), Row("b", 0, 25, kRead),
                                   Row("c", 0, 5, kRead)};
  rows[3].schema = "other";
  const auto kinds = MergeKinds(rows, {});
  ASSERT_EQ(kinds.size(), 3u);
  EXPECT_EQ(kinds[0].requests, 55u);  // a/c0 + b/c0
  EXPECT_EQ(kinds[1].requests, 20u);  // a/c1 alone
  EXPECT_EQ(kinds[2].schema, "other");
}

TEST(MergeKinds, ClusterWithoutRepresentativeStaysAlone) {
  const std::vector<HostCluster> rows = {Row("a", 0, 30, kRead), Row("b", 0, 30, ""), Row("c", 0, 30, "")};
  const auto kinds = MergeKinds(rows, {});
  EXPECT_EQ(kinds.size(), 3u);
}

TEST(MergeKinds, EmptyInputNoKinds) { EXPECT_TRUE(MergeKinds({}, {}).empty()); }

}  // namespace
}  // namespace jackdaw::fleet
