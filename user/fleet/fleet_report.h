// The fleet model as text (stdout) and JSON (--json): per kind its hosts
// with their counts, rates, latency and CPU; the deviating hosts; the kinds
// only one host serves.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fleet/host_cluster.h"

namespace jackdaw::fleet {

struct FleetReport {
  std::string store;     // the URL
  uint64_t from_ns = 0;  // 0: every stored request
  double window_s = 0;   // what the rates are per; 0: unknown (one instant)
  double max_distance = 0, deviation_threshold = 0;
  std::vector<HostCluster> rows;
  std::vector<FleetKind> kinds;
  std::vector<Deviation> deviations;
};

// The seconds the rates are over: from `from_ns` (else the first stored
// start) to the last stored end.
double WindowSeconds(const std::vector<HostCluster>& rows, uint64_t from_ns);

// Kinds served by one host while the fleet has several.
std::vector<const FleetKind*> SingleHostKinds(const FleetReport& r);

std::vector<std::string> Hosts(const std::vector<HostCluster>& rows);

nlohmann::ordered_json FleetToJson(const FleetReport& r);
void WriteFleetText(const FleetReport& r, std::ostream& out);

}  // namespace jackdaw::fleet
