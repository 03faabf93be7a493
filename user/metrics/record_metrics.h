// The metrics of a `jackdaw record` session, as Prometheus reads them: the
// same endpoint and probe-group series as `jackdaw live --metrics` (events
// delivered and records lost per group, whether the group is attached), plus
// what a recording adds — records and bytes written to the trace (before and
// after compression), how full the per-CPU ring buffers were at the last
// drain, and how often the drain waited for the disk. No model: a recording
// joins nothing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "metrics/live_metrics.h"

namespace jackdaw::metrics {

struct RecordState {
  std::vector<GroupCounters> groups;
  uint64_t records = 0;            // records read from the kernel
  uint64_t bytes_written = 0;      // trace file size so far
  uint64_t record_bytes_raw = 0;   // record bytes before compression
  uint64_t record_bytes_stored = 0;
  uint64_t writer_stalls = 0;
  double ring_fill = -1;  // fullest ring at the last drain, 0..1; < 0 unknown (module backend)
  uint64_t rss_bytes = 0;
};

std::string RenderRecordMetrics(const RecordState& s);

// The probe-group families, shared by live and record.
class Exposition;
void RenderGroups(Exposition& x, const std::vector<GroupCounters>& groups);
// The process's own families, shared too: process_resident_memory_bytes
// and jackdaw_build_info{version}.
void RenderProcess(Exposition& x, uint64_t rss_bytes);

}  // namespace jackdaw::metrics
