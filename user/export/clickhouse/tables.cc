#include "export/clickhouse/tables.h"

namespace jackdaw::clickhouse {
namespace {

struct Table {
  const char* name;
  const char* columns;
  const char* order_by;
  const char* day_of;      // the column whose day partitions the table
  const char* shard_key;   // Distributed: which shard a row goes to
};

// A request's row: its totals, its parts per process, its connections and
// the calls it made with their TCP sequence ranges (what `stitch` joins
// hosts by). start_ns/end_ns are wall-clock; mono_start_ns is the host's
// CLOCK_MONOTONIC, the clock of its packet times.
const Table kTables[] = {
    {"requests",
     "host String, schema String, request_id UInt64, start_ns UInt64, end_ns UInt64, mono_start_ns UInt64, "
     "latency_ns UInt64, cluster Int64, incomplete UInt8, timed_out UInt8, tgid UInt32, events UInt32, "
     "threads UInt32, cpu_ns UInt64, softirq_cpu_ns UInt64, disk_bytes UInt64, disk_ios UInt64, "
     "net_bytes_in UInt64, net_bytes_out UInt64, runq_wait_ns UInt64, blocked_ns UInt64, blocked_disk_ns UInt64, "
     "blocked_net_ns UInt64, connection_cpu_ns UInt64, connection_id UInt64, exchange UInt32, "
     "msg_in_bytes UInt64, msg_out_bytes UInt64, "
     "processes Nested(tgid UInt32, comm String, tier UInt32, events UInt32, cpu_ns UInt64, disk_bytes UInt64, "
     "net_bytes_in UInt64, net_bytes_out UInt64, blocked_ns UInt64), "
     "connections Nested(local String, remote String, peer_tgid UInt32), "
     "calls Nested(start_ns UInt64, end_ns UInt64, caller_tgid UInt32, peer_tgid UInt32, local String, "
     "remote String, bytes_out UInt64, bytes_in UInt64, seq_out_start UInt32, seq_out_end UInt32, "
     "answered UInt8)",
     "host, start_ns, request_id", "start_ns", "cityHash64(host, request_id)"},
    {"connections",
     "host String, schema String, connection_id UInt64, tgid UInt32, local String, remote String, "
     "start_ns UInt64, end_ns UInt64, mono_start_ns UInt64, closed UInt8, requests UInt32, one_way UInt32, "
     "greetings UInt32, setups UInt32, pipelined UInt32, eof_reads UInt32, empty_reads UInt32, events UInt32, "
     "idle_ns UInt64, cpu_ns UInt64, softirq_cpu_ns UInt64, net_bytes_in UInt64, net_bytes_out UInt64",
     "host, start_ns, connection_id", "start_ns", "cityHash64(host, connection_id)"},
    {"interactions",
     "host String, tgid UInt32, role String, local String, remote String, start_ns UInt64, latency_ns UInt64, "
     "request_bytes UInt64, response_bytes UInt64",
     "host, start_ns", "start_ns", "cityHash64(host, start_ns)"},
    {"models",
     "host String, schema String, source String, snapshot_ns UInt64, cluster Int64, label String, "
     "requests UInt64, mean_cpu_ns Float64, mean_disk_bytes Float64, mean_net_bytes Float64, "
     "mean_latency_ns Float64, p50_latency_ns Float64, p99_latency_ns Float64, anomalous UInt8, "
     "representative String",
     "host, snapshot_ns, cluster", "snapshot_ns", "cityHash64(host)"},
};

}  // namespace

std::vector<std::string> TableNames() {
  std::vector<std::string> out;
  for (const Table& t : kTables) out.push_back(t.name);
  return out;
}

std::vector<std::string> CreateStatements(const TableLayout& layout) {
  std::vector<std::string> out;
  out.push_back("CREATE DATABASE IF NOT EXISTS " + layout.database);
  for (const Table& t : kTables) {
    const std::string name = layout.database + "." + t.name;
    const std::string local = layout.cluster.empty() ? name : name + "_local";
    out.push_back("CREATE TABLE IF NOT EXISTS " + local + " (" + t.columns +
                  ") ENGINE = MergeTree() PARTITION BY toYYYYMMDD(toDateTime(intDiv(" + t.day_of +
                  ", 1000000000))) ORDER BY (" + t.order_by + ")");
    if (!layout.cluster.empty())
      out.push_back("CREATE TABLE IF NOT EXISTS " + name + " AS " + local +
                    " ENGINE = Distributed(" + layout.cluster + ", " + layout.database + ", " + t.name +
                    "_local, " + t.shard_key + ")");
  }
  return out;
}

std::string InsertHead(const TableLayout& layout, const std::string& table) {
  return "INSERT INTO " + layout.database + "." + table + " FORMAT JSONEachRow\n";
}

}  // namespace jackdaw::clickhouse
