// Reports of a workload model, called by `jackdaw analyze FILE --schema S`:
//
//   (always)       WriteTextReport(model, std::cout)
//   --json OUT     WriteJsonReport(model, OUT)
//   --csv DIR      WriteCsvReports(model, DIR)
//   --perfetto OUT WritePerfettoTrace(model, requests, OUT)
//   --html OUT     WriteHtmlReport(model, requests, OUT)
//
// `requests` must be the span BuildModel() was given (same order); the
// trace and HTML reports draw the actual schedules from it. Writers return
// a Status naming the file on I/O errors and never throw.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <span>
#include <string>
#include <unordered_map>

#include "common/status.h"
#include "request/request.h"
#include "model/workload_model.h"

namespace jackdaw::report {

// request id -> true label, for the reproduction of Magpie's tables.
using TruthLabels = std::unordered_map<uint64_t, std::string>;

struct TextReportOptions {
  const TruthLabels* truth = nullptr;  // adds composition and purity/ARI
  size_t max_anomalies = 20;
  size_t max_anomaly_events = 40;  // per anomaly
  bool show_breakdown = true;
};

// A table like Magpie's Table 2 (clusters found, diameter, min separation,
// accounted CPU %, model error) followed by anomalies and latency breakdown.
void WriteTextReport(const model::WorkloadModel& model, std::ostream& out,
                     const TextReportOptions& options = {});

// The whole model: summary, clusters with their member request ids,
// per-request assignment, anomalies, latency breakdown. Key order is stable.
nlohmann::ordered_json ModelToJson(const model::WorkloadModel& model,
                                   const TruthLabels* truth = nullptr);
Status WriteJsonReport(const model::WorkloadModel& model, const std::string& path,
                       const TruthLabels* truth = nullptr);
// Writes `j` as WriteJsonReport formats it (for a model JSON the caller
// extended, e.g. with the join's counters).
Status WriteJsonFile(const nlohmann::ordered_json& j, const std::string& path);

// One CSV per table in `dir` (created if missing): summary.csv, clusters.csv,
// requests.csv, model_error.csv, anomalies.csv, latency_breakdown.csv.
Status WriteCsvReports(const model::WorkloadModel& model, const std::string& dir);

// Chrome/Perfetto JSON trace (traceEvents), openable in ui.perfetto.dev:
//  * process "requests": one slice per request (category "request"), on
//    non-overlapping lanes, named by cluster so that each cluster has its own
//    colour (Perfetto colours by name with digits stripped, hence cluster
//    names use letters: "cluster a", "cluster b", ...; anomalies are
//    "anomaly");
//  * process "actual schedule": one track per thread id; per request, the
//    span of the thread's activity (category "thread") and its events as
//    instants (category "event") when the input has at most
//    PerfettoOptions::max_instant_events events;
//  * process "canonical forms (unlimited CPUs)": each request's canonical
//    schedule placed at its actual start, one lane per canonical thread
//    (category "canonical") with its work segments nested.
// Times are microseconds relative to the earliest request start.
struct PerfettoOptions {
  size_t max_instant_events = 200000;
};
StatusOr<nlohmann::json> BuildPerfettoTrace(const model::WorkloadModel& model,
                                            std::span<const model::Request> requests,
                                            const PerfettoOptions& options = {});
Status WritePerfettoTrace(const model::WorkloadModel& model,
                          std::span<const model::Request> requests, const std::string& path,
                          const PerfettoOptions& options = {});

// Self-contained HTML (inline CSS and SVG, no scripts or external assets):
// summary, cluster table, cluster sizes, per-cluster resource distributions,
// request timeline, each representative's actual vs canonical schedule,
// anomalies and latency breakdown.
struct HtmlReportOptions {
  const TruthLabels* truth = nullptr;
  size_t max_timeline_requests = 400;
  size_t max_anomalies = 50;
  std::string title = "jackdaw workload model";
};
StatusOr<std::string> RenderHtmlReport(const model::WorkloadModel& model,
                                       std::span<const model::Request> requests,
                                       const HtmlReportOptions& options = {});
Status WriteHtmlReport(const model::WorkloadModel& model, std::span<const model::Request> requests,
                       const std::string& path, const HtmlReportOptions& options = {});

// Letters for cluster names in traces: 0 -> "a", 25 -> "z", 26 -> "ba".
std::string ClusterLetters(uint32_t cluster);

}  // namespace jackdaw::report
