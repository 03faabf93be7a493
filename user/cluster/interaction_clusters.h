// Clusters of in-kernel interaction summaries: what `jackdaw analyze` shows
// for a trace that holds only `interaction` records (jackdaw interactions
// -o), where no event stream exists to join into requests.
//
// Each interaction becomes a point in log space -- log2(1 + x) of request
// bytes, response bytes, and the kernel / app / send parts of its latency in
// microseconds, and its serving threads' on-CPU microseconds -- so a distance
// of 1 is a factor of two in one dimension. Interactions of different
// (role, server port, process) never share a cluster. Within that partition
// Magpie's incremental algorithm runs: a point joins the nearest centroid
// within `threshold`, else founds a cluster; centroids are running means.
// Clusters are returned largest first with their representative (the member
// nearest the centroid), mean demands, latency p50/p99 and diameter (mean
// member-to-centroid distance). Singletons far from every cluster are the
// anomalies.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "jackdaw/abi.h"

namespace jackdaw::cluster {

struct InteractionPoint {
  uint32_t tgid = 0;
  jdw_interaction ia{};
};

struct InteractionCluster {
  uint8_t role = 0;
  uint16_t port = 0;  // server port
  uint32_t tgid = 0;
  size_t size = 0;
  size_t representative = 0;  // index into the input
  double diameter = 0;
  double mean_req_bytes = 0, mean_resp_bytes = 0;
  double mean_kernel_ms = 0, mean_app_ms = 0, mean_send_ms = 0, mean_oncpu_ms = 0;
  double p50_ms = 0, p99_ms = 0;
  std::vector<size_t> members;
};

struct InteractionClusterOptions {
  double threshold = 1.5;
};

std::vector<InteractionCluster> ClusterInteractions(const std::vector<InteractionPoint>& points,
                                                    const InteractionClusterOptions& opts = {});

}  // namespace jackdaw::cluster
