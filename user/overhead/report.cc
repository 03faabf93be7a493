#include "overhead/report.h"

#include <sys/utsname.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <thread>

#include "overhead/stats.h"
#include "trace/event_table.h"

namespace jackdaw::overhead {
namespace {

nlohmann::json SummaryJson(const Summary& s) { return {{"median", s.median}, {"min", s.min}, {"max", s.max}}; }

template <typename F>
std::vector<double> Column(const std::vector<Sample>& v, F f) {
  std::vector<double> out;
  for (const Sample& s : v) out.push_back(f(s));
  return out;
}

std::string GroupsName(uint32_t groups) {
  std::string out;
  for (uint32_t g = 0; g < JDW_GROUP_MAX; ++g)
    if (groups & (1u << g)) out += (out.empty() ? "" : ",") + std::string(trace::GroupName(g));
  return out;
}

double LoadAverage() {
  double l = -1;
  std::ifstream("/proc/loadavg") >> l;
  return l;
}

}  // namespace

nlohmann::json ReportJson(const std::string& workload, const HarnessOptions& opts,
                          const std::vector<ConfigResult>& results) {
  utsname u{};
  uname(&u);
  nlohmann::json out = {{"schema", "jackdaw-overhead/1"},
                        {"workload", workload},
                        {"runs", opts.runs},
                        {"warmup", opts.warmup},
                        {"machine",
                         {{"kernel", u.release}, {"cpus", std::thread::hardware_concurrency()},
                          {"load_average_1m", LoadAverage()}}},
                        {"configs", nlohmann::json::array()}};
  for (const ConfigResult& cr : results) {
    const auto& base = cr.tracers.at(0).samples;
    const auto base_op = Column(base, [](const Sample& s) { return s.cost.per_op_s(); });
    const Summary base_wall = Summarize(Column(base, [](const Sample& s) { return s.cost.wall_s; }));
    nlohmann::json cj = {{"probes", GroupsName(cr.groups)}, {"tracers", nlohmann::json::array()}};
    for (const TracerRuns& tr : cr.tracers) {
      nlohmann::json t = {{"tracer", TracerName(tr.tracer)}};
      if (!tr.unavailable.empty() || tr.samples.empty()) {
        t["unavailable"] = tr.unavailable.empty() ? "no runs" : tr.unavailable;
        cj["tracers"].push_back(t);
        continue;
      }
      const auto op = Column(tr.samples, [](const Sample& s) { return s.cost.per_op_s(); });
      const Summary wall = Summarize(Column(tr.samples, [](const Sample& s) { return s.cost.wall_s; }));
      t["time_per_op_s"] = SummaryJson(Summarize(op));
      t["wall_s"] = SummaryJson(wall);
      t["cpu_s"] = SummaryJson(Summarize(Column(tr.samples, [](const Sample& s) { return s.cost.cpu_s; })));
      t["ops"] = Summarize(Column(tr.samples, [](const Sample& s) { return s.cost.ops; })).median;
      if (tr.tracer != TracerKind::kUntraced) {
        const RatioEstimate r = PairedRatio(base_op, op);
        t["ratio"] = {{"value", r.ratio}, {"ci_low", r.lo}, {"ci_high", r.hi}, {"level", r.level}};
        t["throughput_fraction"] = r.ratio > 0 ? 1.0 / r.ratio : 0.0;
        const double events = Summarize(Column(tr.samples, [](const Sample& s) { return double(s.events); })).median;
        const double ops = t["ops"];
        const double bytes = Summarize(Column(tr.samples, [](const Sample& s) { return double(s.bytes); })).median;
        uint64_t lost = 0;
        for (const Sample& s : tr.samples) lost = std::max(lost, s.lost);
        t["events"] = events;
        t["lost_max"] = lost;
        t["events_per_s"] = wall.median > 0 ? events / wall.median : 0.0;
        t["added_ns_per_event"] =
            events > 0 ? (Summarize(op).median - Summarize(base_op).median) * ops / events * 1e9 : 0.0;
        t["bytes_per_event"] = events > 0 ? bytes / events : 0.0;
        t["tracer_cpu_s"] = Summarize(Column(tr.samples, [](const Sample& s) { return s.tracer_cpu_s; })).median;
        if (NoiseExceedsEffect(r))
          t["warning"] = "noise is larger than the effect: the interval [" + std::to_string(r.lo) + ", " +
                         std::to_string(r.hi) + "] contains 1; use more --runs or a quieter machine";
      }
      cj["tracers"].push_back(t);
    }
    (void)base_wall;
    out["configs"].push_back(cj);
  }
  return out;
}

std::string ReportText(const nlohmann::json& report) {
  std::string out;
  char line[512];
  snprintf(line, sizeof(line), "workload %s: %d runs each after %d warm-up, interleaved; load average %.2f, %d cpus\n",
           report["workload"].get<std::string>().c_str(), report["runs"].get<int>(), report["warmup"].get<int>(),
           report["machine"]["load_average_1m"].get<double>(), report["machine"]["cpus"].get<int>());
  out += line;
  for (const auto& c : report["configs"]) {
    out += "\nprobes " + c["probes"].get<std::string>() + "\n";
    snprintf(line, sizeof(line), "  %-9s %-24s %-9s %-22s %11s %9s %12s %9s %8s\n", "tracer", "time/op s median (min-max)",
             "cpu s", "ratio [95% CI]", "events", "lost", "events/s", "+ns/ev", "B/ev");
    out += line;
    for (const auto& t : c["tracers"]) {
      const std::string name = t["tracer"];
      if (t.contains("unavailable")) {
        out += "  " + name + ": n/a (" + t["unavailable"].get<std::string>() + ")\n";
        continue;
      }
      char span[64], ratio[64] = "", cpu[32];
      const auto& w = t["time_per_op_s"];
      snprintf(span, sizeof(span), "%.4g (%.4g-%.4g)", w["median"].get<double>(), w["min"].get<double>(),
               w["max"].get<double>());
      snprintf(cpu, sizeof(cpu), "%.3g", t["cpu_s"]["median"].get<double>());
      if (!t.contains("ratio")) {
        snprintf(line, sizeof(line), "  %-9s %-24s %-9s\n", name.c_str(), span, cpu);
        out += line;
        continue;
      }
      snprintf(ratio, sizeof(ratio), "%.3f [%.3f, %.3f]", t["ratio"]["value"].get<double>(),
               t["ratio"]["ci_low"].get<double>(), t["ratio"]["ci_high"].get<double>());
      snprintf(line, sizeof(line), "  %-9s %-24s %-9s %-22s %11.0f %9llu %12.0f %9.1f %8.1f\n", name.c_str(), span, cpu,
               ratio, t["events"].get<double>(), static_cast<unsigned long long>(t["lost_max"].get<uint64_t>()),
               t["events_per_s"].get<double>(), t["added_ns_per_event"].get<double>(),
               t["bytes_per_event"].get<double>());
      out += line;
      if (t.contains("warning")) out += "    warning: " + t["warning"].get<std::string>() + "\n";
    }
  }
  return out;
}

}  // namespace jackdaw::overhead
