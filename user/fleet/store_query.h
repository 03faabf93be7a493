// Reading the fleet from ClickHouse (docs/clickhouse.md, "jackdaw fleet"):
// the requests table aggregated per host and cluster over the window, and
// the latest model snapshot of each host for the clusters' representatives,
// both as JSONEachRow over the HTTP interface.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "fleet/host_cluster.h"

namespace jackdaw::fleet {

struct StoreQuery {
  std::string url;                 // --clickhouse, as given (for messages)
  uint64_t from_ns = 0;            // requests that started at or after; 0: all
  std::vector<std::string> hosts;  // empty: every host
  int timeout_ms = 60000;
};

// The statements (exposed for the tests).
std::string RequestsSql(const StoreQuery& q);
std::string ModelsSql(const StoreQuery& q);
// 'text' as a ClickHouse string literal.
std::string SqlString(const std::string& text);

// The two answers joined on (host, schema, cluster): one row per cluster
// with requests in the window, its representative from the host's latest
// model snapshot (empty when that snapshot lacks the cluster). Malformed
// lines are an error naming the line.
StatusOr<std::vector<HostCluster>> JoinAnswers(const std::string& requests_body, const std::string& models_body);

// Runs both queries. Errors are one line naming the cause and the fix: the
// store unreachable, no jackdaw tables there, a refused query.
StatusOr<std::vector<HostCluster>> ReadFleet(const StoreQuery& q);

}  // namespace jackdaw::fleet
