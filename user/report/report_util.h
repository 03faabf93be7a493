// Helpers shared by the report writers (not part of the public API).
#pragma once

#include <fmt/format.h>

#include <string>

#include "model/explain.h"
#include "model/workload_model.h"

namespace jackdaw::report {

inline std::string Percent(double fraction) { return fmt::format("{:.1f}%", 100.0 * fraction); }

inline const char* AnomalyKindName(model::Anomaly::Kind k) {
  return k == model::Anomaly::Kind::kSmallCluster ? "small cluster" : "beyond threshold";
}

inline const char* ThresholdSourceName(cluster::ThresholdEstimate::Source s) {
  switch (s) {
    case cluster::ThresholdEstimate::Source::kUser:
      return "user";
    case cluster::ThresholdEstimate::Source::kGap:
      return "gap";
    case cluster::ThresholdEstimate::Source::kFloor:
      return "floor";
    case cluster::ThresholdEstimate::Source::kTail:
      return "tail";
  }
  return "?";
}

inline std::string ThresholdText(const cluster::ThresholdEstimate& t) {
  switch (t.source) {
    case cluster::ThresholdEstimate::Source::kUser:
      return fmt::format("{:.3f} (set by the user)", t.threshold);
    case cluster::ThresholdEstimate::Source::kGap:
      return fmt::format(
          "{:.3f} (derived: least dense point between the modes at {:.3f} and {:.3f} of the "
          "pairwise distances of {} sampled requests)",
          t.threshold, t.gap_low, t.gap_high, t.sample_size);
    case cluster::ThresholdEstimate::Source::kFloor:
      return fmt::format(
          "{:.3f} (floor: no valley in the pairwise distances of {} sampled requests "
          "separates requests of one kind from the rest)",
          t.threshold, t.sample_size);
    case cluster::ThresholdEstimate::Source::kTail:
      return fmt::format(
          "{:.3f} (derived: no valley in the pairwise distances of {} sampled requests, one "
          "family; its 95th percentile)",
          t.threshold, t.sample_size);
  }
  return "?";
}

// "symbol{cpu=1.500 ms,disk=12.0 KiB}" in human units.
inline std::string EventText(const std::string& symbol, const canonical::Demand& d) {
  std::string s = symbol;
  if (d.IsZero()) return s;
  const char* sep = "{";
  const uint64_t v[3] = {d.cpu_ns, d.disk_bytes, d.net_bytes};
  const char* names[3] = {"cpu", "disk", "net"};
  for (int r = 0; r < 3; ++r) {
    if (!v[r]) continue;
    s += fmt::format("{}{}={}", sep, names[r], model::FormatResource(r, static_cast<double>(v[r])));
    sep = ",";
  }
  return s + "}";
}

inline std::string EventText(const model::AnomalyEvent& e) { return EventText(e.symbol, e.demand); }

}  // namespace jackdaw::report
