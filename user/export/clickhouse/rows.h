// jackdaw's results as rows of the tables in tables.h, one JSONEachRow
// line each.
//
// A request's row is written in two steps: everything but its cluster when
// the join emits it (RequestRowHead), the cluster when the model assigns it
// (EndRequestRow); the sink holds the head in between (clickhouse_sink.h).
//
// Times: a request's wall-clock times all come from one clock reading, its
// start_wall_ns, plus offsets on the monotonic clock, so end_ns - start_ns
// is its latency exactly and its calls sit inside it (as the OTLP export
// places its spans).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "request/request.h"

namespace jackdaw::clickhouse {

// What every row of one source shares.
struct RowContext {
  std::string host;    // the traced machine (or --host-id)
  std::string schema;  // the schema the requests were joined with
};

// The `requests` row up to (not including) its cluster column.
std::string RequestRowHead(const RowContext& ctx, const model::Request& r);
// Appends the cluster (-1: none, an incomplete request) and ends the line.
void EndRequestRow(std::string* head, int64_t cluster);

// A `connections` row (with its newline). `mono_to_wall_ns` is what to add
// to the host's CLOCK_MONOTONIC for wall-clock time (connections carry the
// monotonic clock only).
std::string ConnectionRow(const RowContext& ctx, const model::Connection& c, int64_t mono_to_wall_ns);

// An in-kernel interaction summary (`jackdaw interactions -o`): a request
// message and its response on one connection, as the kernel summed them.
struct InteractionSummary {
  uint32_t tgid = 0;
  std::string role;           // "server" or "client"
  std::string local, remote;  // "10.0.0.1:80"
  uint64_t start_wall_ns = 0;  // the request's first byte
  uint64_t latency_ns = 0;     // to the response's last byte
  uint64_t request_bytes = 0, response_bytes = 0;
};
std::string InteractionRow(const RowContext& ctx, const InteractionSummary& ia);

// One cluster of a model snapshot: the `models` table's row.
struct ModelCluster {
  int64_t cluster = -1;   // the id requests.cluster holds
  std::string label;      // "c0": the cluster's rank as the reports name it
  uint64_t requests = 0;
  double mean_cpu_ns = 0, mean_disk_bytes = 0, mean_net_bytes = 0;
  double mean_latency_ns = 0, p50_latency_ns = 0, p99_latency_ns = 0;
  bool anomalous = false;
  std::string representative;  // the representative's canonical string
};
std::string ModelRow(const RowContext& ctx, const std::string& source, uint64_t snapshot_ns,
                     const ModelCluster& c);

}  // namespace jackdaw::clickhouse
