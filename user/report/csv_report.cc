// --csv DIR: one RFC 4180 CSV per table (comma separated, fields with
// commas, quotes or newlines quoted, quotes doubled). Times in ns, sizes in
// bytes, fractions as fractions, so the files are for programs.
#include <filesystem>
#include <sstream>

#include "common/safe_file.h"
#include "report/report.h"
#include "report/report_util.h"

namespace jackdaw::report {
namespace {

std::string Field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string Field(double v) { return fmt::format("{}", v); }
std::string Field(uint64_t v) { return std::to_string(v); }
std::string Field(uint32_t v) { return std::to_string(v); }
std::string Field(int32_t v) { return std::to_string(v); }
std::string Field(bool v) { return v ? "1" : "0"; }

class Csv {
 public:
  explicit Csv(std::ostringstream* out) : out_(out) {}
  template <typename... T>
  void Row(const T&... fields) {
    bool first = true;
    ((*out_ << (first ? "" : ",") << Field(fields), first = false), ...);
    *out_ << "\n";
  }

 private:
  std::ostringstream* out_;
};

Status WriteFile(const std::filesystem::path& path, const std::string& text) {
  return WriteOwnedFile(path.string(), text, kOutputFileMode);
}

}  // namespace

Status WriteCsvReports(const model::WorkloadModel& m, const std::string& dir) {
  // Several files under fixed names: only in a directory nobody else can
  // plant links in.
  RETURN_IF_ERROR(CheckPrivateDir(dir, 0755));
  const std::filesystem::path d(dir);

  {
    std::ostringstream s;
    Csv c(&s);
    c.Row(std::string("key"), std::string("value"));
    c.Row(std::string("requests"), static_cast<uint64_t>(m.requests.size()));
    c.Row(std::string("clusters"), static_cast<uint64_t>(m.clusters.size()));
    c.Row(std::string("anomalies"), static_cast<uint64_t>(m.anomalies.size()));
    c.Row(std::string("threshold"), m.threshold.threshold);
    c.Row(std::string("threshold_source"), std::string(ThresholdSourceName(m.threshold.source)));
    c.Row(std::string("norm_cpu_ns"), m.normalization.cpu_ns);
    c.Row(std::string("norm_disk_bytes"), m.normalization.disk_bytes);
    c.Row(std::string("norm_net_bytes"), m.normalization.net_bytes);
    c.Row(std::string("accounted_cpu_fraction"),
          m.accounted_cpu_fraction ? fmt::format("{}", *m.accounted_cpu_fraction) : std::string());
    c.Row(std::string("model_error"), m.error.combined);
    c.Row(std::string("avg_diameter"), m.avg_diameter);
    c.Row(std::string("avg_inter_cluster_distance"), m.avg_inter_cluster_distance);
    RETURN_IF_ERROR(WriteFile(d / "summary.csv", s.str()));
  }
  {
    std::ostringstream s;
    Csv c(&s);
    c.Row(std::string("cluster"), std::string("label"), std::string("size"),
          std::string("anomalous"), std::string("representative"), std::string("diameter"),
          std::string("max_distance"), std::string("min_separation"),
          std::string("nearest_cluster"), std::string("mean_cpu_ns"),
          std::string("mean_disk_bytes"), std::string("mean_net_bytes"),
          std::string("mean_latency_ns"), std::string("mean_canonical_latency_ns"),
          std::string("representative_string"));
    for (const model::ClusterSummary& k : m.clusters)
      c.Row(k.id, k.label, k.size, k.anomalous, k.representative_id, k.diameter, k.max_distance,
            k.min_separation, k.nearest_cluster, k.mean.cpu_ns, k.mean.disk_bytes, k.mean.net_bytes,
            k.latency_ms.mean * 1e6, k.canonical_latency_ms.mean * 1e6, k.representative_text);
    RETURN_IF_ERROR(WriteFile(d / "clusters.csv", s.str()));
  }
  {
    std::ostringstream s;
    Csv c(&s);
    c.Row(std::string("request"), std::string("cluster"), std::string("distance"),
          std::string("anomaly"), std::string("start_ns"), std::string("latency_ns"),
          std::string("canonical_latency_ns"), std::string("cpu_ns"), std::string("disk_bytes"),
          std::string("net_bytes"), std::string("events"), std::string("threads"));
    for (const model::RequestSummary& r : m.requests)
      c.Row(r.id, r.cluster, r.distance, r.anomaly, r.start_ns, r.latency_ns,
            r.canonical_latency_ns, r.demand.cpu_ns, r.demand.disk_bytes, r.demand.net_bytes,
            r.num_events, r.num_threads);
    RETURN_IF_ERROR(WriteFile(d / "requests.csv", s.str()));
  }
  {
    std::ostringstream s;
    Csv c(&s);
    c.Row(std::string("resource"), std::string("model_total"), std::string("measured_total"),
          std::string("error"));
    for (int r = 0; r < cluster::kNumResources; ++r)
      c.Row(std::string(cluster::kResourceNames[r]), m.error.model_total.get(r),
            m.error.measured_total.get(r), m.error.per_resource[r]);
    c.Row(std::string("combined"), std::string(), std::string(), m.error.combined);
    RETURN_IF_ERROR(WriteFile(d / "model_error.csv", s.str()));
  }
  {
    std::ostringstream s;
    Csv c(&s);
    c.Row(std::string("request"), std::string("cluster"), std::string("kind"),
          std::string("compared_cluster"), std::string("compared_request"), std::string("distance"),
          std::string("reasons"), std::string("events"));
    for (const model::Anomaly& a : m.anomalies) {
      std::string reasons, events;
      for (const std::string& r : a.reasons) reasons += (reasons.empty() ? "" : "; ") + r;
      for (const model::AnomalyEvent& e : a.events)
        events += (events.empty() ? "" : " ") + std::string(e.differs ? "*" : "") + EventText(e);
      c.Row(a.request_id, a.cluster, std::string(AnomalyKindName(a.kind)), a.compared_cluster,
            a.compared_request_id, a.distance, reasons, events);
    }
    RETURN_IF_ERROR(WriteFile(d / "anomalies.csv", s.str()));
  }
  {
    std::ostringstream s;
    Csv c(&s);
    c.Row(std::string("cluster"), std::string("group_size"), std::string("verdict"),
          std::string("delta_latency_ns"), std::string("delta_work_ns"),
          std::string("delta_runq_ns"), std::string("delta_io_ns"), std::string("delta_lock_ns"),
          std::string("delta_other_ns"), std::string("fast_latency_ns"),
          std::string("slow_latency_ns"));
    for (const model::LatencyBreakdown& b : m.breakdowns)
      c.Row(b.cluster, b.group_size, std::string(model::VerdictName(b.verdict)), b.delta_latency_ns,
            b.delta_work_ns, b.delta_runq_ns, b.delta_io_ns, b.delta_lock_ns, b.delta_other_ns,
            b.fast.latency_ns, b.slow.latency_ns);
    RETURN_IF_ERROR(WriteFile(d / "latency_breakdown.csv", s.str()));
  }
  return Status::Ok();
}

}  // namespace jackdaw::report
