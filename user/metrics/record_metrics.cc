#include "metrics/record_metrics.h"

#include "metrics/exposition.h"

namespace jackdaw::metrics {

void RenderGroups(Exposition& x, const std::vector<GroupCounters>& groups) {
  x.Family("jackdaw_probe_events_total", "Records delivered by the probe group.", MetricType::kCounter);
  for (const auto& g : groups) x.Sample({{"group", g.name}}, static_cast<double>(g.events));
  x.Family("jackdaw_probe_lost_total", "Records the probe group lost in the kernel (ring buffer full).",
           MetricType::kCounter);
  for (const auto& g : groups) x.Sample({{"group", g.name}}, static_cast<double>(g.lost));
  x.Family("jackdaw_probe_enabled", "1 if the probe group is attached.", MetricType::kGauge);
  for (const auto& g : groups) x.Sample({{"group", g.name}}, g.enabled ? 1 : 0);
}

void RenderProcess(Exposition& x, uint64_t rss_bytes) {
  // The names every Prometheus client library exports for its process.
  x.Family("process_resident_memory_bytes", "Resident memory size in bytes.", MetricType::kGauge);
  x.Sample({}, static_cast<double>(rss_bytes));
  x.Family("jackdaw_build_info", "1, labelled with the jackdaw version that serves these metrics.", MetricType::kGauge);
  x.Sample({{"version", JDW_VERSION}}, 1);
}

std::string RenderRecordMetrics(const RecordState& s) {
  Exposition x;
  RenderGroups(x, s.groups);
  x.Family("jackdaw_records_total", "Records read from the kernel.", MetricType::kCounter);
  x.Sample({}, static_cast<double>(s.records));
  x.Family("jackdaw_record_written_bytes_total", "Bytes of the trace file written so far.", MetricType::kCounter);
  x.Sample({}, static_cast<double>(s.bytes_written));
  x.Family("jackdaw_record_bytes_total",
           "Record bytes handed to the writer, before (stage=raw) and after (stage=stored) compression.",
           MetricType::kCounter);
  x.Sample({{"stage", "raw"}}, static_cast<double>(s.record_bytes_raw));
  x.Sample({{"stage", "stored"}}, static_cast<double>(s.record_bytes_stored));
  x.Family("jackdaw_record_writer_stalls_total", "Times the drain waited for the disk.", MetricType::kCounter);
  x.Sample({}, static_cast<double>(s.writer_stalls));
  if (s.ring_fill >= 0) {
    x.Family("jackdaw_ring_fill_ratio", "Fill of the fullest per-CPU ring buffer at the last drain (0 to 1).",
             MetricType::kGauge);
    x.Sample({}, s.ring_fill);
  }
  RenderProcess(x, s.rss_bytes);
  return x.Take();
}

}  // namespace jackdaw::metrics
