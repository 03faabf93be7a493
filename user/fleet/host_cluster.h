// What `jackdaw fleet` reads from the store, per host and cluster, and what
// it makes of it: fleet kinds (clusters of different hosts that are one kind
// of request) and the hosts that deviate on a kind (docs/clickhouse.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace jackdaw::fleet {

// One cluster of one host's model, with its requests in the window.
struct HostCluster {
  std::string host, schema;
  int64_t cluster = -1;
  std::string label;           // the host's report label (c0, c1...); empty without a model row
  std::string representative;  // canonical string of its representative; empty without a model row
  uint64_t requests = 0;       // in the window
  double p50_latency_ns = 0, p95_latency_ns = 0;
  double mean_cpu_ns = 0, mean_disk_bytes = 0, mean_net_bytes = 0;
  uint64_t first_start_ns = 0, last_end_ns = 0;
};

// A host's part in a fleet kind.
struct KindMember {
  size_t row = 0;         // index into the HostCluster rows
  double distance = 0;    // Magpie distance of its representative to the kind's
};

struct FleetKind {
  std::string name;  // k0, k1... by requests, largest first
  std::string schema;
  std::string representative;    // the founding (largest) cluster's
  std::vector<KindMember> members;  // at most one per host, largest first
  uint64_t requests = 0;
  // A kind of one cluster: the nearest other kind of its schema and its
  // distance (-1: none), what the kind would have joined were it closer.
  std::string nearest_kind;
  double nearest_distance = -1;
};

// A host whose median latency or CPU per request on a kind differs from
// the others' by more than the threshold.
struct Deviation {
  std::string kind, host, metric;  // metric: "p50_latency_ns" or "cpu_ns_per_request"
  double value = 0, others = 0;    // the host's, and the median of the other hosts'
  double relative = 0;             // (value - others) / others
  size_t other_hosts = 0;
};

}  // namespace jackdaw::fleet
