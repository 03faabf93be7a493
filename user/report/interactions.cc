#include "report/interactions.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>

namespace jackdaw::report {
namespace {

uint64_t Span(uint64_t from, uint64_t to) { return from && to > from ? to - from : 0; }

std::string HumanBytes(double b) {
  const char* units[] = {"B", "KB", "MB", "GB"};
  int u = 0;
  while (b >= 1024 && u < 3) b /= 1024, ++u;
  char buf[32];
  snprintf(buf, sizeof(buf), u ? "%.1f%s" : "%.0f%s", b, units[u]);
  return buf;
}

const char* RoleName(uint8_t role) {
  return role == JDW_ROLE_SERVER ? "server" : role == JDW_ROLE_CLIENT ? "client" : "?";
}

std::string FlagNames(uint8_t f) {
  std::string s;
  auto add = [&](uint8_t bit, const char* name) {
    if (!(f & bit)) return;
    if (!s.empty()) s += ",";
    s += name;
  };
  add(JDW_IA_PIPELINED, "pipelined");
  add(JDW_IA_PARTIAL, "partial");
  add(JDW_IA_CLOSED, "closed");
  add(JDW_IA_NO_RESPONSE, "no-response");
  add(JDW_IA_MANY_THREADS, "many-threads");
  return s;
}

}  // namespace

void HistBucketBounds(uint32_t b, double* lo_us, double* hi_us) {
  if (b < 4) {
    *lo_us = b;
    *hi_us = b + 1;
    return;
  }
  const uint32_t msb = b / 4 + 1, sub = b % 4;
  *lo_us = double((4 + sub) * (1ull << (msb - 2)));
  *hi_us = double((5 + sub) * (1ull << (msb - 2)));
}

double HistQuantileNs(const uint32_t* hist, double q) {
  uint64_t total = 0;
  for (int i = 0; i < JDW_IA_HIST_BUCKETS; ++i) total += hist[i];
  if (total == 0) return 0;
  const double target = q * double(total);
  double seen = 0;
  for (int i = 0; i < JDW_IA_HIST_BUCKETS; ++i) {
    if (hist[i] == 0) continue;
    if (seen + hist[i] >= target) {
      double lo, hi;
      HistBucketBounds(i, &lo, &hi);
      const double frac = std::clamp((target - seen) / hist[i], 0.0, 1.0);
      return (lo + frac * (hi - lo)) * 1000.0;
    }
    seen += hist[i];
  }
  double lo, hi;
  HistBucketBounds(JDW_IA_HIST_BUCKETS - 1, &lo, &hi);
  return hi * 1000.0;
}

std::string FormatAddress(uint16_t family, const uint8_t* addr) {
  char buf[INET6_ADDRSTRLEN] = "?";
  inet_ntop(family == 10 ? AF_INET6 : AF_INET, addr, buf, sizeof(buf));
  return buf;
}

std::string ClassLabel(const jdw_ia_class_key& key, uint8_t prefix4, uint8_t prefix6) {
  const uint8_t bits = key.family == 10 ? prefix6 : prefix4;
  const uint8_t full = key.family == 10 ? 128 : 32;
  std::string s = std::string(RoleName(key.role)) + " " + FormatAddress(key.family, key.raddr);
  if (bits < full) s += "/" + std::to_string(bits);
  if (key.port) s += (key.role == JDW_ROLE_SERVER ? " :" : " ->:") + std::to_string(key.port);
  if (key.tgid) s += " pid " + std::to_string(key.tgid);
  return s;
}

void WriteClassTable(const std::vector<ClassRow>& rows_in, double window_s, uint8_t prefix4,
                     uint8_t prefix6, std::ostream& out) {
  std::vector<ClassRow> rows = rows_in;
  std::sort(rows.begin(), rows.end(),
            [](const ClassRow& a, const ClassRow& b) { return a.stats.count > b.stats.count; });
  char line[512];
  snprintf(line, sizeof(line), "%-44s %9s %9s %9s %9s %9s %7s %7s %7s %6s %6s\n", "CLASS", "INTER/S",
           "REQ B/S", "RESP B/S", "P50 MS", "P99 MS", "KERN%", "APP%", "SEND%", "CPU%", "FLAG");
  out << line;
  for (const ClassRow& r : rows) {
    const auto& s = r.stats;
    if (s.count == 0) continue;
    const double total = double(s.total_ns ? s.total_ns : 1);
    std::string label = ClassLabel(r.key, prefix4, prefix6);
    if (!r.process.empty()) label += " (" + r.process + ")";
    if (label.size() > 44) label.resize(44);
    snprintf(line, sizeof(line), "%-44s %9.1f %9s %9s %9.3f %9.3f %7.1f %7.1f %7.1f %6.1f %6" PRIu64 "\n",
             label.c_str(), s.count / window_s, HumanBytes(s.req_bytes / window_s).c_str(),
             HumanBytes(s.resp_bytes / window_s).c_str(), HistQuantileNs(s.hist, 0.5) / 1e6,
             HistQuantileNs(s.hist, 0.99) / 1e6, 100.0 * s.kernel_ns / total, 100.0 * s.app_ns / total,
             100.0 * s.send_ns / total, 100.0 * s.oncpu_ns / total, uint64_t(s.flagged));
    out << line;
  }
}

nlohmann::json ClassRowsJson(const std::vector<ClassRow>& rows, double window_s, uint8_t prefix4,
                             uint8_t prefix6) {
  nlohmann::json arr = nlohmann::json::array();
  for (const ClassRow& r : rows) {
    const auto& s = r.stats;
    nlohmann::json j;
    j["class"] = ClassLabel(r.key, prefix4, prefix6);
    j["role"] = RoleName(r.key.role);
    j["remote"] = FormatAddress(r.key.family, r.key.raddr);
    j["port"] = r.key.port;
    j["pid"] = r.key.tgid;
    if (!r.process.empty()) j["process"] = r.process;
    j["count"] = s.count;
    j["per_second"] = s.count / window_s;
    j["req_bytes"] = s.req_bytes;
    j["resp_bytes"] = s.resp_bytes;
    j["req_packets"] = s.req_packets;
    j["resp_packets"] = s.resp_packets;
    j["p50_ms"] = HistQuantileNs(s.hist, 0.5) / 1e6;
    j["p99_ms"] = HistQuantileNs(s.hist, 0.99) / 1e6;
    j["mean_ms"] = s.count ? s.total_ns / 1e6 / s.count : 0.0;
    j["kernel_ns"] = s.kernel_ns;
    j["app_ns"] = s.app_ns;
    j["send_ns"] = s.send_ns;
    j["total_ns"] = s.total_ns;
    j["oncpu_ns"] = s.oncpu_ns;
    j["runq_ns"] = s.runq_ns;
    j["blocked_ns"] = s.blocked_ns;
    j["disk_ios"] = s.disk_ios;
    j["disk_bytes"] = s.disk_bytes;
    j["flagged"] = s.flagged;
    arr.push_back(j);
  }
  return arr;
}

LatencySplit SplitLatency(const jdw_interaction& ia) {
  LatencySplit l;
  if (ia.role == JDW_ROLE_SERVER) {
    l.kernel_ns = Span(ia.req_start, ia.in_read);
    l.app_ns = Span(ia.in_read, ia.resp_start);
  } else {
    l.kernel_ns = Span(ia.resp_start, ia.in_read);
    l.app_ns = Span(ia.req_end, ia.resp_start);
  }
  l.send_ns = Span(ia.resp_start, ia.resp_end);
  l.total_ns = Span(ia.req_start, ia.resp_end);
  return l;
}

std::string InteractionHeaderLine() {
  char line[256];
  snprintf(line, sizeof(line), "%-7s %-6s %-22s %-22s %8s %8s %9s %8s %8s %8s %8s %s\n", "PID", "ROLE",
           "LOCAL", "REMOTE", "REQ B", "RESP B", "TOTAL MS", "KERN MS", "APP MS", "SEND MS", "CPU MS",
           "FLAGS");
  return line;
}

std::string FormatInteractionLine(const jdw_record_header& hdr, const jdw_interaction& ia) {
  const LatencySplit l = SplitLatency(ia);
  const std::string local = FormatAddress(ia.family, ia.laddr) + ":" + std::to_string(ia.lport);
  const std::string remote = FormatAddress(ia.family, ia.raddr) + ":" + std::to_string(ia.rport);
  char line[384];
  snprintf(line, sizeof(line), "%-7u %-6s %-22s %-22s %8" PRIu64 " %8" PRIu64 " %9.3f %8.3f %8.3f %8.3f %8.3f %s\n",
           hdr.tgid, RoleName(ia.role), local.c_str(), remote.c_str(), uint64_t(ia.req_bytes),
           uint64_t(ia.resp_bytes), l.total_ns / 1e6, l.kernel_ns / 1e6, l.app_ns / 1e6, l.send_ns / 1e6,
           ia.oncpu_ns / 1e6, FlagNames(ia.flags).c_str());
  return line;
}

nlohmann::json InteractionJson(const jdw_record_header& hdr, const jdw_interaction& ia) {
  const LatencySplit l = SplitLatency(ia);
  nlohmann::json j;
  j["ts"] = hdr.ts;
  j["pid"] = hdr.tgid;
  j["tid"] = hdr.tid;
  j["role"] = RoleName(ia.role);
  j["protocol"] = ia.protocol == 6 ? "tcp" : ia.protocol == 17 ? "udp" : "?";
  j["local"] = FormatAddress(ia.family, ia.laddr);
  j["lport"] = ia.lport;
  j["remote"] = FormatAddress(ia.family, ia.raddr);
  j["rport"] = ia.rport;
  j["seq"] = ia.seq;
  j["req_start"] = ia.req_start;
  j["req_end"] = ia.req_end;
  j["resp_start"] = ia.resp_start;
  j["resp_end"] = ia.resp_end;
  j["in_read"] = ia.in_read;
  j["req_bytes"] = ia.req_bytes;
  j["resp_bytes"] = ia.resp_bytes;
  j["req_packets"] = ia.req_packets;
  j["resp_packets"] = ia.resp_packets;
  j["req_tid"] = ia.req_tid;
  j["resp_tid"] = ia.resp_tid;
  j["oncpu_ns"] = ia.oncpu_ns;
  j["runq_ns"] = ia.runq_ns;
  j["blocked_ns"] = ia.blocked_ns;
  j["disk_ios"] = ia.disk_ios;
  j["disk_bytes"] = ia.disk_bytes;
  j["kernel_ns"] = l.kernel_ns;
  j["app_ns"] = l.app_ns;
  j["send_ns"] = l.send_ns;
  j["total_ns"] = l.total_ns;
  j["flags"] = FlagNames(ia.flags);
  j["cgroup"] = ia.cgroup;
  return j;
}

}  // namespace jackdaw::report
