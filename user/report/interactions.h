// Tables of in-kernel interaction summaries (the interact probe group): the
// live per-class table of `jackdaw interactions`, one line or one JSON
// object per interaction record, and latency percentiles from the kernel's
// log-linear histogram (jackdaw/interact.h: four buckets per power of two
// of microseconds, so a percentile is exact to within a quarter octave; it
// is interpolated linearly inside its bucket).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "jackdaw/abi.h"
#include "jackdaw/interact.h"

namespace jackdaw::report {

struct ClassRow {
  jdw_ia_class_key key{};
  jdw_ia_class_stats stats{};
  std::string process;  // comm of key.tgid, if known
};

// [lo, hi) of histogram bucket b, in microseconds.
void HistBucketBounds(uint32_t b, double* lo_us, double* hi_us);
// The q-quantile (0..1) of the histogram, in nanoseconds; 0 if empty.
double HistQuantileNs(const uint32_t* hist, double q);

// "10.0.0.0/8" / "127.0.0.1" / "::1" for a class key with its prefix.
std::string FormatAddress(uint16_t family, const uint8_t* addr);
std::string ClassLabel(const jdw_ia_class_key& key, uint8_t prefix4, uint8_t prefix6);

// The live table: one row per class, busiest first; window_s scales rates.
void WriteClassTable(const std::vector<ClassRow>& rows, double window_s, uint8_t prefix4,
                     uint8_t prefix6, std::ostream& out);
nlohmann::json ClassRowsJson(const std::vector<ClassRow>& rows, double window_s, uint8_t prefix4,
                             uint8_t prefix6);

// Latency split of one interaction (SysProf): see jdw_ia_class_stats.
struct LatencySplit {
  uint64_t kernel_ns = 0, app_ns = 0, send_ns = 0, total_ns = 0;
};
LatencySplit SplitLatency(const jdw_interaction& ia);

std::string InteractionHeaderLine();
std::string FormatInteractionLine(const jdw_record_header& hdr, const jdw_interaction& ia);
nlohmann::json InteractionJson(const jdw_record_header& hdr, const jdw_interaction& ia);

}  // namespace jackdaw::report
