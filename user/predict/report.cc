#include "predict/report.h"

#include <cmath>
#include <cstdio>

namespace jackdaw::predict {
namespace {

std::string Percent(double err) {
  char buf[32];
  snprintf(buf, sizeof(buf), "%+.1f %%", 100 * err);
  return buf;
}

nlohmann::ordered_json Compare(double simulated, double recorded) {
  return {{"recorded", recorded}, {"simulated", simulated}, {"error", RelativeError(simulated, recorded)}};
}

}  // namespace

double RelativeError(double simulated, double recorded) {
  if (recorded == 0) return simulated == 0 ? 0 : 1;
  return (simulated - recorded) / recorded;
}

Figures RecordedFigures(const RecordedWorkload& w) {
  Figures f;
  f.throughput_per_s = w.throughput_per_s();
  f.cpu_utilisation = w.cpu_utilisation();
  f.disk_utilisation = w.disk_utilisation();
  f.cpu_stretch = w.cpu_stretch();
  const double seconds = w.duration_ns() / 1e9;
  for (const RecordedKind& k : w.kinds) {
    std::vector<double> lat = k.latencies_ns;
    f.kinds.push_back({k.label, seconds > 0 ? static_cast<double>(k.count) / seconds : 0, Quantile(lat, 0.5) / 1e6,
                       Quantile(lat, 0.95) / 1e6, k.count});
  }
  return f;
}

Figures SimulatedFigures(const SimResult& r) {
  Figures f;
  f.throughput_per_s = r.throughput_per_s;
  f.cpu_utilisation = r.cpu_utilisation;
  f.disk_utilisation = r.disk_utilisation;
  f.cpu_stretch = r.cpu_stretch;
  for (const KindStats& k : r.kinds) f.kinds.push_back({k.label, k.throughput_per_s, k.p50_ms, k.p95_ms, k.completed});
  return f;
}

void WriteText(const PredictReport& r, std::ostream& out) {
  const SimResult& p = r.prediction;
  out << "prediction: " << r.scenario << (p.saturated ? " (SATURATED: arrivals outrun the machine)" : "") << "\n";
  char line[256];
  snprintf(line, sizeof(line), "  %-8s %10s %9s %9s %9s  %-10s\n", "KIND", "REQ/S", "P50 MS", "P95 MS", "P99 MS",
           "BOTTLENECK");
  out << line;
  for (const KindStats& k : p.kinds) {
    snprintf(line, sizeof(line), "  %-8s %10.1f %9.3f %9.3f %9.3f  %-10s\n", k.label.c_str(), k.throughput_per_s,
             k.p50_ms, k.p95_ms, k.p99_ms, k.bottleneck.empty() ? "-" : k.bottleneck.c_str());
    out << line;
  }
  snprintf(line, sizeof(line), "  total %.1f req/s; CPU utilisation %.1f %%, disk %.1f %%; bottleneck: %s\n",
           p.throughput_per_s, 100 * p.cpu_utilisation, 100 * p.disk_utilisation, p.bottleneck.c_str());
  out << line;
  out << "  other work on the CPUs, calibrated from the recorded run-queue waits: " << r.other_work.Describe()
      << "\n";
  if (r.alternative) {
    out << "  with " << r.alternative_work.Describe() << " instead: ";
    snprintf(line, sizeof(line), "%.1f req/s", r.alternative->throughput_per_s);
    out << line;
    for (const KindStats& k : r.alternative->kinds) {
      snprintf(line, sizeof(line), "; %s p50 %.3f ms", k.label.c_str(), k.p50_ms);
      out << line;
    }
    out << "\n";
  }
  out << "self-check: the recorded conditions (" << r.recorded_conditions << ") simulated\n";
  snprintf(line, sizeof(line), "  %-22s %11s %11s %9s\n", "MEASURE", "RECORDED", "SIMULATED", "ERROR");
  out << line;
  auto row = [&](const std::string& what, double rec, double sim) {
    snprintf(line, sizeof(line), "  %-22s %11.3f %11.3f %9s\n", what.c_str(), rec, sim,
             Percent(RelativeError(sim, rec)).c_str());
    out << line;
  };
  row("throughput req/s", r.recorded.throughput_per_s, r.self_check.throughput_per_s);
  row("CPU utilisation %", 100 * r.recorded.cpu_utilisation, 100 * r.self_check.cpu_utilisation);
  row("CPU stretch", r.recorded.cpu_stretch, r.self_check.cpu_stretch);
  if (r.recorded.disk_utilisation > 0 || r.self_check.disk_utilisation > 0)
    row("disk utilisation %", 100 * r.recorded.disk_utilisation, 100 * r.self_check.disk_utilisation);
  for (size_t i = 0; i < r.recorded.kinds.size() && i < r.self_check.kinds.size(); ++i) {
    const Figures::Kind &rec = r.recorded.kinds[i], &sim = r.self_check.kinds[i];
    row(rec.label + " p50 ms", rec.p50_ms, sim.p50_ms);
    row(rec.label + " p95 ms", rec.p95_ms, sim.p95_ms);
  }
}

nlohmann::ordered_json ToJson(const PredictReport& r) {
  const SimResult& p = r.prediction;
  nlohmann::ordered_json j;
  j["scenario"] = r.scenario;
  j["kinds"] = nlohmann::ordered_json::array();
  for (const KindStats& k : p.kinds)
    j["kinds"].push_back({{"kind", k.label},
                          {"p50_ms", k.p50_ms},
                          {"p95_ms", k.p95_ms},
                          {"p99_ms", k.p99_ms},
                          {"mean_ms", k.mean_ms},
                          {"throughput", k.throughput_per_s},
                          {"bottleneck", k.bottleneck},
                          {"time_ms", {{"cpu", k.cpu_ms}, {"cpu_queue", k.cpu_queue_ms}, {"disk", k.disk_ms},
                                       {"wait", k.wait_ms}}}});
  j["throughput"] = p.throughput_per_s;
  j["utilisation"] = {{"cpu", p.cpu_utilisation}, {"disk", p.disk_utilisation}};
  j["bottleneck"] = {{"resource", p.bottleneck},
                     {"utilisation", p.bottleneck == "disk" ? p.disk_utilisation : p.cpu_utilisation}};
  j["saturated"] = p.saturated;
  const Calibration& ow = r.other_work;
  j["other_work"] = {{"model", ow.model == OtherWork::kShare     ? "share"
                               : ow.model == OtherWork::kThreads ? "threads"
                                                                 : "none"},
                     {"cpus", ow.other_cpus},
                     {"threads", ow.background_threads}};
  if (r.alternative) {
    const Calibration& aw = r.alternative_work;
    nlohmann::ordered_json alt;
    alt["other_work"] = {{"model", aw.model == OtherWork::kShare ? "share" : "threads"},
                         {"cpus", aw.other_cpus},
                         {"threads", aw.background_threads}};
    alt["throughput"] = r.alternative->throughput_per_s;
    alt["kinds"] = nlohmann::ordered_json::array();
    for (const KindStats& k : r.alternative->kinds)
      alt["kinds"].push_back({{"kind", k.label},
                              {"p50_ms", k.p50_ms},
                              {"p95_ms", k.p95_ms},
                              {"p99_ms", k.p99_ms},
                              {"throughput", k.throughput_per_s}});
    j["alternative"] = std::move(alt);
  }
  nlohmann::ordered_json sc;
  sc["conditions"] = r.recorded_conditions;
  sc["throughput"] = Compare(r.self_check.throughput_per_s, r.recorded.throughput_per_s);
  sc["cpu_utilisation"] = Compare(r.self_check.cpu_utilisation, r.recorded.cpu_utilisation);
  sc["disk_utilisation"] = Compare(r.self_check.disk_utilisation, r.recorded.disk_utilisation);
  sc["cpu_stretch"] = Compare(r.self_check.cpu_stretch, r.recorded.cpu_stretch);
  sc["kinds"] = nlohmann::ordered_json::array();
  for (size_t i = 0; i < r.recorded.kinds.size() && i < r.self_check.kinds.size(); ++i) {
    const Figures::Kind &rec = r.recorded.kinds[i], &sim = r.self_check.kinds[i];
    sc["kinds"].push_back({{"kind", rec.label},
                           {"recorded_requests", rec.requests},
                           {"p50_ms", Compare(sim.p50_ms, rec.p50_ms)},
                           {"p95_ms", Compare(sim.p95_ms, rec.p95_ms)},
                           {"throughput", Compare(sim.throughput_per_s, rec.throughput_per_s)}});
  }
  j["self_check"] = std::move(sc);
  return j;
}

}  // namespace jackdaw::predict
