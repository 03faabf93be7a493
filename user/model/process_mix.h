// Per-process demand of a cluster's requests: a request that crossed
// processes (a proxy, an app server, a database) has a segment per process
// (model::ProcessSegment); a cluster's breakdown is each process's mean
// share per request — "nginx 0.1 ms CPU, php-fpm 4.8 ms CPU, mariadbd
// 1.2 ms CPU + 0.4 ms disk". Processes are told apart by name and tier, not
// by tgid: a pre-forked pool's workers are one process of the stack.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "request/request.h"

namespace jackdaw::model {

struct ProcessDemand {
  std::string comm;            // "" when the trace named no process
  uint32_t tier = 0;
  uint64_t requests = 0;       // requests of the cluster that touched it
  double cpu_ns = 0;           // means per request of the cluster (not per touching request)
  double disk_bytes = 0;
  double net_bytes = 0;
  double blocked_ns = 0;
  double runq_wait_ns = 0;
};

class ProcessMix {
 public:
  void Add(const std::vector<ProcessSegment>& segments);
  // Means over `requests` requests, largest CPU first; empty when every
  // request stayed in one process (nothing to break down).
  std::vector<ProcessDemand> Means(uint64_t requests) const;
  bool empty() const { return sums_.empty(); }

 private:
  std::vector<ProcessDemand> sums_;
  bool crossed_ = false;  // some request touched more than one process
};

// "nginx 0.1 ms CPU, php-fpm 4.8 ms CPU, mariadbd 1.2 ms CPU + 0.4 ms disk"
std::string FormatProcessMix(const std::vector<ProcessDemand>& mix);

}  // namespace jackdaw::model
