#include "fleet/fleet_report.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <set>

#include <fmt/format.h>

namespace jackdaw::fleet {
namespace {

using nlohmann::ordered_json;

double Rate(uint64_t n, double window_s) { return window_s > 0 ? static_cast<double>(n) / window_s : 0; }

double CpuPerRequest(const FleetKind& k, const std::vector<HostCluster>& rows) {
  double sum = 0;
  for (const KindMember& m : k.members) sum += rows[m.row].mean_cpu_ns * static_cast<double>(rows[m.row].requests);
  return k.requests ? sum / static_cast<double>(k.requests) : 0;
}

uint64_t Total(const std::vector<FleetKind>& kinds) {
  uint64_t n = 0;
  for (const FleetKind& k : kinds) n += k.requests;
  return n;
}

std::string Ms(double ns) { return fmt::format("{:.3f} ms", ns / 1e6); }
// CPU: microseconds below a millisecond, milliseconds above.
std::string Us(double ns) { return ns < 1e6 ? fmt::format("{:.1f} us", ns / 1e3) : Ms(ns); }

std::string Short(const std::string& s, size_t max) {
  if (s.empty()) return "(no model row)";
  return s.size() <= max ? s : s.substr(0, max - 3) + "...";
}

std::string MetricText(const std::string& metric) {
  return metric == "p50_latency_ns" ? "p50 latency" : "CPU per request";
}

}  // namespace

double WindowSeconds(const std::vector<HostCluster>& rows, uint64_t from_ns) {
  if (rows.empty()) return 0;
  uint64_t first = UINT64_MAX, last = 0;
  for (const HostCluster& c : rows) {
    if (c.first_start_ns) first = std::min(first, c.first_start_ns);
    last = std::max(last, c.last_end_ns);
  }
  if (from_ns) first = from_ns;
  return first != UINT64_MAX && last > first ? static_cast<double>(last - first) / 1e9 : 0;
}

std::vector<std::string> Hosts(const std::vector<HostCluster>& rows) {
  std::set<std::string> hosts;
  for (const HostCluster& c : rows) hosts.insert(c.host);
  return {hosts.begin(), hosts.end()};
}

std::vector<const FleetKind*> SingleHostKinds(const FleetReport& r) {
  std::vector<const FleetKind*> out;
  if (Hosts(r.rows).size() < 2) return out;
  for (const FleetKind& k : r.kinds)
    if (k.members.size() == 1) out.push_back(&k);
  return out;
}

ordered_json FleetToJson(const FleetReport& r) {
  const uint64_t total = Total(r.kinds);
  ordered_json j;
  j["store"] = r.store;
  j["from_ns"] = r.from_ns;
  j["window_s"] = r.window_s;
  j["hosts"] = Hosts(r.rows);
  j["requests"] = total;
  j["max_distance"] = r.max_distance;
  j["deviation_threshold"] = r.deviation_threshold;
  j["kinds"] = ordered_json::array();
  for (const FleetKind& k : r.kinds) {
    ordered_json kj;
    kj["kind"] = k.name;
    kj["schema"] = k.schema;
    kj["requests"] = k.requests;
    kj["share"] = total ? static_cast<double>(k.requests) / static_cast<double>(total) : 0;
    kj["requests_per_s"] = Rate(k.requests, r.window_s);
    kj["cpu_ns_per_request"] = CpuPerRequest(k, r.rows);
    kj["representative"] = k.representative;
    kj["hosts"] = ordered_json::array();
    for (const KindMember& m : k.members) {
      const HostCluster& c = r.rows[m.row];
      kj["hosts"].push_back({{"host", c.host},
                             {"cluster", c.cluster},
                             {"label", c.label},
                             {"requests", c.requests},
                             {"requests_per_s", Rate(c.requests, r.window_s)},
                             {"p50_latency_ns", c.p50_latency_ns},
                             {"p95_latency_ns", c.p95_latency_ns},
                             {"cpu_ns_per_request", c.mean_cpu_ns},
                             {"disk_bytes_per_request", c.mean_disk_bytes},
                             {"net_bytes_per_request", c.mean_net_bytes},
                             {"distance", m.distance}});
    }
    j["kinds"].push_back(std::move(kj));
  }
  j["deviations"] = ordered_json::array();
  for (const Deviation& d : r.deviations)
    j["deviations"].push_back({{"kind", d.kind},
                               {"host", d.host},
                               {"metric", d.metric},
                               {"value", d.value},
                               {"others_median", d.others},
                               {"relative", d.relative},
                               {"other_hosts", d.other_hosts}});
  j["single_host_kinds"] = ordered_json::array();
  for (const FleetKind* k : SingleHostKinds(r))
    j["single_host_kinds"].push_back({{"kind", k->name},
                                      {"host", r.rows[k->members[0].row].host},
                                      {"requests", k->requests},
                                      {"nearest_kind", k->nearest_kind},
                                      {"nearest_distance", k->nearest_distance}});
  return j;
}

void WriteFleetText(const FleetReport& r, std::ostream& out) {
  const uint64_t total = Total(r.kinds);
  const auto hosts = Hosts(r.rows);
  out << fmt::format("Fleet: {} hosts, {} requests, {} kinds ({}; {} over {:.1f} s)\n", hosts.size(), total,
                     r.kinds.size(), r.store,
                     r.from_ns ? fmt::format("requests from {} ns", r.from_ns) : std::string("every stored request"),
                     r.window_s);
  for (const FleetKind& k : r.kinds) {
    out << fmt::format("\n{}  {:.1f} % of requests, {:.1f}/s, CPU {} per request, on {} host{}  [{}]\n", k.name,
                       total ? 100.0 * static_cast<double>(k.requests) / static_cast<double>(total) : 0.0,
                       Rate(k.requests, r.window_s), Us(CpuPerRequest(k, r.rows)), k.members.size(),
                       k.members.size() == 1 ? "" : "s", k.schema);
    out << "    " << Short(k.representative, 100) << "\n";
    out << fmt::format("    {:<16} {:>8} {:>9} {:>9} {:>12} {:>12} {:>12} {:>8}\n", "host", "cluster", "requests",
                       "req/s", "p50", "p95", "CPU/req", "distance");
    for (const KindMember& m : k.members) {
      const HostCluster& c = r.rows[m.row];
      out << fmt::format("    {:<16} {:>8} {:>9} {:>9.1f} {:>12} {:>12} {:>12} {:>8.3f}\n", c.host,
                         c.label.empty() ? std::to_string(c.cluster) : c.label, c.requests,
                         Rate(c.requests, r.window_s), Ms(c.p50_latency_ns), Ms(c.p95_latency_ns),
                         Us(c.mean_cpu_ns), m.distance);
    }
  }
  out << fmt::format("\nDeviating hosts (more than {:.0f} % from the median of the other hosts on a kind):\n",
                     r.deviation_threshold * 100);
  if (r.deviations.empty()) out << "  none\n";
  for (const Deviation& d : r.deviations) {
    const bool latency = d.metric == "p50_latency_ns";
    out << fmt::format("  {} on {}: {} {} against {} on the other {} host{} ({:+.0f} %){}\n", d.host, d.kind,
                       MetricText(d.metric), latency ? Ms(d.value) : Us(d.value),
                       latency ? Ms(d.others) : Us(d.others), d.other_hosts, d.other_hosts == 1 ? "" : "s",
                       d.relative * 100, d.other_hosts == 1 ? " (two hosts: which one is off needs a third)" : "");
  }
  const auto single = SingleHostKinds(r);
  if (!single.empty()) {
    out << "\nKinds on one host only:\n";
    for (const FleetKind* k : single)
      out << fmt::format("  {} on {}: {} requests{}\n", k->name, r.rows[k->members[0].row].host, k->requests,
                         k->nearest_distance < 0 ? std::string()
                                                 : fmt::format(" (nearest kind {}, distance {:.3f})", k->nearest_kind,
                                                               k->nearest_distance));
  }
}

}  // namespace jackdaw::fleet
