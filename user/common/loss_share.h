// Loss as every closing line and status shows it: a share of the events
// the probes produced, kept and lost together.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace jackdaw {

inline double LostPercent(uint64_t lost, uint64_t kept) {
  return lost ? 100.0 * double(lost) / double(lost + kept) : 0.0;
}

// A head-sampling rate as the status lines show it: "100 %", "12.5 %", "1.56 %".
inline std::string SampleShareText(double share) {
  char buf[32];
  const double p = share * 100;
  snprintf(buf, sizeof buf, p >= 10 || p == double(long(p)) ? "%.3g %%" : "%.2g %%", p);
  return buf;
}

}  // namespace jackdaw
