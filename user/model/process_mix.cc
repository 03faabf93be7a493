#include "model/process_mix.h"

#include <algorithm>
#include <cstdio>

namespace jackdaw::model {

void ProcessMix::Add(const std::vector<ProcessSegment>& segments) {
  if (segments.size() > 1) crossed_ = true;
  for (const ProcessSegment& s : segments) {
    auto it = std::find_if(sums_.begin(), sums_.end(),
                           [&](const ProcessDemand& d) { return d.comm == s.comm && d.tier == s.tier; });
    if (it == sums_.end()) {
      it = sums_.emplace(sums_.end());
      it->comm = s.comm;
      it->tier = s.tier;
    }
    it->requests++;
    it->cpu_ns += double(s.cpu_ns + s.softirq_cpu_ns);
    it->disk_bytes += double(s.disk_bytes);
    it->net_bytes += double(s.net_bytes_in + s.net_bytes_out);
    it->blocked_ns += double(s.blocked_ns);
    it->runq_wait_ns += double(s.runq_wait_ns);
  }
}

std::vector<ProcessDemand> ProcessMix::Means(uint64_t requests) const {
  if (!crossed_ || !requests) return {};
  std::vector<ProcessDemand> out = sums_;
  const double n = double(requests);
  for (ProcessDemand& d : out) {
    d.cpu_ns /= n;
    d.disk_bytes /= n;
    d.net_bytes /= n;
    d.blocked_ns /= n;
    d.runq_wait_ns /= n;
  }
  std::stable_sort(out.begin(), out.end(), [](const ProcessDemand& a, const ProcessDemand& b) {
    return a.tier != b.tier ? a.tier < b.tier : a.cpu_ns > b.cpu_ns;
  });
  return out;
}

std::string FormatProcessMix(const std::vector<ProcessDemand>& mix) {
  std::string out;
  char buf[160];
  for (const ProcessDemand& d : mix) {
    if (!out.empty()) out += ", ";
    snprintf(buf, sizeof(buf), "%s %.2f ms CPU", d.comm.empty() ? "?" : d.comm.c_str(), d.cpu_ns / 1e6);
    out += buf;
    if (d.disk_bytes >= 1) {
      snprintf(buf, sizeof(buf), " + %.1f KB disk", d.disk_bytes / 1024);
      out += buf;
    }
  }
  return out;
}

}  // namespace jackdaw::model
