// --json: the whole model. Schema (jackdaw.model, version 1):
//   summary   counts, threshold, normalisation, accounted CPU, model error
//   clusters  one object per cluster with its member request ids
//   requests  per request: cluster, distance, latencies, demand, anomaly, and its
//             serialized canonical string (what clustering compared)
//   anomalies with reasons and events
//   likelihood the likelihood model's size (states, transitions, alpha,
//             requests learned) and `unlikely`, beside it: the k least likely
//             requests, each with the steps that made it so (docs/likelihood.md);
//             requests then carry log_likelihood. Both absent without a model.
//             likelihood.model is the automaton itself, which live --baseline
//             loads (model/likelihood/model_io.h has its schema).
//   latency_breakdown per cluster
#include <algorithm>
#include <cmath>

#include "model/likelihood/model_io.h"
#include "model/scoring.h"
#include "common/safe_file.h"
#include "report/report.h"
#include "report/report_util.h"

namespace jackdaw::report {
namespace {

using nlohmann::ordered_json;

ordered_json DemandJson(const canonical::Demand& d) {
  return ordered_json{
      {"cpu_ns", d.cpu_ns}, {"disk_bytes", d.disk_bytes}, {"net_bytes", d.net_bytes}};
}

ordered_json ResourcesJson(const model::Resources& r) {
  return ordered_json{
      {"cpu_ns", r.cpu_ns}, {"disk_bytes", r.disk_bytes}, {"net_bytes", r.net_bytes}};
}

ordered_json DistributionJson(const model::Distribution& d) {
  return ordered_json{{"min", d.min}, {"p25", d.p25}, {"median", d.median},
                      {"p75", d.p75}, {"max", d.max}, {"mean", d.mean}};
}

ordered_json SideJson(const model::LatencyBreakdown::Side& s) {
  return ordered_json{{"latency_ns", s.latency_ns},
                      {"canonical_latency_ns", s.canonical_latency_ns},
                      {"cpu_ns", s.cpu_ns},
                      {"disk_bytes", s.disk_bytes},
                      {"net_bytes", s.net_bytes},
                      {"runq_wait_ns", s.runq_wait_ns},
                      {"blocked_disk_ns", s.blocked_disk_ns},
                      {"blocked_net_ns", s.blocked_net_ns},
                      {"blocked_futex_ns", s.blocked_futex_ns},
                      {"blocked_other_ns", s.blocked_other_ns}};
}

ordered_json UnlikelyJson(const model::likelihood::LikelihoodSummary& l) {
  ordered_json list = ordered_json::array();
  for (const model::likelihood::UnlikelyRequest& u : l.unlikely) {
    ordered_json steps = ordered_json::array();
    for (const model::likelihood::UnlikelyStep& s : u.steps)
      steps.push_back({{"position", s.position},
                       {"symbol", s.symbol},
                       {"probability", s.probability},
                       {"expected", s.expected},
                       {"expected_probability", s.expected_probability},
                       {"state", s.state},
                       {"state_visits", s.state_visits},
                       {"state_cpu_ns", {{"mean", s.state_cpu_mean_ns}, {"stddev", s.state_cpu_stddev_ns}}}});
    list.push_back({{"request", u.request_id},
                    {"log_likelihood", u.log_likelihood},
                    {"events", u.events},
                    {"steps", std::move(steps)},
                    {"off_model_events", u.off_model_events}});
  }
  return list;
}

ordered_json LikelihoodJson(const model::likelihood::LikelihoodSummary& l) {
  return ordered_json{{"method", "alergia"},
                      {"alpha", l.alpha},
                      {"requests_learned", l.requests_learned},
                      {"prefix_tree_states", l.prefix_tree_states},
                      {"states", l.states},
                      {"transitions", l.transitions},
                      {"alphabet", l.alphabet},
                      {"merges", l.merges},
                      {"model", model::likelihood::SavedModelToJson(l.model)}};
}

}  // namespace

ordered_json ModelToJson(const model::WorkloadModel& m, const TruthLabels* truth) {
  ordered_json j;
  j["format"] = "jackdaw.model";
  j["version"] = 1;

  ordered_json summary;
  summary["requests"] = std::max<uint64_t>(m.requests.size(), m.streamed_requests);
  summary["clusters"] = m.clusters.size();
  summary["anomalies"] = m.anomalies.size();
  summary["threshold"] = {{"value", m.threshold.threshold},
                          {"source", ThresholdSourceName(m.threshold.source)},
                          {"gap_low", m.threshold.gap_low},
                          {"gap_high", m.threshold.gap_high},
                          {"sample_size", m.threshold.sample_size}};
  summary["normalization"] = {{"cpu_ns", m.normalization.cpu_ns},
                              {"disk_bytes", m.normalization.disk_bytes},
                              {"net_bytes", m.normalization.net_bytes}};
  summary["accounted_cpu_fraction"] =
      m.accounted_cpu_fraction ? ordered_json(*m.accounted_cpu_fraction) : ordered_json(nullptr);
  summary["sample_mode"] = m.sample_mode;
  summary["sample_rate"] = m.sample_rate;
  summary["sample_share"] = m.sampled_share;
  summary["requests_estimated"] =
      std::llround(double(std::max<uint64_t>(m.requests.size(), m.streamed_requests)) / m.sampled_share);
  summary["model_error"] = {{"combined", m.error.combined},
                            {"cpu", m.error.per_resource[0]},
                            {"disk", m.error.per_resource[1]},
                            {"net", m.error.per_resource[2]},
                            {"model_total", ResourcesJson(m.error.model_total)},
                            {"measured_total", ResourcesJson(m.error.measured_total)}};
  summary["avg_diameter"] = m.avg_diameter;
  summary["avg_inter_cluster_distance"] = m.avg_inter_cluster_distance;
  summary["stats"] = {{"dropped_scheduling_events", m.stats.dropped_scheduling_events},
                      {"ignored_backward_edges", m.stats.ignored_backward_edges},
                      {"duplicate_edges", m.stats.duplicate_edges},
                      {"merged_repeats", m.stats.merged_repeats},
                      {"merged_edges", m.stats.merged_edges},
                      {"elided_wakeup_forks", m.stats.elided_wakeup_forks},
                      {"inferred_joins", m.stats.inferred_joins},
                      {"idle_wakeups", m.stats.idle_wakeups},
                      {"distance_computations", m.stats.distance_computations},
                      {"merged_clusters", m.stats.merged_clusters},
                      {"outlier_clusters", m.stats.outlier_clusters},
                      {"outlier_requests", m.stats.outlier_requests},
                      {"refine_moves", m.stats.refine_moves}};
  if (truth) {
    model::AgreementScore s = model::ScoreAgainstTruth(m, *truth);
    summary["ground_truth"] = {{"purity", s.purity},
                               {"adjusted_rand_index", s.adjusted_rand_index},
                               {"scored", s.scored},
                               {"unlabeled", s.unlabeled}};
  }
  j["summary"] = std::move(summary);

  ordered_json clusters = ordered_json::array();
  for (const model::ClusterSummary& c : m.clusters) {
    ordered_json cj;
    cj["id"] = c.id;
    cj["label"] = c.label;
    cj["size"] = c.size;
    cj["size_estimated"] = std::llround(double(c.size) / m.sampled_share);
    cj["anomalous"] = c.anomalous;
    if (truth) cj["contents"] = model::Composition(c, *truth);
    cj["representative"] = c.representative_id;
    cj["representative_string"] = c.representative_text;
    cj["diameter"] = c.diameter;
    cj["max_distance"] = c.max_distance;
    cj["min_separation"] = c.min_separation;
    cj["nearest_cluster"] =
        c.nearest_cluster >= 0 ? ordered_json(c.nearest_cluster) : ordered_json(nullptr);
    cj["mean_demand"] = ResourcesJson(c.mean);
    cj["representative_demand"] = ResourcesJson(c.representative_demand);
    cj["cpu_ms"] = DistributionJson(c.cpu_ms);
    cj["disk_kib"] = DistributionJson(c.disk_kb);
    cj["net_kib"] = DistributionJson(c.net_kb);
    cj["latency_ms"] = DistributionJson(c.latency_ms);
    cj["canonical_latency_ms"] = DistributionJson(c.canonical_latency_ms);
    // Mean demand per request by process (requests across processes).
    ordered_json procs = ordered_json::array();
    for (const model::ProcessDemand& d : c.processes) {
      ordered_json pj;
      pj["comm"] = d.comm;
      pj["tier"] = d.tier;
      pj["requests"] = d.requests;
      pj["cpu_ns"] = d.cpu_ns;
      pj["disk_bytes"] = d.disk_bytes;
      pj["net_bytes"] = d.net_bytes;
      pj["blocked_ns"] = d.blocked_ns;
      pj["runq_wait_ns"] = d.runq_wait_ns;
      procs.push_back(std::move(pj));
    }
    cj["processes"] = std::move(procs);
    cj["members"] = c.member_ids;
    clusters.push_back(std::move(cj));
  }
  j["clusters"] = std::move(clusters);

  ordered_json requests = ordered_json::array();
  for (size_t i = 0; i < m.requests.size(); ++i) {
    const model::RequestSummary& r = m.requests[i];
    ordered_json rj{{"id", r.id},
                    {"cluster", r.cluster},
                    {"distance", r.distance},
                    {"anomaly", r.anomaly},
                    {"start_ns", r.start_ns},
                    {"latency_ns", r.latency_ns},
                    {"canonical_latency_ns", r.canonical_latency_ns},
                    {"demand", DemandJson(r.demand)},
                    {"events", r.num_events},
                    {"threads", r.num_threads}};
    if (r.log_likelihood) rj["log_likelihood"] = *r.log_likelihood;
    if (i < m.serialized.size()) rj["string"] = canonical::ToText(m.serialized[i], m.symbols);
    if (truth) {
      auto it = truth->find(r.id);
      rj["truth"] = it == truth->end() ? ordered_json(nullptr) : ordered_json(it->second);
    }
    requests.push_back(std::move(rj));
  }
  j["requests"] = std::move(requests);

  ordered_json anomalies = ordered_json::array();
  for (const model::Anomaly& a : m.anomalies) {
    ordered_json events = ordered_json::array();
    for (const model::AnomalyEvent& e : a.events)
      events.push_back(
          {{"symbol", e.symbol}, {"demand", DemandJson(e.demand)}, {"differs", e.differs}});
    anomalies.push_back(
        {{"request", a.request_id},
         {"cluster", a.cluster},
         {"kind",
          a.kind == model::Anomaly::Kind::kSmallCluster ? "small_cluster" : "beyond_threshold"},
         {"compared_cluster",
          a.compared_cluster >= 0 ? ordered_json(a.compared_cluster) : ordered_json(nullptr)},
         {"compared_request",
          a.compared_cluster >= 0 ? ordered_json(a.compared_request_id) : ordered_json(nullptr)},
         {"distance", a.distance},
         {"reasons", a.reasons},
         {"events", std::move(events)}});
  }
  j["anomalies"] = std::move(anomalies);
  if (m.likelihood.present) {
    j["likelihood"] = LikelihoodJson(m.likelihood);
    j["unlikely"] = UnlikelyJson(m.likelihood);
  }

  ordered_json breakdowns = ordered_json::array();
  for (const model::LatencyBreakdown& b : m.breakdowns) {
    breakdowns.push_back({{"cluster", b.cluster},
                          {"group_size", b.group_size},
                          {"verdict", model::VerdictName(b.verdict)},
                          {"delta_latency_ns", b.delta_latency_ns},
                          {"delta_work_ns", b.delta_work_ns},
                          {"delta_runq_ns", b.delta_runq_ns},
                          {"delta_io_ns", b.delta_io_ns},
                          {"delta_lock_ns", b.delta_lock_ns},
                          {"delta_other_ns", b.delta_other_ns},
                          {"fast", SideJson(b.fast)},
                          {"slow", SideJson(b.slow)},
                          {"explanation", b.explanation}});
  }
  j["latency_breakdown"] = std::move(breakdowns);
  return j;
}

Status WriteJsonReport(const model::WorkloadModel& m, const std::string& path,
                       const TruthLabels* truth) {
  return WriteJsonFile(ModelToJson(m, truth), path);
}

Status WriteJsonFile(const nlohmann::ordered_json& j, const std::string& path) {
  return WriteOwnedFile(path, j.dump(1) + "\n", kOutputFileMode);
}

}  // namespace jackdaw::report
