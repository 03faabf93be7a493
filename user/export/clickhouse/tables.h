// The ClickHouse tables jackdaw writes (docs/clickhouse.md), as the
// statements that create them if absent: database `jackdaw`; tables
// `requests` (one row per request: summary columns, not events),
// `connections` (a connection's life, schemas with `messages`),
// `interactions` (in-kernel interaction summaries) and `models` (model
// snapshots, one row per cluster).
//
// Times are nanoseconds in UInt64 columns: ClickHouse 18.16 (Debian 12) has
// no DateTime64. Partitions are days of the row's start.
//
// With a cluster (`--clickhouse-cluster NAME`, a cluster of the servers'
// <remote_servers>), each table is a local MergeTree table `TABLE_local`
// under a Distributed table of the plain name that spreads inserts over the
// shards by host and id and reads all of them: jackdaw and its queries only
// ever name the Distributed tables. The statements run on the server of the
// URL only, not ON CLUSTER: ClickHouse runs distributed DDL through
// ZooKeeper, which a plain set of shards does not have; each shard gets its
// tables from a jackdaw pointed at it once (docs/clickhouse.md).
#pragma once

#include <string>
#include <vector>

namespace jackdaw::clickhouse {

inline constexpr const char* kDatabase = "jackdaw";

struct TableLayout {
  std::string database = kDatabase;
  std::string cluster;  // empty: plain MergeTree tables on the one server
};

// The tables jackdaw inserts into, in creation order.
std::vector<std::string> TableNames();

// CREATE DATABASE and CREATE TABLE ... IF NOT EXISTS statements, in the
// order they must run. Each is one statement (ClickHouse's HTTP interface
// takes one per POST).
std::vector<std::string> CreateStatements(const TableLayout& layout);

// "INSERT INTO jackdaw.requests FORMAT JSONEachRow\n": the head of an
// insert's body; the rows follow, one JSON object per line.
std::string InsertHead(const TableLayout& layout, const std::string& table);

}  // namespace jackdaw::clickhouse
