#include "model/breakdown.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "model/explain.h"

namespace jackdaw::model {
namespace {

LatencyBreakdown::Side Average(std::span<const uint32_t> group, std::span<const Request> requests,
                               std::span<const RequestSummary> summaries) {
  LatencyBreakdown::Side s;
  for (uint32_t i : group) {
    const RequestSummary& r = summaries[i];
    const ResourceTotals& t = requests[i].totals;
    s.latency_ns += static_cast<double>(r.latency_ns);
    s.canonical_latency_ns += static_cast<double>(r.canonical_latency_ns);
    s.cpu_ns += static_cast<double>(r.demand.cpu_ns);
    s.disk_bytes += static_cast<double>(r.demand.disk_bytes);
    s.net_bytes += static_cast<double>(r.demand.net_bytes);
    s.runq_wait_ns += static_cast<double>(t.runq_wait_ns);
    s.blocked_disk_ns += static_cast<double>(t.blocked_disk_ns);
    s.blocked_net_ns += static_cast<double>(t.blocked_net_ns);
    s.blocked_futex_ns += static_cast<double>(t.blocked_futex_ns);
    // Pipe waits are waiting on a peer, not a lock or a device: other.
    s.blocked_other_ns += static_cast<double>(t.blocked_other_ns + t.blocked_pipe_ns);
  }
  const double k = static_cast<double>(group.size());
  for (double* v : {&s.latency_ns, &s.canonical_latency_ns, &s.cpu_ns, &s.disk_bytes, &s.net_bytes,
                    &s.runq_wait_ns, &s.blocked_disk_ns, &s.blocked_net_ns, &s.blocked_futex_ns,
                    &s.blocked_other_ns})
    *v /= k;
  return s;
}

std::string Ms(double ns) {
  char buf[32];
  snprintf(buf, sizeof(buf), "%+.3f ms", ns / 1e6);
  return buf;
}

}  // namespace

LatencyBreakdown AnalyzeLatency(uint32_t cluster_id, std::span<const uint32_t> members,
                                std::span<const Request> requests,
                                std::span<const RequestSummary> summaries, double fraction) {
  LatencyBreakdown b;
  b.cluster = cluster_id;
  if (members.size() < 2) return b;
  std::vector<uint32_t> sorted(members.begin(), members.end());
  std::stable_sort(sorted.begin(), sorted.end(), [&](uint32_t x, uint32_t y) {
    return summaries[x].latency_ns < summaries[y].latency_ns;
  });
  size_t k = static_cast<size_t>(std::floor(static_cast<double>(sorted.size()) * fraction));
  k = std::clamp<size_t>(k, 1, sorted.size() / 2);
  b.group_size = static_cast<uint32_t>(k);
  b.fast = Average(std::span(sorted).first(k), requests, summaries);
  b.slow = Average(std::span(sorted).last(k), requests, summaries);

  b.delta_latency_ns = b.slow.latency_ns - b.fast.latency_ns;
  b.delta_work_ns = b.slow.canonical_latency_ns - b.fast.canonical_latency_ns;
  b.delta_runq_ns = b.slow.runq_wait_ns - b.fast.runq_wait_ns;
  b.delta_io_ns = (b.slow.blocked_disk_ns + b.slow.blocked_net_ns) -
                  (b.fast.blocked_disk_ns + b.fast.blocked_net_ns);
  b.delta_lock_ns = b.slow.blocked_futex_ns - b.fast.blocked_futex_ns;
  b.delta_other_ns = b.slow.blocked_other_ns - b.fast.blocked_other_ns;

  using V = LatencyBreakdown::Verdict;
  if (b.delta_latency_ns <= kNegligibleLatencyDelta * std::max(b.fast.latency_ns, 1.0)) {
    b.verdict = V::kNone;
  } else {
    const std::pair<double, V> cands[] = {{b.delta_work_ns, V::kWork},
                                          {b.delta_runq_ns, V::kRunQueue},
                                          {b.delta_io_ns, V::kIo},
                                          {b.delta_lock_ns, V::kLocks},
                                          {b.delta_other_ns, V::kOther}};
    double best = 0;
    b.verdict = V::kOther;  // nothing measured explains it
    for (auto [delta, verdict] : cands) {
      if (delta > best) {
        best = delta;
        b.verdict = verdict;
      }
    }
  }

  char head[160];
  snprintf(head, sizeof(head),
           "slowest %u vs fastest %u: latency %s (%.3f vs %.3f ms): ", b.group_size, b.group_size,
           Ms(b.delta_latency_ns).c_str(), b.slow.latency_ns / 1e6, b.fast.latency_ns / 1e6);
  b.explanation = std::string(head) + VerdictName(b.verdict) + "; work " + Ms(b.delta_work_ns) +
                  ", run queue " + Ms(b.delta_runq_ns) + ", I/O " + Ms(b.delta_io_ns) + ", locks " +
                  Ms(b.delta_lock_ns) + ", other " + Ms(b.delta_other_ns);
  const double dcpu = b.slow.cpu_ns - b.fast.cpu_ns;
  const double ddisk = b.slow.disk_bytes - b.fast.disk_bytes;
  const double dnet = b.slow.net_bytes - b.fast.net_bytes;
  b.explanation += "; demand CPU " + Ms(dcpu);
  if (ddisk != 0)
    b.explanation +=
        ", disk " + std::string(ddisk > 0 ? "+" : "-") + FormatResource(1, std::abs(ddisk));
  if (dnet != 0)
    b.explanation +=
        ", net " + std::string(dnet > 0 ? "+" : "-") + FormatResource(2, std::abs(dnet));
  return b;
}

}  // namespace jackdaw::model
